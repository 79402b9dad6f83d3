// Leader election on a coordination.k8s.io/v1 Lease, with client-go's rules: a candidate takes
// the lease only when its holder has not renewed it for a whole lease duration as observed on
// the candidate's own clock (no trust in other clocks); the leader renews every retry period and
// counts itself leader only until its last successful renewal plus the renew deadline, so a
// paused or partitioned leader stops acting before anyone else may start (10 s < 15 s).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

#include "adapters/kube/client.h"

namespace tenon::kube {

struct LeaseOptions {
  std::string ns = "kube-system";
  std::string name = "tenon-leader-election";
  std::string identity;  // Unique per process: the pod name plus a random suffix.
  std::chrono::milliseconds lease_duration{15'000};
  std::chrono::milliseconds renew_deadline{10'000};
  std::chrono::milliseconds retry_period{2'000};
};

class LeaderElector {
 public:
  LeaderElector(Client& client, LeaseOptions options);

  // Tries every retry period until this process holds the lease (true) or `stop` (false).
  bool Acquire(const std::atomic<bool>& stop);
  // Renews every retry period until a renewal cannot succeed within the renew deadline, the
  // lease is found taken, or `stop`. Returns when leadership ends.
  void KeepRenewing(const std::atomic<bool>& stop);
  // True only while the last successful renewal is younger than the renew deadline.
  bool IsLeader() const;
  // Gives the lease up (a short duration and no holder), so a standby takes over at once.
  void Release();

  const LeaseOptions& options() const { return options_; }
  std::int64_t transitions() const;

 private:
  using Clock = std::chrono::steady_clock;
  enum class Attempt : std::uint8_t { kHeld, kTakenByOther, kFailed };
  Attempt TryAcquireOrRenew();
  std::string Path(bool collection) const;

  Client& client_;
  LeaseOptions options_;
  mutable std::mutex mu_;
  bool leader_ = false;
  Clock::time_point renewed_{};
  // The lease record as last read, and when it last changed on this process's clock.
  std::string observed_record_;
  Clock::time_point observed_at_{};
  std::int64_t transitions_ = 0;
};

// A MicroTime as the API writes it: 2026-11-23T07:20:01.123456Z.
std::string MicroTimeNow();

}  // namespace tenon::kube
