// DualPipeV at pp = 4, m = 10 against PyTorch's own schedule for it (the torch-csv fixture from
// pytorch/pytorch test/distributed/pipelining/artifacts): the same per-rank orders, the same
// overlapped F&B units, action for action.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/unit/families/family_test_util.h"

using namespace schedc;
using namespace schedc::ir;

namespace {

std::string fixture_path() {
  for (const char* rel :
       {"/tests/data/torch-csv/dualpipev_4rank_10mb.csv", "/../shared/fixtures/torch-csv/dualpipev_4rank_10mb.csv"}) {
    std::string path = std::string(SCHEDC_SOURCE_DIR) + rel;
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

// One torch-csv token `{stage}{F|I|W|B}{mb}`: F forward, I input-gradient (our B), W weight
// gradient, B full backward (our BW).
Action parse_token(const std::string& t) {
  size_t k = t.find_first_of("FIWB");
  REQUIRE(k != std::string::npos);
  int32_t stage = std::stoi(t.substr(0, k)), mb = std::stoi(t.substr(k + 1));
  switch (t[k]) {
    case 'F': return F(mb, stage);
    case 'I': return B(mb, stage);
    case 'W': return W(mb, stage);
    default: return BW(mb, stage);
  }
}

struct Rows {
  std::vector<std::vector<Action>> ranks;
  std::vector<std::vector<int32_t>> overlap;
};

Rows parse_csv(const std::string& path) {
  std::ifstream in(path);
  Rows rows;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<Action> order;
    std::vector<int32_t> units;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) {
      if (cell.empty()) continue;  // an idle step
      if (cell.front() == '(') {
        size_t semi = cell.find(';'), close = cell.find(')');
        REQUIRE(cell.substr(close + 1) == "OVERLAP_F_B");
        units.push_back(static_cast<int32_t>(order.size()));
        order.push_back(parse_token(cell.substr(1, semi - 1)));
        order.push_back(parse_token(cell.substr(semi + 1, close - semi - 1)));
      } else {
        order.push_back(parse_token(cell));
      }
    }
    rows.ranks.push_back(order);
    rows.overlap.push_back(units);
  }
  return rows;
}

}  // namespace

TEST_CASE("dualpipev at pp = 4, m = 10 is PyTorch's DualPipeV schedule, unit for unit") {
  std::string path = fixture_path();
  REQUIRE_MESSAGE(!path.empty(), "dualpipev_4rank_10mb.csv not found under tests/data/torch-csv or ../shared");
  Rows torch = parse_csv(path);
  REQUIRE(torch.ranks.size() == 4);

  Problem p = test::family_problem("dualpipev", 4, 10);
  test::Generated g = test::generate("dualpipev", p);
  REQUIRE(g.ok());
  for (size_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    CHECK(g.schedule->ranks[r] == torch.ranks[r]);
    CHECK(g.schedule->overlap[r] == torch.overlap[r]);
  }
  // And the fixture is a valid schedule of the same problem with the same timeline.
  Schedule t;
  t.problem = p;
  t.ranks = torch.ranks;
  t.overlap = torch.overlap;
  CHECK(verify(t).empty());
  CHECK(test::figures(t).makespan == test::figures(*g.schedule).makespan);
}
