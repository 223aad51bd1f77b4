#pragma once
// The cuda backend's entry point (internal to schedrt). No CUDA headers: main.cpp includes this in
// every build; without CUDA it is no_cuda.cpp's.

#include <functional>
#include <string>

#include "schedrt/backend.h"

namespace schedrt {

/// True when schedrt was built with the cuda backend.
bool have_cuda();

/// Runs `rank_main` for the ranks of this process on the cuda backend: every rank in this process
/// (no launcher), or this process's rank (RANK/WORLD_SIZE, or mpirun); see bootstrap.h. Returns the
/// message of the first failure, or "" when every rank of this process finished.
std::string run_cuda(int32_t ranks, const BackendOptions& options, const std::function<void(Backend&)>& rank_main,
                     int* argc, char*** argv);

}  // namespace schedrt
