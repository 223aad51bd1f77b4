// run_cuda: reads the launch (bootstrap.h), sets up devices and NCCL, and runs the ranks of this
// process. Setup failures (no device, no library, a bad variable, NCCL not coming up) are messages,
// never hangs: NCCL communicators are created non-blocking and polled under the watchdog.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#if SCHEDRT_CUDA_WITH_MPI
#include <mpi.h>
#endif

#include "backends/backends.h"
#include "backends/cuda/bootstrap.h"
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_backend.h"

namespace schedrt {

bool have_cuda() { return true; }

namespace cuda {
namespace {

using Clock = std::chrono::steady_clock;

int visible_devices(std::string* why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    *why = std::string("no CUDA device is visible (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
    return 0;
  }
  if (count == 0) *why = "no CUDA device is visible";
  return count;
}

// A communicator for `rank` of `world` on the current device, set up under the watchdog.
ncclComm_t init_comm(const ncclUniqueId& id, int32_t world, int32_t rank, double timeout_s,
                     const std::function<bool()>& stopped) {
  const Libs& x = nccl();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = x.ncclCommInitRankConfig(&comm, world, id, rank, &config);
  auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (r == ncclInProgress || r == ncclSuccess) {
    if (comm) x.ncclCommGetAsyncError(comm, &r);
    if (r != ncclInProgress) break;
    if (stopped && stopped()) {
      x.ncclCommAbort(comm);
      throw Aborted("stopped by another rank");
    }
    if (Clock::now() > deadline) {
      x.ncclCommAbort(comm);
      throw Error("rank " + std::to_string(rank) + " waited " + format_seconds(timeout_s) +
                  " for NCCL to set up its communicator (are all " + std::to_string(world) +
                  " ranks started, with the same id?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (r == ncclInvalidUsage)
    check(r,
          ("rank " + std::to_string(rank) +
           ": NCCL refused the communicator (two ranks on one GPU? NCCL needs one "
           "device per rank; all ranks in one process without a launcher can share a GPU)")
              .c_str(),
          comm);
  check(r, ("rank " + std::to_string(rank) + ": setting up NCCL").c_str(), comm);
  return comm;
}

std::string run_single_process(int32_t ranks, const BackendOptions& options,
                               const std::function<void(Backend&)>& rank_main, const Launch& launch) {
  std::string why;
  int count = visible_devices(&why);
  if (count == 0) return why;
  auto placed = place_ranks(launch, ranks, count);
  if (auto* msg = std::get_if<std::string>(&placed)) return *msg;
  const Placement& p = std::get<Placement>(placed);
  InProcess group(ranks, options);
  ncclUniqueId id{};
  if (p.mode == CudaMode::Nccl) check(nccl().ncclGetUniqueId(&id), "ncclGetUniqueId");
  // The backends outlive every rank's thread: a rank that fails leaves its posted transfers in the
  // shared channels, where another rank may still look at them before it sees the abort.
  std::vector<std::unique_ptr<CudaBackend>> backends(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        int dev = p.device_of_rank[static_cast<size_t>(r)];
        check(cudaSetDevice(dev), "cudaSetDevice");
        if (p.mode == CudaMode::Local) {
          backends[static_cast<size_t>(r)] = make_local_backend(group, r, dev);
        } else {
          ncclComm_t comm = init_comm(id, ranks, r, options.timeout_s, [&] { return group.aborted(); });
          backends[static_cast<size_t>(r)] = make_nccl_backend(&group, comm, r, ranks, options, dev, {});
        }
        rank_main(*backends[static_cast<size_t>(r)]);
      } catch (const Aborted&) {
      } catch (const std::exception& e) {
        group.abort("rank " + std::to_string(r) + ": " + e.what());
      }
    });
  for (std::thread& t : threads) t.join();
  backends.clear();
  return group.aborted() ? group.message() : std::string();
}

[[noreturn]] void exit_failed(const std::string& message) {
  std::fprintf(stderr, "schedrt: error: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

// One rank in this process: its device is its local rank.
std::string run_one_rank(int32_t rank, int32_t world, int32_t local_rank, const BackendOptions& options,
                         const std::function<void(Backend&)>& rank_main, const std::function<ncclUniqueId()>& get_id,
                         const std::function<void()>& after_init,
                         std::function<void(const std::string&)> abort_process) {
  std::string why;
  int count = visible_devices(&why);
  if (count == 0) return "rank " + std::to_string(rank) + ": " + why;
  if (local_rank >= count)
    return "rank " + std::to_string(rank) + " has local rank " + std::to_string(local_rank) + " but " +
           std::to_string(count) + (count == 1 ? " device is" : " devices are") +
           " visible: NCCL needs one device per rank (start at most that many processes per node, or run every rank in "
           "one process, without a launcher, to share a GPU)";
  check(cudaSetDevice(local_rank), "cudaSetDevice");
  ncclUniqueId id = get_id();
  ncclComm_t comm = init_comm(id, world, rank, options.timeout_s, {});
  if (after_init) after_init();
  auto backend = make_nccl_backend(nullptr, comm, rank, world, options, local_rank, std::move(abort_process));
  try {
    rank_main(*backend);
  } catch (const std::exception& e) {
    backend->abort("rank " + std::to_string(rank) + ": " + e.what());
  }
  return "";
}

std::string run_env(const BackendOptions& options, const std::function<void(Backend&)>& rank_main, const Launch& l) {
  auto get_id = [&] {
    ncclUniqueId id{};
    std::span<std::byte> bytes(reinterpret_cast<std::byte*>(&id), sizeof id);
    std::string failure;
    if (l.rank == 0) {
      check(nccl().ncclGetUniqueId(&id), "ncclGetUniqueId");
      failure = publish_id(l.id_file, l.world_size, bytes);
    } else {
      failure = read_id(l.id_file, l.world_size, bytes, options.timeout_s);
    }
    if (!failure.empty()) throw Error("rank " + std::to_string(l.rank) + ": " + failure);
    return id;
  };
  // Every rank has read the id once the communicator is up: rank 0 removes the file, so that the
  // next run does not find a stale one.
  auto after_init = [&] {
    std::error_code ec;
    if (l.rank == 0) std::filesystem::remove(l.id_file, ec);
  };
  return run_one_rank(l.rank, l.world_size, l.local_rank, options, rank_main, get_id, after_init, exit_failed);
}

#if SCHEDRT_CUDA_WITH_MPI
std::string run_under_mpi(int32_t ranks, const BackendOptions& options, const std::function<void(Backend&)>& rank_main,
                          int* argc, char*** argv) {
  int rank = 0, size = 0, local_rank = 0;
  if (std::string error = mpi_start(ranks, argc, argv, &rank, &size); !error.empty()) return error;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  auto get_id = [&] {
    ncclUniqueId id{};
    if (rank == 0) check(nccl().ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    return id;
  };
  auto abort_all = [](const std::string& message) {
    std::fprintf(stderr, "schedrt: error: %s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  };
  std::string failure;
  try {
    failure = run_one_rank(rank, size, local_rank, options, rank_main, get_id, {}, abort_all);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  // A setup failure on one process must not leave the others waiting in NCCL: stop them all.
  if (!failure.empty()) abort_all(failure);
  MPI_Finalize();
  return "";
}
#endif

}  // namespace
}  // namespace cuda

std::string run_cuda(int32_t ranks, const BackendOptions& options, const std::function<void(Backend&)>& rank_main,
                     int* argc, char*** argv) {
  using namespace cuda;
  auto launch = read_launch(ranks, [](const char* name) -> const char* { return std::getenv(name); });
  if (auto* msg = std::get_if<std::string>(&launch)) return *msg;
  const Launch& l = std::get<Launch>(launch);
  try {
    switch (l.kind) {
      case LaunchKind::SingleProcess: return run_single_process(ranks, options, rank_main, l);
      case LaunchKind::Env: return run_env(options, rank_main, l);
      case LaunchKind::Mpi:
#if SCHEDRT_CUDA_WITH_MPI
        return run_under_mpi(ranks, options, rank_main, argc, argv);
#else
        return "started by mpirun, but this schedrt was built without MPI: launch with RANK, WORLD_SIZE, LOCAL_RANK "
               "and "
               "SCHEDC_NCCL_ID_FILE instead";
#endif
    }
  } catch (const Aborted& e) {
    return e.what();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace schedrt
