// schedrt::decode_table, the compact op tables of large generated programs: the layout of
// schedrt/program.h decoded exactly, and malformed data refused rather than run.

#include <doctest/doctest.h>

#include <vector>

#include "schedrt/program.h"
#include "schedrt/types.h"

using namespace schedrt;

TEST_CASE("decode_table reads ops, transfers and needs as laid out") {
  // F(0,0); post one send of F(0,0) to rank 1 (seq 0); wait for BW(0,1); BW(0,0); wait_all.
  const std::vector<int32_t> data = {5, 1, 1, 0, 0, 0, 0, 0, 0,  0, -1, 0, 0, 5, 0, 0, 0, 0, 0, 0,  0,
                                     0, 1, 6, 0, 0, 0, 0, 0, 0,  1, 0,  1, 3, 3, 0, 0, 3, 0, 0, -1, 0,
                                     0, 7, 0, 0, 0, 0, 0, 0, -1, 0, 0,  0, 0, 0, 0, 1, 0, 3, 0, 1};
  RankTable t = decode_table(data.data(), static_cast<int64_t>(data.size()));
  REQUIRE(t.num_ops == 5);
  CHECK(t.ops[0].code == OpCode::Forward);
  CHECK(t.ops[0].a == F(0, 0));
  CHECK(t.ops[1].code == OpCode::Post);
  CHECK(t.ops[1].group == 0);
  CHECK(t.ops[1].count == 1);
  CHECK(t.transfers[0].dir == Dir::Send);
  CHECK(t.transfers[0].producer == F(0, 0));
  CHECK(t.transfers[0].peer == 1);
  CHECK(t.ops[2].code == OpCode::Wait);
  CHECK(t.needs[0] == BW(0, 1));
  CHECK(t.ops[3].code == OpCode::Backward);
  CHECK(t.ops[3].a == BW(0, 0));
  CHECK(t.ops[4].code == OpCode::WaitAll);
}

TEST_CASE("decode_table refuses malformed data") {
  std::vector<int32_t> ok = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0};
  CHECK_NOTHROW(decode_table(ok.data(), static_cast<int64_t>(ok.size())));
  CHECK_THROWS_AS(decode_table(ok.data(), 2), Error);                                    // no header
  CHECK_THROWS_AS(decode_table(ok.data(), static_cast<int64_t>(ok.size()) - 1), Error);  // short
  auto with = [&](size_t at, int32_t v) {
    std::vector<int32_t> d = ok;
    d[at] = v;
    return d;
  };
  auto bad_code = with(3, 9), bad_kind = with(4, 7);
  CHECK_THROWS_AS(decode_table(bad_code.data(), static_cast<int64_t>(bad_code.size())), Error);
  CHECK_THROWS_AS(decode_table(bad_kind.data(), static_cast<int64_t>(bad_kind.size())), Error);
  // A post whose transfers run past the table's.
  std::vector<int32_t> post = {1, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  CHECK_THROWS_AS(decode_table(post.data(), static_cast<int64_t>(post.size())), Error);
}
