// Built instead of the cuda backend when schedrt is configured without CUDA.

#include "backends/cuda/cuda.h"
#include "stages/stages_internal.h"

namespace schedrt {

bool have_cuda() { return false; }

void register_cuda_stages(std::vector<StageInfo>&) {}

std::string run_cuda(int32_t, const BackendOptions&, const std::function<void(Backend&)>&, int*, char***) {
  return "this schedrt was built without CUDA (configure with the CUDA Toolkit and NCCL installed, "
         "-DSCHEDC_WITH_CUDA=ON)";
}

}  // namespace schedrt
