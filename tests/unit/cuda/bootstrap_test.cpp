// The cuda backend's launch settings (runtime/src/backends/cuda/bootstrap.h), on the CPU: every
// way a launcher can set the environment, the mistakes it can make, and the NCCL id file.

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "backends/cuda/bootstrap.h"

using namespace schedrt::cuda;

namespace {

struct Env {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

Launch ok(const std::variant<Launch, std::string>& v) {
  if (auto* msg = std::get_if<std::string>(&v)) FAIL("unexpected error: " << *msg);
  return std::get<Launch>(v);
}

std::string error(const std::variant<Launch, std::string>& v) {
  REQUIRE(std::holds_alternative<std::string>(v));
  return std::get<std::string>(v);
}

Placement placed(const std::variant<Placement, std::string>& v) {
  if (auto* msg = std::get_if<std::string>(&v)) FAIL("unexpected error: " << *msg);
  return std::get<Placement>(v);
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string(name) + "-" + std::to_string(getpid()))).string();
}

}  // namespace

TEST_CASE("no launcher: every rank in this process, mode auto") {
  Launch l = ok(read_launch(4, Env{}.lookup()));
  CHECK(l.kind == LaunchKind::SingleProcess);
  CHECK(l.mode == CudaMode::Auto);
  CHECK(l.devices.empty());
}

TEST_CASE("auto mode: one GPU shares it (local), enough GPUs get NCCL") {
  Launch l = ok(read_launch(4, Env{}.lookup()));
  Placement one = placed(place_ranks(l, 4, 1));
  CHECK(one.mode == CudaMode::Local);
  CHECK(one.device_of_rank == std::vector<int>{0, 0, 0, 0});
  Placement eight = placed(place_ranks(l, 4, 8));
  CHECK(eight.mode == CudaMode::Nccl);
  CHECK(eight.device_of_rank == std::vector<int>{0, 1, 2, 3});
  // Fewer GPUs than ranks: local mode, all on device 0 unless devices are listed.
  Placement two = placed(place_ranks(l, 4, 2));
  CHECK(two.mode == CudaMode::Local);
  CHECK(two.device_of_rank == std::vector<int>{0, 0, 0, 0});
  // One rank: nothing to communicate, local mode.
  CHECK(placed(place_ranks(l, 1, 8)).mode == CudaMode::Local);
}

TEST_CASE("SCHEDC_CUDA_MODE and SCHEDC_CUDA_DEVICES") {
  Env env;
  env.vars = {{"SCHEDC_CUDA_MODE", "local"}, {"SCHEDC_CUDA_DEVICES", "2,0"}};
  Launch l = ok(read_launch(3, env.lookup()));
  CHECK(l.mode == CudaMode::Local);
  CHECK(l.devices == std::vector<int>{2, 0});
  Placement p = placed(place_ranks(l, 3, 4));
  CHECK(p.device_of_rank == std::vector<int>{2, 0, 2});  // round robin over the list

  env.vars = {{"SCHEDC_CUDA_MODE", "nccl"}};
  Launch n = ok(read_launch(4, env.lookup()));
  CHECK(placed(place_ranks(n, 4, 4)).device_of_rank == std::vector<int>{0, 1, 2, 3});
  std::string refused = std::get<std::string>(place_ranks(n, 4, 2));
  CHECK(refused.find("NCCL refuses two ranks on one device") != std::string::npos);

  env.vars = {{"SCHEDC_CUDA_DEVICES", "0,5"}};
  CHECK(std::get<std::string>(place_ranks(ok(read_launch(2, env.lookup())), 2, 2)).find("names device 5") !=
        std::string::npos);
  CHECK(std::get<std::string>(place_ranks(Launch{}, 2, 0)) == "no CUDA device is visible");
}

TEST_CASE("malformed single-process settings are errors that name the variable") {
  Env env;
  env.vars = {{"SCHEDC_CUDA_MODE", "gpu"}};
  CHECK(error(read_launch(2, env.lookup())) == "SCHEDC_CUDA_MODE=`gpu`: expected `auto`, `local` or `nccl`");
  for (const char* bad : {"0,,1", "a", "-1", "0,0", "1x", "99999"}) {
    env.vars = {{"SCHEDC_CUDA_DEVICES", bad}};
    CHECK(error(read_launch(2, env.lookup())).rfind("SCHEDC_CUDA_DEVICES=", 0) == 0);
  }
}

TEST_CASE("RANK / WORLD_SIZE / LOCAL_RANK / SCHEDC_NCCL_ID_FILE: one process per rank") {
  Env env;
  env.vars = {{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"SCHEDC_NCCL_ID_FILE", "/shared/id"}};
  Launch l = ok(read_launch(4, env.lookup()));
  CHECK(l.kind == LaunchKind::Env);
  CHECK(l.rank == 3);
  CHECK(l.world_size == 4);
  CHECK(l.local_rank == 1);
  CHECK(l.id_file == "/shared/id");
  env.vars.erase("LOCAL_RANK");
  CHECK(ok(read_launch(4, env.lookup())).local_rank == 3);  // one node: the local rank is the rank
}

TEST_CASE("launcher mistakes are errors, never a guess") {
  Env env;
  env.vars = {{"RANK", "0"}};
  CHECK(error(read_launch(2, env.lookup())).find("RANK and WORLD_SIZE must be set together") != std::string::npos);
  env.vars = {{"RANK", "0"}, {"WORLD_SIZE", "2"}};
  CHECK(error(read_launch(2, env.lookup())).find("set SCHEDC_NCCL_ID_FILE") != std::string::npos);
  env.vars = {{"RANK", "0"}, {"WORLD_SIZE", "3"}, {"SCHEDC_NCCL_ID_FILE", "/x"}};
  CHECK(error(read_launch(2, env.lookup())) ==
        "WORLD_SIZE is 3, but the program has 2 ranks (start one process per rank)");
  env.vars = {{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"SCHEDC_NCCL_ID_FILE", "/x"}};
  CHECK(error(read_launch(2, env.lookup())) == "RANK=`2`: expected an integer in 0..1");
  env.vars = {{"RANK", "one"}, {"WORLD_SIZE", "2"}, {"SCHEDC_NCCL_ID_FILE", "/x"}};
  CHECK(error(read_launch(2, env.lookup())) == "RANK=`one`: expected an integer in 0..1");
  env.vars = {{"RANK", "0"}, {"WORLD_SIZE", "0"}, {"SCHEDC_NCCL_ID_FILE", "/x"}};
  CHECK(error(read_launch(2, env.lookup())) == "WORLD_SIZE=`0`: expected a positive integer");
  env.vars = {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-1"}, {"SCHEDC_NCCL_ID_FILE", "/x"}};
  CHECK(error(read_launch(2, env.lookup())) == "LOCAL_RANK=`-1`: expected a non-negative integer");
}

TEST_CASE("mpirun is recognised by its environment") {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    Env env;
    env.vars = {{var, "4"}};
    CHECK(ok(read_launch(4, env.lookup())).kind == LaunchKind::Mpi);
  }
}

TEST_CASE("the NCCL id file: written whole by rank 0, read by the others, never a stale or foreign one") {
  std::string path = temp_path("schedc-nccl-id-test");
  std::filesystem::remove(path);
  std::vector<std::byte> id(128), got(128);
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<std::byte>(i * 7 + 1);
  CHECK(publish_id(path, 4, id) == "");
  CHECK(read_id(path, 4, got, 1) == "");
  CHECK(got == id);
  // A second rank 0 (or a stale file from a crashed run) is refused.
  CHECK(publish_id(path, 4, id).find("already exists") != std::string::npos);
  // Another world size is another run.
  CHECK(read_id(path, 2, got, 1).find("another world size") != std::string::npos);
  std::filesystem::remove(path);
  // Not an id at all.
  std::ofstream(path) << "hello\n";
  CHECK(read_id(path, 4, got, 1).find("does not hold an NCCL id written by schedrt") != std::string::npos);
  std::filesystem::remove(path);
  // Rank 0 never shows up: the wait ends with a message, not a hang.
  std::string late = read_id(path, 4, got, 0.05);
  CHECK(late.find("waited 0.05 s for rank 0 to write the NCCL id") != std::string::npos);
}
