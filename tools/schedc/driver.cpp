#include "tools/schedc/driver.h"

#include <algorithm>
#include <iostream>

#include "codegen/lower.h"
#include "tools/schedc/dump.h"

namespace schedc::driver {

namespace {

constexpr std::string_view kPhaseNames[] = {"load",           "schedule", "verify", "simulate", "lower",
                                            "verify-program", "emit",     "build",  "run"};
static_assert(std::size(kPhaseNames) == kPhases.size());

// The phases --dump-after names, each a phase this command runs; nullopt after reporting.
std::optional<std::vector<Phase>> dump_phases(Session& s, const Request& rq) {
  std::vector<Phase> out;
  for (const std::string& name : rq.dump.phases) {
    std::optional<Phase> p = parse_phase(name);
    if (!p) {
      s.diags.error(DiagKind::BadFlag, {},
                    "--dump-after: unknown phase " + backtick(name) + ", expected one of " + phase_names(rq.last));
      return std::nullopt;
    }
    if (*p > rq.last) {
      s.diags.error(DiagKind::BadFlag, {},
                    "--dump-after: this command stops after " + backtick(to_string(rq.last)) + " and never reaches " +
                        backtick(name) + ", expected one of " + phase_names(rq.last));
      return std::nullopt;
    }
    if (std::find(out.begin(), out.end(), *p) == out.end()) out.push_back(*p);
  }
  return out;
}

}  // namespace

std::string_view to_string(Phase p) { return kPhaseNames[static_cast<size_t>(p)]; }

std::optional<Phase> parse_phase(std::string_view name) {
  if (name == "verify_program") return Phase::VerifyProgram;
  for (Phase p : kPhases)
    if (to_string(p) == name) return p;
  return std::nullopt;
}

std::string phase_names(Phase last) {
  std::string out;
  for (Phase p : kPhases)
    if (p <= last) out += (out.empty() ? "" : ", ") + std::string(to_string(p));
  return out;
}

void DumpFlags::add_to(CLI::App& cmd, Phase last) {
  std::string help = "print the data after PHASE on stderr; repeatable, or comma-separated:";
  for (Phase p : kPhases)
    if (p <= last) help += "\n" + std::string(to_string(p)) + ": " + std::string(dump_description(p));
  cmd.add_option("--dump-after", phases, help)
      ->delimiter(',')
      ->allow_extra_args(false)
      ->type_name("PHASE")
      ->group("Debugging");
}

void Request::add_to(CLI::App& cmd, Phase last_phase) {
  last = last_phase;
  args.add_to(cmd);
  dump.add_to(cmd, last);
}

// The compiler, phase after phase (docs/design.md section 1). Each step runs when it is still to run in
// this call, and stops the compiler when it fails.
bool run_until(Session& s, const Request& rq, Compilation& c, std::optional<Phase> until) {
  const Phase last = until.value_or(rq.last);
  auto dumps = dump_phases(s, rq);
  if (!dumps) return false;
  auto pending = [&](Phase p) { return (!c.done || *c.done < p) && p <= last; };
  // Records that `p` ran (when `ok`) and prints its data when asked.
  auto ran = [&](Phase p, bool ok) {
    if (!ok) return false;
    c.done = p;
    if (std::find(dumps->begin(), dumps->end(), p) != dumps->end()) std::cerr << dump(s, c, p) << std::flush;
    return true;
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
    c.exit_status = run(s, c.executable, *c.settings, rq.runtime, c.program->problem.ranks, rq.launch,
                        rq.build.verbose);
    ran(Phase::Run, true);
  }
  return true;
}

}  // namespace schedc::driver
