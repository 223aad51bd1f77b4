// `schedc check SPEC`: parse and validate a spec; nothing else.

#include <iostream>

#include "codegen/runtime_config.h"
#include "tools/schedc/commands.h"
#include "tools/schedc/driver.h"

namespace schedc::driver {

void add_check_command(CLI::App& app, int& rc) {
  struct Opts {
    std::string path;
    ProblemFlags problem;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("check", "parse and validate a spec (.sched) or schedule (.json)");
  cmd->add_option("spec", opts->path, "the .sched or schedule .json file; - reads a spec from stdin")->required();
  opts->problem.add_to(*cmd);
  cmd->callback([opts, &rc] {
    if (opts->path.empty()) throw CommandLineError{"check: the path of the spec is empty"};
    Session s;
    auto in = load_input(s, opts->path, opts->problem);
    if (in) {
      auto errors = ir::validate(in->spec.problem);
      for (const auto& e : errors) s.diags.error(e.kind, in->spec.loc_of(e.field), e.message);
      codegen::RuntimeConfig runtime;
      codegen::read_runtime_config(in->spec.runtime, runtime, s.diags);
    }
    if (!in || s.diags.has_errors()) {
      rc = s.finish(kInputError);
      return;
    }
    const ir::Problem& p = in->spec.problem;
    std::cout << s.sources.path(in->file) << ": ok: " << p.ranks << " ranks x " << p.stages_per_rank << " stages, "
              << p.microbatches << " microbatches, " << ir::to_string(p.direction) << ", "
              << ir::to_string(p.placement) << ", backward " << ir::to_string(p.backward) << "\n";
    rc = s.finish(kOk);
  });
}

}  // namespace schedc::driver
