#include "backends/cuda/in_process.h"

#include <chrono>
#include <cstring>

#include "backends/backends.h"
#include "schedrt/context_impl.h"

namespace schedrt::cuda {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

InProcess::InProcess(int32_t size, BackendOptions options)
    : size_(size), options_(options), channels_(static_cast<size_t>(size * size)), status_(static_cast<size_t>(size)),
      mail_(static_cast<size_t>(size * size)), blobs_(static_cast<size_t>(size)) {}

bool InProcess::aborted() const { return aborted_.load(std::memory_order_acquire); }

std::string InProcess::message() {
  std::lock_guard<std::mutex> lock(mu);
  return message_;
}

void InProcess::abort(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (message_.empty()) message_ = message;
    aborted_.store(true, std::memory_order_release);
  }
  cv.notify_all();
}

void InProcess::barrier(int32_t rank) {
  std::unique_lock<std::mutex> lock(mu);
  uint64_t gen = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    cv.notify_all();
    return;
  }
  auto deadline = Clock::now() + std::chrono::duration<double>(options_.timeout_s);
  while (generation_ == gen) {
    if (aborted_) throw Aborted("stopped by another rank");
    if (cv.wait_until(lock, deadline) == std::cv_status::timeout && generation_ == gen)
      throw Error("rank " + std::to_string(rank) + " waited " + format_seconds(options_.timeout_s) +
                  " at a barrier for the other ranks");
  }
}

std::vector<std::vector<std::byte>> InProcess::gather(int32_t rank, const std::vector<std::byte>& mine) {
  {
    std::lock_guard<std::mutex> lock(mu);
    blobs_[static_cast<size_t>(rank)] = mine;
  }
  barrier(rank);
  std::vector<std::vector<std::byte>> all;
  if (rank == 0) {
    std::lock_guard<std::mutex> lock(mu);
    all = blobs_;
  }
  barrier(rank);
  return all;
}

void InProcess::exchange(int32_t rank, int32_t peer, const void* send, size_t send_bytes, void* recv, size_t bytes) {
  std::unique_lock<std::mutex> lock(mu);
  const auto* p = static_cast<const std::byte*>(send);
  mail_[static_cast<size_t>(rank * size_ + peer)].emplace_back(p, p + send_bytes);
  cv.notify_all();
  auto& inbox = mail_[static_cast<size_t>(peer * size_ + rank)];
  auto deadline = Clock::now() + std::chrono::duration<double>(options_.timeout_s);
  while (inbox.empty()) {
    if (aborted_) throw Aborted("stopped by another rank");
    if (cv.wait_until(lock, deadline) == std::cv_status::timeout && inbox.empty())
      throw Error(describe_stuck(rank, schedrt::recv(W(-1, -1), peer, 0), options_.timeout_s));
  }
  if (inbox.front().size() != bytes)
    throw Error("rank " + std::to_string(rank) + " expected " + std::to_string(bytes) +
                " bytes of replica gradients from rank " + std::to_string(peer) + ", got " +
                std::to_string(inbox.front().size()));
  if (bytes > 0) std::memcpy(recv, inbox.front().data(), bytes);
  inbox.pop_front();
}

void InProcess::publish(int32_t rank, uint64_t status) {
  std::lock_guard<std::mutex> lock(status_mu_);
  status_[static_cast<size_t>(rank)] = status;
}

std::string InProcess::peer_status(int32_t peer) {
  std::lock_guard<std::mutex> lock(status_mu_);
  return "rank " + std::to_string(peer) + " is " + OpStatus::unpack(status_[static_cast<size_t>(peer)]).describe();
}

}  // namespace schedrt::cuda
