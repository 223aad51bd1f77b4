// The sequential reference of `--check`: the same stages, no pipeline, no communication.

#include <vector>

#include "run_internal.h"

namespace schedrt {

Reference run_reference(const ProgramInfo& info, const StageConfig& config) {
  const int32_t S = info.stages, m = info.microbatches;
  std::vector<std::unique_ptr<Stage>> stages;
  for (int32_t s = 0; s < S; ++s) stages.push_back(make_stage(config, s));
  size_t bytes = stages[0]->boundary_bytes();
  std::vector<std::vector<std::byte>> act(static_cast<size_t>(S) + 1, std::vector<std::byte>(bytes));
  std::vector<std::vector<std::byte>> grad(static_cast<size_t>(S) + 1, std::vector<std::byte>(bytes));
  Reference ref;
  for (int32_t mb = 0; mb < m; ++mb) {
    for (int32_t s = 0; s < S; ++s)
      stages[static_cast<size_t>(s)]->forward(mb, s == 0 ? nullptr : act[static_cast<size_t>(s)].data(),
                                              s + 1 == S ? nullptr : act[static_cast<size_t>(s) + 1].data());
    for (int32_t s = S; s-- > 0;)
      stages[static_cast<size_t>(s)]->backward(mb, s + 1 == S ? nullptr : grad[static_cast<size_t>(s)].data(),
                                               s == 0 ? nullptr : grad[static_cast<size_t>(s) - 1].data());
  }
  double loss = 0;
  for (int32_t mb = 0; mb < m; ++mb) loss += stages[static_cast<size_t>(S) - 1]->loss(mb);
  ref.loss = loss / m;
  for (int32_t s = 0; s < S; ++s) {
    Stage& st = *stages[static_cast<size_t>(s)];
    std::vector<std::byte> total(st.gradient_bytes());
    std::vector<std::vector<int32_t>> mbs(static_cast<size_t>(info.num_directions()));
    for (int32_t mb = 0; mb < m; ++mb) mbs[static_cast<size_t>(info.direction_of(mb))].push_back(mb);
    st.reduce_gradients(mbs[0], total.data());
    for (size_t d = 1; d < mbs.size(); ++d) {
      std::vector<std::byte> next(total.size()), sum(total.size());
      st.reduce_gradients(mbs[d], next.data());
      st.add_gradients(total.data(), next.data(), sum.data());
      total = std::move(sum);
    }
    ref.gradients.push_back(st.gradient_values(total.data()));
  }
  return ref;
}

}  // namespace schedrt
