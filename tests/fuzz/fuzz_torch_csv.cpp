// libFuzzer target: the torch-csv importer (frontend::read_torch_csv) on any bytes, with the
// problem flags `schedc import torch-csv` takes drawn from the input too. Layout: one byte saying
// which of --pp, --microbatches, --backward, --placement, --vpp are set, one byte for each of
// their values, then the CSV text. As in the CLI, a flag value out of its range is refused before
// the importer runs (ProblemFlags::apply). The importer must not crash, hang or trip a sanitizer;
// it returns a schedule exactly when it reported no error; what it returns has a valid problem
// that keeps every given field, passes ir::verify (the importer reports what does not), simulates
// to completion, and, unless a stage is on two rows (bidirectional), exports back (emit_torch_csv)
// to a file that imports into the same orders.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "codegen/emit.h"
#include "frontend/torch_csv.h"
#include "ir/json_io.h"
#include "ir/simulate.h"
#include "ir/verify.h"
#include "support/diagnostics.h"
#include "support/source.h"

namespace {

using namespace schedc;

constexpr size_t kHeader = 6;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_torch_csv: %s\n%s\n", what, detail.c_str());
  std::abort();
}

bool same_orders(const ir::Schedule& a, const ir::Schedule& b) {
  auto units = [](const ir::Schedule& s) { return s.has_overlap() ? s.overlap : std::vector<std::vector<int32_t>>{}; };
  return a.ranks == b.ranks && units(a) == units(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t h[kHeader] = {};
  for (size_t i = 0; i < kHeader && i < size; ++i) h[i] = data[i];
  const size_t skip = size < kHeader ? size : kHeader;

  // The flags, as ProblemFlags::apply sets them on a default problem.
  ir::Problem base;
  ir::FieldLocs given;
  if (h[0] & 1) base.ranks = h[1], given[ir::Field::Ranks] = {};
  if (h[0] & 2) base.microbatches = h[2], given[ir::Field::Microbatches] = {};
  if (h[0] & 4) base.backward = static_cast<ir::BackwardMode>(h[3] % 3), given[ir::Field::Backward] = {};
  if (h[0] & 8) {
    base.placement = h[4] % 3 == 0   ? ir::PlacementKind::Looped
                     : h[4] % 3 == 1 ? ir::PlacementKind::VShape
                                     : ir::PlacementKind::Wave;
    given[ir::Field::Placement] = {};
  }
  if (h[0] & 16) base.stages_per_rank = h[5] % 70, given[ir::Field::StagesPerRank] = {};
  for (const ir::ProblemError& e : ir::validate(base))
    if (e.kind == DiagKind::OutOfRange && given.count(e.field)) return 0;  // the CLI refuses the flag (exit 2)

  SourceManager sources;
  const std::string text(reinterpret_cast<const char*>(data) + skip, size - skip);
  int32_t file = sources.add("fuzz.csv", text);
  Diagnostics diags(&sources);
  auto sched = frontend::read_torch_csv(sources, file, base, given, diags);
  (void)diags.str();
  if (sched.has_value() == diags.has_errors()) fail("a schedule returned with errors, or none without", diags.str());
  if (!sched) return 0;

  const ir::Schedule& s = *sched;
  auto show = [&] { return "csv:\n" + text + "\nschedule: " + ir::write_schedule_json(s, nullptr); };
  if (!ir::validate(s.problem).empty()) fail("the imported problem does not validate", show());
  if ((given.count(ir::Field::Ranks) && s.problem.ranks != base.ranks) ||
      (given.count(ir::Field::Microbatches) && s.problem.microbatches != base.microbatches) ||
      (given.count(ir::Field::Backward) && s.problem.backward != base.backward) ||
      (given.count(ir::Field::Placement) && s.problem.placement != base.placement) ||
      (given.count(ir::Field::StagesPerRank) && s.problem.stages_per_rank != base.stages_per_rank))
    fail("the imported problem does not keep a given field", show());
  if (!ir::verify(s).empty()) fail("the importer returned a schedule ir::verify rejects", show());
  ir::SimResult sim = ir::simulate(s);
  if (!sim.timeline) fail("an imported, verified schedule deadlocks in simulation", show());

  // A stage on two rows (bidirectional) is read but never written: PyTorch has one rank per stage.
  if (codegen::torch_csv_conflict(s.problem)) return 0;
  SourceManager again;
  const std::string exported = codegen::emit_torch_csv(s);
  int32_t file2 = again.add("again.csv", exported);
  Diagnostics diags2(&again);
  auto back = frontend::read_torch_csv(again, file2, base, given, diags2);
  if (!back) fail("the exported torch-csv does not import", show() + "\nexported:\n" + exported + "\n" + diags2.str());
  if (!same_orders(*back, s) || !(back->problem == s.problem))
    fail("torch-csv does not round-trip", show() + "\nexported:\n" + exported);
  return 0;
}
