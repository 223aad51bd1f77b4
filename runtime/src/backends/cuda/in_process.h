#pragma once
// What the ranks of one process share in a cuda run (every rank in one process: local or
// single-process NCCL mode): a barrier, the results' gather, the replicas' gradient exchange, the
// abort flag, each rank's status for watchdog reports, and, in local mode, the channels where a
// rank's sends meet the receives of another (internal to the cuda backend).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_api.h"
#include "schedrt/backend.h"

namespace schedrt::cuda {

/// One side of a local-mode transfer, from its post until the rank's wait_all.
struct LocalSide {
  const PostedTransfer* posted = nullptr;
  int32_t rank = 0;
  cudaEvent_t ready = nullptr;  // the side's buffer is ready: recorded on its compute stream at post
  cudaEvent_t done = nullptr;   // set when matched: the copy has finished once this completes
  bool matched = false;         // guarded by InProcess::mu
};

class InProcess {
 public:
  InProcess(int32_t size, BackendOptions options);

  int32_t size() const { return size_; }
  const BackendOptions& options() const { return options_; }

  bool aborted() const;
  std::string message();
  /// Stops every rank (their blocking calls throw Aborted); the first message wins.
  void abort(const std::string& message);

  /// Host barrier with the watchdog's deadline.
  void barrier(int32_t rank);
  std::vector<std::vector<std::byte>> gather(int32_t rank, const std::vector<std::byte>& mine);
  void exchange(int32_t rank, int32_t peer, const void* send, size_t send_bytes, void* recv, size_t recv_bytes);

  void publish(int32_t rank, uint64_t status);
  /// "rank 2 is running `F3.s2`".
  std::string peer_status(int32_t peer);

  /// Local mode: the FIFO channel from `src` to `dst` (guarded by `mu`).
  struct Channel {
    std::deque<LocalSide*> sends, recvs;
  };
  Channel& channel(int32_t src, int32_t dst) { return channels_[static_cast<size_t>(src * size_ + dst)]; }
  std::mutex mu;
  std::condition_variable cv;  // notified when a transfer is matched or the run is aborted

 private:
  int32_t size_;
  BackendOptions options_;
  std::vector<Channel> channels_;
  std::mutex status_mu_;
  std::vector<uint64_t> status_;  // guarded by status_mu_ (watchdog messages are built under mu)
  std::vector<std::deque<std::vector<std::byte>>> mail_;  // [src * size + dst], guarded by mu
  std::vector<std::vector<std::byte>> blobs_;
  std::atomic<bool> aborted_{false};
  std::string message_;
  int32_t arrived_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace schedrt::cuda
