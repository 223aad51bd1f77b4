// torch-csv-comms: the compute-and-comms CSV written from the lowered program. Checked here by a
// reader and a runtime model written for the test, independently of the emitter and of
// verify_program: every row holds what PyTorch's _PipelineScheduleRuntime needs before each action,
// every SEND meets its RECV on the peer's row in channel order, the rows run to the end both when
// sends are buffered (torch's own simulator) and when each send and receive blocks until its
// partner is at it (rendezvous, the strictest reading), and importing the file gives back the
// schedule. PyTorch's own lowering of a schedule from its tests passes the same checks.

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "codegen/emit.h"
#include "codegen/lower.h"
#include "codegen/verify_program.h"
#include "frontend/torch_csv.h"
#include "ir/verify.h"
#include "solver/families/families.h"
#include "tests/common/builders.h"

using namespace schedc;

namespace {

// ---- a reader for torch's action strings, as its grammar has them ----

enum class T { F, I, W, B, SendF, RecvF, SendB, RecvB, ReduceGrad, Unit };

struct Tok {
  T type = T::F;
  int stage = -1, mb = -1;
  std::vector<Tok> subs;  // an OVERLAP_F_B unit's actions
  std::string text;
  bool operator==(const Tok& o) const { return type == o.type && stage == o.stage && mb == o.mb; }
};

bool is_compute(T t) { return t == T::F || t == T::I || t == T::W || t == T::B || t == T::Unit; }
bool is_comm(T t) { return t == T::SendF || t == T::RecvF || t == T::SendB || t == T::RecvB; }
bool is_send(T t) { return t == T::SendF || t == T::SendB; }

Tok parse_tok(const std::string& s) {
  Tok t;
  t.text = s;
  if (!s.empty() && s[0] == '(') {
    size_t close = s.find(')');
    REQUIRE(close != std::string::npos);
    REQUIRE(s.substr(close + 1) == "OVERLAP_F_B");
    std::stringstream inner(s.substr(1, close - 1));
    std::string part;
    while (std::getline(inner, part, ';')) t.subs.push_back(parse_tok(part));
    t.type = T::Unit;
    return t;
  }
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  REQUIRE(i > 0);
  t.stage = std::stoi(s.substr(0, i));
  size_t j = i;
  while (j < s.size() && !std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  std::string name = s.substr(i, j - i);
  if (j < s.size()) t.mb = std::stoi(s.substr(j));
  static const std::map<std::string, T> kTypes = {
      {"F", T::F},          {"I", T::I},          {"W", T::W},
      {"B", T::B},          {"SEND_F", T::SendF}, {"RECV_F", T::RecvF},
      {"SEND_B", T::SendB}, {"RECV_B", T::RecvB}, {"REDUCE_GRAD", T::ReduceGrad}};
  auto it = kTypes.find(name);
  INFO("token ", s);
  REQUIRE(it != kTypes.end());
  t.type = it->second;
  CHECK((t.mb >= 0) == (t.type != T::ReduceGrad));
  return t;
}

using Rows = std::vector<std::vector<Tok>>;

Rows parse_csv(const std::string& text) {
  Rows rows;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    rows.emplace_back();
    std::stringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ','))
      if (!cell.empty()) rows.back().push_back(parse_tok(cell));
  }
  return rows;
}

// The compute-only text of a compute_comms file: its compute cells, in order.
std::string compute_only(const std::string& text) {
  std::string out;
  for (const auto& row : parse_csv(text)) {
    bool first = true;
    for (const Tok& t : row)
      if (is_compute(t.type)) {
        out += (first ? "" : ",") + t.text;
        first = false;
      }
    out += '\n';
  }
  return out;
}

// ---- what torch's runtime needs, and a blocking run of the rows ----

struct Check {
  std::string failure;  // empty when every check passed
  void fail(const std::string& s) {
    if (failure.empty()) failure = s;
  }
};

// The transfer a compute needs or makes, named as torch names it (see docs/formats.md).
Tok need(T recv, int stage, int mb) { return Tok{recv, stage, mb, {}, {}}; }

enum class Semantics { Buffered, Rendezvous };

// Checks the rows of a compute_comms file for a problem of `stages` stages and `m` microbatches.
Check check_rows(const Rows& rows, int stages, int m, Semantics sem = Semantics::Rendezvous) {
  Check c;
  const int R = static_cast<int>(rows.size());
  std::vector<int> rank_of(static_cast<size_t>(stages), -1);
  auto leaves = [](const Tok& t) { return t.type == T::Unit ? t.subs : std::vector<Tok>{t}; };
  for (int r = 0; r < R; ++r)
    for (const Tok& t : rows[static_cast<size_t>(r)])
      for (const Tok& l : leaves(t)) {
        if (l.stage < 0 || l.stage >= stages) return c.fail("stage out of range in " + l.text), c;
        int& owner = rank_of[static_cast<size_t>(l.stage)];
        if (owner >= 0 && owner != r) c.fail("stage " + std::to_string(l.stage) + " on two rows");
        owner = r;
      }
  if (std::count(rank_of.begin(), rank_of.end(), -1) != 0) return c.fail("a stage on no row"), c;
  auto crosses = [&](int a, int b) { return b >= 0 && b < stages && rank_of[size_t(a)] != rank_of[size_t(b)]; };

  // Per row, in order: a compute finds the receive it reads already posted (once), a send comes
  // after the compute that makes its data, transfers exist only between ranks, REDUCE_GRAD comes
  // once per stage after its m-th W or full B.
  for (int r = 0; r < R; ++r) {
    std::map<std::tuple<T, int, int>, int> seen;  // (type, stage, mb) -> count so far
    std::map<int, int> grads;
    for (const Tok& t : rows[size_t(r)]) {
      if (is_comm(t.type)) {
        bool fwd = t.type == T::SendF || t.type == T::RecvF;
        int peer_stage = t.type == T::SendF || t.type == T::RecvB ? t.stage + 1 : t.stage - 1;
        if (!crosses(t.stage, peer_stage)) c.fail("row " + std::to_string(r) + ": " + t.text + " has no peer rank");
        if (is_send(t.type)) {
          bool made = fwd ? seen.count({T::F, t.stage, t.mb})
                          : seen.count({T::I, t.stage, t.mb}) + seen.count({T::B, t.stage, t.mb});
          if (!made) c.fail("row " + std::to_string(r) + ": " + t.text + " before the compute that makes it");
        }
        if (++seen[{t.type, t.stage, t.mb}] > 1) c.fail("row " + std::to_string(r) + ": " + t.text + " twice");
        continue;
      }
      if (t.type == T::ReduceGrad) {
        if (grads[t.stage] != m) c.fail("row " + std::to_string(r) + ": " + t.text + " before the stage's last W/B");
        if (++seen[{t.type, t.stage, -1}] > 1) c.fail("row " + std::to_string(r) + ": " + t.text + " twice");
        continue;
      }
      for (const Tok& l : leaves(t)) {
        if (l.type == T::F && crosses(l.stage, l.stage - 1) && !seen.count({T::RecvF, l.stage, l.mb}))
          c.fail("row " + std::to_string(r) + ": " + l.text + " without its RECV_F before it");
        if ((l.type == T::I || l.type == T::B) && crosses(l.stage, l.stage + 1) &&
            !seen.count({T::RecvB, l.stage, l.mb}))
          c.fail("row " + std::to_string(r) + ": " + l.text + " without its RECV_B before it");
        if (l.type == T::W || l.type == T::B) ++grads[l.stage];
        ++seen[{l.type, l.stage, l.mb}];
      }
    }
    for (auto [stage, n] : grads)
      if (rank_of[size_t(stage)] == r && n == m && !seen.count({T::ReduceGrad, stage, -1}))
        c.fail("row " + std::to_string(r) + ": no REDUCE_GRAD for stage " + std::to_string(stage));
  }

  // Channels: the k-th SEND of a to b and the k-th RECV of b from a are one transfer.
  struct At {
    int rank;
    size_t pos;
  };
  std::map<std::pair<int, int>, std::vector<At>> sends, recvs;
  std::vector<std::vector<std::pair<std::pair<int, int>, size_t>>> slot(static_cast<size_t>(R));
  for (int r = 0; r < R; ++r) {
    slot[size_t(r)].assign(rows[size_t(r)].size(), {{-1, -1}, 0});
    for (size_t i = 0; i < rows[size_t(r)].size(); ++i) {
      const Tok& t = rows[size_t(r)][i];
      if (!is_comm(t.type)) continue;
      int peer_stage = t.type == T::SendF || t.type == T::RecvB ? t.stage + 1 : t.stage - 1;
      int peer = rank_of[size_t(std::clamp(peer_stage, 0, stages - 1))];
      std::pair<int, int> ch = is_send(t.type) ? std::pair{r, peer} : std::pair{peer, r};
      auto& list = (is_send(t.type) ? sends : recvs)[ch];
      slot[size_t(r)][i] = {ch, list.size()};
      list.push_back({r, i});
    }
  }
  for (const auto& [ch, list] : sends) {
    const auto& other = recvs[ch];
    if (other.size() != list.size()) {
      c.fail("channel " + std::to_string(ch.first) + "->" + std::to_string(ch.second) + ": " +
             std::to_string(list.size()) + " sends, " + std::to_string(other.size()) + " receives");
      continue;
    }
    for (size_t k = 0; k < list.size(); ++k) {
      const Tok& s = rows[size_t(list[k].rank)][list[k].pos];
      const Tok& v = rows[size_t(other[k].rank)][other[k].pos];
      Tok expect = s.type == T::SendF ? need(T::RecvF, s.stage + 1, s.mb) : need(T::RecvB, s.stage - 1, s.mb);
      if (!(v == expect)) c.fail("channel order: " + s.text + " meets " + v.text);
    }
  }
  for (const auto& [ch, list] : recvs)
    if (!sends.count(ch)) c.fail("receives on a channel with no sends");
  if (!c.failure.empty()) return c;

  // Each row runs in order. Buffered (torch's own _simulate_comms_compute): a SEND never waits, a
  // RECV waits until its SEND has been issued. Rendezvous (NCCL with messages larger than its
  // buffers, one stream per pair of ranks): a SEND or RECV completes only together with its
  // partner, both rows being at the two ends of the channel's k-th transfer. Compute and
  // REDUCE_GRAD never wait: the receives they read were completed earlier in the row.
  std::vector<size_t> pos(static_cast<size_t>(R), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < R; ++r) {
      while (pos[size_t(r)] < rows[size_t(r)].size()) {
        size_t i = pos[size_t(r)];
        const Tok& t = rows[size_t(r)][i];
        if (!is_comm(t.type) || (sem == Semantics::Buffered && is_send(t.type))) {
          ++pos[size_t(r)];
          progress = true;
          continue;
        }
        auto [ch, k] = slot[size_t(r)][i];
        At partner = is_send(t.type) ? recvs[ch][k] : sends[ch][k];
        if (sem == Semantics::Buffered) {
          if (pos[size_t(partner.rank)] <= partner.pos) break;  // the send is not issued yet
          ++pos[size_t(r)];
        } else {
          if (pos[size_t(partner.rank)] != partner.pos) break;
          ++pos[size_t(r)];
          ++pos[size_t(partner.rank)];
        }
        progress = true;
      }
    }
  }
  for (int r = 0; r < R; ++r)
    if (pos[size_t(r)] < rows[size_t(r)].size())
      c.fail("deadlock: row " + std::to_string(r) + " stuck at " + rows[size_t(r)][pos[size_t(r)]].text);
  return c;
}

std::optional<ir::Schedule> import(const std::string& text, std::string* diagnostics) {
  SourceManager sm;
  Diagnostics diags(&sm);
  int32_t file = sm.add("in.csv", text);
  auto s = frontend::read_torch_csv(sm, file, ir::Problem{}, {}, diags);
  *diagnostics = diags.str();
  return s;
}

std::string read_data(const std::string& name) {
  std::ifstream in(std::string(SCHEDC_TEST_DATA) + "/torch-csv/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("torch-csv-comms: every single-direction family round-trips and runs without deadlock") {
  int written = 0;
  for (const solver::FamilyInfo& fam : solver::families())
    for (int pp : {2, 3, 4})
      for (int vpp : {1, 2})
        for (int m : {1, 4, 8}) {
          ir::Problem p = test::problem(pp, m, ir::BackwardMode::Split);
          p.stages_per_rank = vpp;
          p.cost.comm = 0.5;
          solver::apply_family_defaults(fam, {ir::Field::Ranks, ir::Field::Microbatches, ir::Field::StagesPerRank}, p);
          if (fam.stages_per_rank != 0 && vpp != fam.stages_per_rank) continue;
          if (!ir::validate(p).empty() || codegen::torch_csv_conflict(p)) continue;
          SourceManager sm;
          Diagnostics diags(&sm);
          auto s = solver::generate_family(fam.name, p, {}, SourceLoc{}, diags);
          if (!s) continue;
          for (auto strategy : {codegen::LowerStrategy::Prefetch, codegen::LowerStrategy::JustInTime}) {
            INFO(fam.name, " pp=", pp, " vpp=", vpp, " m=", m, " ", codegen::to_string(strategy));
            ir::Program prog = codegen::lower(*s, {strategy});
            REQUIRE(codegen::verify_program(*s, prog).empty());
            std::string text = codegen::emit_torch_csv_comms(prog);
            INFO(text);
            // The compute cells are the compute-only export, in the same order.
            CHECK(compute_only(text) == codegen::emit_torch_csv(*s));
            for (Semantics sem : {Semantics::Buffered, Semantics::Rendezvous})
              CHECK(check_rows(parse_csv(text), p.num_stages(), m, sem).failure == "");
            std::string diagnostics;
            auto back = import(text, &diagnostics);
            REQUIRE_MESSAGE(back.has_value(), diagnostics);
            CHECK(back->ranks == s->ranks);
            CHECK(codegen::emit_torch_csv(*back) == codegen::emit_torch_csv(*s));
            ++written;
          }
        }
  MESSAGE("checked ", written, " compute_comms files");
  CHECK(written >= 3 * static_cast<int>(solver::families().size()));
}

TEST_CASE("torch-csv-comms: the checker catches a missing receive, a wrong channel order and a deadlock") {
  // 1F1B on two ranks, fused backward, with both ranks sending before they receive in the steady
  // state (rank 0 sends F1 while rank 1 sends B0): fine when sends are buffered, a hang under
  // rendezvous. Receiving B0 first (`good`) fixes it.
  std::string crosswise = "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
                          "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n";
  CHECK(check_rows(parse_csv(crosswise), 2, 2, Semantics::Buffered).failure == "");
  CHECK(check_rows(parse_csv(crosswise), 2, 2).failure == "deadlock: row 0 stuck at 0SEND_F1");
  std::string good = "0F0,0SEND_F0,0F1,0RECV_B0,0SEND_F1,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
                     "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n";
  CHECK(check_rows(parse_csv(good), 2, 2).failure == "");
  std::string missing = "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
                        "1F0,1RECV_F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n";
  CHECK(check_rows(parse_csv(missing), 2, 2).failure == "row 1: 1F0 without its RECV_F before it");
  std::string crossed = "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
                        "1RECV_F1,1RECV_F0,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n";
  CHECK(check_rows(parse_csv(crossed), 2, 2).failure == "channel order: 0SEND_F0 meets 1RECV_F1");
  // Both ranks receive before they send: fine with buffered sends, a deadlock under rendezvous.
  std::string stuck = "0F0,0F1,0SEND_F1,0RECV_B0,0SEND_F0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
                      "1RECV_F1,1F1,1B1,1SEND_B1,1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD\n";
  CHECK(check_rows(parse_csv(stuck), 2, 2).failure.starts_with("channel order"));
  std::string deadlock = "0F0,0RECV_B0,0SEND_F0,0B0,0REDUCE_GRAD\n"
                         "1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD\n";
  for (Semantics sem : {Semantics::Buffered, Semantics::Rendezvous})
    CHECK(check_rows(parse_csv(deadlock), 2, 1, sem).failure == "deadlock: row 0 stuck at 0RECV_B0");
  std::string no_reduce = "0F0,0SEND_F0,0RECV_B0,0B0\n"
                          "1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD\n";
  CHECK(check_rows(parse_csv(no_reduce), 2, 1).failure == "row 0: no REDUCE_GRAD for stage 0");
}

// PyTorch's own lowering of a ZB1P schedule (2 ranks, 2 stages per rank, 8 microbatches) from its
// tests, in the naming of its time (B = input gradient, W = weight gradient, BW = both; today I, W
// and B). Its compute-only twin is the schedule; both lowerings must pass the checks above.
TEST_CASE("torch-csv-comms: PyTorch's lowering of its ZB1P test schedule and ours both pass the checks") {
  auto modern = [](std::string text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      // Old `B` (input gradient) is today's `I`, old `BW` today's `B`; SEND_B/RECV_B stay.
      bool letter = text[i] == 'B' && i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1]));
      if (letter && i + 1 < text.size() && text[i + 1] == 'W') {
        out += 'B';
        ++i;
      } else {
        out += letter ? 'I' : text[i];
      }
    }
    return out;
  };
  std::string compute = modern(read_data("zb1p_2rank_2stagep_compute.csv"));
  std::string torch_comms = modern(read_data("zb1p_2rank_2stagep_comms.csv"));
  std::string diagnostics;
  auto s = import(compute, &diagnostics);
  REQUIRE_MESSAGE(s.has_value(), diagnostics);
  CHECK(s->problem.ranks == 2);
  CHECK(s->problem.num_stages() == 4);
  CHECK(s->problem.microbatches == 8);

  // Torch's file has no REDUCE_GRAD (it predates it); add them where today's lowering puts them
  // to check it with the same rules. Its rows pass every check, both runs included.
  Rows torch_rows = parse_csv(torch_comms);
  for (auto& row : torch_rows) {
    std::map<int, int> grads;
    std::vector<Tok> with;
    for (const Tok& t : row) {
      with.push_back(t);
      if ((t.type == T::W || t.type == T::B) && ++grads[t.stage] == 8)
        with.push_back(Tok{T::ReduceGrad, t.stage, -1, {}, std::to_string(t.stage) + "REDUCE_GRAD"});
    }
    row = with;
  }
  for (Semantics sem : {Semantics::Buffered, Semantics::Rendezvous})
    CHECK(check_rows(torch_rows, 4, 8, sem).failure == "");

  // Ours, from the same schedule: the same compute order (torch also merged rank 0's adjacent I
  // and W into one B), a valid communication order of its own.
  ir::Program prog = codegen::lower(*s);
  REQUIRE(codegen::verify_program(*s, prog).empty());
  std::string ours = codegen::emit_torch_csv_comms(prog);
  CHECK(compute_only(ours) == codegen::emit_torch_csv(*s));
  for (Semantics sem : {Semantics::Buffered, Semantics::Rendezvous})
    CHECK(check_rows(parse_csv(ours), 4, 8, sem).failure == "");
  // The two agree on every transfer, per channel in the same order; they differ only in where a
  // row posts them between its computes.
  auto channel_orders = [](const Rows& rows) {
    std::vector<std::string> out(rows.size());
    for (size_t r = 0; r < rows.size(); ++r)
      for (const Tok& t : rows[r])
        if (is_comm(t.type)) out[r] += t.text + ",";
    return out;
  };
  std::vector<std::string> a = channel_orders(torch_rows), b = channel_orders(parse_csv(ours));
  CHECK(a != b);  // torch posts receives as early as its round-robin sweep allows
  for (size_t r = 0; r < a.size(); ++r) {
    std::multiset<std::string> x, y;
    std::stringstream sa(a[r]), sb(b[r]);
    for (std::string t; std::getline(sa, t, ',');) x.insert(t);
    for (std::string t; std::getline(sb, t, ',');) y.insert(t);
    CHECK(x == y);
  }
}

TEST_CASE("torch-csv-comms: the DualPipeV fixture (overlapped units, V-turns) lowers to a file that passes") {
  std::string diagnostics;
  auto s = import(read_data("dualpipev_4rank_10mb.csv"), &diagnostics);
  REQUIRE_MESSAGE(s.has_value(), diagnostics);
  for (auto strategy : {codegen::LowerStrategy::Prefetch, codegen::LowerStrategy::JustInTime}) {
    ir::Program prog = codegen::lower(*s, {strategy});
    REQUIRE(codegen::verify_program(*s, prog).empty());
    std::string text = codegen::emit_torch_csv_comms(prog);
    INFO(text);
    CHECK(compute_only(text) == read_data("dualpipev_4rank_10mb.csv"));
    for (Semantics sem : {Semantics::Buffered, Semantics::Rendezvous})
      CHECK(check_rows(parse_csv(text), 8, 10, sem).failure == "");
    auto back = import(text, &diagnostics);
    REQUIRE_MESSAGE(back.has_value(), diagnostics);
    CHECK(back->ranks == s->ranks);
    CHECK(back->overlap == s->overlap);
  }
}
