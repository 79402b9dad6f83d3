// Workloads shared by the benchmarks and the tests that check what they measure: pods in
// Karpenter's scheduling-benchmark shape (requests drawn from {100, 250, 500, 1000, 1500}m CPU
// and {100, 256, 512, 1024, 2048, 4096}Mi memory, label values from {a..g}), and a running
// cluster built from them for consolidation.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "reducers/core.h"

namespace tenon::bench {

struct PodFactory {
  std::mt19937_64 rng{42};
  std::size_t next = 0;

  std::string Value() {
    static constexpr const char* kValues[] = {"a", "b", "c", "d", "e", "f", "g"};
    return kValues[rng() % 7];
  }

  Pod Make() {
    static constexpr std::int64_t kCpu[] = {100, 250, 500, 1000, 1500};
    static constexpr std::int64_t kMemMib[] = {100, 256, 512, 1024, 2048, 4096};
    Pod pod;
    pod.ns = "default";
    pod.name = "pod-" + std::to_string(next);
    pod.uid = "uid-" + std::to_string(next++);
    pod.unschedulable = true;
    pod.requests.cpu = Millicores{kCpu[rng() % 5]};
    pod.requests.memory = Bytes{kMemMib[rng() % 6] * kMebibyte.value};
    return pod;
  }

  Pod Plain() {
    Pod pod = Make();
    pod.labels.Mutable()["my-label"] = Value();
    return pod;
  }

  Pod Spread(const char* key) {
    Pod pod = Plain();
    TopologySpreadConstraint c;
    c.max_skew = 1;
    c.topology_key = key;
    c.selector.match_labels["my-label"] = Value();
    pod.constraints.Mutable().topology_spread.push_back(c);
    return pod;
  }

  Pod SelfAffinity(const char* key) {
    Pod pod = Make();
    std::string v = Value();
    pod.labels.Mutable()["my-affinity"] = v;
    PodAffinityTerm term;
    term.selector.match_labels["my-affinity"] = v;
    term.topology_key = key;
    pod.constraints.Mutable().pod_affinity_required.push_back(term);
    return pod;
  }

  // `per_value`: anti-affinity among pods of one of seven values (at most seven such pods per
  // domain) rather than among all of them.
  Pod AntiAffinity(const char* key, bool per_value = false) {
    Pod pod = Make();
    pod.labels.Mutable()["app"] = per_value ? "nginx-" + Value() : "nginx";
    PodAffinityTerm term;
    term.selector.match_labels["app"] = pod.labels->at("app");
    term.topology_key = key;
    pod.constraints.Mutable().pod_anti_affinity_required.push_back(term);
    return pod;
  }

  Pod Preferring() {
    Pod pod = Plain();
    NodeSelectorTerm nowhere;
    nowhere.weight = 10;
    nowhere.requirements.push_back({label::kZone, RequirementOp::kIn, {"us-east-1-nowhere"}, 0});
    pod.constraints.Mutable().node_affinity_preferred.push_back(nowhere);
    PodAffinityTerm apart;
    apart.weight = 5;
    apart.selector.match_labels["my-label"] = pod.labels->at("my-label");
    apart.topology_key = label::kHostname;
    pod.constraints.Mutable().pod_anti_affinity_preferred.push_back(apart);
    TopologySpreadConstraint soft;
    soft.topology_key = label::kZone;
    soft.do_not_schedule = false;
    soft.selector.match_labels["my-label"] = pod.labels->at("my-label");
    pod.constraints.Mutable().topology_spread.push_back(soft);
    return pod;
  }
};

// Karpenter's five-way mix: plain, zone spread, hostname spread, zone self-affinity and
// hostname anti-affinity (among all of them, or per value with `anti_per_value`).
inline std::vector<Pod> DiversePods(std::size_t count, bool anti_per_value = false) {
  PodFactory f;
  std::vector<Pod> pods;
  std::size_t fifth = count / 5;
  for (std::size_t i = 0; i < fifth; ++i) pods.push_back(f.Plain());
  for (std::size_t i = 0; i < fifth; ++i) pods.push_back(f.Spread(label::kZone));
  for (std::size_t i = 0; i < fifth; ++i) pods.push_back(f.Spread(label::kHostname));
  for (std::size_t i = 0; i < fifth; ++i) pods.push_back(f.SelfAffinity(label::kZone));
  for (std::size_t i = 0; i < fifth; ++i)
    pods.push_back(f.AntiAffinity(label::kHostname, anti_per_value));
  while (pods.size() < count) pods.push_back(f.Plain());
  return pods;
}

inline std::vector<Pod> PreferencePods(std::size_t count) {
  PodFactory f;
  std::vector<Pod> pods;
  for (std::size_t i = 0; i < count; ++i) pods.push_back(f.Preferring());
  return pods;
}

// A running cluster: `pods` pods of the five-way mix (anti-affinity per value) placed by the
// scheduler onto nodes of one instance type, every NodeClaim initialized with its Node ready,
// then every `drop_every`-th pod gone, a scale-down that leaves nodes underused. The NodePool
// then takes any on-demand type (so consolidation may pick a smaller one); its one disruption
// budget is `budget`; the clock is an hour past the nodes' start.
inline State MakeCluster(const std::vector<InstanceType>& types, const std::string& type,
                         std::size_t pods, std::size_t drop_every, const std::string& budget) {
  constexpr Instant kT0{1'767'225'600'000'000'000};  // 2026-01-01T00:00:00Z
  State state;
  Step(state, Seq{1}, ControllerStarted{"bench", 42, Settings{}});
  Step(state, Seq{2}, Tick{kT0});
  Step(state, Seq{3}, CatalogRefreshed{types});
  NodeClass nodeclass;
  nodeclass.name = "default";
  Step(state, Seq{4}, NodeClassUpserted{nodeclass});
  NodePool pool;
  pool.name = "default";
  pool.nodeclass = "default";
  pool.requirements = {{label::kInstanceType, RequirementOp::kIn, {type}, 0},
                       {label::kCapacityType, RequirementOp::kIn, {kCapacityOnDemand}, 0}};
  pool.budgets = {DisruptionBudget{budget, "", Duration{0}, {}}};
  Step(state, Seq{5}, NodePoolUpserted{pool});
  for (Pod& pod : DiversePods(pods, true)) state.cluster.pods.Upsert(PodKey(pod.ns, pod.name), pod);
  ScheduleResult result = Schedule(state);
  const CatalogEntry& entry = state.cluster.catalog->at(type);
  for (std::size_t i = 0; i < result.claims.size(); ++i) {
    const PlannedClaim& plan = result.claims[i];
    const OfferingChoice& offer = plan.offerings.front();
    NodeClaim claim;
    claim.name = "claim-" + std::to_string(i);
    claim.nodepool = pool.name;
    claim.nodeclass = nodeclass.name;
    claim.requirements = plan.requirements;
    claim.phase = ClaimPhase::kInitialized;
    claim.instance_type = offer.instance_type;
    claim.zone = offer.zone;
    claim.capacity_type = offer.capacity_type;
    claim.price = offer.price;
    claim.node_name = "node-" + std::to_string(i);
    claim.allocatable = entry.allocatable;
    claim.created = claim.launched = claim.registered = claim.initialized = kT0;
    claim.nodepool_hash = TemplateHash(state.cluster.nodepools.at(pool.name));
    claim.nodeclass_hash = NodeClassHash(state.cluster.nodeclasses.at(nodeclass.name));
    Node node;
    node.name = claim.node_name;
    Labels labels = entry.labels;
    labels[label::kHostname] = node.name;
    labels[label::kZone] = claim.zone;
    labels[label::kCapacityType] = claim.capacity_type;
    labels[label::kInstanceType] = claim.instance_type;
    labels[label::kNodePool] = pool.name;
    labels[label::kInitialized] = "true";
    node.labels = labels;
    node.ready = true;
    node.allocatable = entry.allocatable;
    node.created = kT0;
    state.cluster.nodes[node.name] = node;
    state.lifecycle.nodeclaims[claim.name] = claim;
    state.lifecycle.claims_by_node.Add(claim.node_name, claim.name);
  }
  std::size_t n = 0;
  for (const auto& outcome : result.pods) {
    auto pod = state.cluster.pods.find(outcome.pod);
    bool drop = outcome.target.empty() || ++n % drop_every == 0;
    if (drop) {
      state.cluster.pods.Erase(pod);
      continue;
    }
    Pod bound = pod->second;
    bound.node_name = "node-" + outcome.target.substr(1);
    bound.phase = PodPhase::kRunning;
    bound.unschedulable = false;
    state.cluster.pods.Upsert(pod->first, std::move(bound));
  }
  pool.requirements.erase(pool.requirements.begin());  // Any type from now on.
  Step(state, Seq{6}, NodePoolUpserted{pool});
  for (auto& [name, claim] : state.lifecycle.nodeclaims) {
    claim.nodepool_hash = TemplateHash(state.cluster.nodepools.at(pool.name));
  }
  state.batch = BatchWindow{};
  state.now = kT0 + 60 * kMinute;
  return state;
}

}  // namespace tenon::bench
