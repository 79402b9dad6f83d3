#include "adapters/kube/leader.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "adapters/http/wall_clock.h"
#include "model/timestamp.h"

namespace tenon::kube {
namespace {

using nlohmann::json;

constexpr auto kStopPoll = std::chrono::milliseconds(50);

void SleepUnlessStopped(std::chrono::milliseconds wait, const std::atomic<bool>& stop) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (!stop.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kStopPoll);
  }
}

std::int64_t Seconds(std::chrono::milliseconds d) {
  return std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(d).count());
}

}  // namespace

std::string MicroTimeNow() {
  return Rfc3339Text(WallClock(), 6);
}

LeaderElector::LeaderElector(Client& client, LeaseOptions options)
    : client_(client), options_(std::move(options)) {}

std::string LeaderElector::Path(bool collection) const {
  std::string path = "/apis/coordination.k8s.io/v1/namespaces/" + options_.ns + "/leases";
  return collection ? path : path + "/" + options_.name;
}

std::int64_t LeaderElector::transitions() const {
  std::lock_guard lock(mu_);
  return transitions_;
}

bool LeaderElector::IsLeader() const {
  std::lock_guard lock(mu_);
  return leader_ && Clock::now() - renewed_ < options_.renew_deadline;
}

LeaderElector::Attempt LeaderElector::TryAcquireOrRenew() {
  const auto now = Clock::now();
  const std::string stamp = MicroTimeNow();
  json spec = {{"holderIdentity", options_.identity},
               {"leaseDurationSeconds", Seconds(options_.lease_duration)},
               {"acquireTime", stamp},
               {"renewTime", stamp},
               {"leaseTransitions", 0}};
  Response got = client_.Request("GET", Path(false));
  if (got.status == 404) {
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", options_.name}, {"namespace", options_.ns}}},
                  {"spec", spec}};
    Response created = client_.Request("POST", Path(true), lease.dump());
    if (!created.ok()) return Attempt::kFailed;
    std::lock_guard lock(mu_);
    observed_record_ = spec.dump();
    observed_at_ = now;
    return Attempt::kHeld;
  }
  if (!got.ok()) return Attempt::kFailed;
  json lease = json::parse(got.body, nullptr, false);
  if (!lease.is_object()) return Attempt::kFailed;
  const json old = lease.value("spec", json::object());
  const std::string holder = old.value("holderIdentity", "");
  const std::string record = old.dump();
  bool i_hold = false;
  {
    std::lock_guard lock(mu_);
    if (record != observed_record_) {  // Someone wrote it: the lease is alive as of now.
      observed_record_ = record;
      observed_at_ = now;
    }
    const auto duration =
        std::chrono::seconds(old.value("leaseDurationSeconds", Seconds(options_.lease_duration)));
    i_hold = holder == options_.identity;
    if (!i_hold && !holder.empty() && now < observed_at_ + duration) {
      return Attempt::kTakenByOther;
    }
  }
  if (i_hold) {
    spec["acquireTime"] = old.value("acquireTime", stamp);
    spec["leaseTransitions"] = old.value("leaseTransitions", 0);
  } else {
    spec["leaseTransitions"] = old.value("leaseTransitions", 0) + 1;
  }
  lease["spec"] = spec;
  // PUT with the resourceVersion just read: of two candidates, only one write can win.
  Response updated = client_.Request("PUT", Path(false), lease.dump());
  if (!updated.ok()) return Attempt::kFailed;
  std::lock_guard lock(mu_);
  observed_record_ = spec.dump();
  observed_at_ = now;
  if (!i_hold) ++transitions_;
  return Attempt::kHeld;
}

bool LeaderElector::Acquire(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    const auto started = Clock::now();
    if (TryAcquireOrRenew() == Attempt::kHeld) {
      std::lock_guard lock(mu_);
      leader_ = true;
      renewed_ = started;
      spdlog::info("leader election: {} holds lease {}/{}", options_.identity, options_.ns,
                   options_.name);
      return true;
    }
    SleepUnlessStopped(options_.retry_period, stop);
  }
  return false;
}

void LeaderElector::KeepRenewing(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    SleepUnlessStopped(options_.retry_period, stop);
    if (stop.load()) return;
    // Retry within the renew deadline; past it, leadership is gone whatever the server says.
    while (!stop.load()) {
      const auto started = Clock::now();
      const Attempt attempt = TryAcquireOrRenew();
      {
        std::lock_guard lock(mu_);
        if (attempt == Attempt::kHeld) {
          renewed_ = started;
          break;
        }
        if (attempt == Attempt::kTakenByOther ||
            Clock::now() - renewed_ >= options_.renew_deadline) {
          leader_ = false;
          spdlog::error("leader election: {} lost lease {}/{}", options_.identity, options_.ns,
                        options_.name);
          return;
        }
      }
      SleepUnlessStopped(options_.retry_period / 4, stop);
    }
  }
}

void LeaderElector::Release() {
  {
    std::lock_guard lock(mu_);
    if (!leader_) return;
    leader_ = false;
  }
  Response got = client_.Request("GET", Path(false));
  if (!got.ok()) return;
  json lease = json::parse(got.body, nullptr, false);
  if (!lease.is_object() || lease["spec"].value("holderIdentity", "") != options_.identity) return;
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = MicroTimeNow();
  client_.Request("PUT", Path(false), lease.dump());
}

}  // namespace tenon::kube
