#include "backends/cuda/bootstrap.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace schedrt::cuda {
namespace {

// CudaMode's names, indexed by its value.
constexpr std::array<std::string_view, 3> kModeNames = {"auto", "local", "nccl"};

constexpr char kMagic[] = "schedc-nccl-id 1\n";

// A non-negative integer, the whole of `text`.
bool parse_count(const char* text, int64_t* out) {
  if (!text || !*text) return false;
  std::string_view s(text);
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0) return false;
  *out = v;
  return true;
}

std::string bad(const char* var, const char* value, const std::string& expected) {
  return std::string(var) + "=`" + value + "`: expected " + expected;
}

}  // namespace

std::string to_string(CudaMode m) { return std::string(kModeNames[static_cast<size_t>(m)]); }

std::variant<Launch, std::string> read_launch(int32_t ranks, const EnvLookup& env) {
  Launch l;
  const char* world = env("WORLD_SIZE");
  const char* rank = env("RANK");
  if (world || rank) {
    if (!world || !rank)
      return std::string("RANK and WORLD_SIZE must be set together (a launcher sets both), got only ") +
             (world ? "WORLD_SIZE" : "RANK");
    int64_t w = 0, r = 0, lr = 0;
    if (!parse_count(world, &w) || w < 1) return bad("WORLD_SIZE", world, "a positive integer");
    if (!parse_count(rank, &r)) return bad("RANK", rank, "an integer in 0.." + std::to_string(w - 1));
    if (r >= w) return bad("RANK", rank, "an integer in 0.." + std::to_string(w - 1));
    if (w != ranks)
      return "WORLD_SIZE is " + std::to_string(w) + ", but the program has " + std::to_string(ranks) +
             " ranks (start one process per rank)";
    lr = r;
    if (const char* local = env("LOCAL_RANK"); local && !parse_count(local, &lr))
      return bad("LOCAL_RANK", local, "a non-negative integer");
    const char* file = env("SCHEDC_NCCL_ID_FILE");
    if (!file || !*file)
      return std::string("RANK and WORLD_SIZE are set, so every rank is its own process: set SCHEDC_NCCL_ID_FILE to a "
                         "path all ranks can read (rank 0 writes the NCCL id there; use a fresh path per run)");
    l.kind = LaunchKind::Env;
    l.rank = static_cast<int32_t>(r);
    l.world_size = static_cast<int32_t>(w);
    l.local_rank = static_cast<int32_t>(lr);
    l.id_file = file;
    return l;
  }
  if (env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE") || env("PMIX_RANK")) {
    l.kind = LaunchKind::Mpi;
    l.world_size = ranks;
    return l;
  }
  if (const char* mode = env("SCHEDC_CUDA_MODE"); mode && *mode) {
    auto it = std::find(kModeNames.begin(), kModeNames.end(), std::string_view(mode));
    if (it == kModeNames.end()) return bad("SCHEDC_CUDA_MODE", mode, "`auto`, `local` or `nccl`");
    l.mode = static_cast<CudaMode>(it - kModeNames.begin());
  }
  if (const char* devs = env("SCHEDC_CUDA_DEVICES"); devs && *devs) {
    std::stringstream ss(devs);
    std::string part;
    while (std::getline(ss, part, ',')) {
      int64_t d = 0;
      if (!parse_count(part.c_str(), &d) || d > 1023)
        return bad("SCHEDC_CUDA_DEVICES", devs, "device numbers separated by `,` (e.g. `0,1,2,3`)");
      for (int seen : l.devices)
        if (seen == d) return bad("SCHEDC_CUDA_DEVICES", devs, "each device at most once");
      l.devices.push_back(static_cast<int>(d));
    }
    if (l.devices.empty()) return bad("SCHEDC_CUDA_DEVICES", devs, "at least one device number");
  }
  return l;
}

std::variant<Placement, std::string> place_ranks(const Launch& launch, int32_t ranks, int visible) {
  if (visible < 1) return std::string("no CUDA device is visible");
  std::vector<int> devices = launch.devices;
  for (int d : devices)
    if (d >= visible)
      return "SCHEDC_CUDA_DEVICES names device " + std::to_string(d) + ", but only " + std::to_string(visible) +
             (visible == 1 ? " device is" : " devices are") + " visible";
  bool listed = !devices.empty();
  if (!listed)
    for (int d = 0; d < visible; ++d) devices.push_back(d);
  Placement p;
  p.mode = launch.mode;
  if (p.mode == CudaMode::Auto)
    p.mode = ranks > 1 && static_cast<int32_t>(devices.size()) >= ranks ? CudaMode::Nccl : CudaMode::Local;
  if (p.mode == CudaMode::Nccl && static_cast<int32_t>(devices.size()) < ranks)
    return "SCHEDC_CUDA_MODE=nccl puts one rank on each device, but the program has " + std::to_string(ranks) +
           " ranks and " + std::to_string(devices.size()) + (devices.size() == 1 ? " device is" : " devices are") +
           " available (NCCL refuses two ranks on one device; SCHEDC_CUDA_MODE=local shares devices)";
  // Local mode without a device list keeps every rank on device 0: the single-GPU test setup.
  if (p.mode == CudaMode::Local && !listed) devices = {0};
  for (int32_t r = 0; r < ranks; ++r) p.device_of_rank.push_back(devices[static_cast<size_t>(r) % devices.size()]);
  return p;
}

std::string publish_id(const std::string& path, int32_t world_size, std::span<const std::byte> id) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec))
    return "SCHEDC_NCCL_ID_FILE `" + path + "` already exists (a previous run's id?); remove it or use a fresh path";
  std::string tmp = path + ".tmp-" + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << kMagic << world_size << "\n";
    f.write(reinterpret_cast<const char*>(id.data()), static_cast<std::streamsize>(id.size()));
    f.flush();
    if (!f) {
      fs::remove(tmp, ec);
      return "cannot write the NCCL id to `" + tmp + "`";
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return "cannot move the NCCL id into place at `" + path + "`: " + ec.message();
  }
  return "";
}

std::string read_id(const std::string& path, int32_t world_size, std::span<std::byte> id, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string header = std::string(kMagic) + std::to_string(world_size) + "\n";
  for (int spins = 0;; ++spins) {
    std::ifstream f(path, std::ios::binary);
    if (f) {
      std::stringstream ss;
      ss << f.rdbuf();
      std::string text = ss.str();
      if (text.compare(0, std::strlen(kMagic), kMagic) != 0)
        return "SCHEDC_NCCL_ID_FILE `" + path + "` does not hold an NCCL id written by schedrt";
      size_t eol = text.find('\n', std::strlen(kMagic));
      if (eol == std::string::npos || text.compare(0, eol + 1, header) != 0)
        return "SCHEDC_NCCL_ID_FILE `" + path + "` was written for another world size (this run has " +
               std::to_string(world_size) + " ranks)";
      if (text.size() != header.size() + id.size())
        return "SCHEDC_NCCL_ID_FILE `" + path + "` holds " + std::to_string(text.size() - header.size()) +
               " bytes of id, expected " + std::to_string(id.size());
      std::memcpy(id.data(), text.data() + header.size(), id.size());
      return "";
    }
    if (std::chrono::steady_clock::now() > deadline) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g s", timeout_s);
      return "waited " + std::string(buf) + " for rank 0 to write the NCCL id to SCHEDC_NCCL_ID_FILE `" + path +
             "` (is rank 0 running, and does every rank see the same file system?)";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(spins < 100 ? 10 : 100));
  }
}

}  // namespace schedrt::cuda
