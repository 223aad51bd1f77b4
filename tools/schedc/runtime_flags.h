#pragma once
// The runtime options as flags of `schedc emit/build/run/profile`, made from schedrt's table
// (schedrt/options.h): the same names, ranges and help as the runtime block and the executor.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "codegen/runtime_config.h"
#include "schedrt/options.h"

namespace schedc::driver {

/// The runtime settings on the command line; they override the spec's runtime block.
struct RuntimeFlags {
  std::array<std::optional<std::string>, schedrt::kOptionCount> text;  // as given, checked by CLI11

  /// Adds a flag per option (--trace only `with_trace`), each checked against its row's range.
  void add_to(CLI::App& cmd, bool with_trace);
  /// Whether option `id` was given.
  bool given(schedrt::OptionId id) const { return text[static_cast<size_t>(id)].has_value(); }
  /// given() of every option, in table order (for schedrt::executor_arguments).
  std::array<bool, schedrt::kOptionCount> given_all() const;
  /// Sets the options given on `c` (`--layers` empties the model's partition).
  void apply(codegen::RuntimeConfig& c) const;
};

}  // namespace schedc::driver
