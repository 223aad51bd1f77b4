#pragma once
// The driver's shared steps: load a spec, schedule JSON or torch-csv; apply the problem flags;
// obtain the schedule the input asks for; verify it; write outputs atomically. Each command
// (cmd_*.cpp) is a short list of these calls.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "frontend/spec.h"
#include "ir/schedule.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace schedc::driver {

/// Exit codes (DESIGN section 5).
enum ExitCode : int { kOk = 0, kInputError = 1, kBadCommandLine = 2, kInternalError = 3 };

/// The exit code the diagnostics call for: kInternalError when one is `internal`, else
/// kBadCommandLine when one is `bad-flag`, else kInputError when there is an error, else kOk.
int exit_code(const Diagnostics& diags);

/// A CLI11 check for a finite number in lo..hi (CLI::Range lets `nan` through).
CLI::Validator number_in(double lo, double hi);

/// The problem flags every command that takes a problem accepts; they override the spec.
struct ProblemFlags {
  std::optional<int> pp, vpp, microbatches;
  std::optional<std::string> direction, placement, backward, cost, memory, objective;

  void add_to(CLI::App& cmd);
  bool any() const;
  /// Applies the set flags to `spec.problem`, records them in `spec.given` (and their units), then
  /// completes the problem (frontend::complete_problem: units, memory defaults, and the balance
  /// check with `check_balance` or when a flag sets a memory delta). A value that cannot be parsed
  /// or is out of its range, and a unit or balance error, is reported as `bad-flag` naming the
  /// flag; false then.
  bool apply(frontend::Spec& spec, bool check_balance, Diagnostics& diags) const;

 private:
  /// apply's work; sets `error` to the first bad flag's message.
  void apply_or_explain(frontend::Spec& spec, bool check_balance, std::string& error) const;
};

/// How to get the schedule when the input does not fix it: `--family NAME` or `--solve`.
struct ScheduleFlags {
  std::optional<std::string> family;
  bool solve = false;
  std::optional<double> time_limit;
  bool deterministic = false;
  std::optional<int> threads;
  bool quiet = false;
  bool debug = false;
  std::string z3_fault;  // testing: "error" | "invalid-model" (hidden)

  void add_to(CLI::App& cmd);
};

/// The positional input and the problem and schedule flags of a command that works on a schedule.
struct ScheduleArgs {
  std::string path;
  ProblemFlags problem;
  ScheduleFlags schedule;

  /// Adds `input` (optional: `--family`/`--solve` and the problem flags can stand for it) and the
  /// flag groups.
  void add_to(CLI::App& cmd);
};

/// One run of the compiler: the source files and the diagnostics about them.
struct Session {
  SourceManager sources;
  Diagnostics diags{&sources};

  /// Prints the diagnostics to stderr and returns the exit code they call for (exit_code).
  int finish();
  /// After a step that failed: finish(), but never kOk (a failure with no error reported is still
  /// no success).
  int fail();
  /// Prints the diagnostics and returns `code`: for a status no diagnostic states (a child
  /// process's exit status).
  int finish(int code);
  /// Reads a file into `sources`; reports `io` and returns -1 when it cannot be read.
  int32_t read_file(const std::string& path);
};

/// What a command's positional input turned out to be.
struct Input {
  enum class Kind { Spec, ScheduleJson, TorchCsv, FlagsOnly };
  Kind kind = Kind::FlagsOnly;
  int32_t file = -1;
  /// For every kind, the spec view: problem, given fields, schedule source, expectations.
  /// (A schedule JSON's orders become an explicit source; flags-only inputs have no source.)
  frontend::Spec spec;
  /// A schedule JSON's own provenance (the schedule obtain_schedule makes of it is `explicit`):
  /// what `verify --optimal` checks.
  std::optional<ir::Provenance> provenance;
};

/// Loads `path` (by extension: .json schedule, .csv torch-csv, anything else a .sched spec; an
/// empty path means flags only) and applies the problem flags. Returns nullopt after reporting.
std::optional<Input> load_input(Session& s, const std::string& path, const ProblemFlags& flags);

/// The schedule the input asks for (explicit / family / solve, or the flags' `--family` /
/// `--solve`), verified. Verification failures are reported at the offending token. `timeline`,
/// when given, receives the verifier's simulation of the schedule (so it need not run again).
std::optional<ir::Schedule> obtain_schedule(Session& s, Input& in, const ScheduleFlags& flags,
                                            std::optional<ir::Timeline>* timeline = nullptr);

/// A verified schedule, its simulated timeline and the input it came from.
struct Scheduled;

/// load_input, obtain_schedule and simulate: the first steps of every schedule command. Returns
/// nullopt after reporting.
std::optional<Scheduled> load_and_schedule(Session& s, const ScheduleArgs& args);

/// Reports verifier issues as diagnostics, located at the token when the input has one.
void report_verify_issues(Session& s, const Input& in, const ir::Schedule& sched,
                          const std::vector<ir::VerifyIssue>& issues);

/// Simulates a verified schedule (a deadlock here is an internal error).
ir::Timeline simulate_verified(const ir::Schedule& sched);

struct Scheduled {
  Input input;
  ir::Schedule schedule;
  ir::Timeline timeline;
};

/// Writes `content` to `path` atomically (temporary file + rename), or to stdout when `path` is
/// empty or "-". Reports `io` on failure.
bool write_output(Session& s, const std::string& path, const std::string& content);

}  // namespace schedc::driver
