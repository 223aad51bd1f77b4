#include "schedrt/options.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <charconv>
#include <cmath>

namespace schedrt {

static_assert(
    [] {
      for (size_t i = 0; i < kOptionCount; ++i)
        if (static_cast<size_t>(kRuntimeOptions[i].id) != i) return false;
      return true;
    }(),
    "kRuntimeOptions is in OptionId order");

namespace {

template <class E> std::string name_of(std::span<const std::string_view> names, E e) {
  return std::string(names[static_cast<size_t>(e)]);
}

// 100000, not 1e+05; 0.001; 9007199254740992.
std::string format_bound(double v) {
  if (std::abs(v) < 1e16 && v == std::floor(v)) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

size_t index_of(std::span<const std::string_view> names, std::string_view v) {
  return static_cast<size_t>(std::find(names.begin(), names.end(), v) - names.begin());
}

}  // namespace

std::string to_string(BackendKind b) { return name_of(kBackendNames, b); }
std::string to_string(Dtype d) { return name_of(kDtypeNames, d); }
std::string to_string(CodeForm c) { return name_of(kCodeNames, c); }

const OptionSpec& option(OptionId id) { return kRuntimeOptions[static_cast<size_t>(id)]; }

const OptionSpec* find_option(std::string_view key) {
  for (const OptionSpec& o : kRuntimeOptions)
    if (o.key == key) return &o;
  return nullptr;
}

std::string range_text(const OptionSpec& o, Surface s) {
  if (s == Surface::Spec && o.spec_lo_open)
    return "above " + format_bound(*o.spec_lo_open) + " and at most " + format_bound(o.hi);
  return format_bound(o.lo) + ".." + format_bound(o.hi);
}

std::string expected(const OptionSpec& o, Surface s) {
  switch (o.kind) {
    case OptionKind::Name: {
      std::string list;
      for (std::string_view n : o.names) list += (list.empty() ? "`" : ", `") + std::string(n) + "`";
      return "one of " + list;
    }
    case OptionKind::Stage: return "a stage name (letters, digits and `_`)";
    case OptionKind::Integer: return "an integer in " + range_text(o, s);
    case OptionKind::Number: return "a number in " + range_text(o, s);
    case OptionKind::Path: return "a file path";
  }
  return "";
}

std::string help_text(const OptionSpec& o) {
  bool numeric = o.kind == OptionKind::Integer || o.kind == OptionKind::Number;
  return std::string(o.help) + (numeric ? "; " + range_text(o, Surface::Flag) : "");
}

bool in_range(const OptionSpec& o, double v, Surface s) {
  if (!std::isfinite(v)) return false;
  if (o.kind == OptionKind::Integer && v != std::floor(v)) return false;
  bool above = s == Surface::Spec && o.spec_lo_open ? v > *o.spec_lo_open : v >= o.lo;
  return above && v <= o.hi;
}

bool is_stage_name(std::string_view n) {
  if (n.empty() || n.size() > 64 || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
  return std::all_of(n.begin(), n.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::optional<OptionValue> parse_flag_value(const OptionSpec& o, std::string_view text) {
  const char* end = text.data() + text.size();
  switch (o.kind) {
    case OptionKind::Name:
      if (index_of(o.names, text) == o.names.size()) return std::nullopt;
      return OptionValue{0, std::string(text)};
    case OptionKind::Stage:
      if (!is_stage_name(text)) return std::nullopt;
      return OptionValue{0, std::string(text)};
    case OptionKind::Path:
      if (text.empty()) return std::nullopt;
      return OptionValue{0, std::string(text)};
    case OptionKind::Integer: {
      int64_t x = 0;
      auto res = std::from_chars(text.data(), end, x);
      // Compared as integers: 2^53 + 1 is 2^53 as a double.
      if (res.ec != std::errc() || res.ptr != end || x < static_cast<int64_t>(o.lo) || x > static_cast<int64_t>(o.hi))
        return std::nullopt;
      return OptionValue{static_cast<double>(x), {}};
    }
    case OptionKind::Number: {
      // A leading `+` as schedc's other numbers allow; no hexadecimal, no spaces.
      std::string_view t = !text.empty() && text.front() == '+' ? text.substr(1) : text;
      double x = 0;
      auto res = std::from_chars(t.data(), end, x);
      if (t.empty() || res.ec != std::errc() || res.ptr != end || !in_range(o, x, Surface::Flag)) return std::nullopt;
      return OptionValue{x, {}};
    }
  }
  return std::nullopt;
}

void set_option(RuntimeSettings& s, OptionId id, const OptionValue& v) {
  auto whole = [&] { return static_cast<int32_t>(v.number); };
  switch (id) {
    case OptionId::Backend: s.backend = static_cast<BackendKind>(index_of(kBackendNames, v.text)); return;
    case OptionId::Stage: s.stage = v.text; return;
    case OptionId::Dtype: s.dtype = static_cast<Dtype>(index_of(kDtypeNames, v.text)); return;
    case OptionId::Hidden: s.hidden = whole(); return;
    case OptionId::Layers: s.layers = whole(), s.layers_per_stage.clear(); return;  // the same count on every stage
    case OptionId::Batch: s.batch = whole(); return;
    case OptionId::Seed: s.seed = static_cast<uint64_t>(v.number); return;
    case OptionId::MsPerUnit: s.ms_per_unit = v.number; return;
    case OptionId::Timeout: s.timeout = v.number; return;
    case OptionId::Steps: s.steps = whole(); return;
    case OptionId::Trace: s.trace = v.text; return;
    case OptionId::Code: s.code = static_cast<CodeForm>(index_of(kCodeNames, v.text)); return;
  }
}

std::string option_text(const RuntimeSettings& s, OptionId id) {
  switch (id) {
    case OptionId::Backend: return to_string(s.backend);
    case OptionId::Stage: return s.stage;
    case OptionId::Dtype: return to_string(s.dtype);
    case OptionId::Hidden: return std::to_string(s.hidden);
    case OptionId::Layers: return std::to_string(s.layers);
    case OptionId::Batch: return std::to_string(s.batch);
    case OptionId::Seed: return std::to_string(s.seed);
    case OptionId::MsPerUnit: return format_bound(s.ms_per_unit);
    case OptionId::Timeout: return format_bound(s.timeout);
    case OptionId::Steps: return std::to_string(s.steps);
    case OptionId::Trace: return s.trace;
    case OptionId::Code: return to_string(s.code);
  }
  return "";
}

std::string enumerator(const RuntimeSettings& s, OptionId id) {
  const OptionSpec& o = option(id);
  assert(o.kind == OptionKind::Name && "only Name options are enums");
  return std::string(o.enumerators[index_of(o.names, option_text(s, id))]);
}

std::string check_combination(const RuntimeSettings& s) {
  if (s.dtype == Dtype::BF16 && s.backend != BackendKind::Cuda)
    return "dtype `bf16` needs backend `cuda` (only the GPU stage computes in bf16)";
  return "";
}

std::vector<std::string> executor_arguments(const RuntimeSettings& s, std::span<const bool> given) {
  assert(given.size() == kOptionCount && "one entry per option");
  std::vector<std::string> out;
  for (const OptionSpec& o : kRuntimeOptions) {
    const size_t i = static_cast<size_t>(o.id);
    bool pass = o.to_executor == ToExecutor::Always || (o.to_executor == ToExecutor::WhenGiven && given[i]) ||
                (o.to_executor == ToExecutor::WhenSet && !option_text(s, o.id).empty());
    if (pass) out.insert(out.end(), {std::string(o.flag), option_text(s, o.id)});
  }
  return out;
}

}  // namespace schedrt
