// read_input: whole regular files and standard input only, up to a limit, never blocking.

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "support/input.h"
#include "support/json_locate.h"

using namespace schedc;
namespace fs = std::filesystem;

namespace {

// A fresh folder, removed with its contents at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "schedc-input-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

// The failure of a read, or nullopt when it succeeded.
std::optional<ReadFailure> failure(const std::variant<std::string, ReadFailure>& r) {
  if (auto* f = std::get_if<ReadFailure>(&r)) return *f;
  return std::nullopt;
}

}  // namespace

TEST_CASE("a regular file is read whole, bytes as they are") {
  TempDir t;
  std::string text("ranks = 2\r\n\0x", 13);
  auto r = read_input(t.write("a.sched", text));
  REQUIRE(std::holds_alternative<std::string>(r));
  CHECK(std::get<std::string>(r) == text);
  auto empty = read_input(t.write("e.sched", ""));
  REQUIRE(std::holds_alternative<std::string>(empty));
  CHECK(std::get<std::string>(empty).empty());
}

TEST_CASE("more than the limit is too-large, found from the size alone") {
  TempDir t;
  std::string path = t.write("big.csv", std::string(1000, ','));
  CHECK(std::holds_alternative<std::string>(read_input(path, 1000)));
  std::optional<ReadFailure> f = failure(read_input(path, 999));
  REQUIRE(f);
  CHECK(f->kind == DiagKind::TooLarge);
  CHECK(f->message == "the file has 1000 bytes, more than the 999 bytes schedc reads from one input");
  // A sparse file far beyond the real limit: refused without reading (or allocating) it.
  std::string huge = (t.path / "huge.json").string();
  REQUIRE(truncate(t.write("huge.json", "").c_str(), off_t{1} << 32) == 0);
  f = failure(read_input(huge));
  REQUIRE(f);
  CHECK(f->kind == DiagKind::TooLarge);
  CHECK(f->message.find("more than the 256 MiB schedc reads from one input") != std::string::npos);
}

TEST_CASE("only regular files are opened by name: directories, FIFOs and devices are refused at once") {
  TempDir t;
  std::optional<ReadFailure> f = failure(read_input(t.path.string()));
  REQUIRE(f);
  CHECK(f->kind == DiagKind::Io);
  CHECK(f->message.find("it is a directory") != std::string::npos);
  std::string fifo = (t.path / "pipe.sched").string();
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  f = failure(read_input(fifo));  // no writer: opening it for reading as usual would block forever
  REQUIRE(f);
  CHECK(f->message == "cannot read `" + fifo +
                          "`: it is a FIFO (named pipe), not a regular file (to read a stream, pass `-` and redirect "
                          "it to standard input)");
  f = failure(read_input("/dev/zero"));
  REQUIRE(f);
  CHECK(f->message.find("it is a character device") != std::string::npos);
  f = failure(read_input((t.path / "missing.json").string()));
  REQUIRE(f);
  CHECK(f->message.find(": no such file") != std::string::npos);
  CHECK(failure(read_input("")).has_value());
}

TEST_CASE("read_source reports against the file when it is too large, else without a location") {
  TempDir t;
  SourceManager sm;
  Diagnostics d(&sm);
  CHECK(read_source(sm, d, t.write("x.sched", "12345"), 4) == -1);
  CHECK(read_source(sm, d, (t.path / "none.sched").string()) == -1);
  std::string out = d.str();
  CHECK(out.find((t.path / "x.sched").string() + ": error: the file has 5 bytes, more than the 4 bytes schedc reads "
                                                 "from one input [too-large]") != std::string::npos);
  CHECK(out.find("schedc: error: cannot read `") != std::string::npos);
  int32_t ok = read_source(sm, d, t.write("y.sched", "ranks = 1\n"));
  REQUIRE(ok >= 0);
  CHECK(sm.text(ok) == "ranks = 1\n");
}

TEST_CASE("json_too_deep finds the first opener past the limit, skipping strings") {
  CHECK(json_too_deep(R"({"a": [[1], {"b": []}]})", 4) == std::string_view::npos);
  CHECK(json_too_deep(R"({"a": [[1], {"b": []}]})", 3) == 18);
  CHECK(json_too_deep(R"({"a": [[1], {"b": []}]})", 2) == 7);
  CHECK(json_too_deep(R"(["[[[[", "\"[[[["])", 1) == std::string_view::npos);
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK(json_too_deep(deep, 512) == 512);
  CHECK(json_too_deep("]]]][[", 2) == std::string_view::npos);
}
