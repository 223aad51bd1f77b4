// The stage registry, and the defaults of Stage's optional members.
//
// The registry is a function-local static, so that registrations from other translation units'
// static initialisers (SCHEDRT_REGISTER_STAGE) find it built whatever their order. schedrt's own
// stages are added when it is first built, by explicit calls rather than registrars in their
// files: those files live in a static library, and the linker would drop an object file that
// nothing references, registrar and all.

#include "schedrt/stage.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <mutex>

#include "stages/stages_internal.h"

namespace schedrt {

void Stage::backward(int32_t mb, const void* grad_out, void* grad_in) {
  backward_input(mb, grad_out, grad_in);
  backward_weight(mb);
}

void Stage::overlapped(int32_t f_mb, const void* in, void* out, Stage& other, Action b, const void* grad_out,
                       void* grad_in) {
  forward(f_mb, in, out);
  if (b.kind == Kind::BW) other.backward(b.mb, grad_out, grad_in);
  else other.backward_input(b.mb, grad_out, grad_in);
}

namespace {

bool serves(StageMemory have, StageMemory want) { return have == want || have == StageMemory::None; }

class Registry {
 public:
  static Registry& get() {
    static Registry r;
    return r;
  }

  void add(StageInfo info) {
    std::lock_guard lock(mu_);
    std::string who = "stage `" + info.name + "`";
    if (info.api_version != SCHEDRT_STAGE_API_VERSION) {
      errors_.push_back(who + " was compiled against schedrt/stage.h version " + std::to_string(info.api_version) +
                        ", this schedrt has version " + std::to_string(SCHEDRT_STAGE_API_VERSION) + "; rebuild it");
      return;
    }
    if (!is_stage_name(info.name)) {
      errors_.push_back("stage name `" + info.name +
                        "` is not a name (letters, digits and `_`, not starting with a digit)");
      return;
    }
    if (!info.make) {
      errors_.push_back(who + " is registered without a factory (`.make`)");
      return;
    }
    for (const StageInfo& s : stages_)
      if (s.name == info.name && (serves(s.memory, info.memory) || serves(info.memory, s.memory))) {
        errors_.push_back(who + " is registered twice (" + to_string(s.memory) + " and " + to_string(info.memory) +
                          " memory); the first stays");
        return;
      }
    stages_.push_back(std::move(info));
  }

  std::vector<StageInfo> all() const {
    std::lock_guard lock(mu_);
    std::vector<StageInfo> out(stages_.begin(), stages_.end());
    // schedrt's own stages first, as registered; then the others by name, Host before Device.
    std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(builtin_), out.end(),
                     [](const StageInfo& a, const StageInfo& b) {
                       return a.name != b.name ? a.name < b.name : a.memory < b.memory;
                     });
    return out;
  }

  std::vector<std::string> errors() const {
    std::lock_guard lock(mu_);
    return errors_;
  }

  const StageInfo* find(std::string_view name, StageMemory memory) const {
    std::lock_guard lock(mu_);
    for (const StageInfo& s : stages_)
      if (s.name == name && serves(s.memory, memory)) return &s;
    return nullptr;
  }

 private:
  Registry() {
    // Not through add(): its lock is not re-entrant, and these are known to be well formed.
    std::vector<StageInfo> own;
    register_builtin_stages(own);
    stages_.assign(own.begin(), own.end());
    builtin_ = stages_.size();
  }

  mutable std::mutex mu_;
  std::deque<StageInfo> stages_;  // find() hands out pointers: a deque keeps them valid as it grows
  size_t builtin_ = 0;
  std::vector<std::string> errors_;
};

std::string names_list() {
  std::string out;
  for (const std::string& n : stage_names()) out += (out.empty() ? "`" : ", `") + n + "`";
  return out;
}

}  // namespace

void register_builtin_stages(std::vector<StageInfo>& out) {
  out.push_back({.name = "mlp",
                 .description = "layers x (Linear(hidden, hidden) + tanh) on batch rows, MSE loss; fp64, fp32",
                 .has_reference = true,
                 .memory = StageMemory::Host,
                 .make = [](const StageConfig& c, int32_t s, const StageEnv&) {
                   if (c.dtype == Dtype::BF16) throw Error("the mlp stage computes in bf16 only on the cuda backend");
                   return make_mlp_stage(c, s);
                 }});
  out.push_back({.name = "synthetic",
                 .description = "holds the rank for each action's cost x ms_per_unit (timeline fidelity)",
                 .memory = StageMemory::None,
                 .make = [](const StageConfig& c, int32_t s, const StageEnv&) { return make_synthetic_stage(c, s); }});
  out.push_back({.name = "noop",
                 .description = "does nothing (the executor's own overhead)",
                 .memory = StageMemory::None,
                 .make = [](const StageConfig& c, int32_t s, const StageEnv&) { return make_noop_stage(c, s); }});
  register_cuda_stages(out);
}

bool register_stage(StageInfo info) {
  Registry::get().add(std::move(info));
  return true;
}

std::vector<StageInfo> registered_stages() { return Registry::get().all(); }

std::vector<std::string> registry_errors() { return Registry::get().errors(); }

const StageInfo* find_stage(std::string_view name, StageMemory memory) { return Registry::get().find(name, memory); }

std::vector<std::string> stage_names() {
  std::vector<std::string> out;
  for (const StageInfo& s : registered_stages())
    if (std::find(out.begin(), out.end(), s.name) == out.end()) out.push_back(s.name);
  return out;
}

std::unique_ptr<Stage> make_stage(const StageConfig& config, int32_t stage, const StageEnv& env) {
  const StageInfo* info = find_stage(config.stage, env.memory);
  if (!info) {
    if (find_stage(config.stage, env.memory == StageMemory::Host ? StageMemory::Device : StageMemory::Host))
      throw Error("stage `" + config.stage + "` has no implementation for " + to_string(env.memory) +
                  " memory (register one with `.memory = schedrt::StageMemory::" +
                  (env.memory == StageMemory::Host ? "Host" : "Device") + "`)");
    throw Error("no stage `" + config.stage + "` is registered; registered stages: " + names_list());
  }
  auto made = info->make(config, stage, env);
  if (!made)
    throw Error("stage `" + config.stage + "`'s factory returned no stage for virtual stage " + std::to_string(stage));
  return made;
}

std::unique_ptr<Stage> make_stage(const StageConfig& config, int32_t stage) {
  return make_stage(config, stage, StageEnv{});
}

bool has_sequential_reference(std::string_view name) {
  const StageInfo* info = find_stage(name, StageMemory::Host);
  return info && info->has_reference;
}

std::string to_string(StageMemory m) {
  return m == StageMemory::Host ? "host" : m == StageMemory::Device ? "device" : "no";
}

}  // namespace schedrt
