// The MPI backend: one process per rank (OpenMPI; `mpirun -np P`). A group is a batch of
// MPI_Isend / MPI_Irecv; MPI matches messages of one (source, tag, communicator) in order, which
// is the channel's first-in first-out order. Waits poll MPI_Test so that the watchdog can fire,
// backing off to short sleeps so that oversubscribed ranks (more processes than cores) do not
// starve each other.

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "backends/backends.h"
#include "schedrt/context_impl.h"

namespace schedrt {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTagProgram = 1;
constexpr int kTagExchange = 2;

class MpiBackend final : public Backend {
 public:
  MpiBackend(int32_t rank, int32_t size, BackendOptions options) : rank_(rank), size_(size), options_(options) {}

  std::string name() const override { return "mpi"; }
  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }
  int64_t blocked_ns() const override { return blocked_ns_; }

  void post(int32_t group, std::span<const PostedTransfer> transfers) override {
    if (static_cast<size_t>(group) >= groups_.size()) groups_.resize(static_cast<size_t>(group) + 1);
    GroupState& g = groups_[static_cast<size_t>(group)];
    g.transfers = transfers;
    g.requests.assign(transfers.size(), MPI_REQUEST_NULL);
    g.done.assign(transfers.size(), 0);
    posted_.push_back(group);
    for (size_t i = 0; i < transfers.size(); ++i) {
      const PostedTransfer& t = transfers[i];
      if (t.transfer.peer < 0 || t.transfer.peer >= size_ || t.transfer.peer == rank_)
        throw Error("rank " + std::to_string(rank_) + ": `" + format(t.transfer) +
                    "` names a peer that is not another rank");
      int count = static_cast<int>(kHeaderBytes + t.bytes);
      if (t.transfer.dir == Dir::Send) std::memcpy(t.buffer, &t.header, sizeof t.header);
      if (t.transfer.dir == Dir::Send)
        MPI_Isend(t.buffer, count, MPI_BYTE, t.transfer.peer, kTagProgram, MPI_COMM_WORLD, &g.requests[i]);
      else MPI_Irecv(t.buffer, count, MPI_BYTE, t.transfer.peer, kTagProgram, MPI_COMM_WORLD, &g.requests[i]);
    }
  }

  void wait(int32_t group, std::span<const int32_t> which) override {
    GroupState& g = groups_[static_cast<size_t>(group)];
    for (int32_t i : which) complete(g, static_cast<size_t>(i));
  }

  void wait_all() override {
    for (int32_t group : posted_) {
      GroupState& g = groups_[static_cast<size_t>(group)];
      for (size_t i = 0; i < g.transfers.size(); ++i) complete(g, i);
    }
    posted_.clear();
  }

  void barrier() override {
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    poll(req, [&] {
      return "rank " + std::to_string(rank_) + " waited " + format_seconds(options_.timeout_s) +
             " at a barrier for the other ranks";
    });
  }

  void exchange(int32_t peer, const void* send_data, size_t send_bytes, void* recv_data, size_t recv_bytes) override {
    MPI_Request reqs[2];
    MPI_Irecv(recv_data, static_cast<int>(recv_bytes), MPI_BYTE, peer, kTagExchange, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(send_data, static_cast<int>(send_bytes), MPI_BYTE, peer, kTagExchange, MPI_COMM_WORLD, &reqs[1]);
    for (MPI_Request& r : reqs)
      poll(r, [&] { return describe_stuck(rank_, recv(W(-1, -1), peer, 0), options_.timeout_s); });
  }

  std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& mine) override {
    int n = static_cast<int>(mine.size());
    std::vector<int> sizes(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
    MPI_Request req;
    MPI_Igather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    auto what = [&] {
      return "rank " + std::to_string(rank_) + " waited " + format_seconds(options_.timeout_s) + " to gather results";
    };
    poll(req, what);
    int total = 0;
    for (size_t r = 0; r < sizes.size(); ++r) offsets[r] = total, total += sizes[r];
    std::vector<std::byte> all(rank_ == 0 ? static_cast<size_t>(total) : 0);
    MPI_Igatherv(mine.data(), n, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    poll(req, what);
    std::vector<std::vector<std::byte>> out;
    if (rank_ != 0) return out;
    for (size_t r = 0; r < sizes.size(); ++r)
      out.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + sizes[r]);
    return out;
  }

  void abort(const std::string& message) override {
    std::fprintf(stderr, "schedrt: error: %s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  void* allocate(size_t bytes) override { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); }
  void deallocate(void* p) override { std::free(p); }

 private:
  struct GroupState {
    std::span<const PostedTransfer> transfers;
    std::vector<MPI_Request> requests;
    std::vector<char> done;
  };

  template <class What> void poll(MPI_Request& req, What what) {
    int flag = 0;
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (flag) return;
    Clock::time_point start = Clock::now();
    auto deadline = start + std::chrono::duration<double>(options_.timeout_s);
    for (int spins = 0; !flag; ++spins) {
      if (spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(spins > 2000 ? 200 : 20));
      else if (spins > 16) std::this_thread::yield();
      MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
      if (!flag && Clock::now() > deadline) {
        blocked_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
        throw Error(what());
      }
    }
    blocked_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  }

  void complete(GroupState& g, size_t i) {
    if (g.done[i]) return;
    const PostedTransfer& t = g.transfers[i];
    poll(g.requests[i], [&] {
      if (t.transfer.dir == Dir::Recv) return describe_stuck(rank_, t.transfer, options_.timeout_s);
      return "rank " + std::to_string(rank_) + " waited " + format_seconds(options_.timeout_s) + " for rank " +
             std::to_string(t.transfer.peer) + " to receive `" + format(t.transfer.producer) + "`, message #" +
             std::to_string(t.transfer.seq) + " on channel " + std::to_string(rank_) + "->" +
             std::to_string(t.transfer.peer);
    });
    g.done[i] = 1;
    if (t.transfer.dir != Dir::Recv) return;
    MessageHeader h;
    std::memcpy(&h, t.buffer, sizeof h);
    const MessageHeader& want = t.header;
    if (h.magic != want.magic || h.seq != want.seq || h.kind != want.kind || h.mb != want.mb || h.stage != want.stage ||
        h.bytes != want.bytes)
      throw Error("rank " + std::to_string(rank_) + " expected `" + format(t.transfer.producer) + "` as message #" +
                  std::to_string(want.seq) + " from rank " + std::to_string(t.transfer.peer) + ", got `" +
                  format(Action{static_cast<Kind>(h.kind & 3), h.mb, h.stage}) + "` (#" + std::to_string(h.seq) + ")");
  }

  int32_t rank_, size_;
  BackendOptions options_;
  std::vector<GroupState> groups_;
  std::vector<int32_t> posted_;
  int64_t blocked_ns_ = 0;
};

}  // namespace

bool have_mpi() { return true; }

std::string mpi_start(int32_t ranks, int* argc, char*** argv, int* rank, int* size) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  if (*size == ranks) return "";
  MPI_Finalize();
  return "the program has " + std::to_string(ranks) + " ranks, but MPI started " + std::to_string(*size) +
         " processes (run it with `mpirun -np " + std::to_string(ranks) + "`)";
}

std::string run_mpi(int32_t ranks, const BackendOptions& options, const std::function<void(Backend&)>& rank_main,
                    int* argc, char*** argv) {
  int rank = 0, size = 0;
  if (std::string error = mpi_start(ranks, argc, argv, &rank, &size); !error.empty()) return error;
  MpiBackend backend(rank, size, options);
  try {
    rank_main(backend);
  } catch (const std::exception& e) {
    backend.abort("rank " + std::to_string(rank) + ": " + e.what());
  }
  MPI_Finalize();
  return "";
}

}  // namespace schedrt
