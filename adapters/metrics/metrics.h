// Prometheus metrics for `tenon run` and `tenon simulate`, under the metric and label names
// Karpenter exports (karpenter_nodeclaims_created_total, karpenter_nodepools_allowed_disruptions,
// ...) so existing dashboards keep working, plus tenon's own tenon_* metrics about the log and
// the core.
//
// Counters come from what the runtime folds and executes (the runtime::Observer callbacks);
// gauges come from ObserveState, which the controller calls after each ingest round. Nothing is
// labeled per pod: label values are node, NodePool, reason, kind and resource names only.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "adapters/runtime/lanes.h"
#include "adapters/runtime/runtime.h"

namespace prometheus {
class Registry;
}

namespace tenon::metrics {

class Metrics : public runtime::Observer {
 public:
  // Registers every metric family in `registry` (a fresh one when null).
  explicit Metrics(std::shared_ptr<prometheus::Registry> registry = nullptr);
  ~Metrics() override;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The registry to hand to a prometheus::Exposer (or to serialize).
  std::shared_ptr<prometheus::Registry> registry() const;

  // runtime::Observer: counters and histograms, called on the runtime's thread.
  void OnAppend(std::size_t records, std::size_t bytes, std::chrono::nanoseconds latency,
                Seq last) override;
  void OnEvent(Seq seq, const Event& event) override;
  void OnOutput(Seq cause, const Output& output) override;
  void OnExecuted(const Command& command, const std::vector<Event>& results,
                  std::chrono::nanoseconds took) override;
  void OnSnapshot(Seq seq) override;
  void OnFolded(Seq seq, const Event& event, const Output& output,
                std::chrono::nanoseconds took) override;

  // Gauges from the core's state: nodes, NodePools, cluster state, pod counts. One pass over
  // nodes, NodeClaims and pools, and one over pods (the per-node pod requests need it; there is
  // no per-node index in State). Label sets that no longer exist (a node gone) are removed.
  // Call after each ingest round, at most about once a second on a large cluster.
  void ObserveState(const State& state);
  // A write the Kubernetes API server refused (thread-safe).
  void KubeWriteFailed();
  // The command lanes of `tenon run`: queue depth, oldest command's age, stuck or not.
  void ObserveLanes(const std::vector<runtime::LaneStatus>& lanes);
  // The wall time since the previous tick `tenon run`'s loop folded.
  void ObserveTickInterval(std::chrono::nanoseconds interval);

  // The registry in the Prometheus text format (what /metrics serves).
  std::string Serialize() const;

 private:
  struct Families;
  // What a NodeClaim's counters are labeled with, remembered from its creation and launch and
  // refreshed from the state, so a claim gone from the state can still be labeled.
  struct ClaimLabels {
    std::string nodepool;
    std::string capacity_type;
    std::string zone;
    std::string node_name;
    std::string image_id;
  };
  void CountCommand(const Command& command, const Output& output);
  void CountDecision(const Decision& decision);
  void CountLifecycle(const LifecycleDecision& lifecycle);
  void CountDisruption(const DisruptionDecision& disruption);
  void CountScores(const DisruptionDecision& disruption);
  void ObserveCloudProvider(const Command& command, const std::vector<Event>& results,
                            std::chrono::nanoseconds took);
  void ObservePods(const State& state);
  void ObserveNodes(const State& state);
  void ObservePools(const State& state);

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
  std::map<std::string, ClaimLabels> claims_;  // By NodeClaim name; bounded by the cluster.
  // Per node name: requests of the pods bound to it, and of its DaemonSet pods (kept between
  // calls to reuse the allocation).
  std::unordered_map<std::string, std::pair<Resources, Resources>> node_requests_;
  Instant now_;                         // The last Tick folded.
  std::optional<Instant> snapshot_at_;  // Cluster time of the newest snapshot.
};

// Karpenter's label value for a disruption method ("Emptiness" -> "empty", ...).
std::string DisruptionReasonLabel(DisruptionMethod method);

}  // namespace tenon::metrics
