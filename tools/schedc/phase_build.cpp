// The build phase: check that the executor can run the chosen stage, compile it (cached by
// content, build_cache.h), and check the stages the user's stage sources register.

#include "tools/schedc/build_cache.h"
#include "tools/schedc/launch.h"
#include "tools/schedc/phases.h"

namespace schedc::driver {

std::optional<codegen::RuntimeConfig> launch_settings(Session& s, const Emitted& em, const RuntimeFlags& flags,
                                                      bool at_launch) {
  codegen::RuntimeConfig cfg = em.runtime;
  if (!at_launch) return cfg;  // the flags are compiled in
  flags.apply(cfg);
  if (std::string why = schedrt::check_combination(cfg); !why.empty()) {
    s.diags.error(DiagKind::BadValue, {}, why);
    return std::nullopt;
  }
  return cfg;
}

std::optional<std::string> build(Session& s, const Emitted& em, const codegen::RuntimeConfig& settings,
                                 const RuntimeFlags& flags, bool check, const BuildSettings& build) {
  // schedrt's own stages are known before building; the stage sources' only once the executor
  // lists what they register.
  const bool sources = !build.stage_sources.empty();
  if (!sources && !check_stage(s, em.stage_loc, settings, flags, check, builtin_stages(), false)) return std::nullopt;
  auto exe = build_executor(s, em.files, build);
  if (!exe || !sources) return exe;
  auto stages = executor_stages(s, *exe, build.verbose);
  if (!stages || !check_stage(s, em.stage_loc, settings, flags, check, *stages, true)) return std::nullopt;
  return exe;
}

}  // namespace schedc::driver
