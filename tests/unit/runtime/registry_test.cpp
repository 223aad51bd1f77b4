// The stage registry: schedrt's own stages first, a user's registered from its translation unit,
// and the mistakes recorded (not thrown during static initialisation) for the executor to report.

#include <doctest/doctest.h>

#include <algorithm>

#include "schedrt/stage.h"

using namespace schedrt;

namespace {

class Tiny final : public Stage {
 public:
  size_t boundary_bytes() const override { return 8; }
  void forward(int32_t, const void*, void*) override {}
  void backward_input(int32_t, const void*, void*) override {}
  void backward_weight(int32_t) override {}
};

std::unique_ptr<Stage> make_tiny(const StageConfig&, int32_t, const StageEnv&) { return std::make_unique<Tiny>(); }

bool has_error(const std::string& text) {
  auto errors = registry_errors();
  return std::any_of(errors.begin(), errors.end(),
                     [&](const std::string& e) { return e.find(text) != std::string::npos; });
}

}  // namespace

SCHEDRT_REGISTER_STAGE(zz_tiny, .description = "a test stage", .make = make_tiny);

TEST_CASE("schedrt's own stages come first, then the user's by name") {
  std::vector<std::string> names = stage_names();
  REQUIRE(names.size() >= 4);
  CHECK(names[0] == "mlp");
  CHECK(names[1] == "synthetic");
  CHECK(names[2] == "noop");
  CHECK(std::find(names.begin(), names.end(), "zz_tiny") != names.end());
  CHECK(has_sequential_reference("mlp"));
  CHECK_FALSE(has_sequential_reference("synthetic"));
  CHECK_FALSE(has_sequential_reference("zz_tiny"));
  CHECK_FALSE(has_sequential_reference("nothing"));
}

TEST_CASE("a registered stage is made by name; host-only stages are refused for device memory") {
  StageConfig c;
  c.stage = "zz_tiny";
  CHECK(make_stage(c, 0)->boundary_bytes() == 8);
  StageEnv device;
  device.memory = StageMemory::Device;
  CHECK_THROWS_WITH(make_stage(c, 0, device),
                    doctest::Contains("stage `zz_tiny` has no implementation for device memory"));
  c.stage = "synthetic";  // touches no tensors: serves every backend
  CHECK(make_stage(c, 0, device) != nullptr);
  c.stage = "nope";
  CHECK_THROWS_WITH(make_stage(c, 0),
                    doctest::Contains("no stage `nope` is registered; registered stages: `mlp`, `synthetic`, `noop`"));
}

TEST_CASE("mistakes in registration are recorded, and the first registration stays") {
  register_stage({.name = "zz_tiny", .make = make_tiny});
  CHECK(has_error("stage `zz_tiny` is registered twice (host and host memory); the first stays"));
  register_stage({.name = "mlp", .memory = StageMemory::None, .make = make_tiny});
  CHECK(has_error("stage `mlp` is registered twice"));
  register_stage({.name = "1bad", .make = make_tiny});
  CHECK(has_error("stage name `1bad` is not a name"));
  register_stage({.name = "zz_nofactory"});
  CHECK(has_error("stage `zz_nofactory` is registered without a factory"));
  static_assert(SCHEDRT_STAGE_API_VERSION == 3, "version 3: Stage gained checkpoint and recompute");
  register_stage({.name = "zz_old", .make = make_tiny, .api_version = 1});
  CHECK(has_error(
      "stage `zz_old` was compiled against schedrt/stage.h version 1, this schedrt has version 3; rebuild it"));
  CHECK(find_stage("zz_old", StageMemory::Host) == nullptr);
  StageConfig c;
  CHECK(make_stage(c, 0)->gradient_bytes() > 0);  // `mlp` is still the real one
}
