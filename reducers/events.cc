// Kubernetes Events for what the core decided, with Karpenter's reasons (Nominated,
// DisruptionBlocked, Unconsolidatable, DisruptionLaunching, DisruptionWaitingReadiness,
// DisruptionTerminating, SpotInterrupted, Evicted, FailedDraining, InsufficientCapacityError...),
// so `kubectl describe` and event-based tooling read the same as under Karpenter. Karpenter's
// recorder limits how many it writes (a dedupe key per Event with a timeout, and a token bucket
// for Nominated); the core applies the same limits from its own time and issues what passes as
// RecordKubeEvent commands, so the log holds every Event recorded and a replay records the same.
#include <algorithm>
#include <cctype>
#include <set>

#include "model/scores.h"
#include "reducers/disruption/methods.h"
#include "reducers/internal.h"

namespace tenon {
namespace {

constexpr const char* kNormal = "Normal";
constexpr const char* kWarning = "Warning";

// Karpenter's recorder: an Event's dedupe key holds for 2 minutes unless the Event says
// otherwise; Nominated Events share a bucket of 5 tokens a second, 10 at most.
constexpr Duration kDefaultDedupe{120 * kSecond.value};
constexpr Duration kFailedSchedulingDedupe{300 * kSecond.value};
constexpr Duration kUnconsolidatableDedupe{900 * kSecond.value};
constexpr Duration kNodePoolBlockedDedupe{60 * kSecond.value};  // A budget can change each minute.
constexpr std::int64_t kNominatedPerSecond = 5;
constexpr std::int64_t kNominatedBurstMilli = 10'000;
constexpr Duration kPruneEvery{60 * kSecond.value};

// An Event with what Karpenter's recorder limits it by. Karpenter dedupes by the involved
// object's UID and sometimes a detail (a disruption reason); the core names the object instead.
struct Draft {
  RecordKubeEvent event;
  std::string detail;  // A dedupe value beyond the object; empty when there is none.
  Duration timeout = kDefaultDedupe;
  bool nominated = false;  // Passes the Nominated token bucket too.
};
using Drafts = std::vector<Draft>;

void Add(Drafts& out, RecordKubeEvent event, Duration timeout = kDefaultDedupe,
         std::string detail = "") {
  out.push_back({std::move(event), std::move(detail), timeout, false});
}

// Karpenter's key: the reason in lower case, then the dedupe values.
std::string KeyOf(std::string_view reason, const KubeObjectRef& o, std::string_view detail) {
  std::string key(reason);
  std::transform(key.begin(), key.end(), key.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  key += "-" + o.kind + "/" + o.ns + "/" + o.name;
  if (!detail.empty()) key.append("-").append(detail);
  return key;
}

// Whether an Event of `reason` on `object` would be dropped as a repeat now: one is not drafted
// at all then (its message can be long), which drops nothing that would have been recorded.
bool Held(const State& state, std::string_view reason, const KubeObjectRef& object,
          std::string_view detail = {}) {
  auto it = state.event_limits.recorded.find(KeyOf(reason, object, detail));
  return it != state.event_limits.recorded.end() && it->second > state.now;
}

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
  auto it = state.lifecycle.nodeclaims.find(claim);
  if (it != state.lifecycle.nodeclaims.end() && !it->second.node_name.empty())
    return it->second.node_name;
  return fallback;
}

// The same event on a NodeClaim's Node (when it has one) and on the NodeClaim, as Karpenter
// emits its disruption events.
void OnNodeAndClaim(const State& state, const std::string& claim, const std::string& type,
                    const std::string& reason, const std::string& node_message,
                    const std::string& claim_message, Drafts& out,
                    Duration timeout = kDefaultDedupe, const std::string& detail = "") {
  std::string node = NodeOf(state, claim);
  if (!node.empty() && !Held(state, reason, NodeRef(node), detail)) {
    Add(out, {NodeRef(node), type, reason, node_message}, timeout, detail);
  }
  if (!Held(state, reason, NodeClaimRef(claim), detail)) {
    Add(out, {NodeClaimRef(claim), type, reason, claim_message}, timeout, detail);
  }
}

void Provisioning(const ProvisioningDecision& d, const State& state, Drafts& out) {
  std::set<std::string_view> new_claims;
  for (const ClaimPlan& plan : d.new_claims) new_claims.insert(plan.nodeclaim);
  for (const PodOutcome& pod : d.pods) {
    const KubeObjectRef ref = PodRef(pod.pod);
    if (pod.target.empty()) {
      if (Held(state, "FailedScheduling", ref)) continue;
      Add(out, {ref, kWarning, "FailedScheduling", "Failed to schedule pod, " + pod.reason},
          kFailedSchedulingDedupe);
      continue;
    }
    if (Held(state, "Nominated", ref)) continue;
    const bool is_claim =
        state.lifecycle.nodeclaims.contains(pod.target) || new_claims.contains(pod.target);
    Add(out,
        {ref, kNormal, "Nominated",
         "Pod should schedule on: " + std::string(is_claim ? "nodeclaim/" : "node/") + pod.target});
    out.back().nominated = true;
  }
}

// AWS's interruption events, from the code the core gave the message.
void Interrupted(const std::string& nodeclaim, Cause cause, const State& state, Drafts& out) {
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

void Lifecycle(const LifecycleDecision& d, const State& state, Drafts& out) {
  const std::string node = NodeOf(state, d.nodeclaim, d.node_name);
  if (d.transition == Transition::kLaunchFailed) {
    Add(out,
        {NodeClaimRef(d.nodeclaim), kWarning,
         d.cause == Cause::kInsufficientCapacity ? "InsufficientCapacityError" : "FailedLaunch",
         "NodeClaim " + d.nodeclaim + " event: " + d.reason});
  } else if (d.transition == Transition::kEvicted && !d.subject.empty()) {
    Add(out, {PodRef(d.subject), kNormal, "Evicted", "Evicted pod: draining node " + node});
  } else if (d.transition == Transition::kEvictionRefused && !node.empty()) {
    Add(out, {NodeRef(node), kWarning, "FailedDraining", "Failed to drain node, " + d.reason});
  } else if (d.transition == Transition::kInterrupted) {
    Interrupted(d.nodeclaim, d.cause, state, out);
  } else if (d.transition == Transition::kRebalanceRecommendation) {
    OnNodeAndClaim(state, d.nodeclaim, kNormal, "SpotRebalanceRecommendation",
                   "Spot rebalance recommendation was triggered",
                   "Spot rebalance recommendation was triggered", out);
  }
}

// A candidate that could not go: emptiness's and consolidation's own verdicts (no cheaper
// replacement, pods would not fit, others went first, the policy) are Unconsolidatable, repeated at
// most every 15 minutes; PodDisruptionBudgets, the NodePool's budget and an unsettled cluster
// block. Like Karpenter, no Event says a karpenter.sh/do-not-disrupt annotation blocked: the user
// asked for it.
void Blocked(DisruptionMethod method, const DisruptionCandidate& c, const State& state,
             Drafts& out) {
  if (c.cause == Cause::kNone || c.cause == Cause::kDoNotDisrupt) return;
  // Nor for a Balanced score that does not pass: there are many, and they would bury the rest.
  if (c.cause == Cause::kBalancedScore) return;
  const bool blocker = c.cause == Cause::kPodDisruptionBudget ||
                       c.cause == Cause::kDisruptionBudget || c.cause == Cause::kNotSettled;
  if (MethodInfo(method).consolidation_or_emptiness() && !blocker) {
    OnNodeAndClaim(state, c.nodeclaim, kNormal, "Unconsolidatable", c.outcome, c.outcome, out,
                   kUnconsolidatableDedupe);
  } else {
    OnNodeAndClaim(state, c.nodeclaim, kNormal, "DisruptionBlocked", c.outcome, c.outcome, out);
  }
}

// Karpenter's ConsolidationApproved: a consolidation proposed in a Balanced NodePool, with its
// score, on the node and its NodeClaim (single-node) or on each pool (multi-node).
void Approved(const DisruptionDecision& d, const State& state, Drafts& out) {
  std::set<std::string> pools;
  for (const DisruptionCandidate& c : d.candidates) {
    if (std::find(d.nodeclaims.begin(), d.nodeclaims.end(), c.nodeclaim) == d.nodeclaims.end()) {
      continue;
    }
    for (const OutcomeScore& s : ScoresIn(c.outcome)) {
      if (d.method == DisruptionMethod::kSingleNodeConsolidation) {
        OnNodeAndClaim(state, c.nodeclaim, kNormal, "ConsolidationApproved", s.text, s.text, out);
      } else if (pools.insert(s.nodepool).second) {
        Add(out, {NodePoolRef(s.nodepool), kNormal, "ConsolidationApproved", s.text});
      }
    }
  }
}

void Disruption(const DisruptionDecision& d, const Output& output, const State& state,
                Drafts& out) {
  if (d.phase == DisruptionPhase::kProposed && MethodInfo(d.method).consolidation_or_emptiness()) {
    Approved(d, state, out);
    return;
  }
  if (d.phase == DisruptionPhase::kBlocked) {
    for (const DisruptionCandidate& c : d.candidates) Blocked(d.method, c, state, out);
    for (const BudgetState& b : d.budgets) {
      if (b.allowed != 0) continue;
      Add(out,
          {NodePoolRef(b.nodepool), kNormal, "DisruptionBlocked",
           b.reason.empty() ? "No allowed disruptions due to blocking budget"
                            : "No allowed disruptions for disruption reason " + b.reason +
                                  " due to blocking budget"},
          kNodePoolBlockedDedupe, b.reason);
    }
    return;
  }
  if (d.phase != DisruptionPhase::kReplacing && d.phase != DisruptionPhase::kExecuted) return;
  if (d.method == DisruptionMethod::kInterruption) {
    for (const DisruptionCandidate& c : d.candidates) Interrupted(c.nodeclaim, c.cause, state, out);
    return;
  }
  const std::string title = MethodInfo(d.method).reason;
  for (const std::string& claim : d.nodeclaims) {
    OnNodeAndClaim(state, claim, kNormal, "DisruptionTerminating", "Disrupting Node: " + title,
                   "Disrupting NodeClaim: " + title, out, kDefaultDedupe, title);
  }
  if (d.phase != DisruptionPhase::kReplacing) return;
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
    Add(out,
        {NodeClaimRef(create->claim.name), kNormal, "DisruptionLaunching",
         "Launching NodeClaim: " + title},
        kDefaultDedupe, title);
    Add(out, {NodeClaimRef(create->claim.name), kNormal, "DisruptionWaitingReadiness",
              "Waiting on readiness to continue disruption"});
  }
}

Drafts DraftsFor(const Output& output, const State& state) {
  Drafts out;
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

std::string DedupeKey(const Draft& draft) {
  return KeyOf(draft.event.reason, draft.event.object, draft.detail);
}

// The Nominated bucket, topped up to `now` (5 tokens a second, 10 at most), then one token
// taken if there is one.
bool TakeNominationToken(EventLimits& limits, Instant now) {
  const std::int64_t elapsed = std::max<std::int64_t>(0, now.value - limits.nominated_at.value);
  const std::int64_t room = kNominatedBurstMilli - limits.nominated_milli_tokens;
  // Thousandths of a token per nanosecond: 5 * 1000 / 1e9.
  const std::int64_t refill =
      elapsed >= 2 * kSecond.value ? room : elapsed * kNominatedPerSecond / 1'000'000;
  limits.nominated_milli_tokens += std::min(room, refill);
  limits.nominated_at = now;
  if (limits.nominated_milli_tokens < 1'000) return false;
  limits.nominated_milli_tokens -= 1'000;
  return true;
}

}  // namespace

std::vector<RecordKubeEvent> KubeEventsFor(const Output& output, const State& state) {
  std::vector<RecordKubeEvent> out;
  for (Draft& draft : DraftsFor(output, state)) out.push_back(std::move(draft.event));
  return out;
}

namespace core {

void AnnounceDeduped(State& state, Seq cause, RecordKubeEvent event, Duration timeout,
                     Output& out) {
  const std::string key = KeyOf(event.reason, event.object, "");
  auto [it, added] = state.event_limits.recorded.try_emplace(key, Instant{});
  if (!added && it->second > state.now) return;
  it->second = state.now + timeout;
  Announce(state, cause, std::move(event), out);
}

// As Karpenter's recorder publishes: a key recorded within its timeout drops the Event; a key
// not recorded is recorded (even if the rate limit then drops the Event), and a Nominated
// Event needs a token besides.
void AnnounceDecisionEvents(State& state, Seq cause, Output& out) {
  Drafts drafts = DraftsFor(out, state);
  if (drafts.empty()) return;
  EventLimits& limits = state.event_limits;
  if (state.now.value - limits.pruned_at.value >= kPruneEvery.value) {
    std::erase_if(limits.recorded, [&](const auto& kv) { return kv.second <= state.now; });
    limits.pruned_at = state.now;
  }
  for (Draft& draft : drafts) {
    auto [it, added] = limits.recorded.try_emplace(DedupeKey(draft), Instant{});
    if (!added && it->second > state.now) continue;
    it->second = state.now + draft.timeout;
    if (draft.nominated && !TakeNominationToken(limits, state.now)) continue;
    Announce(state, cause, std::move(draft.event), out);
  }
}

}  // namespace core
}  // namespace tenon
