// PodDisruptionBudgets: the PDB controller's status and the Eviction API that honours it.
#include "adapters/sim/world.h"

#include <algorithm>

#include "adapters/sim/world_parts.h"

namespace tenon::sim {

// What the PDB controller would publish as status.disruptionsAllowed.
std::int64_t World::DisruptionsAllowed(const Budget& budget) const {
  std::int64_t healthy = 0;
  std::int64_t want = 0;      // The pods the selected workloads want.
  bool uncontrolled = false;  // A selected pod no workload owns.
  for (const auto& [key, pod] : pods_) {
    if (pod.ns != budget.ns || !LabelsMatch(budget.selector, *pod.labels)) continue;
    if (pod.owner_kind.empty()) uncontrolled = true;
    if (pod.owner_kind == "DaemonSet") ++want;  // A DaemonSet wants its pods where they run.
    auto node = record_.nodes.find(pod.node_name);
    if (pod.phase == PodPhase::kRunning && node != record_.nodes.end() && node->second.ready)
      ++healthy;
  }
  // The replicas wanted of every deployment whose pods it selects.
  for (const auto& [key, index] : record_.deployments) {
    const WorkloadStep& step = scenario_.workloads[index];
    const Pod* made_from = TemplateOf(step.template_key);
    const Labels labels = made_from != nullptr ? *made_from->labels : PodLabels(step);
    if (step.ns != budget.ns || !LabelsMatch(budget.selector, labels)) continue;
    auto desired = record_.replicas.find(key);
    want += desired == record_.replicas.end() ? 0 : desired->second;
  }
  // The disruption controller counts the pods wanted through their controllers; for a pod
  // none owns it cannot, and a budget that needs that count (maxUnavailable, a percent)
  // allows nothing.
  if (uncontrolled && (budget.max_unavailable || budget.percent)) return 0;
  // A percent is of the pods wanted, rounded up, as the disruption controller scales it.
  const auto value = [&](std::int64_t v) { return budget.percent ? (v * want + 99) / 100 : v; };
  return budget.min_available ? healthy - value(*budget.min_available)
                              : value(*budget.max_unavailable) - (want - healthy);
}

// The PDB controller: each budget's status, published when it changes.
std::vector<Event> World::PublishBudgets() {
  std::vector<Event> events;
  for (const Budget& budget : scenario_.budgets) {
    auto allowed = static_cast<std::int32_t>(std::max<std::int64_t>(0, DisruptionsAllowed(budget)));
    auto [it, fresh] = published_budgets_.try_emplace(budget.ns + "/" + budget.name, allowed);
    if (!fresh && it->second == allowed) continue;
    it->second = allowed;
    events.push_back(
        PodDisruptionBudgetUpserted{{budget.ns, budget.name, budget.selector, allowed}});
  }
  return events;
}

// The Eviction API: 429 while the pod's PodDisruptionBudget allows no disruption.
std::vector<Event> World::Evict(const Command& command, const EvictPod& evict) {
  auto it = pods_.find(PodKey(evict.ns, evict.name));
  if (it == pods_.end()) {
    return {CommandFailed{command.id, ErrorCode::kNotFound, "pod " + evict.name + " not found"}};
  }
  for (const Budget& budget : scenario_.budgets) {
    if (budget.ns != evict.ns || !LabelsMatch(budget.selector, *it->second.labels)) continue;
    if (DisruptionsAllowed(budget) <= 0) {
      return {CommandFailed{
          command.id, ErrorCode::kDisruptionBudget,
          "Cannot evict pod as it would violate the pod's disruption budget " + budget.name}};
    }
  }
  return DeletePodNow(command, evict.ns, evict.name);
}

std::vector<Event> World::DeletePodNow(const Command& command, const std::string& ns,
                                       const std::string& name) {
  auto it = pods_.find(PodKey(ns, name));
  if (it == pods_.end()) {
    return {CommandFailed{command.id, ErrorCode::kNotFound, "pod " + name + " not found"}};
  }
  ErasePod(it);
  room_may_have_changed_ = pods_removed_ = true;
  return {CommandSucceeded{command.id}, PodDeleted{ns, name}};
}

// The annotation set or removed as the API server's merge patch does; the pod's watch event
// follows.
std::vector<Event> World::PatchDeletionCost(const Command& command,
                                            const PatchPodDeletionCost& patch) {
  auto it = pods_.find(PodKey(patch.ns, patch.name));
  if (it == pods_.end() || (!patch.uid.empty() && it->second.uid != patch.uid)) {
    return {CommandFailed{command.id, ErrorCode::kNotFound, "pod " + patch.name + " not found"}};
  }
  const std::int32_t cost = patch.cost.value_or(0);
  if (it->second.deletion_cost == cost) return {CommandSucceeded{command.id}};
  it->second.deletion_cost = cost;
  return {CommandSucceeded{command.id}, PodUpserted{it->second}};
}

}  // namespace tenon::sim
