#pragma once
// The CUDA side of the cuda backend (internal; only the backend's and the GPU stage's sources
// include this). The CUDA runtime is linked statically; cuBLAS and NCCL are loaded with dlopen the
// first time a cuda run needs them, so that every other executor (threads, mpi) starts without
// mapping 800 MB of libraries it never calls.

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "schedrt/types.h"

namespace schedrt::cuda {

/// The cuBLAS and NCCL entry points the backend and the GPU stage call.
struct Libs {
  cublasStatus_t (*cublasCreate)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*cublasDestroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*cublasSetStream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*cublasSetWorkspace)(cublasHandle_t, void*, size_t) = nullptr;
  cublasStatus_t (*cublasSetMathMode)(cublasHandle_t, cublasMath_t) = nullptr;
  cublasStatus_t (*cublasGemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                 const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                 cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  const char* (*cublasGetStatusString)(cublasStatus_t) = nullptr;

  ncclResult_t (*ncclGetVersion)(int*) = nullptr;
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*ncclCommInitRankConfig)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*) = nullptr;
  ncclResult_t (*ncclCommGetAsyncError)(ncclComm_t, ncclResult_t*) = nullptr;
  ncclResult_t (*ncclCommAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*ncclCommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*ncclCommFinalize)(ncclComm_t) = nullptr;
  ncclResult_t (*ncclSend)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*ncclRecv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*ncclAllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                cudaStream_t) = nullptr;
  ncclResult_t (*ncclAllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*ncclGroupStart)() = nullptr;
  ncclResult_t (*ncclGroupEnd)() = nullptr;
  const char* (*ncclGetErrorString)(ncclResult_t) = nullptr;
  const char* (*ncclGetLastError)(ncclComm_t) = nullptr;
};

/// cuBLAS's entry points (loaded on first call; throws Error naming the library when it is
/// missing). `nccl()` additionally has NCCL's.
const Libs& cublas();
const Libs& nccl();

/// Tests only: use `libs` from now on instead of loading cuBLAS and NCCL (tests/unit/cuda fakes
/// NCCL in one process to test the NCCL backend's logic without GPUs).
void install_libs_for_testing(const Libs& libs);

/// Throws Error("WHAT: <CUDA's message>") unless `e` is cudaSuccess.
void check(cudaError_t e, const char* what);
void check(cublasStatus_t s, const char* what);
/// ncclInProgress counts as success (non-blocking communicators).
void check(ncclResult_t r, const char* what, ncclComm_t comm = nullptr);

}  // namespace schedrt::cuda
