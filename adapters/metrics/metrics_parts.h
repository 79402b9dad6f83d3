// What the files of the metrics share (adapters/metrics/metrics*.cc): Karpenter's label names,
// the gauge families whose series come and go with the cluster, and every metric family.
// Private to the metrics: metrics.h is their face.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <iterator>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "adapters/metrics/metrics.h"

namespace tenon::metrics {
namespace parts {

using prometheus::Labels;

// Karpenter's label names (sigs.k8s.io/karpenter pkg/metrics and its controllers).
inline constexpr const char* kNodePool = "nodepool";
inline constexpr const char* kReason = "reason";
inline constexpr const char* kResourceType = "resource_type";
inline constexpr const char* kCapacityType = "capacity_type";
inline constexpr const char* kZone = "zone";
inline constexpr const char* kMinValuesRelaxed = "min_values_relaxed";
inline constexpr const char* kNodeName = "node_name";
inline constexpr const char* kController = "controller";
inline constexpr const char* kMethod = "method";
inline constexpr const char* kProvider = "provider";
inline constexpr const char* kError = "error";
inline constexpr const char* kDecision = "decision";
inline constexpr const char* kConsolidationType = "consolidation_type";
inline constexpr const char* kMessageType = "message_type";

inline double Seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

// A gauge family whose series come and go with the cluster: each ObserveState sets what exists
// now, then Sweep removes the series not set since the last sweep. Series are found by a
// caller-built key (cheap to compare); their labels are built only when a series is new.
class GaugeSet {
 public:
  explicit GaugeSet(prometheus::Family<prometheus::Gauge>& family) : family_(family) {}
  template <class MakeLabels>
  void Set(const std::string& key, MakeLabels&& make_labels, double value) {
    auto [it, fresh] = live_.try_emplace(key);
    if (fresh) it->second.gauge = &family_.Add(make_labels());
    it->second.gauge->Set(value);
    it->second.round = round_;
  }
  void Set(const Labels& labels, double value) {
    std::string key;
    for (const auto& [k, v] : labels) key += k + '\0' + v + '\0';
    Set(
        key, [&] { return labels; }, value);
  }
  void Sweep() {
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second.round == round_) {
        ++it;
        continue;
      }
      family_.Remove(it->second.gauge);
      it = live_.erase(it);
    }
    ++round_;
  }

 private:
  struct Entry {
    prometheus::Gauge* gauge = nullptr;
    std::uint64_t round = 0;
  };
  prometheus::Family<prometheus::Gauge>& family_;
  // Only looked up and swept, never iterated into an output: the order does not matter.
  std::unordered_map<std::string, Entry> live_;
  std::uint64_t round_ = 1;
};

// The per-node gauge families (allocatable, pod requests, daemon requests): one entry per
// node, found by one lookup per ObserveState, holding that node's series in each family. At
// 5,000 nodes this keeps a call to a few milliseconds beside the pass over pods.
class NodeGauges {
 public:
  static constexpr int kFamilies = 3;
  explicit NodeGauges(std::array<prometheus::Family<prometheus::Gauge>*, kFamilies> families)
      : families_(families) {}

  // The series of one node, created on first sight; `base` holds its labels but resource_type.
  struct Node {
    struct Series {
      std::string resource;
      prometheus::Gauge* gauge = nullptr;
      std::uint64_t round = 0;
    };
    std::vector<Series> series[kFamilies];
    std::uint64_t round = 0;
    Labels base;
  };
  Node& Find(const std::string& key, const std::function<Labels()>& make_base) {
    auto [it, fresh] = nodes_.try_emplace(key);
    if (fresh) it->second.base = make_base();
    it->second.round = round_;
    return it->second;
  }
  void Set(Node& node, int family, const std::string& resource, double value) {
    auto& list = node.series[family];
    auto it = std::find_if(list.begin(), list.end(),
                           [&](const Node::Series& s) { return s.resource == resource; });
    if (it == list.end()) {
      Labels labels = node.base;
      labels["resource_type"] = resource;
      list.push_back({resource, &families_[family]->Add(labels), 0});
      it = list.end() - 1;
    }
    it->gauge->Set(value);
    it->round = round_;
  }
  // Removes the series of nodes gone, and of resources a node no longer has.
  void Sweep() {
    for (auto it = nodes_.begin(); it != nodes_.end();) {
      for (int f = 0; f < kFamilies; ++f) {
        std::erase_if(it->second.series[f], [&](const Node::Series& s) {
          if (s.round == round_) return false;
          families_[f]->Remove(s.gauge);
          return true;
        });
      }
      it = it->second.round == round_ ? std::next(it) : nodes_.erase(it);
    }
    ++round_;
  }

 private:
  std::array<prometheus::Family<prometheus::Gauge>*, kFamilies> families_;
  // Only looked up and swept, never iterated into an output: the order does not matter.
  std::unordered_map<std::string, Node> nodes_;
  std::uint64_t round_ = 1;
};

// Karpenter AWS's interruption message kinds, the message_type label.
std::string MessageType(InterruptionKind kind);

inline constexpr const char* kDecisionKinds[] = {"provisioning", "lifecycle", "disruption"};
static_assert(std::size(kDecisionKinds) == std::variant_size_v<DecisionBody>);

}  // namespace parts

struct Metrics::Families {
  explicit Families(prometheus::Registry& r);

  prometheus::Family<prometheus::Counter>& nodeclaims_created;
  prometheus::Family<prometheus::Counter>& nodeclaims_terminated;
  prometheus::Family<prometheus::Counter>& nodeclaims_disrupted;
  prometheus::Family<prometheus::Counter>& nodes_created;
  prometheus::Family<prometheus::Counter>& nodes_terminated;
  prometheus::Family<prometheus::Gauge>& nodes_allocatable;
  prometheus::Family<prometheus::Gauge>& nodes_pod_requests;
  prometheus::Family<prometheus::Gauge>& nodes_daemon_requests;
  prometheus::Family<prometheus::Gauge>& nodepools_usage;
  prometheus::Family<prometheus::Gauge>& nodepools_limit;
  prometheus::Family<prometheus::Gauge>& allowed_disruptions;
  prometheus::Family<prometheus::Counter>& disruption_decisions;
  prometheus::Family<prometheus::Gauge>& eligible_nodes;
  prometheus::Family<prometheus::Histogram>& evaluation_duration;
  prometheus::Family<prometheus::Histogram>& consolidation_score;
  prometheus::Family<prometheus::Counter>& consolidation_moves;
  prometheus::Family<prometheus::Counter>& unhealthy_disrupted;
  prometheus::Family<prometheus::Histogram>& scheduling_duration;
  prometheus::Family<prometheus::Gauge>& unschedulable_pods;
  prometheus::Family<prometheus::Counter>& interruption_received;
  prometheus::Family<prometheus::Counter>& interruption_deleted;
  prometheus::Family<prometheus::Histogram>& cloud_duration;
  prometheus::Family<prometheus::Counter>& cloud_errors;
  prometheus::Family<prometheus::Gauge>& cluster_nodes;
  prometheus::Family<prometheus::Gauge>& cluster_synced;
  prometheus::Family<prometheus::Gauge>& pods;
  prometheus::Family<prometheus::Histogram>& log_append;
  prometheus::Family<prometheus::Counter>& log_bytes;
  prometheus::Family<prometheus::Counter>& log_records;
  prometheus::Family<prometheus::Gauge>& log_sequence;
  prometheus::Family<prometheus::Gauge>& snapshot_age;
  prometheus::Family<prometheus::Gauge>& snapshot_sequence;
  prometheus::Family<prometheus::Counter>& events;
  prometheus::Family<prometheus::Counter>& commands;
  prometheus::Family<prometheus::Counter>& decisions;
  prometheus::Family<prometheus::Counter>& kube_write_failures;
  prometheus::Family<prometheus::Gauge>& lane_depth;
  prometheus::Family<prometheus::Gauge>& lane_oldest;
  prometheus::Family<prometheus::Gauge>& lane_stuck;
  prometheus::Family<prometheus::Histogram>& tick_interval;
  // allocatable, pod requests, daemon requests; usage, limit.
  parts::NodeGauges node_gauges;
  parts::GaugeSet pool_gauges[2];
};

}  // namespace tenon::metrics
