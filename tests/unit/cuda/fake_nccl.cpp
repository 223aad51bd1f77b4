// A fake NCCL for the NCCL backend's tests (see fake_nccl.h).
//
// Two locks: the world's (host-side matching, under which the device work is enqueued) and the
// fake device's (under which that work's `ready` and `run` are called). The device work never takes
// the world's lock; what it reads that the host writes is either atomic or written before an
// atomic it has read (a group's `pending` count), so the locks are only ever taken in that order.

#include "fake_nccl.h"

#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fake_cudart.h"

namespace fake_nccl {
namespace {

using Flag = std::shared_ptr<std::atomic<bool>>;

// A matched send and receive. `src`..`dst_aborted` are set before either side's group count drops;
// the rest belongs to the device (touched only by stream work, under the fake device's lock).
struct Link {
  const std::byte* src = nullptr;
  std::byte* dst = nullptr;
  size_t bytes = 0;
  Flag src_aborted, dst_aborted;
  bool send_started = false, recv_started = false, copied = false;
};

struct Transfer {
  bool send = false;
  std::byte* ptr = nullptr;
  size_t bytes = 0;
  std::shared_ptr<Link> link;  // set when matched
};

struct Group {
  std::atomic<int> pending{0};  // transfers not yet matched
  std::vector<std::shared_ptr<Transfer>> transfers;
};

// One side of a transfer waiting in its channel for its peer.
struct Op {
  std::shared_ptr<Transfer> transfer;
  std::shared_ptr<Group> group;
  Flag aborted;
};

// The device side of one collective: the inputs as each rank's stream reads them.
struct DeviceCollective {
  std::vector<std::vector<std::byte>> inputs;
  int arrived = 0;
};

struct Collective {
  int arrived = 0;
  bool done = false;
  std::shared_ptr<DeviceCollective> device = std::make_shared<DeviceCollective>();
};

struct World {
  explicit World(int n) : size(n) {}
  int size;
  std::mutex mu;
  std::map<std::pair<int, int>, std::deque<Op>> sends, recvs;  // by (src, dst)
  std::map<int64_t, Collective> collectives;
  std::string error;  // a mismatched pair (sizes differ)
};

struct Comm {
  World* world = nullptr;
  int rank = 0;
  Flag aborted = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<Group> current;
  int64_t next_collective = 0;
  int64_t current_collective = -1;
};

struct Pending {
  bool send = false;
  std::byte* ptr = nullptr;
  size_t bytes = 0;
  int peer = 0;
  cudaStream_t stream = nullptr;
};

thread_local bool in_group = false;
thread_local Comm* group_comm = nullptr;
thread_local std::vector<Pending> group_ops;

size_t type_bytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    default: return 8;
  }
}

Comm* as_comm(ncclComm_t c) { return reinterpret_cast<Comm*>(c); }

void match(World& w, std::pair<int, int> channel) {
  auto& s = w.sends[channel];
  auto& r = w.recvs[channel];
  while (!s.empty() && !r.empty()) {
    Op a = s.front(), b = r.front();
    s.pop_front();
    r.pop_front();
    if (a.transfer->bytes != b.transfer->bytes)
      w.error = "a send of " + std::to_string(a.transfer->bytes) + " bytes met a receive of " +
                std::to_string(b.transfer->bytes);
    auto link = std::make_shared<Link>();
    link->src = a.transfer->ptr;
    link->dst = b.transfer->ptr;
    link->bytes = std::min(a.transfer->bytes, b.transfer->bytes);
    link->src_aborted = a.aborted;
    link->dst_aborted = b.aborted;
    a.transfer->link = b.transfer->link = link;
    a.group->pending.fetch_sub(1, std::memory_order_release);
    b.group->pending.fetch_sub(1, std::memory_order_release);
  }
}

bool matched(const Group& g) { return g.pending.load(std::memory_order_acquire) == 0; }

// A transfer is through once the first of its two group ends has copied it, which either may do
// once both streams have started their groups.
bool can_copy(const Link& l) { return l.send_started && l.recv_started; }

// The group's work on its stream: a start, which can run once every transfer has met its peer on
// the host (NCCL enqueues nothing before), and an end, which can run once every transfer can be
// copied or has been. After an abort of this communicator both do nothing.
void enqueue_group(cudaStream_t stream, int rank, const std::shared_ptr<Group>& g, const Flag& aborted) {
  std::string who = "rank " + std::to_string(rank) + "'s ncclGroupEnd";
  fake_cuda::enqueue(
      stream, who + " (start)", [g, aborted] { return *aborted || matched(*g); },
      [g, aborted] {
        if (*aborted) return;
        for (const auto& t : g->transfers) (t->send ? t->link->send_started : t->link->recv_started) = true;
      });
  fake_cuda::enqueue(
      stream, who + " (end: waits for the peers' streams)",
      [g, aborted] {
        if (*aborted) return true;
        for (const auto& t : g->transfers)
          if (!t->link->copied && !can_copy(*t->link)) return false;
        return true;
      },
      [g, aborted] {
        if (*aborted) return;
        for (const auto& t : g->transfers) {
          Link& l = *t->link;
          // A peer that aborted may have freed its buffer; nobody reads this transfer any more.
          if (l.copied || *l.src_aborted || *l.dst_aborted) continue;
          std::memmove(l.dst, l.src, l.bytes);
          l.copied = true;
        }
      });
}

ncclResult_t group_start() {
  in_group = true;
  group_ops.clear();
  return ncclSuccess;
}

ncclResult_t group_end() {
  in_group = false;
  if (!group_comm) return ncclSuccess;
  Comm* c = group_comm;
  World& w = *c->world;
  group_comm = nullptr;
  std::lock_guard<std::mutex> lock(w.mu);
  auto g = std::make_shared<Group>();
  cudaStream_t stream = group_ops.front().stream;
  for (const Pending& p : group_ops) {
    if (p.stream != stream) return ncclInvalidUsage;  // the backend puts a group on one stream; so does the fake
    auto t = std::make_shared<Transfer>();
    t->send = p.send;
    t->ptr = p.ptr;
    t->bytes = p.bytes;
    g->transfers.push_back(t);
  }
  g->pending = static_cast<int>(group_ops.size());  // each transfer counts until it is matched
  c->current = g;
  for (size_t i = 0; i < group_ops.size(); ++i) {
    const Pending& p = group_ops[i];
    std::pair<int, int> channel = p.send ? std::pair(c->rank, p.peer) : std::pair(p.peer, c->rank);
    (p.send ? w.sends : w.recvs)[channel].push_back(Op{g->transfers[i], g, c->aborted});
    match(w, channel);
  }
  enqueue_group(stream, c->rank, g, c->aborted);
  fake_cuda::notify();  // this may have completed a peer's group
  return matched(*g) ? ncclSuccess : ncclInProgress;
}

ncclResult_t add(bool send, void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                 cudaStream_t stream) {
  Pending p;
  p.send = send;
  p.peer = peer;
  p.ptr = static_cast<std::byte*>(buf);
  p.bytes = count * type_bytes(type);
  p.stream = stream;
  bool alone = !in_group;
  if (alone) group_start();
  group_comm = as_comm(comm);
  group_ops.push_back(p);
  return alone ? group_end() : ncclSuccess;
}

ncclResult_t send_fn(const void* buf, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t s) {
  return add(true, const_cast<void*>(buf), count, t, peer, comm, s);
}

ncclResult_t recv_fn(void* buf, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t s) {
  return add(false, buf, count, t, peer, comm, s);
}

// The k-th collective of every rank meets the others' on the host (the last to arrive completes
// it there). On the device, each rank's input is read at its stream's position and its output is
// written once every rank's input has been read.
ncclResult_t collective(ncclComm_t comm, const void* in, void* out, size_t bytes, bool sum_int32, cudaStream_t stream) {
  Comm* c = as_comm(comm);
  World& w = *c->world;
  std::lock_guard<std::mutex> lock(w.mu);
  int64_t k = c->next_collective++;
  c->current_collective = k;
  Collective& col = w.collectives[k];
  std::shared_ptr<DeviceCollective> dev = col.device;
  const int size = w.size, rank = c->rank;
  Flag aborted = c->aborted;
  std::string who = "rank " + std::to_string(rank) + "'s collective #" + std::to_string(k);
  fake_cuda::enqueue(stream, who + " (input)", {}, [dev, aborted, in, bytes, size, rank] {
    if (*aborted) return;
    dev->inputs.resize(static_cast<size_t>(size));
    const auto* p = static_cast<const std::byte*>(in);
    dev->inputs[static_cast<size_t>(rank)].assign(p, p + bytes);
    ++dev->arrived;
  });
  fake_cuda::enqueue(
      stream, who + " (output: waits for every rank's input)",
      [dev, aborted, size] { return *aborted || dev->arrived == size; },
      [dev, aborted, out, bytes, size, sum_int32] {
        if (*aborted) return;
        auto* dst = static_cast<std::byte*>(out);
        if (sum_int32) {
          // Wrapping, as the device's int32 sum does (the barrier's flag is never initialised).
          uint32_t total = 0;
          for (const auto& v : dev->inputs) {
            uint32_t x = 0;
            std::memcpy(&x, v.data(), sizeof x);
            total += x;
          }
          std::memcpy(dst, &total, sizeof total);
          return;
        }
        for (int q = 0; q < size; ++q)
          std::memcpy(dst + static_cast<size_t>(q) * bytes, dev->inputs[static_cast<size_t>(q)].data(), bytes);
      });
  if (++col.arrived < size) return ncclInProgress;
  col.done = true;
  fake_cuda::notify();
  return ncclSuccess;
}

ncclResult_t all_reduce(const void* in, void* out, size_t count, ncclDataType_t t, ncclRedOp_t, ncclComm_t comm,
                        cudaStream_t stream) {
  if (count != 1 || t != ncclInt32) return ncclInvalidArgument;
  return collective(comm, in, out, 4, true, stream);
}

ncclResult_t all_gather(const void* in, void* out, size_t count, ncclDataType_t t, ncclComm_t comm,
                        cudaStream_t stream) {
  return collective(comm, in, out, count * type_bytes(t), false, stream);
}

ncclResult_t async_error(ncclComm_t comm, ncclResult_t* r) {
  Comm* c = as_comm(comm);
  std::lock_guard<std::mutex> lock(c->world->mu);
  if (!c->world->error.empty()) {
    *r = ncclInternalError;
    return ncclSuccess;
  }
  bool busy = (c->current && !matched(*c->current)) ||
              (c->current_collective >= 0 && !c->world->collectives[c->current_collective].done);
  *r = busy ? ncclInProgress : ncclSuccess;
  return ncclSuccess;
}

ncclResult_t abort_fn(ncclComm_t comm) {
  Comm* c = as_comm(comm);
  *c->aborted = true;
  delete c;
  fake_cuda::notify();
  return ncclSuccess;
}

const char* error_string(ncclResult_t) { return "fake NCCL error"; }
const char* last_error(ncclComm_t comm) {
  static thread_local std::string s;
  std::lock_guard<std::mutex> lock(as_comm(comm)->world->mu);
  s = as_comm(comm)->world->error;
  return s.c_str();
}

}  // namespace

FakeWorld::FakeWorld(int ranks) : world_(std::make_shared<World>(ranks)) {}

ncclComm_t FakeWorld::comm(int rank) {
  auto* c = new Comm;
  c->world = static_cast<World*>(world_.get());
  c->rank = rank;
  return reinterpret_cast<ncclComm_t>(c);
}

schedrt::cuda::Libs libs() {
  schedrt::cuda::Libs x;
  x.ncclSend = send_fn;
  x.ncclRecv = recv_fn;
  x.ncclGroupStart = group_start;
  x.ncclGroupEnd = group_end;
  x.ncclAllReduce = all_reduce;
  x.ncclAllGather = all_gather;
  x.ncclCommGetAsyncError = async_error;
  x.ncclCommAbort = abort_fn;
  x.ncclCommDestroy = abort_fn;
  x.ncclGetErrorString = error_string;
  x.ncclGetLastError = last_error;
  return x;
}

}  // namespace fake_nccl
