#pragma once
// The CPU backends (internal to schedrt): threads and MPI, and what the runner needs of them.

#include <functional>
#include <memory>
#include <string>

#include "schedrt/backend.h"

namespace schedrt {

/// Runs `rank_main` on `ranks` threads, each with its own threads backend. Returns the message of
/// the first failure (empty when every rank finished).
std::string run_threads(int32_t ranks, const BackendOptions& options, const std::function<void(Backend&)>& rank_main);

/// True when schedrt was built with the MPI backend.
bool have_mpi();
/// Runs `rank_main` once in this process, as MPI rank COMM_WORLD's rank. Initialises and finalises
/// MPI; on a failure prints it and aborts every process (MPI_Abort, exit code 1). Returns "" or a
/// message (e.g. the wrong number of processes) when nothing ran.
std::string run_mpi(int32_t ranks, const BackendOptions& options, const std::function<void(Backend&)>& rank_main,
                    int* argc, char*** argv);

/// MPI_Init, then this process's COMM_WORLD rank and size in *rank and *size; when the size is not
/// `ranks`, finalises MPI and returns what to tell the user (else ""). Only with MPI (mpi.cpp).
std::string mpi_start(int32_t ranks, int* argc, char*** argv, int* rank, int* size);

/// "60 s", "0.5 s".
std::string format_seconds(double s);

/// Describes the wait a watchdog gave up on: "rank 2 waited 60 s for `F3.s1` (activation) from
/// rank 1, message #5 on channel 1->2".
std::string describe_stuck(int32_t rank, const Transfer& t, double seconds);

}  // namespace schedrt
