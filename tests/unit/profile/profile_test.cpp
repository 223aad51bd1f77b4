// schedc::profile: the probe schedule, reading the executor's measurements, the cost block's text,
// putting it into a spec without touching anything else, and the atomic write with its failures.

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/spec.h"
#include "ir/verify.h"
#include "profile/profile.h"

using namespace schedc;
namespace fs = std::filesystem;

namespace {

std::optional<frontend::Spec> parse(const std::string& text, std::string* errors = nullptr) {
  SourceManager sm;
  int32_t f = sm.add("t.sched", text);
  Diagnostics d(&sm);
  auto spec = frontend::parse_spec(sm, f, d);
  if (errors) *errors = d.str();
  return spec;
}

std::string rewrite(const std::string& text, const std::string& block) {
  SourceManager sm;
  int32_t f = sm.add("t.sched", text);
  return profile::replace_cost_block(sm, f, block);
}

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("schedc-profile-test-" + std::to_string(getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

profile::Measured measured() {
  profile::Measured m;
  m.F = {101.4, 99.2, 100.3, 103.9};
  m.B = {150.0, 201.0, 203.0, 260.0};
  m.W = {98.76, 98.76, 98.76, 98.76};
  m.comm = 12.345;
  m.how = "threads, mlp fp64 (hidden 64, layers 2, batch 8)";
  return m;
}

const char* const kBlock = "cost {\n"
                           "  # measured by `schedc profile` on threads, mlp fp64 (hidden 64, layers 2, batch 8)\n"
                           "  F = 101us\n"
                           "  B = [150us, 201us, 203us, 260us]\n"
                           "  W = 98.8us\n"
                           "  comm = 12.3us\n"
                           "}";

}  // namespace

TEST_CASE("the probe schedule verifies for every kind of placement and backward") {
  auto check = [](const std::string& text) {
    auto spec = parse(text);
    REQUIRE(spec);
    ir::Schedule s = profile::probe_schedule(spec->problem);
    CHECK_MESSAGE(ir::verify(s).empty(), text);
    CHECK(s.num_actions() > 0);
  };
  check("ranks = 4\nmicrobatches = 8\n");
  check("ranks = 4\nmicrobatches = 8\nbackward = fused\n");
  check("ranks = 4\nstages_per_rank = 2\nplacement = vshape\nmicrobatches = 8\n");
  check("ranks = 4\nstages_per_rank = 2\nplacement = wave\nmicrobatches = 6\n");
  check("ranks = 4\nmicrobatches = 8\ndirection = bidirectional\nbackward = mixed\n");
  check("ranks = 2\nstages_per_rank = 2\nmicrobatches = 4\ndirection = bidirectional\nplacement = custom\n"
        "stage_to_rank = [[0, 1, 1, 0], [1, 0, 0, 1]]\n");
}

TEST_CASE("the measurements become a cost block: one number when the stages agree within 5%, else a list") {
  CHECK(profile::format_cost_block(measured()) == kBlock);
  profile::Measured m = measured();
  m.comm.reset();  // one rank: nothing moves, no comm key
  m.FB = {300, 300, 300, 300};
  std::string block = profile::format_cost_block(m);
  CHECK(block.find("comm") == std::string::npos);
  CHECK(block.find("  FB = 300us\n") != std::string::npos);
  // The block states its unit: a spec holding it is in microseconds.
  auto spec = parse("ranks = 4\nmicrobatches = 8\n" + std::string(kBlock) + "\n");
  REQUIRE(spec);
  CHECK(spec->problem.time_unit == "us");
  CHECK(spec->problem.cost.F == ir::PerStage::of(101));
  CHECK(spec->problem.cost.comm == 12.3);
  CHECK(profile::round3(1234.5) == 1230);
  CHECK(profile::round3(0.012345) == 0.0123);
  CHECK(profile::round3(0) == 0);
}

TEST_CASE("reading the executor's measurements") {
  std::string error;
  auto m = profile::read_measured(
      R"({"format": "schedrt.profile", "version": 1, "backend": "cuda", "stage": "mlp", "dtype": "bf16",
          "hidden": 1024, "layers": 2, "batch": 256, "F": [1, 2], "B": [3, 4], "W": [5, 6], "FB": null,
          "comm": 7.5})",
      2, &error);
  REQUIRE(m);
  CHECK(m->F == std::vector<double>{1, 2});
  CHECK(m->W == std::vector<double>{5, 6});
  CHECK(m->FB.empty());
  CHECK(*m->comm == 7.5);
  CHECK(m->how == "cuda, mlp bf16 (hidden 1024, layers 2, batch 256)");
  CHECK_FALSE(profile::read_measured("not json", 2, &error));
  CHECK(error == "the executor's profile is not a JSON object");
  CHECK_FALSE(profile::read_measured(R"({"format": "other", "version": 1})", 2, &error));
  CHECK_FALSE(profile::read_measured(
      R"({"format": "schedrt.profile", "version": 1, "F": [1], "B": [1, 1], "W": [1, 1]})", 2, &error));
  CHECK(error == "`F` is not a list of 2 numbers");
  CHECK_FALSE(profile::read_measured(
      R"({"format": "schedrt.profile", "version": 1, "F": [1, -1], "B": [1, 1], "W": [1, 1]})", 2, &error));
}

TEST_CASE("version 2: the executor's overheads join the block, and comm keeps the flight time only") {
  std::string error;
  auto m = profile::read_measured(
      R"({"format": "schedrt.profile", "version": 2, "backend": "mpi", "stage": "synthetic", "F": [10, 10],
          "B": [20, 20], "W": [5, 5], "FB": null, "comm": 7.5, "action_overhead": 0.25, "message_overhead": 1.5})",
      2, &error);
  REQUIRE(m);
  CHECK(*m->action_overhead == 0.25);
  CHECK(*m->message_overhead == 1.5);
  CHECK(m->stage_overhead == 0);
  std::string block = profile::format_cost_block(*m);
  // One-way 7.5us, of which each end's 1.5us is charged to the actions at the ends.
  CHECK(block.find("  comm = 4.5us\n  action_overhead = 0.25us\n  message_overhead = 1.5us\n}") != std::string::npos);
  auto spec = parse("ranks = 2\nmicrobatches = 4\n" + block + "\n");
  REQUIRE(spec);
  CHECK(spec->problem.cost.action_overhead == 0.25);
  CHECK(spec->problem.cost.message_overhead == 1.5);
  // Ends that cost more than the measured one-way time leave no flight time, never a negative one.
  m->comm = 2;
  CHECK(profile::format_cost_block(*m).find("  comm = 0us\n") != std::string::npos);
  // One rank: no message was timed, so neither comm nor message_overhead is written.
  m->comm.reset();
  m->message_overhead.reset();
  block = profile::format_cost_block(*m);
  CHECK(block.find("comm") == std::string::npos);
  CHECK(block.find("message_overhead") == std::string::npos);
  CHECK(block.find("  action_overhead = 0.25us\n") != std::string::npos);
  // The stage's own cost per call is in F, B and W as measured and in action_overhead: the block
  // counts it once, in the overhead.
  auto staged = profile::read_measured(
      R"({"format": "schedrt.profile", "version": 2, "F": [10, 10], "B": [20, 20], "W": [5, 5], "FB": [25, 25],
          "comm": null, "action_overhead": 3, "stage_overhead": 2, "message_overhead": null})",
      2, &error);
  REQUIRE(staged);
  CHECK(staged->stage_overhead == 2);
  CHECK(profile::format_cost_block(*staged).find(
            "  F = 8us\n  B = 18us\n  W = 3us\n  FB = 21us\n  action_overhead = 3us\n}") != std::string::npos);
  CHECK_FALSE(profile::read_measured(
      R"({"format": "schedrt.profile", "version": 2, "F": [1, 1], "B": [1, 1], "W": [1, 1], "action_overhead": -1})", 2,
      &error));
  CHECK(error == "`action_overhead` is not a non-negative number");
  CHECK_FALSE(profile::read_measured(R"({"format": "schedrt.profile", "version": 3, "F": [1, 1]})", 2, &error));
  CHECK(error == "the executor's profile is not `schedrt.profile` version 1 or 2");
}

TEST_CASE("the block replaces the spec's cost block and nothing else") {
  const std::string before = "# A spec.  cost { F = 9 } in a comment is not the block\nranks = 4\n";
  const std::string after = "\nmicrobatches = 8   # trailing comment\nschedule = solve { time_limit = 5 }\n"
                            "runtime { trace = \"cost { }\" }\n";
  std::string text = before + "cost { F = 1  B = [1, 1,\n  1, 2]  W = 1 }" + after;
  std::string out = rewrite(text, kBlock);
  CHECK(out == before + kBlock + after);
  auto spec = parse(out);
  REQUIRE(spec);
  CHECK(spec->problem.cost.F.at(0) == 101);
  CHECK(spec->problem.cost.B.at(3) == 260);
  CHECK(spec->problem.cost.comm == 12.3);
  // Profiling again replaces the block it wrote.
  CHECK(rewrite(out, kBlock) == out);
}

TEST_CASE("without a cost block the block goes before `schedule`, else at the end") {
  CHECK(rewrite("ranks = 4\nmicrobatches = 8\nschedule = family 1f1b\n", kBlock) ==
        std::string("ranks = 4\nmicrobatches = 8\n") + kBlock + "\nschedule = family 1f1b\n");
  CHECK(rewrite("ranks = 4\nmicrobatches = 8", kBlock) == std::string("ranks = 4\nmicrobatches = 8\n") + kBlock + "\n");
  // `cost` inside another block is not the spec's cost block.
  std::string nested = "ranks = 4\nmicrobatches = 8\nruntime { stage = mlp }\n";
  CHECK(rewrite(nested, kBlock) == nested + kBlock + "\n");
}

TEST_CASE("the atomic write: replaces the file, keeps its permissions, follows a symbolic link") {
  TempDir dir;
  fs::path spec = dir.path / "a.sched";
  write(spec, "old\n");
  ::chmod(spec.c_str(), 0640);
  fs::path link = dir.path / "link.sched";
  fs::create_symlink(spec, link);
  Diagnostics d;
  REQUIRE(profile::write_spec_atomically(link.string(), "old\n", "new\n", d));
  CHECK(read(spec) == "new\n");
  CHECK(fs::is_symlink(link));
  struct stat st {};
  ::stat(spec.c_str(), &st);
  CHECK((st.st_mode & 0777) == 0640);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 2);  // no temporary left
}

TEST_CASE("the atomic write refuses, and leaves the spec as it was, when it cannot be sure") {
  TempDir dir;
  fs::path spec = dir.path / "a.sched";
  write(spec, "edited meanwhile\n");
  Diagnostics changed;
  CHECK_FALSE(profile::write_spec_atomically(spec.string(), "what was profiled\n", "new\n", changed));
  CHECK(changed.str().find("it changed while the costs were measured") != std::string::npos);
  CHECK(read(spec) == "edited meanwhile\n");

  // The temporary file cannot be created (here: the name is taken).
  fs::path tmp = spec;
  tmp += ".schedc-profile-" + std::to_string(getpid());
  write(tmp, "someone else's\n");
  Diagnostics blocked;
  CHECK_FALSE(profile::write_spec_atomically(spec.string(), "edited meanwhile\n", "new\n", blocked));
  CHECK(blocked.str().find("cannot create a temporary file next to it") != std::string::npos);
  CHECK(read(spec) == "edited meanwhile\n");
  CHECK(read(tmp) == "someone else's\n");

  Diagnostics missing;
  CHECK_FALSE(profile::write_spec_atomically((dir.path / "none.sched").string(), "", "new\n", missing));
  CHECK(missing.str().find("cannot write") != std::string::npos);
}
