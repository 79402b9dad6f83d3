// Kubernetes Events for what the core decided, with Karpenter's reasons (Nominated,
// DisruptionBlocked, Unconsolidatable, DisruptionLaunching, DisruptionWaitingReadiness,
// DisruptionTerminating, SpotInterrupted, Evicted, FailedDraining, InsufficientCapacityError...),
// so `kubectl describe` and event-based tooling read the same as under Karpenter. `tenon run`
// records them after each fold, on the Kubernetes lane.
#include <set>

#include "reducers/internal.h"
#include "reducers/vocabulary.h"

namespace tenon {
namespace {

constexpr const char* kNormal = "Normal";
constexpr const char* kWarning = "Warning";

KubeObjectRef PodRef(const std::string& key) {
  auto slash = key.find('/');
  if (slash == std::string::npos) return {"v1", "Pod", "", key};
  return {"v1", "Pod", key.substr(0, slash), key.substr(slash + 1)};
}
KubeObjectRef NodeRef(const std::string& name) {
  return {"v1", "Node", "", name};
}
KubeObjectRef NodeClaimRef(const std::string& name) {
  return {"karpenter.sh/v1", "NodeClaim", "", name};
}
KubeObjectRef NodePoolRef(const std::string& name) {
  return {"karpenter.sh/v1", "NodePool", "", name};
}

std::string NodeOf(const State& state, const std::string& claim, const std::string& fallback = "") {
  auto it = state.nodeclaims.find(claim);
  if (it != state.nodeclaims.end() && !it->second.node_name.empty()) return it->second.node_name;
  return fallback;
}

// The same event on a NodeClaim's Node (when it has one) and on the NodeClaim, as Karpenter
// emits its disruption events.
void OnNodeAndClaim(const State& state, const std::string& claim, const std::string& type,
                    const std::string& reason, const std::string& node_message,
                    const std::string& claim_message, std::vector<RecordKubeEvent>& out) {
  std::string node = NodeOf(state, claim);
  if (!node.empty()) out.push_back({NodeRef(node), type, reason, node_message});
  out.push_back({NodeClaimRef(claim), type, reason, claim_message});
}

bool IsConsolidation(const std::string& method) {
  return method == "Emptiness" || method == "SingleNodeConsolidation" ||
         method == "MultiNodeConsolidation";
}

void Provisioning(const ProvisioningDecision& d, const State& state,
                  std::vector<RecordKubeEvent>& out) {
  for (const PodOutcome& pod : d.pods) {
    if (pod.target.empty()) {
      out.push_back(
          {PodRef(pod.pod), kWarning, "FailedScheduling", "Failed to schedule pod, " + pod.reason});
      continue;
    }
    bool is_claim = state.nodeclaims.contains(pod.target);
    for (const ClaimPlan& plan : d.new_claims) is_claim = is_claim || plan.nodeclaim == pod.target;
    out.push_back(
        {PodRef(pod.pod), kNormal, "Nominated",
         "Pod should schedule on: " + std::string(is_claim ? "nodeclaim/" : "node/") + pod.target});
  }
}

// AWS's interruption events, from the code the core gave the message.
void Interrupted(const std::string& nodeclaim, Cause cause, const State& state,
                 std::vector<RecordKubeEvent>& out) {
  std::string reason = "InstanceTerminating";
  std::string message = "Instance is terminating";
  if (cause == Cause::kSpotInterruption) {
    reason = "SpotInterrupted";
    message = "Spot interruption warning was triggered";
  } else if (cause == Cause::kScheduledChange) {
    reason = "InstanceUnhealthy";
    message = "An unhealthy warning was triggered for the instance";
  } else if (cause == Cause::kInstanceStopping) {
    reason = "InstanceStopping";
    message = "Instance is stopping";
  }
  OnNodeAndClaim(state, nodeclaim, kWarning, reason, message, message, out);
}

void Lifecycle(const LifecycleDecision& d, const State& state, std::vector<RecordKubeEvent>& out) {
  const std::string node = NodeOf(state, d.nodeclaim, d.node_name);
  if (d.transition == "LaunchFailed") {
    out.push_back(
        {NodeClaimRef(d.nodeclaim), kWarning,
         d.cause == Cause::kInsufficientCapacity ? "InsufficientCapacityError" : "FailedLaunch",
         "NodeClaim " + d.nodeclaim + " event: " + d.reason});
  } else if (d.transition == "Evicted" && !d.subject.empty()) {
    out.push_back({PodRef(d.subject), kNormal, "Evicted", "Evicted pod: draining node " + node});
  } else if (d.transition == "EvictionRefused" && !node.empty()) {
    out.push_back({NodeRef(node), kWarning, "FailedDraining", "Failed to drain node, " + d.reason});
  } else if (d.transition == "Interrupted") {
    Interrupted(d.nodeclaim, d.cause, state, out);
  } else if (d.transition == "RebalanceRecommendation") {
    OnNodeAndClaim(state, d.nodeclaim, kNormal, "SpotRebalanceRecommendation",
                   "Spot rebalance recommendation was triggered",
                   "Spot rebalance recommendation was triggered", out);
  }
}

// A candidate that could not go: consolidation's own verdicts (no cheaper replacement, pods
// would not fit, others went first, the policy) are Unconsolidatable; do-not-disrupt,
// PodDisruptionBudgets, the NodePool's budget and an unsettled cluster block.
void Blocked(const std::string& method, const DisruptionCandidate& c, const State& state,
             std::vector<RecordKubeEvent>& out) {
  if (c.cause == Cause::kNone) return;
  const bool blocker = c.cause == Cause::kDoNotDisrupt || c.cause == Cause::kPodDisruptionBudget ||
                       c.cause == Cause::kDisruptionBudget || c.cause == Cause::kNotSettled;
  std::string reason =
      IsConsolidation(method) && !blocker ? "Unconsolidatable" : "DisruptionBlocked";
  OnNodeAndClaim(state, c.nodeclaim, kNormal, reason, c.outcome, c.outcome, out);
}

void Disruption(const DisruptionDecision& d, const Output& output, const State& state,
                std::vector<RecordKubeEvent>& out) {
  if (d.phase == "blocked") {
    for (const DisruptionCandidate& c : d.candidates) Blocked(d.method, c, state, out);
    for (const BudgetState& b : d.budgets) {
      if (b.allowed != 0) continue;
      out.push_back({NodePoolRef(b.nodepool), kNormal, "DisruptionBlocked",
                     b.reason.empty() ? "No allowed disruptions due to blocking budget"
                                      : "No allowed disruptions for disruption reason " + b.reason +
                                            " due to blocking budget"});
    }
    return;
  }
  if (d.phase != "replacing" && d.phase != "executed") return;
  if (d.method == "Interruption") {
    for (const DisruptionCandidate& c : d.candidates) Interrupted(c.nodeclaim, c.cause, state, out);
    return;
  }
  const std::string title = DisruptionReason(d.method);
  for (const std::string& claim : d.nodeclaims) {
    OnNodeAndClaim(state, claim, kNormal, "DisruptionTerminating", "Disrupting Node: " + title,
                   "Disrupting NodeClaim: " + title, out);
  }
  if (d.phase != "replacing") return;
  // The replacements are the NodeClaims this same output creates outside provisioning.
  std::set<std::string> provisioned;
  for (const Decision& other : output.decisions) {
    if (const auto* p = std::get_if<ProvisioningDecision>(&other.body)) {
      for (const ClaimPlan& plan : p->new_claims) provisioned.insert(plan.nodeclaim);
    }
  }
  for (const Command& c : output.commands) {
    const auto* create = std::get_if<CreateNodeClaim>(&c.body);
    if (create == nullptr || provisioned.contains(create->claim.name)) continue;
    out.push_back({NodeClaimRef(create->claim.name), kNormal, "DisruptionLaunching",
                   "Launching NodeClaim: " + title});
    out.push_back({NodeClaimRef(create->claim.name), kNormal, "DisruptionWaitingReadiness",
                   "Waiting on readiness to continue disruption"});
  }
}

}  // namespace

std::vector<RecordKubeEvent> KubeEventsFor(const Output& output, const State& state) {
  std::vector<RecordKubeEvent> out;
  for (const Decision& decision : output.decisions) {
    if (const auto* p = std::get_if<ProvisioningDecision>(&decision.body)) {
      Provisioning(*p, state, out);
    } else if (const auto* l = std::get_if<LifecycleDecision>(&decision.body)) {
      Lifecycle(*l, state, out);
    } else if (const auto* d = std::get_if<DisruptionDecision>(&decision.body)) {
      Disruption(*d, output, state, out);
    }
  }
  return out;
}

}  // namespace tenon
