#pragma once
// The `.sched` syntax tree: what the parser read, before any meaning is checked. Text fields view
// the source buffer (valid while the SourceManager holds the file); locations are of the first
// character. The grammar is in docs/dsl.md.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "support/source.h"

namespace schedc::frontend::ast {

/// A word (name, keyword or action token) where it was written.
struct Word {
  std::string_view text;
  SourceLoc loc;
};

/// A value: number, word, string or list of values. `Invalid` stands for text the lexer already
/// reported, so that later phases never report it again.
struct Value {
  enum class Kind { Number, Word, String, List, Invalid };
  Kind kind = Kind::Invalid;
  SourceLoc loc;
  std::string_view text;     // spelling (Number, Word, String with its quotes)
  double number = 0;         // Number, in its unit
  std::string_view unit;     // Number: its unit as written (`ms` of `12.5ms`), empty when plain
  std::string string;        // String, decoded
  std::vector<Value> items;  // List

  bool is(Kind k) const { return kind == k; }
};

/// `key = value` inside a block (and the top-level assignments).
struct Entry {
  Word key;
  Value value;
};

/// `{ key = value ... }`: cost, memory, runtime, family parameters, solve options.
struct Block {
  SourceLoc loc;  // of `{`
  std::vector<Entry> entries;
};

/// One element of a rank's order: an action token, or `( ... )`, an overlapped unit.
struct OrderItem {
  SourceLoc loc;  // of the token, or of `(`
  bool group = false;
  std::vector<Word> tokens;  // one when not a group
};

/// `rank N: item item ...`
struct RankOrder {
  SourceLoc loc;  // of `rank`
  Value index;
  std::vector<OrderItem> items;
};

/// `explicit { rank 0: ... rank 1: ... }`
struct ExplicitBlock {
  SourceLoc loc;  // of `{`
  std::vector<RankOrder> ranks;
};

/// The value of `schedule = ...`: `explicit {...}`, `family NAME [{...}]`, `solve [{...}]`, or
/// any other value (which sema rejects).
struct ScheduleValue {
  Value head;
  std::optional<Word> family;           // `family NAME`
  std::optional<Block> options;         // family parameters / solve options
  std::optional<ExplicitBlock> orders;  // `explicit`
};

/// One clause of `expect { ... }`: `SUBJECT[INDEX] OP VALUE`, `same_as NAME`, or a bare `SUBJECT`.
struct Clause {
  Word subject;
  std::optional<Value> index;  // `peak_memory[2]`
  std::optional<Word> op;      // `==`, `=`, `<=`, `<`, `>=`, `>`
  std::optional<Value> value;
  std::optional<Word> family;  // `same_as NAME`
};

struct ExpectBlock {
  SourceLoc loc;  // of `{`
  std::vector<Clause> clauses;
};

/// A top-level statement: `key = value`, `key { ... }`, `key NAME { ... }` (a named block: `layer
/// moe { ... }`), `schedule = ...` or `expect { ... }`.
struct Stmt {
  Word key;
  std::variant<Value, Block, ScheduleValue, ExpectBlock> body;
  std::optional<Word> name;  // NAME of `key NAME { ... }`
};

struct File {
  int32_t file = -1;
  std::vector<Stmt> stmts;
};

}  // namespace schedc::frontend::ast
