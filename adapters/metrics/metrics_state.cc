// Gauges from the core's state: pods, nodes, NodePools and the cluster.
#include "adapters/metrics/metrics.h"

#include <map>

#include "adapters/metrics/metrics_parts.h"

namespace tenon::metrics {

using namespace parts;

namespace {

// Calls f(resource_type, value) for every resource of `r` under Karpenter's resource_type
// names: cpu in cores, memory in bytes, pods, then extended resources by name.
template <class F>
void ForEachResource(const Resources& r, F&& f) {
  f("cpu", static_cast<double>(r.cpu.value) / 1000.0);
  f("memory", static_cast<double>(r.memory.value));
  f("pods", static_cast<double>(r.pods));
  for (const auto& [name, value] : r.extended) f(name, static_cast<double>(value));
}

// into += r, without the temporaries of operator+ (this runs once per pod).
void AddTo(Resources& into, const Resources& r) {
  into.cpu += r.cpu;
  into.memory += r.memory;
  into.pods += r.pods;
  for (const auto& [name, value] : r.extended) into.extended[name] += value;
}

}  // namespace

void Metrics::ObserveState(const State& state) {
  ObservePods(state);
  ObserveNodes(state);
  ObservePools(state);
  f_->cluster_nodes.Add({}).Set(static_cast<double>(state.cluster.nodes.size()));
  f_->cluster_synced.Add({}).Set(state.cluster.watches_synced ? 1 : 0);
  f_->snapshot_age.Add({}).Set(
      !snapshot_at_ ? -1.0 : static_cast<double>((state.now - *snapshot_at_).value) / 1e9);
}

// One pass over pods: the requests bound to each node (all pods, and DaemonSet pods) and the
// pod counts by state.
void Metrics::ObservePods(const State& state) {
  node_requests_.clear();
  double bound = 0, pending = 0, unschedulable = 0, finished = 0;
  for (const auto& [key, pod] : state.cluster.pods) {
    if (pod.phase == PodPhase::kSucceeded || pod.phase == PodPhase::kFailed) {
      ++finished;
      continue;
    }
    if (pod.node_name.empty()) {
      ++(pod.unschedulable ? unschedulable : pending);
      continue;
    }
    ++bound;
    auto& [pods, daemons] = node_requests_[pod.node_name];
    AddTo(pods, pod.requests);
    if (pod.owner_kind == "DaemonSet") AddTo(daemons, pod.requests);
  }
  f_->pods.Add({{"state", "bound"}}).Set(bound);
  f_->pods.Add({{"state", "pending"}}).Set(pending);
  f_->pods.Add({{"state", "unschedulable"}}).Set(unschedulable);
  f_->pods.Add({{"state", "finished"}}).Set(finished);
  f_->unschedulable_pods.Add({{kController, "provisioner"}}).Set(unschedulable);
}

// Per node: Karpenter labels node gauges with the node, its pool and well-known labels.
void Metrics::ObserveNodes(const State& state) {
  static const Resources kNone;
  for (const auto& [name, node] : state.cluster.nodes) {
    auto label = [&](const char* key) {
      auto it = node.labels.find(key);
      return it == node.labels.end() ? std::string() : it->second.str();
    };
    const std::string values[] = {label(label::kNodePool),     label(label::kCapacityType),
                                  label(label::kInstanceType), label(label::kZone),
                                  label(label::kArch),         name};
    // The key holds every label value, so a node relabeled gets new series.
    std::string node_key;
    for (const auto& v : values) node_key.append(v).push_back('\0');
    auto& series = f_->node_gauges.Find(node_key, [&] {
      return Labels{{kNodeName, name},          {kNodePool, values[0]},
                    {kCapacityType, values[1]}, {"instance_type", values[2]},
                    {kZone, values[3]},         {"arch", values[4]}};
    });
    auto found = node_requests_.find(name);
    const Resources* resources[] = {&node.allocatable,
                                    found == node_requests_.end() ? &kNone : &found->second.first,
                                    found == node_requests_.end() ? &kNone : &found->second.second};
    for (int i = 0; i < NodeGauges::kFamilies; ++i) {
      ForEachResource(*resources[i], [&](const std::string& resource, double value) {
        f_->node_gauges.Set(series, i, resource, value);
      });
    }
  }
  f_->node_gauges.Sweep();
}

// Per pool: usage as the sum of its claims' allocatable (with a node count), and its limits.
void Metrics::ObservePools(const State& state) {
  std::map<std::string, Resources> usage;
  std::map<std::string, std::int64_t> nodes;
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    AddTo(usage[claim.nodepool], claim.allocatable);
    ++nodes[claim.nodepool];
    // Refresh what counters are labeled with (after a restart the log's early events were not
    // seen by this process).
    ClaimLabels& labels = claims_[name];
    labels.nodepool = claim.nodepool;
    if (!claim.capacity_type.empty()) labels.capacity_type = claim.capacity_type;
    if (!claim.zone.empty()) labels.zone = claim.zone;
    if (!claim.node_name.empty()) labels.node_name = claim.node_name;
  }
  // Claims gone from the state were counted by now (their Finalized decision came first).
  std::erase_if(claims_, [&](const auto& entry) {
    return !state.lifecycle.nodeclaims.contains(entry.first);
  });
  for (const auto& [name, pool] : state.cluster.nodepools) {
    auto set = [&](int i, const std::string& resource, double value) {
      f_->pool_gauges[i].Set({{kNodePool, name}, {kResourceType, resource}}, value);
    };
    ForEachResource(usage[name], [&](const std::string& r, double v) { set(0, r, v); });
    set(0, "nodes", static_cast<double>(nodes[name]));
    const NodePoolLimits& limits = pool.limits;
    if (limits.cpu) set(1, "cpu", static_cast<double>(limits.cpu->value) / 1000.0);
    if (limits.memory) set(1, "memory", static_cast<double>(limits.memory->value));
    if (limits.nodes) set(1, "nodes", static_cast<double>(*limits.nodes));
    for (const auto& [resource, value] : limits.extended) {
      set(1, resource, static_cast<double>(value));
    }
  }
  for (auto& g : f_->pool_gauges) g.Sweep();
}

}  // namespace tenon::metrics
