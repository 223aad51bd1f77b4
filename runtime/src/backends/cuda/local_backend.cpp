// Local mode: every rank in this process, on one GPU (or a few, round robin). NCCL refuses two
// ranks on one device, so a transfer is a device-to-device copy. Sends and receives meet in the
// process's FIFO channels; whichever side posts second checks the headers (both are host values
// here, so nothing is read back from the device) and enqueues the copy on its own communication
// stream, after both sides' ready events, followed by a done event for both sides' waits. A wait
// blocks the host only until the peer has posted; the data dependency itself is a stream wait.

#include <chrono>
#include <cstring>

#include "backends/backends.h"
#include "backends/cuda/cuda_backend.h"

namespace schedrt::cuda {
namespace {

using Clock = std::chrono::steady_clock;

class LocalBackend final : public CudaBackend {
 public:
  LocalBackend(InProcess& group, int32_t rank, int device)
      : CudaBackend(rank, group.size(), group.options(), device), group_(group) {}

  std::string name() const override { return "cuda"; }

  void post(int32_t group, std::span<const PostedTransfer> transfers) override {
    if (static_cast<size_t>(group) >= groups_.size()) groups_.resize(static_cast<size_t>(group) + 1);
    Group& g = groups_[static_cast<size_t>(group)];
    for (const LocalSide& side : g.sides)
      if (!side.matched)
        throw Error("rank " + std::to_string(rank_) + " posts g" + std::to_string(group) +
                    " again before its transfers completed");
    g.sides.assign(transfers.size(), LocalSide{});
    posted_.push_back(group);
    cudaEvent_t ready = dev_.events.next();
    check(cudaEventRecord(ready, dev_.compute), "cudaEventRecord");
    post_interval_.start = dev_.events.next();
    post_interval_.end = dev_.events.next();
    check(cudaEventRecord(post_interval_.start, dev_.comm), "cudaEventRecord");
    {
      std::lock_guard<std::mutex> lock(group_.mu);
      for (size_t i = 0; i < transfers.size(); ++i) {
        const Transfer& t = transfers[i].transfer;
        if (t.peer < 0 || t.peer >= size_ || t.peer == rank_)
          throw Error("rank " + std::to_string(rank_) + ": `" + format(t) + "` names a peer that is not another rank");
        LocalSide& side = g.sides[i];
        side.posted = &transfers[i];
        side.rank = rank_;
        side.ready = ready;
        InProcess::Channel& ch = t.dir == Dir::Send ? group_.channel(rank_, t.peer) : group_.channel(t.peer, rank_);
        (t.dir == Dir::Send ? ch.sends : ch.recvs).push_back(&side);
        match(ch);
      }
    }
    check(cudaEventRecord(post_interval_.end, dev_.comm), "cudaEventRecord");
    group_.cv.notify_all();
  }

  void wait(int32_t group, std::span<const int32_t> which) override {
    Group& g = groups_[static_cast<size_t>(group)];
    for (int32_t i : which) {
      LocalSide& side = g.sides[static_cast<size_t>(i)];
      until_matched(side);
      check(cudaStreamWaitEvent(dev_.compute, side.done, 0), "cudaStreamWaitEvent");
    }
  }

  void wait_all() override {
    for (int32_t group : posted_)
      for (LocalSide& side : groups_[static_cast<size_t>(group)].sides) {
        until_matched(side);
        check(cudaStreamWaitEvent(dev_.compute, side.done, 0), "cudaStreamWaitEvent");
      }
    posted_.clear();
    final_event_ = dev_.events.next();
    check(cudaEventRecord(final_event_, dev_.compute), "cudaEventRecord");
    await(final_event_, [this] {
      return "rank " + std::to_string(rank_) + " waited " + format_seconds(options_.timeout_s) +
             " for its device to finish the step (a kernel or a copy does not end)";
    });
  }

  void barrier() override {
    drain("the previous step");
    group_.barrier(rank_);
    mark_step_start();
  }
  void exchange(int32_t peer, const void* send, size_t send_bytes, void* recv, size_t recv_bytes) override {
    group_.exchange(rank_, peer, send, send_bytes, recv, recv_bytes);
  }
  std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& mine) override {
    drain("its work");
    return group_.gather(rank_, mine);
  }
  void abort(const std::string& message) override { group_.abort(message); }
  void publish_status(uint64_t status) override { group_.publish(rank_, status); }

 protected:
  bool stopped() const override { return group_.aborted(); }

 private:
  struct Group {
    std::vector<LocalSide> sides;
  };

  // Pairs the channel's oldest send with its oldest receive while both exist (under group_.mu).
  void match(InProcess::Channel& ch) {
    while (!ch.sends.empty() && !ch.recvs.empty()) {
      LocalSide* s = ch.sends.front();
      LocalSide* r = ch.recvs.front();
      ch.sends.pop_front();
      ch.recvs.pop_front();
      const MessageHeader& h = s->posted->header;
      const MessageHeader& want = r->posted->header;
      if (h.seq != want.seq || h.kind != want.kind || h.mb != want.mb || h.stage != want.stage || h.bytes != want.bytes)
        throw Error("rank " + std::to_string(r->rank) + " expected `" + format(r->posted->transfer.producer) +
                    "` as message #" + std::to_string(want.seq) + " from rank " + std::to_string(s->rank) + ", got `" +
                    format(s->posted->transfer.producer) + "` (#" + std::to_string(h.seq) + ")");
      check(cudaStreamWaitEvent(dev_.comm, s->ready, 0), "cudaStreamWaitEvent");
      check(cudaStreamWaitEvent(dev_.comm, r->ready, 0), "cudaStreamWaitEvent");
      check(cudaMemcpyAsync(r->posted->buffer + kHeaderBytes, s->posted->buffer + kHeaderBytes, r->posted->bytes,
                            cudaMemcpyDefault, dev_.comm),
            "cudaMemcpyAsync (a transfer)");
      cudaEvent_t done = dev_.events.next();
      check(cudaEventRecord(done, dev_.comm), "cudaEventRecord");
      s->done = r->done = done;
      s->matched = r->matched = true;
    }
  }

  // Blocks until the peer has posted its side of `side` (the watchdog's deadline applies).
  void until_matched(LocalSide& side) {
    std::unique_lock<std::mutex> lock(group_.mu);
    if (side.matched) return;
    Clock::time_point start = Clock::now();
    auto deadline = start + std::chrono::duration<double>(options_.timeout_s);
    while (!side.matched) {
      if (group_.aborted()) throw Aborted("stopped by another rank");
      if (group_.cv.wait_until(lock, deadline) == std::cv_status::timeout && !side.matched) {
        const Transfer& t = side.posted->transfer;
        lock.unlock();
        if (t.dir == Dir::Recv)
          throw Error(describe_stuck(rank_, t, options_.timeout_s) + "; " + group_.peer_status(t.peer));
        throw Error("rank " + std::to_string(rank_) + " waited " + format_seconds(options_.timeout_s) + " for rank " +
                    std::to_string(t.peer) + " to receive `" + format(t.producer) + "`, message #" +
                    std::to_string(t.seq) + " on channel " + std::to_string(rank_) + "->" + std::to_string(t.peer) +
                    "; " + group_.peer_status(t.peer));
      }
    }
  }

  InProcess& group_;
  std::vector<Group> groups_;
  std::vector<int32_t> posted_;
};

}  // namespace

std::unique_ptr<CudaBackend> make_local_backend(InProcess& group, int32_t rank, int device) {
  return std::make_unique<LocalBackend>(group, rank, device);
}

}  // namespace schedrt::cuda
