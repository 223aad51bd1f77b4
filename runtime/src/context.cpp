#include "schedrt/context_impl.h"

#include "schedrt/context.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

namespace schedrt {

// A posted group: its transfers stay here (with their buffers) until the group completes.
struct ContextImpl::Group {
  std::vector<PostedTransfer> transfers;
};

namespace {

constexpr size_t kAlign = 64;
size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

uint64_t OpStatus::pack() const {
  return static_cast<uint64_t>(code) | static_cast<uint64_t>(action.kind) << 8 |
         static_cast<uint64_t>(static_cast<uint16_t>(action.stage)) << 16 |
         static_cast<uint64_t>(static_cast<uint32_t>(code == OpCode::Post || code == OpCode::Wait ? group : action.mb))
             << 32;
}

OpStatus OpStatus::unpack(uint64_t v) {
  OpStatus s;
  s.code = static_cast<OpCode>(v & 0xff);
  s.action.kind = static_cast<Kind>((v >> 8) & 0xff);
  s.action.stage = static_cast<int32_t>((v >> 16) & 0xffff);
  int32_t hi = static_cast<int32_t>(v >> 32);
  if (s.code == OpCode::Post || s.code == OpCode::Wait) s.group = hi;
  else s.action.mb = hi;
  return s;
}

std::string OpStatus::describe() const {
  switch (code) {
    case OpCode::Post: return "posting g" + std::to_string(group);
    case OpCode::Wait: return "waiting in `wait g" + std::to_string(group) + "`";
    case OpCode::WaitAll: return "in `wait all`";
    default: return "running `" + format(action) + "`";
  }
}

ContextImpl::ContextImpl(const ProgramInfo& info, Backend& backend, std::vector<std::unique_ptr<Stage>> stages,
                         const RunOptions& options)
    : info_(info), backend_(backend), options_(options), rank_(backend.rank()), stages_(std::move(stages)) {
  const int32_t S = info.stages, m = info.microbatches;
  for (const auto& st : stages_)
    if (st) boundary_bytes_ = st->boundary_bytes();
  // The buffers this rank touches: each held stage's input and output activation and its output
  // and input gradient, for the microbatches of the stage's direction.
  slots_.assign(static_cast<size_t>(2 * m * S), nullptr);
  std::vector<size_t> needed;
  auto need = [&](bool grad, int32_t mb, int32_t s) {
    if (s < 0 || s >= S) return;
    needed.push_back((static_cast<size_t>(grad) * static_cast<size_t>(m) + static_cast<size_t>(mb)) *
                         static_cast<size_t>(S) +
                     static_cast<size_t>(s));
  };
  for (int32_t mb = 0; mb < m; ++mb)
    for (int32_t s = 0; s < S; ++s) {
      if (info.rank_of(info.direction_of(mb), s) != rank_) continue;
      if (s > 0) need(false, mb, s);
      if (s + 1 < S) need(false, mb, s + 1), need(true, mb, s);
      if (s > 0) need(true, mb, s - 1);
    }
  std::sort(needed.begin(), needed.end());
  needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
  size_t slot_bytes = round_up(kHeaderBytes + boundary_bytes_);
  if (!needed.empty()) {
    auto* arena = static_cast<std::byte*>(backend_.allocate(slot_bytes * needed.size()));
    allocations_.push_back(arena);
    backend_.zero(arena, slot_bytes * needed.size());
    for (size_t i = 0; i < needed.size(); ++i) slots_[needed[i]] = arena + i * slot_bytes;
  }
  int32_t groups = info.groups_per_rank ? info.groups_per_rank[rank_] : 0;
  for (int32_t g = 0; g < groups; ++g) groups_.push_back(std::make_unique<Group>());
  records_.reserve(info.ops_per_rank ? static_cast<size_t>(info.ops_per_rank[rank_]) : 0);
  // Testing hooks (documented in docs/runtime.md): make a rank lose a message or fail.
  const std::string& f = options_.fault;
  if (f.rfind("drop-send=", 0) == 0 && std::stoi(f.substr(10)) == rank_) fault_drop_send_ = 1;
  if (f.rfind("throw=", 0) == 0 && std::stoi(f.substr(6)) == rank_) fault_throw_ = true;
}

ContextImpl::~ContextImpl() {
  for (void* p : allocations_) backend_.deallocate(p);
}

Stage* ContextImpl::stage(int32_t direction, int32_t s) const {
  return stages_[static_cast<size_t>(direction * info_.stages + s)].get();
}

Stage& ContextImpl::stage_of(Action a) const {
  Stage* st = stage(info_.direction_of(a.mb), a.stage);
  if (!st) throw Error("rank " + std::to_string(rank_) + " does not hold the stage of `" + format(a) + "`");
  return *st;
}

std::byte* ContextImpl::slot(bool gradient, int32_t mb, int32_t s) const {
  if (s < 0 || s >= info_.stages) return nullptr;
  std::byte* p =
      slots_[(static_cast<size_t>(gradient) * static_cast<size_t>(info_.microbatches) + static_cast<size_t>(mb)) *
                 static_cast<size_t>(info_.stages) +
             static_cast<size_t>(s)];
  return p;
}

// Where the output of `producer` lives: F(mb, s) writes stage s+1's input activation, a
// backward of (mb, s) writes the gradient of stage s-1's output.
std::byte* ContextImpl::output_slot(Action producer) const {
  if (producer.kind == Kind::F) return slot(false, producer.mb, producer.stage + 1);
  return slot(true, producer.mb, producer.stage - 1);
}

int64_t ContextImpl::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count();
}

int64_t ContextImpl::begin_op(OpCode code, Action a, int32_t group) {
  int64_t t = now_ns();
  backend_.publish_status(OpStatus{code, a, group}.pack());
  backend_.op_begin(code);
  return t;
}

int64_t ContextImpl::begin_compute(OpCode code, Action a) {
  int64_t t = begin_op(code, a, -1);
  if (fault_throw_) throw Error("injected fault at `" + format(a) + "` (--fault throw=" + std::to_string(rank_) + ")");
  return t;
}

void ContextImpl::record(OpCode code, Action a, Action b, int32_t group, int64_t start, int64_t blocked) {
  backend_.op_end(code);
  records_.push_back(OpRecord{code, a, b, group, start, now_ns(), blocked});
}

void ContextImpl::begin_step(std::chrono::steady_clock::time_point t0) {
  t0_ = t0;
  records_.clear();
  final_grads_.clear();
}

namespace {

void* payload(std::byte* slot) { return slot ? slot + kHeaderBytes : nullptr; }

}  // namespace

void ContextImpl::forward(int32_t mb, int32_t s) {
  Action a = F(mb, s);
  int64_t t = begin_compute(OpCode::Forward, a);
  Stage& st = stage_of(a);
  st.forward(mb, s == 0 ? nullptr : payload(slot(false, mb, s)), payload(slot(false, mb, s + 1)));
  if (info_.checkpointed &&
      info_.checkpointed[static_cast<size_t>(mb) * static_cast<size_t>(info_.stages) + static_cast<size_t>(s)])
    st.checkpoint(mb);
  record(OpCode::Forward, a, a, -1, t);
}

void ContextImpl::recompute(int32_t mb, int32_t s) {
  Action a = R(mb, s);
  int64_t t = begin_compute(OpCode::Recompute, a);
  stage_of(a).recompute(mb);
  record(OpCode::Recompute, a, a, -1, t);
}

void ContextImpl::run_backward(OpCode code, Action a) {
  int64_t t = begin_compute(code, a);
  Stage& st = stage_of(a);
  void* grad_out = payload(slot(true, a.mb, a.stage));
  void* grad_in = payload(slot(true, a.mb, a.stage - 1));
  if (code == OpCode::Backward) st.backward(a.mb, grad_out, grad_in);
  else st.backward_input(a.mb, grad_out, grad_in);
  record(code, a, a, -1, t);
}

void ContextImpl::backward_input(int32_t mb, int32_t s) { run_backward(OpCode::BackwardInput, B(mb, s)); }

void ContextImpl::backward_weight(int32_t mb, int32_t s) {
  Action a = W(mb, s);
  int64_t t = begin_compute(OpCode::BackwardWeight, a);
  stage_of(a).backward_weight(mb);
  record(OpCode::BackwardWeight, a, a, -1, t);
}

void ContextImpl::backward(int32_t mb, int32_t s) { run_backward(OpCode::Backward, BW(mb, s)); }

void ContextImpl::overlapped(Action f, Action b) {
  int64_t t = begin_compute(OpCode::Overlapped, f);
  if (f.kind != Kind::F || !is_backward(b.kind))
    throw Error("an overlapped unit needs a forward and a backward, got `" + format(f) + "` and `" + format(b) + "`");
  Stage& fs = stage_of(f);
  fs.overlapped(f.mb, f.stage == 0 ? nullptr : payload(slot(false, f.mb, f.stage)),
                payload(slot(false, f.mb, f.stage + 1)), stage_of(b), b, payload(slot(true, b.mb, b.stage)),
                payload(slot(true, b.mb, b.stage - 1)));
  record(OpCode::Overlapped, f, b, -1, t);
}

void ContextImpl::post(int32_t group, std::span<const Transfer> transfers) {
  int64_t t = begin_op(OpCode::Post, {}, group);
  if (group < 0 || static_cast<size_t>(group) >= groups_.size())
    throw Error("rank " + std::to_string(rank_) + " posts group g" + std::to_string(group) +
                ", which its program does not have");
  Group& g = *groups_[static_cast<size_t>(group)];
  g.transfers.clear();
  for (const Transfer& tr : transfers) {
    std::byte* buf = output_slot(tr.producer);
    if (!buf) throw Error("rank " + std::to_string(rank_) + " has no buffer for `" + format(tr) + "`");
    MessageHeader h;
    h.kind = static_cast<int32_t>(tr.producer.kind);
    h.mb = tr.producer.mb;
    h.stage = tr.producer.stage;
    h.seq = tr.seq;
    h.src = tr.dir == Dir::Send ? rank_ : tr.peer;
    h.bytes = static_cast<int64_t>(boundary_bytes_);
    if (tr.dir == Dir::Send && fault_drop_send_ > 0 && fault_drop_send_-- == 1) continue;  // testing: lost
    g.transfers.push_back(PostedTransfer{tr, h, buf, boundary_bytes_});
  }
  backend_.post(group, g.transfers);
  record(OpCode::Post, {}, {}, group, t);
}

void ContextImpl::wait(int32_t group, std::span<const Action> needs) {
  int64_t t = begin_op(OpCode::Wait, {}, group);
  const Group& g = *groups_[static_cast<size_t>(group)];
  int32_t which[8];
  size_t n = 0;
  std::vector<int32_t> more;
  for (const Action& a : needs) {
    auto it = std::find_if(g.transfers.begin(), g.transfers.end(),
                           [&](const PostedTransfer& p) { return p.transfer.producer == a; });
    if (it == g.transfers.end())
      throw Error("rank " + std::to_string(rank_) + " waits in g" + std::to_string(group) + " for `" + format(a) +
                  "`, which g" + std::to_string(group) + " does not transfer");
    int32_t idx = static_cast<int32_t>(it - g.transfers.begin());
    if (n < 8) which[n++] = idx;
    else more.push_back(idx);
  }
  if (more.empty()) {
    backend_.wait(group, std::span<const int32_t>(which, n));
  } else {
    more.insert(more.begin(), which, which + n);
    backend_.wait(group, more);
  }
  backend_.op_end(OpCode::Wait);
  int64_t end = now_ns();
  records_.push_back(OpRecord{OpCode::Wait, needs.empty() ? Action{} : needs.front(), {}, group, t, end, end - t});
}

void ContextImpl::wait_all() {
  int64_t t = begin_op(OpCode::WaitAll, {}, -1);
  backend_.wait_all();
  backend_.op_end(OpCode::WaitAll);
  int64_t end = now_ns();
  records_.push_back(OpRecord{OpCode::WaitAll, {}, {}, -1, t, end, end - t});
  // A device backend's ops ran on its streams: their intervals replace the host clock's.
  backend_.device_intervals(records_);
}

std::vector<std::pair<int32_t, double>> ContextImpl::losses() const {
  std::vector<std::pair<int32_t, double>> out;
  for (int32_t mb = 0; mb < info_.microbatches; ++mb) {
    int32_t d = info_.direction_of(mb);
    if (info_.rank_of(d, info_.stages - 1) != rank_) continue;
    out.emplace_back(mb, stage(d, info_.stages - 1)->loss(mb));
  }
  return out;
}

void ContextImpl::finish_step() {
  const int32_t S = info_.stages, m = info_.microbatches;
  std::vector<std::vector<std::byte>> partial(stages_.size());
  for (int32_t d = 0; d < info_.num_directions(); ++d)
    for (int32_t s = 0; s < S; ++s) {
      Stage* st = stage(d, s);
      if (!st || st->gradient_bytes() == 0) continue;
      std::vector<int32_t> mbs;
      for (int32_t mb = 0; mb < m; ++mb)
        if (info_.direction_of(mb) == d) mbs.push_back(mb);
      auto& buf = partial[static_cast<size_t>(d * S + s)];
      buf.resize(st->gradient_bytes());
      st->reduce_gradients(mbs, buf.data());
    }
  // The replicas of a stage reduce at its root, the rank holding direction 0's replica: every
  // other holder sends the partial sums of the replicas it holds (in direction order), the root
  // adds all k in direction order and sends the sum back, so every holder gets the same bits, as
  // the sequential reference sums them. Stage by stage, gathers before the broadcast, peers in
  // ascending rank order: one global order of blocking exchanges, so none can deadlock. Each
  // holder sends its replicas' gradients once and the root the sum once per other holder: about a
  // ring all-reduce's volume.
  const int32_t D = info_.num_directions();
  for (int32_t s = 0; s < S; ++s) {
    std::vector<int32_t> mine;  // the directions whose replica of s runs here
    for (int32_t d = 0; d < D; ++d)
      if (stage(d, s)) mine.push_back(d);
    if (mine.empty()) continue;
    Stage* st = stage(mine.front(), s);
    const size_t bytes = st->gradient_bytes();
    if (bytes == 0) continue;
    if (D == 1) {
      final_grads_.emplace_back(s, std::move(partial[static_cast<size_t>(s)]));
      continue;
    }
    const int32_t root = info_.rank_of(0, s);
    std::vector<std::vector<int32_t>> held(static_cast<size_t>(info_.ranks));  // directions per rank
    for (int32_t d = 0; d < D; ++d) held[static_cast<size_t>(info_.rank_of(d, s))].push_back(d);
    std::vector<std::byte> sum;
    if (rank_ == root) {
      std::vector<std::vector<std::byte>> part(static_cast<size_t>(D));
      for (int32_t d : mine) part[static_cast<size_t>(d)] = std::move(partial[static_cast<size_t>(d * S + s)]);
      for (int32_t peer = 0; peer < info_.ranks; ++peer) {
        const std::vector<int32_t>& theirs = held[static_cast<size_t>(peer)];
        if (peer == rank_ || theirs.empty()) continue;
        std::vector<std::byte> recv(theirs.size() * bytes);
        backend_.exchange(peer, nullptr, 0, recv.data(), recv.size());
        for (size_t i = 0; i < theirs.size(); ++i)
          part[static_cast<size_t>(theirs[i])].assign(recv.begin() + static_cast<std::ptrdiff_t>(i * bytes),
                                                      recv.begin() + static_cast<std::ptrdiff_t>((i + 1) * bytes));
      }
      sum = std::move(part[0]);
      std::vector<std::byte> next(bytes);
      for (int32_t d = 1; d < D; ++d) {
        st->add_gradients(sum.data(), part[static_cast<size_t>(d)].data(), next.data());
        std::swap(sum, next);
      }
      for (int32_t peer = 0; peer < info_.ranks; ++peer)
        if (peer != rank_ && !held[static_cast<size_t>(peer)].empty())
          backend_.exchange(peer, sum.data(), bytes, nullptr, 0);
      final_grads_.emplace_back(s, std::move(sum));
    } else {
      std::vector<std::byte> packed(mine.size() * bytes);
      for (size_t i = 0; i < mine.size(); ++i) {
        const auto& p = partial[static_cast<size_t>(mine[i] * S + s)];
        std::copy(p.begin(), p.end(), packed.begin() + static_cast<std::ptrdiff_t>(i * bytes));
      }
      backend_.exchange(root, packed.data(), packed.size(), nullptr, 0);
      sum.resize(bytes);  // the replicas here now hold the reduced gradient, as the root's
      backend_.exchange(root, nullptr, 0, sum.data(), bytes);
    }
  }
}

void Context::forward(int32_t mb, int32_t stage) { impl_.forward(mb, stage); }
void Context::backward_input(int32_t mb, int32_t stage) { impl_.backward_input(mb, stage); }
void Context::backward_weight(int32_t mb, int32_t stage) { impl_.backward_weight(mb, stage); }
void Context::backward(int32_t mb, int32_t stage) { impl_.backward(mb, stage); }
void Context::recompute(int32_t mb, int32_t stage) { impl_.recompute(mb, stage); }
void Context::overlapped(Action f, Action b) { impl_.overlapped(f, b); }
void Context::post(int32_t group, const Transfer* transfers, size_t count) {
  impl_.post(group, std::span<const Transfer>(transfers, count));
}
void Context::wait(int32_t group, const Action* needs, size_t count) {
  impl_.wait(group, std::span<const Action>(needs, count));
}
void Context::wait_all() { impl_.wait_all(); }

void interpret(Context& ctx, const RankTable& table) {
  for (int32_t i = 0; i < table.num_ops; ++i) {
    const TableOp& op = table.ops[i];
    switch (op.code) {
      case OpCode::Forward: ctx.forward(op.a.mb, op.a.stage); break;
      case OpCode::BackwardInput: ctx.backward_input(op.a.mb, op.a.stage); break;
      case OpCode::BackwardWeight: ctx.backward_weight(op.a.mb, op.a.stage); break;
      case OpCode::Backward: ctx.backward(op.a.mb, op.a.stage); break;
      case OpCode::Overlapped: ctx.overlapped(op.a, op.b); break;
      case OpCode::Post: ctx.post(op.group, table.transfers + op.first, static_cast<size_t>(op.count)); break;
      case OpCode::Wait: ctx.wait(op.group, table.needs + op.first, static_cast<size_t>(op.count)); break;
      case OpCode::WaitAll: ctx.wait_all(); break;
      case OpCode::Recompute: ctx.recompute(op.a.mb, op.a.stage); break;
    }
  }
}

namespace {

// Decoded tables live until the process ends (a rank's table is its program); kept here, reachable,
// so that nothing is leaked and nothing moves.
struct DecodedTable {
  std::vector<TableOp> ops;
  std::vector<Transfer> transfers;
  std::vector<Action> needs;
};

std::mutex decoded_mutex;
std::deque<DecodedTable>& decoded_tables() {
  static std::deque<DecodedTable> tables;
  return tables;
}

}  // namespace

RankTable decode_table(const int32_t* data, int64_t size) {
  auto bad = [&](const char* what) { throw Error(std::string("a compact op table is malformed: ") + what); };
  if (size < 3) bad("no header");
  const int64_t n_ops = data[0], n_tr = data[1], n_needs = data[2];
  if (n_ops < 0 || n_tr < 0 || n_needs < 0 || 3 + 10 * n_ops + 6 * n_tr + 3 * n_needs != size) bad("its size");
  auto kind = [&](int32_t k) {
    if (k < 0 || k > 4) bad("an action kind");
    return static_cast<Kind>(k);
  };
  const int32_t* at = data + 3;
  DecodedTable t;
  t.ops.resize(static_cast<size_t>(n_ops));
  for (int64_t i = 0; i < n_ops; ++i, at += 10) {
    if (at[0] < 0 || at[0] > static_cast<int32_t>(OpCode::Recompute)) bad("an op code");
    TableOp& op = t.ops[static_cast<size_t>(i)];
    op.code = static_cast<OpCode>(at[0]);
    op.a = {kind(at[1]), at[2], at[3]};
    op.b = {kind(at[4]), at[5], at[6]};
    op.group = at[7];
    op.first = at[8];
    op.count = at[9];
    const int64_t limit = op.code == OpCode::Post ? n_tr : op.code == OpCode::Wait ? n_needs : 0;
    if ((op.code == OpCode::Post || op.code == OpCode::Wait) &&
        (op.first < 0 || op.count < 0 || int64_t{op.first} + op.count > limit))
      bad("an op's range of transfers or needs");
  }
  t.transfers.resize(static_cast<size_t>(n_tr));
  for (int64_t i = 0; i < n_tr; ++i, at += 6) {
    if (at[0] != 0 && at[0] != 1) bad("a transfer direction");
    t.transfers[static_cast<size_t>(i)] = {static_cast<Dir>(at[0]), {kind(at[1]), at[2], at[3]}, at[4], at[5]};
  }
  t.needs.resize(static_cast<size_t>(n_needs));
  for (int64_t i = 0; i < n_needs; ++i, at += 3) t.needs[static_cast<size_t>(i)] = {kind(at[0]), at[1], at[2]};
  std::lock_guard<std::mutex> lock(decoded_mutex);
  DecodedTable& kept = decoded_tables().emplace_back(std::move(t));
  return RankTable{kept.ops.empty() ? nullptr : kept.ops.data(), static_cast<int32_t>(n_ops),
                   kept.transfers.empty() ? nullptr : kept.transfers.data(),
                   kept.needs.empty() ? nullptr : kept.needs.data()};
}

}  // namespace schedrt
