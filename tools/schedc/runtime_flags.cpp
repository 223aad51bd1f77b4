#include "tools/schedc/runtime_flags.h"

#include <cassert>

namespace schedc::driver {

void RuntimeFlags::add_to(CLI::App& cmd, bool with_trace) {
  for (const schedrt::OptionSpec& o : schedrt::kRuntimeOptions) {
    if (o.id == schedrt::OptionId::Trace && !with_trace) continue;
    std::string what = schedrt::expected(o, schedrt::Surface::Flag);
    auto check = [&o, what](std::string& v) -> std::string {
      return schedrt::parse_flag_value(o, v) ? std::string() : "expected " + what + ", got `" + v + "`";
    };
    cmd.add_option(std::string(o.flag), text[static_cast<size_t>(o.id)], schedrt::help_text(o))
        ->check(CLI::Validator(check, ""))
        ->type_name(std::string(o.type_name))
        ->group("Runtime");
  }
}

std::array<bool, schedrt::kOptionCount> RuntimeFlags::given_all() const {
  std::array<bool, schedrt::kOptionCount> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = text[i].has_value();
  return out;
}

void RuntimeFlags::apply(codegen::RuntimeConfig& c) const {
  for (const schedrt::OptionSpec& o : schedrt::kRuntimeOptions) {
    const auto& t = text[static_cast<size_t>(o.id)];
    if (!t) continue;
    auto v = schedrt::parse_flag_value(o, *t);
    assert(v && "CLI11 checked the flag against the same row");
    schedrt::set_option(c, o.id, *v);
  }
}

}  // namespace schedc::driver
