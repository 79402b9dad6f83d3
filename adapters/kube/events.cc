#include "adapters/kube/events.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace tenon::kube {
namespace {

constexpr const char* kNormal = "Normal";
constexpr const char* kWarning = "Warning";

ObjectRef PodRef(const std::string& key) {
  auto slash = key.find('/');
  if (slash == std::string::npos) return {"v1", "Pod", "", key};
  return {"v1", "Pod", key.substr(0, slash), key.substr(slash + 1)};
}
ObjectRef NodeRef(const std::string& name) {
  return {"v1", "Node", "", name};
}
ObjectRef NodeClaimRef(const std::string& name) {
  return {"karpenter.sh/v1", "NodeClaim", "", name};
}
ObjectRef NodePoolRef(const std::string& name) {
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
                    const std::string& claim_message, std::vector<KubeEvent>& out) {
  std::string node = NodeOf(state, claim);
  if (!node.empty()) out.push_back({NodeRef(node), type, reason, node_message});
  out.push_back({NodeClaimRef(claim), type, reason, claim_message});
}

// Karpenter's disruption reason, title-cased, for "Disrupting Node: <Reason>".
std::string TitleReason(const std::string& method) {
  if (method == "Emptiness") return "Empty";
  if (method == "SingleNodeConsolidation" || method == "MultiNodeConsolidation") {
    return "Underutilized";
  }
  if (method == "Drift") return "Drifted";
  if (method == "Expiration" || method == "SoftExpiration") return "Expired";
  return method;
}

bool IsConsolidation(const std::string& method) {
  return method == "Emptiness" || method == "SingleNodeConsolidation" ||
         method == "MultiNodeConsolidation";
}

void Provisioning(const ProvisioningDecision& d, const State& state, std::vector<KubeEvent>& out) {
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
                 std::vector<KubeEvent>& out) {
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

void Lifecycle(const LifecycleDecision& d, const State& state, std::vector<KubeEvent>& out) {
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
             std::vector<KubeEvent>& out) {
  if (c.cause == Cause::kNone) return;
  const bool blocker = c.cause == Cause::kDoNotDisrupt || c.cause == Cause::kPodDisruptionBudget ||
                       c.cause == Cause::kDisruptionBudget || c.cause == Cause::kNotSettled;
  std::string reason =
      IsConsolidation(method) && !blocker ? "Unconsolidatable" : "DisruptionBlocked";
  OnNodeAndClaim(state, c.nodeclaim, kNormal, reason, c.outcome, c.outcome, out);
}

void Disruption(const DisruptionDecision& d, const Output& output, const State& state,
                std::vector<KubeEvent>& out) {
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
  const std::string title = TitleReason(d.method);
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

std::vector<KubeEvent> EventsFor(const Output& output, const State& state) {
  std::vector<KubeEvent> out;
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

template <class V>
V* EventCorrelator::Lru<V>::Find(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return &it->second->second;
}

template <class V>
V& EventCorrelator::Lru<V>::Put(const std::string& key, V value) {
  if (V* found = Find(key)) return *found = std::move(value);
  order_.emplace_front(key, std::move(value));
  index_[key] = order_.begin();
  if (order_.size() > max_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
  return order_.front().second;
}

EventCorrelator::Write EventCorrelator::Correlate(const std::string& source, const KubeEvent& event,
                                                  Nanos now) {
  // Unit separators keep the fields of a key apart (client-go joins them with nothing).
  constexpr char kSep = '\x1f';
  const ObjectRef& o = event.object;
  const std::string object_key =
      source + kSep + o.api_version + kSep + o.kind + kSep + o.ns + kSep + o.name;
  const std::string similar_key = object_key + kSep + event.type + kSep + event.reason;

  Write write;
  write.event = event;
  // Aggregation: distinct messages of one type and reason on one object, within the window.
  Similar similar;
  if (const Similar* found = similar_.Find(similar_key);
      found != nullptr && now - found->last <= options_.aggregate_window) {
    similar = *found;
  }
  if (std::find(similar.messages.begin(), similar.messages.end(), event.message) ==
      similar.messages.end()) {
    similar.messages.push_back(event.message);
  }
  similar.last = now;
  const bool combine = similar.messages.size() >= options_.aggregate_max;
  if (combine) similar.messages.erase(similar.messages.begin());  // Stays bounded.
  similar_.Put(similar_key, std::move(similar));
  std::string key = similar_key;
  if (combine) {
    write.event.message = "(combined from similar events): " + event.message;
  } else {
    key += kSep + event.message;
  }

  // Counting: the Event this key was written as before, if any.
  if (const Seen* seen = seen_.Find(key); seen != nullptr && seen->count > 0) {
    write.count = seen->count + 1;
    write.first = seen->first;
    write.name = seen->name;
  } else {
    const Nanos stamp{std::max(now.value, last_name_.value + 1)};
    last_name_ = stamp;
    char hex[24];
    std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(stamp.value));
    write.count = 1;
    write.first = now;
    write.name = o.name + "." + hex;
  }
  seen_.Put(key, Seen{write.count, write.first, write.name});

  // Spam filter: a token bucket per source and object, full at first.
  Bucket bucket{options_.spam_burst, now};
  if (const Bucket* found = buckets_.Find(object_key)) bucket = *found;
  if (options_.spam_refill.value > 0 && now > bucket.refilled) {
    const std::int64_t earned = (now - bucket.refilled).value / options_.spam_refill.value;
    bucket.tokens = std::min(options_.spam_burst, bucket.tokens + earned);
    bucket.refilled = bucket.tokens == options_.spam_burst
                          ? now
                          : Nanos{bucket.refilled.value + earned * options_.spam_refill.value};
  }
  if (bucket.tokens > 0) {
    --bucket.tokens;
  } else {
    write.skip = true;
  }
  buckets_.Put(object_key, bucket);
  return write;
}

}  // namespace tenon::kube
