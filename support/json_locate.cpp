#include "support/json_locate.h"

#include <string>
#include <vector>

namespace schedc {
namespace {

// A forward-only scanner over text that nlohmann has already accepted (or nearly so); it never
// recurses, so deep documents cannot overflow the stack.
class Scanner {
 public:
  explicit Scanner(std::string_view t) : t_(t) {}

  size_t pos() const { return p_; }
  bool at_end() const { return p_ >= t_.size(); }
  char peek() const { return at_end() ? '\0' : t_[p_]; }
  void bump() { ++p_; }
  void seek(size_t p) { p_ = p; }

  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++p_;
  }

  // Reads a string starting at the quote; returns its (roughly) decoded content.
  std::string read_string() {
    std::string out;
    if (peek() != '"') return out;
    ++p_;
    while (!at_end() && peek() != '"') {
      if (peek() == '\\' && p_ + 1 < t_.size()) {
        ++p_;
        out += t_[p_] == 'n' ? '\n' : t_[p_] == 't' ? '\t' : t_[p_];
      } else {
        out += peek();
      }
      ++p_;
    }
    if (!at_end()) ++p_;
    return out;
  }

  void skip_value() {
    skip_ws();
    if (peek() == '"') {
      read_string();
      return;
    }
    if (peek() != '{' && peek() != '[') {
      while (!at_end() && peek() != ',' && peek() != '}' && peek() != ']') ++p_;
      return;
    }
    int depth = 0;
    while (!at_end()) {
      char c = peek();
      if (c == '"') {
        read_string();
        continue;
      }
      ++p_;
      if (c == '{' || c == '[') ++depth;
      if ((c == '}' || c == ']') && --depth == 0) return;
    }
  }

 private:
  std::string_view t_;
  size_t p_ = 0;
};

std::vector<std::string> split_pointer(std::string_view pointer) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < pointer.size()) {
    if (pointer[i] == '/') ++i;
    size_t j = pointer.find('/', i);
    if (j == std::string_view::npos) j = pointer.size();
    std::string part;
    for (size_t k = i; k < j; ++k) {
      if (pointer[k] == '~' && k + 1 < j) {
        part += pointer[k + 1] == '1' ? '/' : '~';
        ++k;
      } else {
        part += pointer[k];
      }
    }
    parts.push_back(std::move(part));
    i = j;
  }
  return parts;
}

}  // namespace

size_t json_locate(std::string_view text, std::string_view pointer) {
  Scanner s(text);
  s.skip_ws();
  size_t found = s.pos();
  for (const std::string& part : split_pointer(pointer)) {
    s.skip_ws();
    if (s.peek() == '{') {
      s.bump();
      bool hit = false;
      while (true) {
        s.skip_ws();
        if (s.peek() != '"') return found;
        std::string key = s.read_string();
        s.skip_ws();
        if (s.peek() != ':') return found;
        s.bump();
        s.skip_ws();
        if (key == part) {
          hit = true;
          break;
        }
        s.skip_value();
        s.skip_ws();
        if (s.peek() != ',') return found;
        s.bump();
      }
      if (!hit) return found;
    } else if (s.peek() == '[') {
      s.bump();
      size_t index = 0;
      for (char c : part) {
        if (c < '0' || c > '9') return found;
        index = index * 10 + static_cast<size_t>(c - '0');
        if (index > text.size()) return found;
      }
      for (size_t k = 0; k < index; ++k) {
        s.skip_value();
        s.skip_ws();
        if (s.peek() != ',') return found;
        s.bump();
      }
      s.skip_ws();
      if (s.peek() == ']') return found;
    } else {
      return found;
    }
    found = s.pos();
  }
  return found;
}

std::vector<std::vector<size_t>> json_locate_elements(std::string_view text, std::string_view pointer) {
  std::vector<std::vector<size_t>> out;
  Scanner s(text);
  s.seek(json_locate(text, pointer));
  if (s.peek() != '[') return out;
  s.bump();
  while (true) {
    s.skip_ws();
    if (s.at_end() || s.peek() == ']') return out;
    std::vector<size_t>& row = out.emplace_back();
    if (s.peek() == '[') {
      s.bump();
      while (true) {
        s.skip_ws();
        if (s.at_end() || s.peek() == ']') break;
        row.push_back(s.pos());
        s.skip_value();
        s.skip_ws();
        if (s.peek() != ',') break;
        s.bump();
      }
      if (s.peek() == ']') s.bump();
    } else {
      s.skip_value();
    }
    s.skip_ws();
    if (s.peek() != ',') return out;
    s.bump();
  }
}

size_t json_too_deep(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {  // skip the string, escapes included; an unclosed one is the parser's to report
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      continue;
    }
    if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

}  // namespace schedc
