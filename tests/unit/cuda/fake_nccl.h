#pragma once
// A fake NCCL, in one process, for testing the NCCL backend's logic without GPUs: point-to-point
// transfers meet first-in first-out per channel on the host, when both sides are issued; a group
// stays "in progress" (ncclGroupEnd returns ncclInProgress, ncclCommGetAsyncError says so) until
// every transfer in it has met its peer. That is the strictest model the deadlock-freedom proof
// covers (rendezvous, one group active at a time per rank), so it also exercises the backend's
// handling of non-blocking communicators. All-reduce (one int32, sum) and all-gather are
// rendezvous of every rank's k-th collective.
//
// The data moves on the fake device (fake_cudart.h), in stream order: a group is a start and an
// end on its stream. A group's end waits until its peers' streams have started theirs, and the
// first of the two ends to run copies a transfer straight from the send buffer into the receive
// buffer, so both streams are held until then, as NCCL's kernels hold them. A collective reads
// each rank's input when that rank's stream reaches it and writes each output once every input is
// in. ncclCommAbort turns that communicator's pending work into no-ops, as a real abort frees the
// stream; a peer's work still waits for its own abort.

#include <memory>

#include "backends/cuda/cuda_api.h"

namespace fake_nccl {

class FakeWorld {
 public:
  explicit FakeWorld(int ranks);
  /// Rank `rank`'s communicator (freed by ncclCommAbort).
  ncclComm_t comm(int rank);

 private:
  std::shared_ptr<void> world_;
};

/// The entry points, for schedrt::cuda::install_libs_for_testing.
schedrt::cuda::Libs libs();

}  // namespace fake_nccl
