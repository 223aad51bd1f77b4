// schedrt::main: the command line of every generated executor.

#include <charconv>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "backends/backends.h"
#include "backends/cuda/cuda.h"
#include "profile.h"
#include "run_internal.h"
#include "schedrt/program.h"
#include "schedrt/run.h"

namespace schedrt {
namespace {

struct UsageError {
  std::string message;
};

const char* const kUsage =
    "usage: %s [options]\n"
    "  --backend threads|mpi|cuda  one thread per rank (default), one MPI process per rank (mpirun -np P),\n"
    "                           or CUDA streams + NCCL (see docs/runtime.md for its launch modes)\n"
    "  --stage mlp|synthetic|noop  real math, the cost model's durations, or nothing (executor overhead)\n"
    "  --dtype fp64|fp32|bf16   mlp precision (bf16: cuda only)\n"
    "  --hidden N --layers N --batch N --seed N   mlp sizes and seed\n"
    "  --ms-per-unit X          synthetic: milliseconds per cost unit\n"
    "  --steps N                steps to run (the last one is reported and traced)\n"
    "  --check                  compare loss and gradients with a sequential run of the same model\n"
    "  --format text|json       the report's format (stdout)\n"
    "  --trace FILE             write the measured timeline (Perfetto / Chrome trace JSON)\n"
    "  --timeout S              a wait longer than this fails with a report (watchdog)\n"
    "  --interpret              run the program's op tables instead of the generated code\n"
    "  --profile FILE           time each stage's F, B, W and the transfers instead, JSON to FILE\n"
    "  --fault drop-send=R|throw=R   testing only: lose rank R's first send, or fail rank R\n";

int64_t parse_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  auto res = std::from_chars(v.data(), v.data() + v.size(), x);
  if (res.ec != std::errc() || res.ptr != v.data() + v.size() || x < lo || x > hi)
    throw UsageError{flag + " needs an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got `" + v + "`"};
  return x;
}

double parse_double(const std::string& flag, const std::string& v, double lo, double hi) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(x >= lo && x <= hi))
    throw UsageError{flag + " needs a number in " + std::to_string(lo).substr(0, 5) + ".." + std::to_string(hi).substr(0, 9) +
                     ", got `" + v + "`"};
  return x;
}

std::string one_of(const std::string& flag, const std::string& v, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return v;
    list += list.empty() ? "`" : ", `";
    list += a;
    list += "`";
  }
  throw UsageError{flag + " needs one of " + list + ", got `" + v + "`"};
}

RunOptions parse(int argc, char** argv, const ProgramInfo& info, bool* help) {
  RunOptions o = default_options(info);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError{a + " needs a value"};
      return argv[++i];
    };
    if (a == "--help" || a == "-h") *help = true;
    else if (a == "--backend") o.backend = one_of(a, value(), {"threads", "mpi", "cuda"});
    else if (a == "--stage") o.stage = one_of(a, value(), {"mlp", "synthetic", "noop"});
    else if (a == "--dtype") o.dtype = one_of(a, value(), {"fp64", "fp32", "bf16"});
    else if (a == "--hidden") o.hidden = static_cast<int32_t>(parse_int(a, value(), 1, 4096));
    else if (a == "--layers") o.layers = static_cast<int32_t>(parse_int(a, value(), 1, 64));
    else if (a == "--batch") o.batch = static_cast<int32_t>(parse_int(a, value(), 1, 4096));
    else if (a == "--seed") o.seed = static_cast<uint64_t>(parse_int(a, value(), 0, INT64_MAX));
    else if (a == "--ms-per-unit") o.ms_per_unit = parse_double(a, value(), 0, 1e5);
    else if (a == "--timeout") o.timeout_s = parse_double(a, value(), 0.001, 1e6);
    else if (a == "--steps") o.steps = static_cast<int32_t>(parse_int(a, value(), 1, 1000000));
    else if (a == "--check") o.check = true;
    else if (a == "--interpret") o.interpret = true;
    else if (a == "--profile") o.profile_path = value();
    else if (a == "--format") o.format = one_of(a, value(), {"text", "json"});
    else if (a == "--trace") o.trace_path = value();
    else if (a == "--fault") {
      o.fault = value();
      bool ok = (o.fault.rfind("drop-send=", 0) == 0 || o.fault.rfind("throw=", 0) == 0);
      if (ok) parse_int("--fault", o.fault.substr(o.fault.find('=') + 1), 0, info.ranks - 1);
      else throw UsageError{"--fault needs `drop-send=RANK` or `throw=RANK`, got `" + o.fault + "`"};
    } else {
      throw UsageError{"unknown option `" + a + "` (see --help)"};
    }
  }
  if (o.check && o.stage != "mlp") throw UsageError{"--check needs --stage mlp (the other stages compute nothing)"};
  if (o.dtype == "bf16" && o.backend != "cuda") throw UsageError{"--dtype bf16 needs --backend cuda"};
  if (!o.profile_path.empty() && (o.check || o.interpret || !o.fault.empty()))
    throw UsageError{"--profile runs no program: it excludes --check, --interpret and --fault"};
  return o;
}

}  // namespace

RunOptions default_options(const ProgramInfo& info) {
  const RunDefaults& d = info.defaults;
  RunOptions o;
  o.backend = d.backend;
  o.stage = d.stage;
  o.dtype = d.dtype;
  o.hidden = d.hidden;
  o.layers = d.layers;
  o.batch = d.batch;
  o.seed = d.seed;
  o.ms_per_unit = d.ms_per_unit;
  o.timeout_s = d.timeout_s;
  o.steps = d.steps;
  return o;
}

int run(const ProgramInfo& info, const RunOptions& opt, int* argc, char*** argv) {
  BackendOptions bo;
  bo.timeout_s = opt.timeout_s;
  int rc = 0;
  auto body = [&](Backend& backend) {
    int r = opt.profile_path.empty() ? rank_main(backend, info, opt) : profile_rank(backend, info, opt);
    if (backend.rank() == 0) rc = r;
  };
  int no_argc = 0;
  char** no_argv = nullptr;
  int* ac = argc ? argc : &no_argc;
  char*** av = argv ? argv : &no_argv;
  std::string failure = opt.backend == "mpi"    ? run_mpi(info.ranks, bo, body, ac, av)
                        : opt.backend == "cuda" ? run_cuda(info.ranks, bo, body, ac, av)
                                                : run_threads(info.ranks, bo, body);
  if (!failure.empty()) {
    std::fprintf(stderr, "schedrt: error: %s\n", failure.c_str());
    return 1;
  }
  return rc;
}

int main(int argc, char** argv, const ProgramInfo& info) {
  RunOptions opt;
  bool help = false;
  try {
    opt = parse(argc, argv, info, &help);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "schedrt: error: %s\n", e.message.c_str());
    return 2;
  }
  if (help) {
    std::printf(kUsage, argc > 0 ? argv[0] : "executor");
    return 0;
  }
  return run(info, opt, &argc, &argv);
}

}  // namespace schedrt
