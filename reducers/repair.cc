// Node repair (FEATURE_GATES NodeRepair), as Karpenter's node health controller does it: a node
// whose watched condition (kRepairPolicies) has held past its toleration has its NodeClaim
// deleted at once and drained without waiting (no budget, PodDisruptionBudget or do-not-disrupt
// holds it), unless more than 20% of its NodePool's nodes are unhealthy, rounded up, so one
// unhealthy node can always be repaired. No replacement is launched first: its pods go pending
// and provisioning takes them.
#include <algorithm>
#include <map>

#include "model/timestamp.h"
#include "reducers/internal.h"

namespace tenon::core {
namespace {

constexpr std::int64_t kUnhealthyPercentMax = 20;
constexpr Duration kBlockedDedupe{15 * kMinute.value};

struct Due {
  Instant at;
  const NodeCondition* condition = nullptr;
  Duration toleration{0};
};

// The earliest a policy's toleration runs out on the node, as Karpenter takes it: from the
// condition's last transition, the earlier policy on a tie.
std::optional<Due> RepairDue(const Node& node) {
  std::optional<Due> due;
  for (const RepairPolicy& p : kRepairPolicies) {
    for (const NodeCondition& c : node.unhealthy) {
      if (c.type != p.type || c.status != p.status) continue;
      const Instant at = c.since + p.toleration;
      if (!due || at < due->at) due = Due{at, &c, p.toleration};
    }
  }
  return due;
}

std::string MinutesText(Duration d) {
  return std::to_string(d.value / kMinute.value) + "m";
}

// Per NodePool, its nodes and how many of them are unhealthy now (toleration or not), by the
// nodes' karpenter.sh/nodepool label as Karpenter counts them.
struct PoolHealth {
  std::int64_t nodes = 0;
  std::int64_t unhealthy = 0;
};
std::map<std::string, PoolHealth> HealthByPool(const State& state) {
  std::map<std::string, PoolHealth> out;
  for (const auto& [name, node] : state.cluster.nodes) {
    const auto pool = node.labels.Lookup(label::kNodePool);
    if (!pool) continue;
    PoolHealth& h = out[std::string(*pool)];
    ++h.nodes;
    if (!node.unhealthy.empty()) ++h.unhealthy;
  }
  return out;
}

void AnnounceBlocked(State& state, Seq seq, const NodeClaim& claim, Output& out) {
  const std::string message = "more than 20% nodes are unhealthy in the nodepool";
  AnnounceDeduped(state, seq,
                  {{"v1", "Node", "", claim.node_name}, "Warning", "NodeRepairBlocked", message},
                  kBlockedDedupe, out);
  AnnounceDeduped(
      state, seq,
      {{"karpenter.sh/v1", "NodeClaim", "", claim.name}, "Warning", "NodeRepairBlocked", message},
      kBlockedDedupe, out);
  AnnounceDeduped(state, seq,
                  {{"karpenter.sh/v1", "NodePool", "", claim.nodepool},
                   "Warning",
                   "NodeRepairBlocked",
                   message},
                  kBlockedDedupe, out);
}

}  // namespace

void AdvanceNodeRepair(State& state, Seq seq, Output& out) {
  if (!state.settings.node_repair) return;
  std::optional<std::map<std::string, PoolHealth>> health;  // Counted once, when first needed.
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (claim.node_name.empty()) continue;
    const auto node = state.cluster.nodes.find(claim.node_name);
    if (node == state.cluster.nodes.end() || node->second.unhealthy.empty()) continue;
    const std::optional<Due> due = RepairDue(node->second);
    if (!due || state.now < due->at) continue;
    if (claim.deleting) {
      // Already on its way out: its drain ends now, as Karpenter's repair sets the termination
      // timestamp of a NodeClaim already being deleted.
      if (!claim.termination_deadline || *claim.termination_deadline > state.now) {
        SetTerminationDeadline(state, name, state.now);
        ++state.idle.changes;  // Its drain, walked next, ends now.
      }
      continue;
    }
    if (!health) health = HealthByPool(state);
    const PoolHealth& pool = (*health)[claim.nodepool];
    const std::int64_t allowed = (pool.nodes * kUnhealthyPercentMax + 99) / 100;
    if (pool.unhealthy > allowed) {
      AnnounceBlocked(state, seq, claim, out);
      continue;
    }
    const NodeCondition& c = *due->condition;
    const std::string reason = "unhealthy: " + c.type + "=" + c.status + " since " +
                               Rfc3339Text(c.since) + ", past its " + MinutesText(due->toleration) +
                               " toleration (" + std::to_string(pool.unhealthy) + " of " +
                               std::to_string(pool.nodes) + " nodes of the NodePool unhealthy, " +
                               std::to_string(allowed) + " allowed)";
    SetTerminationDeadline(state, name, state.now);
    BeginDeletion(state, seq, name, reason, Cause::kUnhealthy, true, out);
    ++state.idle.changes;  // The lifecycle walk, next in the tick, drains it.
  }
}

}  // namespace tenon::core
