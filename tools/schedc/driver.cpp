#include "tools/schedc/driver.h"

#include "codegen/lower.h"

namespace schedc::driver {

// The compiler, phase after phase (DESIGN section 1). Each step runs when it is still to run in
// this call, and stops the compiler when it fails.
bool run_until(Session& s, const Request& rq, Compilation& c, std::optional<Phase> until) {
  const Phase last = until.value_or(rq.last);
  auto pending = [&](Phase p) { return (!c.done || *c.done < p) && p <= last; };
  // Records that `p` ran (when `ok`).
  auto ran = [&](Phase p, bool ok) {
    if (ok) c.done = p;
    return ok;
  };
  const ScheduleArgs& a = rq.args;

  if (pending(Phase::Load)) {
    c.input = load(s, a.path, a.problem);
    if (!ran(Phase::Load, c.input.has_value())) return false;
  }
  if (pending(Phase::Schedule)) {
    c.schedule = rq.probe ? probe_schedule(s, *c.input, a.schedule) : schedule(s, *c.input, a.schedule);
    if (!ran(Phase::Schedule, c.schedule.has_value())) return false;
  }
  if (pending(Phase::Verify)) {
    bool ok = rq.probe ? verify_own(s, *c.schedule) : verify(s, *c.input, *c.schedule, c.timeline);
    if (!ran(Phase::Verify, ok)) return false;
  }
  if (pending(Phase::Simulate)) {
    if (!c.timeline) c.timeline = driver::simulate(*c.schedule);  // verify's simulation, when it made one
    ran(Phase::Simulate, true);
  }
  if (pending(Phase::Lower)) {
    c.program = codegen::lower(*c.schedule);
    ran(Phase::Lower, true);
  }
  if (pending(Phase::VerifyProgram)) {
    if (!ran(Phase::VerifyProgram, verify_program(s, *c.input, *c.schedule, *c.program))) return false;
  }
  if (pending(Phase::Emit)) {
    const RuntimeFlags* compiled_in = rq.runtime_at_launch ? nullptr : &rq.runtime;
    std::string source = source_name(a.path, a.problem, a.schedule) + (rq.probe ? " (profile)" : "");
    c.emitted = emit(s, *c.input, *c.schedule, *c.program, c.timeline->metrics, compiled_in, source);
    if (!ran(Phase::Emit, c.emitted.has_value())) return false;
  }
  if (pending(Phase::Build)) {
    c.settings = launch_settings(s, *c.emitted, rq.runtime, rq.runtime_at_launch);
    auto exe = c.settings ? build(s, *c.emitted, *c.settings, rq.runtime, rq.check, rq.build) : std::nullopt;
    c.executable = exe.value_or("");
    if (!ran(Phase::Build, exe.has_value())) return false;
  }
  if (pending(Phase::Run)) {
    c.exit_status = run(s, c.executable, *c.settings, rq.runtime, c.program->problem.ranks, rq.launch, rq.build.verbose);
    ran(Phase::Run, true);
  }
  return true;
}

}  // namespace schedc::driver
