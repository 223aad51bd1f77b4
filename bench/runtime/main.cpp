// schedc-bench-runtime: prints the runtime's figures.
//   1. executor overhead: ns of executor work per op with the `noop` stage (nothing to compute),
//      threads and MPI, pp = 4 and 8 (1F1B, m = 4 pp);
//   2. fidelity: measured / simulated makespan with the `synthetic` stage for every family at
//      pp = 4, m = 16 (target <= 1.03);
//   3. generated code against the interpreter of the same program's op tables (--interpret), in
//      the same runtime: the ratio of their overheads per op;
//   4. a large program (interleaved-1f1b, pp 64, vpp 2, m 512): seconds to emit and build it from
//      an empty cache, and the largest process's peak memory, per code form (`--code`; the
//      straight form only with --with-straight: it takes minutes and gigabytes).
// Each figure is the best step of the best of three runs (the first step warms caches and
// threads). "cpu ns/op" is the ranks' thread CPU time per op, which does not count the time a rank
// was descheduled, so it stays meaningful on a loaded machine; "busy ns/op" is wall time in
// executor calls minus time blocked in the backend.
//
//   schedc-bench-runtime [--quick] [--with-straight] [--ms-per-unit X] [--schedc PATH]

#include <sys/resource.h>
#include <sys/time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Settings {
  std::string schedc = SCHEDC_PATH;
  bool quick = false;
  bool with_straight = false;
  double ms_per_unit = 10;
};

// Runs `schedc run ARGS --format json` and returns the report (null on failure).
nlohmann::json run_once(const Settings& s, const std::string& args) {
  std::string cmd = "'" + s.schedc + "' run " + args + " --format json --quiet 2>/tmp/schedc-bench-runtime.err";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return nullptr;
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  if (status != 0) {
    std::fprintf(stderr, "bench: `schedc run %s` failed (status %d); see /tmp/schedc-bench-runtime.err\n", args.c_str(),
                 status);
    return nullptr;
  }
  return nlohmann::json::parse(out, nullptr, false);
}

double min_of(const nlohmann::json& a) {
  double m = 1e300;
  for (const auto& x : a) m = std::min(m, x.get<double>());
  return m;
}

// The best of three runs: per list, the smallest value of any run.
nlohmann::json run(const Settings& s, const std::string& args) {
  nlohmann::json best;
  for (int i = 0; i < (s.quick ? 1 : 3); ++i) {
    nlohmann::json r = run_once(s, args);
    if (r.is_null()) return r;
    if (best.is_null()) {
      best = r;
      continue;
    }
    for (const char* key : {"step_makespans_s", "step_busy_ns_per_op", "step_cpu_ns_per_op"})
      best[key].push_back(min_of(r[key]));
  }
  return best;
}

void overhead(const Settings& s) {
  std::printf("1. executor overhead, noop stage, 1F1B with m = 4 pp (wall = makespan / ops per rank)\n");
  std::printf("   %-8s %4s %8s %12s %12s %12s\n", "backend", "pp", "ops", "cpu ns/op", "busy ns/op", "wall us/op");
  std::vector<std::string> backends = {"threads"};
  if (SCHEDC_BENCH_WITH_MPI) backends.push_back("mpi");
  for (const std::string& b : backends)
    for (int pp : {4, 8}) {
      int steps = s.quick ? 3 : 20;
      auto r = run(s, "--family 1f1b --pp " + std::to_string(pp) + " --microbatches " + std::to_string(4 * pp) +
                          " --stage noop --backend " + b + " --steps " + std::to_string(steps));
      if (r.is_null()) continue;
      double ops = r["ops"].get<double>();
      double wall = min_of(r["step_makespans_s"]) / (ops / pp) * 1e6;
      std::printf("   %-8s %4d %8.0f %12.0f %12.0f %12.2f\n", b.c_str(), pp, ops, min_of(r["step_cpu_ns_per_op"]),
                  min_of(r["step_busy_ns_per_op"]), wall);
    }
}

void fidelity(const Settings& s) {
  std::printf("\n2. fidelity, synthetic stage (%g ms per cost unit), pp = 4, m = 16, F = B = W = 1, threads\n",
              s.ms_per_unit);
  std::printf("   %-18s %12s %12s %10s\n", "family", "simulated s", "measured s", "ratio");
  const char* families[] = {"gpipe",  "1f1b",  "interleaved-1f1b", "looped-bfs", "zb-h1",    "zb-h2", "zb-v",
                            "v-half", "v-min", "chimera",          "dualpipe",   "dualpipev"};
  double worst = 0;
  for (const char* f : families) {
    auto r = run(s, std::string("--family ") + f + " --pp 4 --microbatches 16 --stage synthetic --steps " +
                        (s.quick ? "2" : "3") + " --ms-per-unit " + std::to_string(s.ms_per_unit));
    if (r.is_null()) continue;
    double sim = r["simulated_makespan_s"].get<double>(), measured = min_of(r["step_makespans_s"]);
    worst = std::max(worst, measured / sim);
    std::printf("   %-18s %12.3f %12.3f %10.4f\n", f, sim, measured, measured / sim);
  }
  std::printf("   worst ratio %.4f (target <= 1.03)\n", worst);
}

void interpreter(const Settings& s) {
  std::printf("\n3. generated code vs the op-table interpreter, noop stage, threads (cpu ns per op)\n");
  std::printf("   %-22s %14s %14s %8s\n", "schedule", "codegen", "interpreter", "ratio");
  for (const char* sched : {"--family 1f1b --pp 4 --microbatches 16", "--family zb-v --pp 4 --vpp 2 --microbatches 16",
                            "--family dualpipe --pp 8 --microbatches 16"}) {
    std::string steps = s.quick ? " --steps 3" : " --steps 20";
    auto c = run(s, std::string(sched) + " --stage noop" + steps);
    auto i = run(s, std::string(sched) + " --stage noop --interpret" + steps);
    if (c.is_null() || i.is_null()) continue;
    double cn = min_of(c["step_cpu_ns_per_op"]), in = min_of(i["step_cpu_ns_per_op"]);
    std::string name = std::string(sched).substr(9);
    std::printf("   %-22.22s %14.0f %14.0f %8.3f\n", name.c_str(), cn, in, cn / in);
  }
}

void large_program(const Settings& s) {
  std::printf("\n4. a large program: emit + build from an empty cache (interleaved-1f1b, pp 64, vpp 2, m 512)\n");
  std::printf("   %-10s %10s %10s %16s\n", "code", "exit", "seconds", "peak MB (max)");
  std::vector<std::string> forms = {"compact"};
  if (s.with_straight) forms.push_back("straight");
  for (const std::string& form : forms) {
    char dir[] = "/tmp/schedc-bench-large-XXXXXX";
    if (!mkdtemp(dir)) return;
    std::string cmd = "SCHEDC_CACHE_DIR='" + std::string(dir) + "/cache' '" + s.schedc +
                      "' build --family interleaved-1f1b --pp 64 --vpp 2 --microbatches 512 --code " + form + " -o '" +
                      dir + "/exe' 2>/tmp/schedc-bench-runtime.err";
    auto t0 = std::chrono::steady_clock::now();
    int status = std::system(cmd.c_str());
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rusage ru{};
    getrusage(RUSAGE_CHILDREN, &ru);  // the largest of schedc and the compilers it waited for
    std::printf("   %-10s %10d %10.1f %16.0f\n", form.c_str(), WEXITSTATUS(status), secs,
                static_cast<double>(ru.ru_maxrss) / 1024);
    std::system(("rm -rf '" + std::string(dir) + "'").c_str());
  }
  std::printf("   target (issue 11): under 120 s and 2 GB on 2 cores\n");
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") s.quick = true;
    else if (a == "--with-straight") s.with_straight = true;
    else if (a == "--schedc" && i + 1 < argc) s.schedc = argv[++i];
    else if (a == "--ms-per-unit" && i + 1 < argc) s.ms_per_unit = std::atof(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: schedc-bench-runtime [--quick] [--with-straight] [--ms-per-unit X] [--schedc PATH]\n");
      return 2;
    }
  }
  overhead(s);
  fidelity(s);
  interpreter(s);
  if (!s.quick) large_program(s);
  return 0;
}
