#include "frontend/parser.h"

#include <algorithm>

#include "frontend/suggest.h"
#include "support/numbers.h"
#include "support/units.h"

namespace schedc::frontend {

namespace {

using ast::Value;
using ast::Word;

bool is_comparison(TokenKind k) {
  return k == TokenKind::Equal || k == TokenKind::EqualEqual || k == TokenKind::Less || k == TokenKind::LessEqual ||
         k == TokenKind::Greater || k == TokenKind::GreaterEqual;
}
constexpr std::string_view kScheduleSources[] = {"explicit", "family", "solve"};

bool is_opener(TokenKind k) { return k == TokenKind::LBrace || k == TokenKind::LBracket || k == TokenKind::LParen; }
bool is_closer(TokenKind k) { return k == TokenKind::RBrace || k == TokenKind::RBracket || k == TokenKind::RParen; }

class Parser {
 public:
  Parser(const TokenBuffer& tokens, Reporter& report) : t_(tokens), r_(report) {}

  ast::File run() {
    ast::File file;
    file.file = t_.file();
    while (!at(TokenKind::End) && !r_.full()) {
      size_t before = pos_;
      skip_separators();
      if (at(TokenKind::Word)) {
        if (auto stmt = statement()) file.stmts.push_back(std::move(*stmt));
      } else if (at(TokenKind::RBrace)) {
        error("unexpected `}`, no block is open here");
        advance();
      } else if (at(TokenKind::Error)) {
        advance();
      } else if (!at(TokenKind::End)) {
        error("expected a key such as `ranks = 4`, got " + describe());
        skip_rest_of_entry();
      }
      if (pos_ == before) advance();  // every round makes progress, whatever went wrong
    }
    return file;
  }

 private:
  // ---- token access ----
  TokenKind kind() const { return t_.kind(pos_); }
  TokenKind kind_at(size_t ahead) const { return t_.kind(std::min(pos_ + ahead, t_.size() - 1)); }
  bool at(TokenKind k) const { return kind() == k; }
  bool at_word(std::string_view w) const { return at(TokenKind::Word) && t_.text(pos_) == w; }
  void advance() {
    if (pos_ + 1 < t_.size()) ++pos_;
  }
  SourceLoc loc() const { return t_.loc(pos_); }
  Word word() const { return Word{t_.text(pos_), loc()}; }
  bool at_line_start() const { return pos_ > 0 && t_.kind(pos_ - 1) == TokenKind::Newline; }
  void skip_separators() {
    while (at(TokenKind::Newline)) advance();
  }
  void skip_separators_and_commas() {
    while (at(TokenKind::Newline) || at(TokenKind::Comma)) advance();
  }

  // What the current token is, for "got ..." in messages.
  std::string describe() const {
    switch (kind()) {
      case TokenKind::End: return "end of file";
      case TokenKind::Newline: return t_.text(pos_) == ";" ? "`;`" : "end of line";
      case TokenKind::Number: return "number " + quote(t_.text(pos_));
      case TokenKind::String: return "string " + quote(t_.text(pos_));
      default: return quote(t_.text(pos_));
    }
  }

  // A syntax error at the current token, unless the lexer already reported that token.
  void error(std::string message) {
    if (at(TokenKind::Error)) return;
    r_.error(DiagKind::Syntax, loc(), std::move(message));
  }
  void error_at(SourceLoc where, std::string message) { r_.error(DiagKind::Syntax, where, std::move(message)); }

  // True when an unterminated string lies between token `from` and here: it ran to the end of its
  // line and may have swallowed the `]` or `}` that the parser now misses (already reported).
  bool swallowed_since(size_t from) const {
    for (size_t i = from; i < pos_; ++i)
      if (t_.kind(i) == TokenKind::Error && t_.text(i).starts_with('"')) return true;
    return false;
  }
  // `key =`, `key {` or `key NAME {` at the start of a line: the next entry, after something left
  // unclosed.
  bool at_next_entry() const {
    return at_line_start() && at(TokenKind::Word) &&
           (kind_at(1) == TokenKind::Equal || kind_at(1) == TokenKind::LBrace ||
            (kind_at(1) == TokenKind::Word && kind_at(2) == TokenKind::LBrace));
  }

  // ---- recovery ----
  // Skips to just after the next line end or `;`, or to the `}` that closes the enclosing block,
  // stepping over balanced brackets; always consumes the current token unless it is `}` or End.
  void skip_rest_of_entry() {
    int depth = 0;
    while (!at(TokenKind::End)) {
      TokenKind k = kind();
      if (depth == 0 && k == TokenKind::Newline) {
        advance();
        return;
      }
      if (depth == 0 && k == TokenKind::RBrace) return;
      if (is_opener(k)) ++depth;
      if (is_closer(k) && depth > 0) --depth;
      advance();
    }
  }
  // After a value that failed to parse: a fresh line (e.g. after an unclosed list) starts the
  // next entry as it is; otherwise skip the rest of this one.
  void recover() {
    if (!at_line_start()) skip_rest_of_entry();
  }
  // An entry ends at a line end, `;`, `}` or the end of the file; a next key may also follow on
  // the same line (`cost { F = 1  B = 2 }`).
  void end_entry(std::string_view key, bool commas) {
    if (at(TokenKind::Newline) || (commas && at(TokenKind::Comma))) return advance();
    if (at(TokenKind::RBrace) || at(TokenKind::End) || at(TokenKind::Word)) return;
    error("expected a new line or `;` after the value of " + quote(key) + ", got " + describe());
    skip_rest_of_entry();
  }

  // ---- values ----
  // A number, word, string or list. `same_line`: the value must start on this line (after `=`).
  std::optional<Value> value(const std::string& after, bool same_line, int depth) {
    if (!same_line) skip_separators();
    Value v;
    v.loc = loc();
    v.text = t_.text(pos_);
    switch (kind()) {
      case TokenKind::Number:
        v.kind = Value::Kind::Number;
        if (auto q = parse_quantity(v.text)) {
          v.number = q->value;
          if (q->unit) v.unit = q->unit->name;
        }
        advance();
        return v;
      case TokenKind::Word:
        v.kind = Value::Kind::Word;
        advance();
        return v;
      case TokenKind::String:
        v.kind = Value::Kind::String;
        v.string = decode_string(v.text);
        advance();
        return v;
      case TokenKind::Error:
        v.kind = Value::Kind::Invalid;
        advance();
        return v;
      case TokenKind::LBracket: return list(depth);
      default: break;
    }
    error("expected a value " + after + ", got " + describe());
    return std::nullopt;
  }

  std::optional<Value> list(int depth) {
    size_t open_pos = pos_;
    SourceLoc open = loc();
    Value v;
    v.kind = Value::Kind::List;
    v.loc = open;
    v.text = t_.text(pos_);
    advance();
    if (depth >= kMaxListDepth) {
      r_.error(DiagKind::TooLarge, open, "lists nest deeper than " + std::to_string(kMaxListDepth) + " levels");
      for (int open_count = 1; open_count > 0 && !at(TokenKind::End); advance()) {
        if (is_opener(kind())) ++open_count;
        if (is_closer(kind())) --open_count;
      }
      return std::nullopt;
    }
    while (true) {
      skip_separators();
      if (at(TokenKind::RBracket)) {
        advance();
        return v;
      }
      if (at(TokenKind::End) || at(TokenKind::RBrace)) break;
      if (at_next_entry()) {
        error_at(open, "the list is not closed before " + quote(t_.text(pos_)) + ", expected `]`");
        return std::nullopt;
      }
      auto item = value("in a list", false, depth + 1);
      if (!item) return std::nullopt;
      bool invalid = item->is(Value::Kind::Invalid);
      v.items.push_back(std::move(*item));
      // An unterminated string or other bad text may have swallowed the `]`: stay quiet.
      if (invalid && !at(TokenKind::Comma) && !at(TokenKind::RBracket)) return std::nullopt;
      skip_separators();
      if (at(TokenKind::Comma)) {
        advance();
        continue;
      }
      if (at(TokenKind::RBracket)) {
        advance();
        return v;
      }
      break;
    }
    if (at_next_entry()) {
      error_at(open, "the list is not closed before " + quote(t_.text(pos_)) + ", expected `]`");
      return std::nullopt;
    }
    if (at(TokenKind::End) && swallowed_since(open_pos)) return std::nullopt;
    error("expected `,` or `]` in a list, got " + describe());
    r_.note(open, "the list starts here");
    return std::nullopt;
  }

  // ---- statements ----
  std::optional<ast::Stmt> statement() {
    ast::Stmt stmt{word(), Value{}, std::nullopt};
    std::string_view key = stmt.key.text;
    advance();
    if (key == "expect" && at(TokenKind::LBrace)) {
      stmt.body = expect_block();
      end_entry(key, false);
      return stmt;
    }
    if (at(TokenKind::Word) && kind_at(1) == TokenKind::LBrace) {  // `layer moe { ... }`
      stmt.name = word();
      advance();
    }
    if (at(TokenKind::LBrace)) {
      stmt.body = block(key);
      end_entry(key, false);
      return stmt;
    }
    if (!at(TokenKind::Equal)) {
      error("expected `=` after " + quote(key) + ", got " + describe());
      skip_rest_of_entry();
      return std::nullopt;
    }
    advance();
    if (key == "schedule") {
      auto sched = schedule_value();
      if (!sched) {
        recover();
        return std::nullopt;
      }
      stmt.body = std::move(*sched);
    } else {
      auto v = value("after `" + std::string(key) + " =`", true, 0);
      if (!v) {
        recover();
        return std::nullopt;
      }
      stmt.body = std::move(*v);
    }
    end_entry(key, false);
    return stmt;
  }

  // Reports a block that reaches the end of the file, or (the usual mistake) the start of the
  // next top-level block `name {`, without its `}`.
  bool block_unclosed(size_t open_pos, SourceLoc open, std::string_view owner) {
    if (at(TokenKind::End)) {
      if (!swallowed_since(open_pos)) error_at(open, "the block of " + quote(owner) + " is never closed, expected `}`");
      return true;
    }
    if (at(TokenKind::Word) &&
        (kind_at(1) == TokenKind::LBrace || (kind_at(1) == TokenKind::Word && kind_at(2) == TokenKind::LBrace))) {
      error_at(open,
               "the block of " + quote(owner) + " is not closed before " + quote(t_.text(pos_)) + " `{`, expected `}`");
      return true;
    }
    return false;
  }

  // `{ key = value ... }`
  ast::Block block(std::string_view owner) {
    ast::Block b;
    size_t open_pos = pos_;
    b.loc = loc();
    advance();
    while (!r_.full()) {
      size_t before = pos_;
      skip_separators_and_commas();
      if (at(TokenKind::RBrace)) {
        advance();
        return b;
      }
      if (block_unclosed(open_pos, b.loc, owner)) return b;
      if (at(TokenKind::Word)) {
        Word key = word();
        advance();
        if (!at(TokenKind::Equal)) {
          error("expected `=` after " + quote(key.text) + " in the block of " + quote(owner) + ", got " + describe());
          skip_rest_of_entry();
        } else {
          advance();
          auto v = value("after `" + std::string(key.text) + " =`", true, 0);
          if (v) {
            b.entries.push_back({key, std::move(*v)});
            end_entry(key.text, true);
          } else {
            recover();
          }
        }
      } else {
        error("expected a key or `}` in the block of " + quote(owner) + ", got " + describe());
        skip_rest_of_entry();
      }
      if (pos_ == before) advance();
    }
    return b;
  }

  // After `schedule =`.
  std::optional<ast::ScheduleValue> schedule_value() {
    ast::ScheduleValue s;
    if (!at(TokenKind::Word)) {
      auto v = value("after `schedule =`", true, 0);
      if (!v) return std::nullopt;
      s.head = std::move(*v);
      return s;
    }
    s.head = *value("", true, 0);
    std::string_view head = s.head.text;
    if (head == "explicit") {
      if (!at(TokenKind::LBrace)) {
        error("expected `{` after `explicit`, got " + describe());
        return std::nullopt;
      }
      s.orders = explicit_block();
      return s;
    }
    if (head == "family") {
      if (!at(TokenKind::Word)) {
        error("expected a family name after `family` (e.g. `family 1f1b`), got " + describe());
        return std::nullopt;
      }
      s.family = word();
      advance();
    }
    if (!s.family && head != "solve") {
      // The block's grammar depends on the source, so an unknown one cannot be read further.
      r_.error(DiagKind::BadValue, s.head.loc,
               "unknown schedule source " + quote(head) + ", expected `explicit { ... }`, `family NAME` or `solve`" +
                   did_you_mean_suffix(head, kScheduleSources));
      if (at(TokenKind::LBrace)) skip_rest_of_entry();
      return std::nullopt;
    }
    if (at(TokenKind::LBrace)) s.options = block(s.family ? s.family->text : head);
    return s;
  }

  // ---- explicit schedules ----
  // Skips to the next `rank`, or to the `}` that closes the explicit block.
  void skip_to_next_rank() {
    int depth = 0;
    if (!at(TokenKind::End) && !at(TokenKind::RBrace)) {
      if (is_opener(kind())) ++depth;
      advance();
    }
    while (!at(TokenKind::End)) {
      if (depth == 0 && (at(TokenKind::RBrace) || at_word("rank"))) return;
      if (is_opener(kind())) ++depth;
      if (is_closer(kind()) && depth > 0) --depth;
      advance();
    }
  }

  ast::ExplicitBlock explicit_block() {
    ast::ExplicitBlock b;
    size_t open_pos = pos_;
    b.loc = loc();
    advance();
    ast::RankOrder* current = nullptr;
    while (!r_.full()) {
      size_t before = pos_;
      skip_separators_and_commas();
      if (at(TokenKind::RBrace)) {
        advance();
        return b;
      }
      if (at(TokenKind::End)) {
        if (!swallowed_since(open_pos)) error_at(b.loc, "the block of `explicit` is never closed, expected `}`");
        return b;
      }
      if (at_word("rank")) {
        current = rank_header(b);
      } else if (at(TokenKind::Error)) {
        advance();
      } else if (!at(TokenKind::Word) && !at(TokenKind::LParen)) {
        error("unexpected " + describe() + " in an explicit schedule, expected action tokens such as `F0.s1`, " +
              "`(F1.s0 B0.s0)` or `rank N:`");
        skip_to_next_line_or_rank();
      } else if (!current) {
        error("expected `rank N:` before the first action, got " + describe());
        skip_to_next_rank();
      } else if (at(TokenKind::Word)) {
        current->items.push_back(ast::OrderItem{loc(), false, {word()}});
        advance();
      } else {
        current->items.push_back(group());
      }
      if (pos_ == before) advance();
    }
    return b;
  }

  void skip_to_next_line_or_rank() {
    while (!at(TokenKind::End) && !at(TokenKind::Newline) && !at(TokenKind::RBrace) && !at_word("rank")) advance();
  }

  ast::RankOrder* rank_header(ast::ExplicitBlock& b) {
    SourceLoc rank_loc = loc();
    advance();
    if (!at(TokenKind::Number) && !at(TokenKind::Word) && !at(TokenKind::Error)) {
      error("expected a rank number after `rank`, got " + describe());
      skip_to_next_rank();
      return nullptr;
    }
    Value index = *value("", true, 0);
    if (at(TokenKind::Colon)) advance();
    else error("expected `:` after `rank " + std::string(index.text) + "`, got " + describe());
    b.ranks.push_back(ast::RankOrder{rank_loc, std::move(index), {}});
    return &b.ranks.back();
  }

  // `( token token )`: the parser keeps whatever is inside; sema checks it is two actions.
  ast::OrderItem group() {
    ast::OrderItem item{loc(), true, {}};
    advance();
    while (true) {
      if (at(TokenKind::RParen)) {
        advance();
        return item;
      }
      if (at(TokenKind::LParen) || at(TokenKind::RBrace) || at(TokenKind::End) || at_word("rank")) {
        error_at(item.loc, "`(` is not closed, expected `)` after the actions of the overlapped unit");
        return item;
      }
      if (at(TokenKind::Word)) item.tokens.push_back(word());
      else if (!at(TokenKind::Newline) && !at(TokenKind::Comma))
        error("unexpected " + describe() + " in an overlapped unit, expected two action tokens");
      advance();
    }
  }

  // ---- expect ----
  ast::ExpectBlock expect_block() {
    ast::ExpectBlock b;
    size_t open_pos = pos_;
    b.loc = loc();
    advance();
    while (!r_.full()) {
      size_t before = pos_;
      skip_separators_and_commas();
      if (at(TokenKind::RBrace)) {
        advance();
        return b;
      }
      if (block_unclosed(open_pos, b.loc, "expect")) return b;
      if (at(TokenKind::Word)) {
        clause(b);
      } else {
        error("expected an expect clause such as `makespan <= 40`, got " + describe());
        skip_rest_of_entry();
      }
      if (pos_ == before) advance();
    }
    return b;
  }

  void clause(ast::ExpectBlock& b) {
    ast::Clause c;
    c.subject = word();
    advance();
    if (at(TokenKind::LBracket)) {
      SourceLoc open = loc();
      advance();
      if (!at(TokenKind::Number) && !at(TokenKind::Word) && !at(TokenKind::Error)) {
        error("expected a rank number in `" + std::string(c.subject.text) + "[...]`, got " + describe());
        return recover();
      }
      c.index = *value("", true, 0);
      if (!at(TokenKind::RBracket)) {
        error("expected `]` after the rank number, got " + describe());
        r_.note(open, "`[` is here");
        return recover();
      }
      advance();
    }
    if (c.subject.text == "same_as") {
      if (!at(TokenKind::Word)) {
        error("expected a family name after `same_as` (e.g. `same_as 1f1b`), got " + describe());
        return recover();
      }
      c.family = word();
      advance();
    } else if (is_comparison(kind())) {
      c.op = word();
      advance();
      auto v = value("after `" + std::string(c.subject.text) + " " + std::string(c.op->text) + "`", true, 0);
      if (!v) return recover();
      c.value = std::move(*v);
    } else if (at(TokenKind::Number) || at(TokenKind::LBracket) || at(TokenKind::String)) {
      error("expected a comparison (`==`, `<=`, `<`, `>=`, `>`) after " + quote(c.subject.text) + ", got " +
            describe());
      return skip_rest_of_entry();
    }
    b.clauses.push_back(std::move(c));
    end_entry(b.clauses.back().subject.text, true);
  }

  const TokenBuffer& t_;
  Reporter& r_;
  size_t pos_ = 0;
};

}  // namespace

ast::File parse(const TokenBuffer& tokens, Reporter& report) { return Parser(tokens, report).run(); }

}  // namespace schedc::frontend
