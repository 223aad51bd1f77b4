// cuBLAS and NCCL through dlopen (see cuda_api.h for why). The build records where CMake found
// them (SCHEDRT_CUBLAS_PATH, SCHEDRT_NCCL_PATH); the loader tries that path, then the soname on the
// library search path, so an executor also runs where the toolkit lives elsewhere.

#include <dlfcn.h>

#include <mutex>

#include "backends/cuda/cuda_api.h"

#ifndef SCHEDRT_CUBLAS_PATH
#define SCHEDRT_CUBLAS_PATH ""
#endif
#ifndef SCHEDRT_NCCL_PATH
#define SCHEDRT_NCCL_PATH ""
#endif

namespace schedrt::cuda {
namespace {

void* open_library(const std::string& configured, const std::string& soname, const char* what) {
  std::string tried;
  for (const std::string& name : {configured, soname}) {
    if (name.empty()) continue;
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    tried += std::string(tried.empty() ? "" : "; ") + dlerror();
  }
  throw Error(std::string("the cuda backend needs ") + what + ", which cannot be loaded (" + tried + ")");
}

template <class Fn> void bind(void* lib, Fn& fn, const char* symbol) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (!fn) throw Error(std::string("the loaded library has no `") + symbol + "`; is it too old?");
}

struct Loaded {
  Libs libs;
  bool have_cublas = false, have_nccl = false;
  std::mutex mu;
};

Loaded& loaded() {
  static Loaded l;
  return l;
}

}  // namespace

const Libs& cublas() {
  Loaded& l = loaded();
  std::lock_guard<std::mutex> lock(l.mu);
  if (l.have_cublas) return l.libs;
  void* h = open_library(SCHEDRT_CUBLAS_PATH, "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR), "cuBLAS (libcublas)");
  Libs& x = l.libs;
  bind(h, x.cublasCreate, "cublasCreate_v2");
  bind(h, x.cublasDestroy, "cublasDestroy_v2");
  bind(h, x.cublasSetStream, "cublasSetStream_v2");
  bind(h, x.cublasSetWorkspace, "cublasSetWorkspace_v2");
  bind(h, x.cublasSetMathMode, "cublasSetMathMode");
  bind(h, x.cublasGemmEx, "cublasGemmEx");
  bind(h, x.cublasGetStatusString, "cublasGetStatusString");
  l.have_cublas = true;
  return x;
}

const Libs& nccl() {
  cublas();
  Loaded& l = loaded();
  std::lock_guard<std::mutex> lock(l.mu);
  if (l.have_nccl) return l.libs;
  void* h = open_library(SCHEDRT_NCCL_PATH, "libnccl.so.2", "NCCL (libnccl)");
  Libs& x = l.libs;
  bind(h, x.ncclGetVersion, "ncclGetVersion");
  bind(h, x.ncclGetUniqueId, "ncclGetUniqueId");
  bind(h, x.ncclCommInitRankConfig, "ncclCommInitRankConfig");
  bind(h, x.ncclCommGetAsyncError, "ncclCommGetAsyncError");
  bind(h, x.ncclCommAbort, "ncclCommAbort");
  bind(h, x.ncclCommDestroy, "ncclCommDestroy");
  bind(h, x.ncclCommFinalize, "ncclCommFinalize");
  bind(h, x.ncclSend, "ncclSend");
  bind(h, x.ncclRecv, "ncclRecv");
  bind(h, x.ncclAllReduce, "ncclAllReduce");
  bind(h, x.ncclAllGather, "ncclAllGather");
  bind(h, x.ncclGroupStart, "ncclGroupStart");
  bind(h, x.ncclGroupEnd, "ncclGroupEnd");
  bind(h, x.ncclGetErrorString, "ncclGetErrorString");
  bind(h, x.ncclGetLastError, "ncclGetLastError");
  int version = 0;
  x.ncclGetVersion(&version);
  // ncclConfig_t grows with NCCL versions; the library must know the header's layout.
  if (version < NCCL_VERSION(2, 19, 0))
    throw Error("the cuda backend needs NCCL 2.19 or newer (non-blocking communicators), the loaded one is " +
                std::to_string(version));
  l.have_nccl = true;
  return x;
}

void install_libs_for_testing(const Libs& libs) {
  Loaded& l = loaded();
  std::lock_guard<std::mutex> lock(l.mu);
  l.libs = libs;
  l.have_cublas = l.have_nccl = true;
}

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  throw Error(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void check(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  const Libs& x = loaded().libs;
  throw Error(std::string(what) + ": " + (x.cublasGetStatusString ? x.cublasGetStatusString(s) : "cuBLAS error") +
              " (status " + std::to_string(static_cast<int>(s)) + ")");
}

void check(ncclResult_t r, const char* what, ncclComm_t comm) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  const Libs& x = loaded().libs;
  std::string detail = x.ncclGetErrorString ? x.ncclGetErrorString(r) : "NCCL error";
  if (comm && x.ncclGetLastError)
    if (const char* last = x.ncclGetLastError(comm); last && *last) detail += "; " + std::string(last);
  throw Error(std::string(what) + ": " + detail);
}

}  // namespace schedrt::cuda
