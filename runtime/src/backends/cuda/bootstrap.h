#pragma once
// How the ranks of a cuda run find each other (internal to schedrt). No CUDA headers: this part is
// compiled and unit tested in every build.
//
//   - one process for all ranks (no launcher): SCHEDC_CUDA_MODE = auto | local | nccl, and
//     SCHEDC_CUDA_DEVICES = "0,1,..." (default: every visible device). `local` runs every rank on
//     the listed devices round robin (by default all on device 0) and moves messages with device
//     copies; `nccl` puts one rank on each listed device and uses NCCL; `auto` is `nccl` when there
//     are at least as many devices as ranks, else `local`.
//   - one process per rank from environment variables (torchrun, Slurm scripts, any launcher):
//     RANK, WORLD_SIZE, LOCAL_RANK (default RANK) and SCHEDC_NCCL_ID_FILE, a path every rank can
//     read where rank 0 publishes the NCCL id.
//   - one process per rank under mpirun (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK set): MPI
//     broadcasts the NCCL id.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace schedrt::cuda {

enum class LaunchKind { SingleProcess, Env, Mpi };
enum class CudaMode { Auto, Local, Nccl };

struct Launch {
  LaunchKind kind = LaunchKind::SingleProcess;
  // SingleProcess
  CudaMode mode = CudaMode::Auto;
  std::vector<int> devices;  // empty: every visible device
  // Env and Mpi (Mpi fills rank, world_size and local_rank after MPI_Init)
  int32_t rank = 0;
  int32_t world_size = 1;
  int32_t local_rank = 0;
  std::string id_file;  // Env
};

/// Looks up an environment variable (nullptr when unset); getenv, or a table in tests.
using EnvLookup = std::function<const char*(const char*)>;

/// Reads the launch for a program of `ranks` ranks from the environment. A malformed or
/// inconsistent setting is a message naming the variable, never a guess.
std::variant<Launch, std::string> read_launch(int32_t ranks, const EnvLookup& env);

/// SingleProcess: which mode and which device each rank gets, given the visible device count.
struct Placement {
  CudaMode mode = CudaMode::Local;  // Local or Nccl
  std::vector<int> device_of_rank;
};
std::variant<Placement, std::string> place_ranks(const Launch& launch, int32_t ranks, int visible_devices);

/// The NCCL id in a file (rank 0 writes, the others read). The file holds a magic line, the world
/// size and the id's bytes; it is written to a temporary name and renamed, so that a reader sees
/// all of it or nothing. Rank 0 refuses to overwrite an existing file (a previous run's id would
/// make the other ranks join the wrong communicator).
std::string publish_id(const std::string& path, int32_t world_size, std::span<const std::byte> id);
/// Waits up to `timeout_s` for the file, checks the magic and the world size, and fills `id`.
std::string read_id(const std::string& path, int32_t world_size, std::span<std::byte> id, double timeout_s);

/// "auto", "local" or "nccl".
std::string to_string(CudaMode m);

}  // namespace schedrt::cuda
