// NCCL mode: one rank per GPU. Each posted group becomes one ncclGroupStart / ncclSend|ncclRecv ...
// / ncclGroupEnd on the rank's communication stream, and groups are issued strictly in posting
// order, as the deadlock-freedom proof assumes (codegen/verify_program.h). Communicators are
// non-blocking: when NCCL has to set up a connection, ncclGroupEnd returns ncclInProgress and the
// group stays "issuing" until ncclCommGetAsyncError says it is enqueued. A post never waits for
// that (later groups queue behind it); a wait does, under the watchdog. Headers travel in front of
// the payload: a send's is copied from pinned memory into its buffer before the send, a receive's
// is copied back after it and checked at wait_all, once the step's data is on the device anyway.

#include <chrono>
#include <cstring>
#include <deque>
#include <thread>

#include "backends/backends.h"
#include "backends/cuda/cuda_backend.h"

namespace schedrt::cuda {
namespace {

using Clock = std::chrono::steady_clock;

class NcclBackend final : public CudaBackend {
 public:
  NcclBackend(InProcess* group, ncclComm_t comm, int32_t rank, int32_t size, BackendOptions options, int device,
              std::function<void(const std::string&)> abort_process)
      : CudaBackend(rank, size, options, device), group_(group), comm_(comm), x_(nccl()),
        abort_process_(std::move(abort_process)) {}

  ~NcclBackend() override {
    // Abort, not destroy: destroying waits for peers, and after a failure a peer may be gone.
    if (comm_) x_.ncclCommAbort(comm_);
    if (staging_) cudaFree(staging_);
  }

  std::string name() const override { return "cuda"; }

  void post(int32_t group, std::span<const PostedTransfer> transfers) override {
    if (static_cast<size_t>(group) >= groups_.size()) groups_.resize(static_cast<size_t>(group) + 1);
    Group& g = groups_[static_cast<size_t>(group)];
    if (g.state == State::Queued || g.state == State::Issuing)
      throw Error("rank " + std::to_string(rank_) + " posts g" + std::to_string(group) + " again before it was issued");
    bool sends = false;
    for (const PostedTransfer& t : transfers) {
      if (t.transfer.peer < 0 || t.transfer.peer >= size_ || t.transfer.peer == rank_)
        throw Error("rank " + std::to_string(rank_) + ": `" + format(t.transfer) +
                    "` names a peer that is not another rank");
      sends |= t.transfer.dir == Dir::Send;
    }
    g.transfers = transfers;
    g.state = State::Queued;
    // Sends carry what the compute stream has produced so far; receives only need their buffers,
    // which nothing else writes in this step, so they need not wait for compute.
    g.ready = nullptr;
    if (sends) {
      g.ready = dev_.events.next();
      check(cudaEventRecord(g.ready, dev_.compute), "cudaEventRecord");
    }
    g.start = dev_.events.next();
    g.done = dev_.events.next();
    post_interval_.start = g.start;
    post_interval_.end = g.done;
    queue_.push_back(group);
    posted_.push_back(group);
    pump(kNoWait);
  }

  void wait(int32_t group, std::span<const int32_t>) override {
    pump(group);
    check(cudaStreamWaitEvent(dev_.compute, groups_[static_cast<size_t>(group)].done, 0), "cudaStreamWaitEvent");
  }

  void wait_all() override {
    pump(kAll);
    cudaEvent_t comm_done = dev_.events.next();
    check(cudaEventRecord(comm_done, dev_.comm), "cudaEventRecord");
    check(cudaStreamWaitEvent(dev_.compute, comm_done, 0), "cudaStreamWaitEvent");
    final_event_ = dev_.events.next();
    check(cudaEventRecord(final_event_, dev_.compute), "cudaEventRecord");
    await(final_event_, [this] { return describe_unfinished(); });
    for (const Check& c : checks_) {
      const MessageHeader& h = *c.got;
      const MessageHeader& want = c.transfer->header;
      if (h.magic != want.magic || h.seq != want.seq || h.kind != want.kind || h.mb != want.mb ||
          h.stage != want.stage || h.bytes != want.bytes)
        throw Error(
            "rank " + std::to_string(rank_) + " expected `" + format(c.transfer->transfer.producer) + "` as message #" +
            std::to_string(want.seq) + " from rank " + std::to_string(c.transfer->transfer.peer) + ", got `" +
            format(Action{static_cast<Kind>(h.kind & 3), h.mb, h.stage}) + "` (#" + std::to_string(h.seq) + ")");
    }
    checks_.clear();
    for (int32_t group : posted_) groups_[static_cast<size_t>(group)].state = State::Idle;
    posted_.clear();
  }

  void barrier() override {
    drain("the previous step");
    if (group_) {
      group_->barrier(rank_);
    } else {
      int32_t* flag = static_cast<int32_t*>(staging(sizeof(int32_t)));
      check(x_.ncclAllReduce(flag, flag, 1, ncclInt32, ncclSum, comm_, dev_.comm), "ncclAllReduce (barrier)", comm_);
      collective_done("at a barrier for the other ranks");
    }
    mark_step_start();
  }

  void exchange(int32_t peer, const void* send_data, size_t send_bytes, void* recv_data, size_t recv_bytes) override {
    if (group_) {
      group_->exchange(rank_, peer, send_data, send_bytes, recv_data, recv_bytes);
      return;
    }
    // A side with nothing to move posts nothing (the peer's call has the sizes swapped).
    auto* buf = static_cast<std::byte*>(staging(send_bytes + recv_bytes));
    std::string what = "for rank " + std::to_string(peer) + "'s replica gradients";
    if (send_bytes > 0)
      check(cudaMemcpyAsync(buf, send_data, send_bytes, cudaMemcpyHostToDevice, dev_.comm), "cudaMemcpyAsync");
    check(x_.ncclGroupStart(), "ncclGroupStart");
    if (send_bytes > 0) check(x_.ncclSend(buf, send_bytes, ncclUint8, peer, comm_, dev_.comm), "ncclSend", comm_);
    if (recv_bytes > 0)
      check(x_.ncclRecv(buf + send_bytes, recv_bytes, ncclUint8, peer, comm_, dev_.comm), "ncclRecv", comm_);
    check(x_.ncclGroupEnd(), "ncclGroupEnd", comm_);
    collective_done(what);
    if (recv_bytes > 0) {
      check(cudaMemcpyAsync(recv_data, buf + send_bytes, recv_bytes, cudaMemcpyDeviceToHost, dev_.comm),
            "cudaMemcpyAsync");
      collective_done(what);
    }
  }

  std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& mine) override {
    drain("its work");
    if (group_) return group_->gather(rank_, mine);
    // Every blob padded to the largest, then one all-gather: the results are small.
    const std::string what = "to gather the results";
    auto* sizes = static_cast<int64_t*>(staging(static_cast<size_t>(size_ + 1) * sizeof(int64_t)));
    int64_t n = static_cast<int64_t>(mine.size());
    check(cudaMemcpyAsync(sizes + size_, &n, sizeof n, cudaMemcpyHostToDevice, dev_.comm), "cudaMemcpyAsync");
    check(x_.ncclAllGather(sizes + size_, sizes, 1, ncclInt64, comm_, dev_.comm), "ncclAllGather", comm_);
    collective_done(what);
    std::vector<int64_t> all_sizes(static_cast<size_t>(size_));
    check(
        cudaMemcpyAsync(all_sizes.data(), sizes, all_sizes.size() * sizeof(int64_t), cudaMemcpyDeviceToHost, dev_.comm),
        "cudaMemcpyAsync");
    collective_done(what);
    size_t most = 1;
    for (int64_t s : all_sizes) most = std::max(most, static_cast<size_t>(s));
    auto* buf = static_cast<std::byte*>(staging(most * static_cast<size_t>(size_ + 1)));
    check(cudaMemcpyAsync(buf, mine.data(), mine.size(), cudaMemcpyHostToDevice, dev_.comm), "cudaMemcpyAsync");
    check(x_.ncclAllGather(buf, buf + most, most, ncclUint8, comm_, dev_.comm), "ncclAllGather", comm_);
    collective_done(what);
    std::vector<std::vector<std::byte>> out;
    if (rank_ != 0) return out;
    std::vector<std::byte> host(most * static_cast<size_t>(size_));
    check(cudaMemcpyAsync(host.data(), buf + most, host.size(), cudaMemcpyDeviceToHost, dev_.comm), "cudaMemcpyAsync");
    collective_done(what);
    for (int32_t r = 0; r < size_; ++r) {
      auto* p = host.data() + static_cast<size_t>(r) * most;
      out.emplace_back(p, p + all_sizes[static_cast<size_t>(r)]);
    }
    return out;
  }

  void abort(const std::string& message) override {
    if (group_) {
      group_->abort(message);
      return;
    }
    // Free the peers blocked on this rank's transfers (NCCL reports an error there), then stop.
    if (comm_) x_.ncclCommAbort(comm_);
    comm_ = nullptr;
    abort_process_(message);
  }

  void publish_status(uint64_t status) override {
    if (group_) group_->publish(rank_, status);
  }

 protected:
  bool stopped() const override { return group_ && group_->aborted(); }

  void poll_errors() override {
    ncclResult_t r = ncclSuccess;
    x_.ncclCommGetAsyncError(comm_, &r);
    if (r != ncclSuccess && r != ncclInProgress)
      check(r, ("rank " + std::to_string(rank_) + ": NCCL failed (did another rank stop?)").c_str(), comm_);
  }

 private:
  enum class State { Idle, Queued, Issuing, Issued };
  struct Group {
    std::span<const PostedTransfer> transfers;
    State state = State::Idle;
    cudaEvent_t ready = nullptr, start = nullptr, done = nullptr;
  };
  struct Check {
    const PostedTransfer* transfer;
    const MessageHeader* got;
  };
  static constexpr int32_t kNoWait = -1;
  static constexpr int32_t kAll = -2;

  // Issues queued groups in order. `until`: kNoWait returns as soon as the head group is still
  // being set up by NCCL; kAll or a group number blocks (watchdog) until that much is issued.
  void pump(int32_t until) {
    if (until >= 0 && groups_[static_cast<size_t>(until)].state == State::Issued) return;
    auto deadline = Clock::now() + std::chrono::duration<double>(options_.timeout_s);
    for (int spins = 0; !queue_.empty(); ++spins) {
      int32_t head = queue_.front();
      Group& g = groups_[static_cast<size_t>(head)];
      if (g.state == State::Queued) issue(g);
      if (g.state == State::Issuing) {
        ncclResult_t r = ncclSuccess;
        check(x_.ncclCommGetAsyncError(comm_, &r), "ncclCommGetAsyncError", comm_);
        if (r == ncclInProgress) {
          if (until == kNoWait) return;
          if (stopped()) throw Aborted("stopped by another rank");
          if (Clock::now() > deadline)
            throw Error("rank " + std::to_string(rank_) + " waited " + format_seconds(options_.timeout_s) +
                        " for NCCL to connect g" + std::to_string(head) + " " + describe(g) +
                        " (is the peer posting its side?)");
          if (spins > 100) std::this_thread::sleep_for(std::chrono::microseconds(50));
          continue;
        }
        check(r, "NCCL (issuing a group)", comm_);
        issued(g);
      }
      queue_.pop_front();
      if (until >= 0 && head == until) return;
    }
  }

  void issue(Group& g) {
    if (g.ready) check(cudaStreamWaitEvent(dev_.comm, g.ready, 0), "cudaStreamWaitEvent");
    for (const PostedTransfer& t : g.transfers) {
      if (t.transfer.dir != Dir::Send) continue;
      MessageHeader* h = dev_.headers.next();
      *h = t.header;
      check(cudaMemcpyAsync(t.buffer, h, kHeaderBytes, cudaMemcpyHostToDevice, dev_.comm), "cudaMemcpyAsync (header)");
    }
    check(cudaEventRecord(g.start, dev_.comm), "cudaEventRecord");
    check(x_.ncclGroupStart(), "ncclGroupStart");
    for (const PostedTransfer& t : g.transfers) {
      size_t count = kHeaderBytes + t.bytes;
      if (t.transfer.dir == Dir::Send)
        check(x_.ncclSend(t.buffer, count, ncclUint8, t.transfer.peer, comm_, dev_.comm), "ncclSend", comm_);
      else check(x_.ncclRecv(t.buffer, count, ncclUint8, t.transfer.peer, comm_, dev_.comm), "ncclRecv", comm_);
    }
    ncclResult_t r = x_.ncclGroupEnd();
    check(r, "ncclGroupEnd", comm_);
    g.state = State::Issuing;
    if (r == ncclSuccess) {
      // Enqueued already; ncclCommGetAsyncError would say so too.
      ncclResult_t async = ncclSuccess;
      x_.ncclCommGetAsyncError(comm_, &async);
      if (async != ncclInProgress) {
        check(async, "NCCL (issuing a group)", comm_);
        issued(g);
      }
    }
  }

  // The group's operations are on the stream: read back received headers, mark the end.
  void issued(Group& g) {
    for (const PostedTransfer& t : g.transfers) {
      if (t.transfer.dir != Dir::Recv) continue;
      MessageHeader* h = dev_.headers.next();
      check(cudaMemcpyAsync(h, t.buffer, kHeaderBytes, cudaMemcpyDeviceToHost, dev_.comm), "cudaMemcpyAsync (header)");
      checks_.push_back(Check{&t, h});
    }
    check(cudaEventRecord(g.done, dev_.comm), "cudaEventRecord");
    g.state = State::Issued;
  }

  std::string describe(const Group& g) const {
    std::string s = "{";
    for (const PostedTransfer& t : g.transfers) s += (s.size() > 1 ? ", " : "") + format(t.transfer);
    return s + "}";
  }

  // The first group whose transfers have not completed on the device.
  std::string describe_unfinished() {
    for (int32_t group : posted_) {
      const Group& g = groups_[static_cast<size_t>(group)];
      if (cudaEventQuery(g.done) != cudaErrorNotReady) continue;
      for (const PostedTransfer& t : g.transfers)
        if (t.transfer.dir == Dir::Recv)
          return describe_stuck(rank_, t.transfer, options_.timeout_s) + " (g" + std::to_string(group) + ")";
      const Transfer& t = g.transfers.front().transfer;
      return "rank " + std::to_string(rank_) + " waited " + format_seconds(options_.timeout_s) + " for rank " +
             std::to_string(t.peer) + " to receive `" + format(t.producer) + "`, message #" + std::to_string(t.seq) +
             " on channel " + std::to_string(rank_) + "->" + std::to_string(t.peer);
    }
    return "rank " + std::to_string(rank_) + " waited " + format_seconds(options_.timeout_s) +
           " for its device to finish the step (a kernel does not end)";
  }

  // Device scratch for host collectives (after the program): grown when too small, else reused.
  void* staging(size_t bytes) {
    if (bytes > staging_bytes_) {
      if (staging_) check(cudaFree(staging_), "cudaFree");
      staging_ = nullptr;
      check(cudaMalloc(&staging_, bytes), "cudaMalloc (staging)");
      staging_bytes_ = bytes;
    }
    return staging_;
  }

  // Waits (watchdog) until NCCL has enqueued the last call (a non-blocking communicator may still
  // be connecting) and the communication stream has run everything.
  void collective_done(const std::string& what) {
    auto message = [&] {
      return "rank " + std::to_string(rank_) + " waited " + format_seconds(options_.timeout_s) + " " + what;
    };
    auto deadline = Clock::now() + std::chrono::duration<double>(options_.timeout_s);
    for (;;) {
      ncclResult_t r = ncclSuccess;
      check(x_.ncclCommGetAsyncError(comm_, &r), "ncclCommGetAsyncError", comm_);
      if (r != ncclInProgress) {
        check(r, "NCCL", comm_);
        break;
      }
      if (Clock::now() > deadline) throw Error(message());
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    cudaEvent_t e = dev_.events.next();
    check(cudaEventRecord(e, dev_.comm), "cudaEventRecord");
    await(e, message);
  }

  InProcess* group_;
  ncclComm_t comm_;
  const Libs& x_;
  std::function<void(const std::string&)> abort_process_;
  std::vector<Group> groups_;
  std::deque<int32_t> queue_;    // posted, not yet issued
  std::vector<int32_t> posted_;  // this step's groups
  std::vector<Check> checks_;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
};

}  // namespace

std::unique_ptr<CudaBackend> make_nccl_backend(InProcess* group, ncclComm_t comm, int32_t rank, int32_t size,
                                               BackendOptions options, int device,
                                               std::function<void(const std::string&)> abort_process) {
  return std::make_unique<NcclBackend>(group, comm, rank, size, options, device, std::move(abort_process));
}

}  // namespace schedrt::cuda
