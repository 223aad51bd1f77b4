// The threads backend: one thread per rank in one process. A send is queued on its channel
// without copying (the receiver copies from the sender's buffer), so a send completes once it has
// been received, as in the rendezvous model; receives are taken first-in first-out per channel and
// their headers checked. Blocking waits sleep on a per-rank condition variable with the watchdog's
// deadline.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "backends/backends.h"
#include "schedrt/context_impl.h"

namespace schedrt {
namespace {

using Clock = std::chrono::steady_clock;

struct Inflight {
  const PostedTransfer* transfer;
  std::atomic<bool>* done;
};

struct Box {
  std::mutex mu;
  std::condition_variable cv;
};

class World {
 public:
  World(int32_t size, BackendOptions options)
      : size_(size), options_(options), boxes_(static_cast<size_t>(size)), channels_(static_cast<size_t>(size * size)),
        status_(static_cast<size_t>(size)), blobs_(static_cast<size_t>(size)) {}

  int32_t size() const { return size_; }
  const BackendOptions& options() const { return options_; }
  Box& box(int32_t r) { return boxes_[static_cast<size_t>(r)]; }
  std::deque<Inflight>& channel(int32_t src, int32_t dst) { return channels_[static_cast<size_t>(src * size_ + dst)]; }
  std::atomic<uint64_t>& status(int32_t r) { return status_[static_cast<size_t>(r)]; }
  std::vector<std::vector<std::byte>>& blobs() { return blobs_; }

  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  std::string message() {
    std::lock_guard<std::mutex> lock(abort_mu_);
    return message_;
  }
  void abort(const std::string& message) {
    {
      std::lock_guard<std::mutex> lock(abort_mu_);
      if (message_.empty()) message_ = message;
    }
    aborted_.store(true, std::memory_order_release);
    for (Box& b : boxes_) {
      std::lock_guard<std::mutex> lock(b.mu);
      b.cv.notify_all();
    }
    std::lock_guard<std::mutex> lock(barrier_mu_);
    barrier_cv_.notify_all();
  }

  // Blocks until every rank arrived; `what` names the wait for the watchdog.
  void barrier(int32_t rank) {
    std::unique_lock<std::mutex> lock(barrier_mu_);
    uint64_t gen = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      barrier_cv_.notify_all();
      return;
    }
    auto deadline = Clock::now() + std::chrono::duration<double>(options_.timeout_s);
    while (generation_ == gen) {
      if (aborted()) throw Aborted("stopped by another rank");
      if (barrier_cv_.wait_until(lock, deadline) == std::cv_status::timeout && generation_ == gen)
        throw Error("rank " + std::to_string(rank) + " waited " + format_seconds(options_.timeout_s) +
                    " at a barrier for the other ranks");
    }
  }

  std::string peer_status(int32_t r) {
    return "rank " + std::to_string(r) + " is " +
           OpStatus::unpack(status(r).load(std::memory_order_relaxed)).describe();
  }

 private:
  int32_t size_;
  BackendOptions options_;
  std::vector<Box> boxes_;
  std::vector<std::deque<Inflight>> channels_;  // [src * size + dst], guarded by box(dst).mu
  std::vector<std::atomic<uint64_t>> status_;
  std::vector<std::vector<std::byte>> blobs_;
  std::atomic<bool> aborted_{false};
  std::mutex abort_mu_;
  std::string message_;
  std::mutex barrier_mu_;
  std::condition_variable barrier_cv_;
  int32_t arrived_ = 0;
  uint64_t generation_ = 0;
};

class ThreadsBackend final : public Backend {
 public:
  ThreadsBackend(World& world, int32_t rank)
      : world_(world), rank_(rank), sent_(static_cast<size_t>(world.size()), 0),
        received_(static_cast<size_t>(world.size()), 0), posted_recvs_(static_cast<size_t>(world.size())) {}

  std::string name() const override { return "threads"; }
  int32_t rank() const override { return rank_; }
  int32_t size() const override { return world_.size(); }
  int64_t blocked_ns() const override { return blocked_ns_; }
  void publish_status(uint64_t status) override { world_.status(rank_).store(status, std::memory_order_relaxed); }

  void post(int32_t group, std::span<const PostedTransfer> transfers) override {
    if (static_cast<size_t>(group) >= groups_.size()) groups_.resize(static_cast<size_t>(group) + 1);
    GroupState& g = groups_[static_cast<size_t>(group)];
    if (g.capacity < transfers.size()) {
      g.done = std::make_unique<std::atomic<bool>[]>(transfers.size());
      g.capacity = transfers.size();
    }
    g.transfers = transfers;
    for (size_t i = 0; i < transfers.size(); ++i) g.done[i].store(false, std::memory_order_relaxed);
    posted_.push_back(group);
    for (size_t i = 0; i < transfers.size(); ++i) {
      const PostedTransfer& t = transfers[i];
      check_peer(t.transfer);
      if (t.transfer.dir == Dir::Recv) {
        posted_recvs_[static_cast<size_t>(t.transfer.peer)].push_back(Inflight{&t, &g.done[i]});
        continue;
      }
      push(t, &g.done[i]);
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
    // Every message of this rank's program has been sent and received: the next program (the
    // next step) numbers its messages from 0 again.
    std::fill(sent_.begin(), sent_.end(), 0);
    std::fill(received_.begin(), received_.end(), 0);
  }

  void barrier() override { world_.barrier(rank_); }

  // Through the same channels as the program's messages: each rank's program has received all
  // of its messages by now (wait_all), so this pair is next on both channels.
  void exchange(int32_t peer, const void* send_data, size_t send_bytes, void* recv_data, size_t recv_bytes) override {
    std::vector<std::byte> out(kHeaderBytes + send_bytes), in(kHeaderBytes + recv_bytes);
    Action marker = W(-1, -1);
    MessageHeader h;
    h.kind = static_cast<int32_t>(marker.kind);
    h.mb = marker.mb;
    h.stage = marker.stage;
    h.seq = sent_[static_cast<size_t>(peer)];
    h.src = rank_;
    h.bytes = static_cast<int64_t>(send_bytes);
    MessageHeader expect = h;
    expect.seq = received_[static_cast<size_t>(peer)];
    expect.src = peer;
    expect.bytes = static_cast<int64_t>(recv_bytes);
    if (send_bytes > 0) std::memcpy(out.data() + kHeaderBytes, send_data, send_bytes);
    PostedTransfer ps{send(marker, peer, h.seq), h, out.data(), send_bytes};
    PostedTransfer pr{recv(marker, peer, expect.seq), expect, in.data(), recv_bytes};
    std::atomic<bool> sent{false}, got{false};
    posted_recvs_[static_cast<size_t>(peer)].push_back(Inflight{&pr, &got});
    push(ps, &sent);
    receive_until(peer, pr.transfer.seq, pr.transfer);
    block_until(
        world_.box(rank_), [&] { return sent.load(std::memory_order_acquire); },
        [&] {
          return "rank " + std::to_string(rank_) + " waited " + seconds() + " for rank " + std::to_string(peer) +
                 " to take its replica gradients; " + world_.peer_status(peer);
        });
    if (recv_bytes > 0) std::memcpy(recv_data, in.data() + kHeaderBytes, recv_bytes);
  }

  std::vector<std::vector<std::byte>> gather(const std::vector<std::byte>& mine) override {
    world_.blobs()[static_cast<size_t>(rank_)] = mine;
    world_.barrier(rank_);
    std::vector<std::vector<std::byte>> all;
    if (rank_ == 0) all = world_.blobs();
    world_.barrier(rank_);
    return all;
  }

  void abort(const std::string& message) override { world_.abort(message); }

  void* allocate(size_t bytes) override { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); }
  void deallocate(void* p) override { std::free(p); }

 private:
  struct GroupState {
    std::span<const PostedTransfer> transfers;
    std::unique_ptr<std::atomic<bool>[]> done;
    size_t capacity = 0;
  };

  void push(const PostedTransfer& t, std::atomic<bool>* done) {
    std::memcpy(t.buffer, &t.header, sizeof t.header);
    Box& box = world_.box(t.transfer.peer);
    {
      std::lock_guard<std::mutex> lock(box.mu);
      world_.channel(rank_, t.transfer.peer).push_back(Inflight{&t, done});
    }
    box.cv.notify_all();
    ++sent_[static_cast<size_t>(t.transfer.peer)];
  }

  std::string seconds() const { return format_seconds(world_.options().timeout_s); }

  void check_peer(const Transfer& t) const {
    if (t.peer < 0 || t.peer >= world_.size() || t.peer == rank_)
      throw Error("rank " + std::to_string(rank_) + ": `" + format(t) + "` names a peer that is not another rank");
  }

  // Waits on `box` (locked while testing `ready`) until `ready`, the watchdog, or an abort.
  template <class Ready, class What> void block_until(Box& box, Ready ready, What what) {
    std::unique_lock<std::mutex> lock(box.mu);
    if (ready()) return;
    Clock::time_point start = Clock::now();
    auto deadline = start + std::chrono::duration<double>(world_.options().timeout_s);
    while (!ready()) {
      if (world_.aborted()) throw Aborted("stopped by another rank");
      if (box.cv.wait_until(lock, deadline) == std::cv_status::timeout && !ready()) {
        blocked_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
        throw Error(what());
      }
    }
    blocked_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  }

  void complete(GroupState& g, size_t i) {
    const PostedTransfer& t = g.transfers[i];
    if (g.done[i].load(std::memory_order_acquire)) return;
    if (t.transfer.dir == Dir::Recv) {
      receive_until(t.transfer.peer, t.transfer.seq, t.transfer);
      return;
    }
    block_until(
        world_.box(rank_), [&] { return g.done[i].load(std::memory_order_acquire); },
        [&] {
          return "rank " + std::to_string(rank_) + " waited " + seconds() + " for rank " +
                 std::to_string(t.transfer.peer) + " to receive `" + format(t.transfer.producer) + "`, message #" +
                 std::to_string(t.transfer.seq) + " on channel " + std::to_string(rank_) + "->" +
                 std::to_string(t.transfer.peer) + "; " + world_.peer_status(t.transfer.peer);
        });
  }

  // Takes messages of channel peer->rank in order until message `seq` has arrived.
  void receive_until(int32_t peer, int32_t seq, const Transfer& wanted) {
    auto& chan = world_.channel(peer, rank_);
    auto& posted = posted_recvs_[static_cast<size_t>(peer)];
    while (received_[static_cast<size_t>(peer)] <= seq) {
      Inflight msg{};
      block_until(
          world_.box(rank_), [&] { return !chan.empty(); },
          [&] { return describe_stuck(rank_, wanted, world_.options().timeout_s) + "; " + world_.peer_status(peer); });
      {
        std::lock_guard<std::mutex> lock(world_.box(rank_).mu);
        msg = chan.front();
        chan.pop_front();
      }
      if (posted.empty())
        throw Error("rank " + std::to_string(rank_) + " got message #" +
                    std::to_string(received_[static_cast<size_t>(peer)]) + " from rank " + std::to_string(peer) +
                    " before posting a receive for it");
      Inflight into = posted.front();
      posted.pop_front();
      const MessageHeader& h = msg.transfer->header;
      const MessageHeader& want = into.transfer->header;
      if (h.seq != want.seq || h.kind != want.kind || h.mb != want.mb || h.stage != want.stage || h.bytes != want.bytes)
        throw Error("rank " + std::to_string(rank_) + " expected `" + format(into.transfer->transfer.producer) +
                    "` as message #" + std::to_string(want.seq) + " from rank " + std::to_string(peer) + ", got `" +
                    format(msg.transfer->transfer.producer) + "` (#" + std::to_string(h.seq) + ")");
      std::memcpy(into.transfer->buffer, msg.transfer->buffer, kHeaderBytes + into.transfer->bytes);
      into.done->store(true, std::memory_order_release);
      msg.done->store(true, std::memory_order_release);
      { std::lock_guard<std::mutex> lock(world_.box(peer).mu); }
      world_.box(peer).cv.notify_all();
      ++received_[static_cast<size_t>(peer)];
    }
  }

  World& world_;
  int32_t rank_;
  std::vector<GroupState> groups_;
  std::vector<int32_t> posted_;
  std::vector<int32_t> sent_;                       // [peer]: messages put on channel rank->peer
  std::vector<int32_t> received_;                   // [peer]: messages taken from channel peer->rank
  std::vector<std::deque<Inflight>> posted_recvs_;  // [peer]: posted receives not yet filled, in order
  int64_t blocked_ns_ = 0;
};

}  // namespace

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

std::string describe_stuck(int32_t rank, const Transfer& t, double seconds) {
  if (t.producer.mb < 0)
    return "rank " + std::to_string(rank) + " waited " + format_seconds(seconds) + " for rank " +
           std::to_string(t.peer) + "'s replica gradients";
  return "rank " + std::to_string(rank) + " waited " + format_seconds(seconds) + " for `" + format(t.producer) + "` (" +
         (t.producer.kind == Kind::F ? "activation" : "gradient") + ") from rank " + std::to_string(t.peer) +
         ", message #" + std::to_string(t.seq) + " on channel " + std::to_string(t.peer) + "->" + std::to_string(rank);
}

std::string run_threads(int32_t ranks, const BackendOptions& options, const std::function<void(Backend&)>& rank_main) {
  World world(ranks, options);
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < ranks; ++r)
    threads.emplace_back([&world, &rank_main, r] {
      ThreadsBackend backend(world, r);
      try {
        rank_main(backend);
      } catch (const Aborted&) {
      } catch (const std::exception& e) {
        world.abort("rank " + std::to_string(r) + ": " + e.what());
      }
    });
  for (std::thread& t : threads) t.join();
  return world.aborted() ? world.message() : std::string();
}

}  // namespace schedrt
