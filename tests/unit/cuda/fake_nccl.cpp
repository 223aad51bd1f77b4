// A fake NCCL for the NCCL backend's tests (see fake_nccl.h).

#include "fake_nccl.h"

#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fake_nccl {
namespace {

struct Group {
  int pending = 0;
};

struct Op {
  std::byte* ptr = nullptr;
  size_t bytes = 0;
  Group* group = nullptr;
};

struct Collective {
  int arrived = 0;
  bool done = false;
  std::vector<const void*> in;
  std::vector<void*> out;
};

struct Comm;

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
  std::vector<std::unique_ptr<Group>> groups;
  Group* current = nullptr;
  int64_t next_collective = 0;
  int64_t current_collective = -1;
};

struct Pending {
  bool send = false;
  Op op;
  int peer = 0;
};

thread_local bool in_group = false;
thread_local Comm* group_comm = nullptr;
thread_local std::vector<Pending> group_ops;

size_t type_bytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
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
    if (a.bytes != b.bytes) w.error = "a send of " + std::to_string(a.bytes) + " bytes met a receive of " + std::to_string(b.bytes);
    std::memcpy(b.ptr, a.ptr, std::min(a.bytes, b.bytes));
    --a.group->pending;
    --b.group->pending;
  }
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
  std::lock_guard<std::mutex> lock(w.mu);
  c->groups.push_back(std::make_unique<Group>());
  Group* g = c->groups.back().get();
  g->pending = static_cast<int>(group_ops.size());  // each op completes when it is matched
  c->current = g;
  for (Pending& p : group_ops) {
    p.op.group = g;
    std::pair<int, int> channel = p.send ? std::pair(c->rank, p.peer) : std::pair(p.peer, c->rank);
    (p.send ? w.sends : w.recvs)[channel].push_back(p.op);
    match(w, channel);
  }
  group_ops.clear();
  group_comm = nullptr;
  return g->pending == 0 ? ncclSuccess : ncclInProgress;
}

ncclResult_t add(bool send, void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm) {
  Pending p;
  p.send = send;
  p.peer = peer;
  p.op.ptr = static_cast<std::byte*>(buf);
  p.op.bytes = count * type_bytes(type);
  bool alone = !in_group;
  if (alone) group_start();
  group_comm = as_comm(comm);
  group_ops.push_back(p);
  return alone ? group_end() : ncclSuccess;
}

ncclResult_t send_fn(const void* buf, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t) {
  return add(true, const_cast<void*>(buf), count, t, peer, comm);
}

ncclResult_t recv_fn(void* buf, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t) {
  return add(false, buf, count, t, peer, comm);
}

// The k-th collective of every rank meets the others'; the last to arrive computes it.
ncclResult_t collective(ncclComm_t comm, const void* in, void* out, size_t bytes, bool sum_int32) {
  Comm* c = as_comm(comm);
  World& w = *c->world;
  std::lock_guard<std::mutex> lock(w.mu);
  int64_t k = c->next_collective++;
  c->current_collective = k;
  Collective& col = w.collectives[k];
  col.in.resize(static_cast<size_t>(w.size));
  col.out.resize(static_cast<size_t>(w.size));
  col.in[static_cast<size_t>(c->rank)] = in;
  col.out[static_cast<size_t>(c->rank)] = out;
  if (++col.arrived < w.size) return ncclInProgress;
  for (int r = 0; r < w.size; ++r) {
    auto* dst = static_cast<std::byte*>(col.out[static_cast<size_t>(r)]);
    if (sum_int32) {
      int32_t total = 0;
      for (int q = 0; q < w.size; ++q) total += *static_cast<const int32_t*>(col.in[static_cast<size_t>(q)]);
      std::memcpy(dst, &total, sizeof total);
      continue;
    }
    for (int q = 0; q < w.size; ++q) std::memmove(dst + static_cast<size_t>(q) * bytes, col.in[static_cast<size_t>(q)], bytes);
  }
  col.done = true;
  return ncclSuccess;
}

ncclResult_t all_reduce(const void* in, void* out, size_t count, ncclDataType_t t, ncclRedOp_t, ncclComm_t comm,
                        cudaStream_t) {
  if (count != 1 || t != ncclInt32) return ncclInvalidArgument;
  return collective(comm, in, out, 4, true);
}

ncclResult_t all_gather(const void* in, void* out, size_t count, ncclDataType_t t, ncclComm_t comm, cudaStream_t) {
  return collective(comm, in, out, count * type_bytes(t), false);
}

ncclResult_t async_error(ncclComm_t comm, ncclResult_t* r) {
  Comm* c = as_comm(comm);
  std::lock_guard<std::mutex> lock(c->world->mu);
  if (!c->world->error.empty()) {
    *r = ncclInternalError;
    return ncclSuccess;
  }
  bool busy = (c->current && c->current->pending > 0) ||
              (c->current_collective >= 0 && !c->world->collectives[c->current_collective].done);
  *r = busy ? ncclInProgress : ncclSuccess;
  return ncclSuccess;
}

ncclResult_t abort_fn(ncclComm_t comm) {
  delete as_comm(comm);
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
