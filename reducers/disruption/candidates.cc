// The claims a disruption pass looks at, and the candidates each method finds among them: the
// method's own test (its decider's blocker), then the blockers every graceful method shares
// (nomination, do-not-disrupt, PodDisruptionBudgets), in Karpenter's disruption-cost order.
#include <algorithm>

#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

// The pod's do-not-disrupt, including the duration form (protected for that long after the
// pod was created: `runs_out` is then when).
bool Protected(const State& state, const Pod& pod, std::string* until,
               std::optional<Instant>* runs_out) {
  if (!DoNotDisrupt(pod, state.now)) return false;
  if (pod.do_not_disrupt_for && pod.do_not_disrupt_for->value > 0) {
    *runs_out = pod.created + *pod.do_not_disrupt_for;
    *until = " until " + ClockUtc(**runs_out);
  }
  return true;
}

// Why the pod may not be evicted now, or empty: do-not-disrupt (`runs_out`: set when that
// goes away by itself at a known time), or PodDisruptionBudgets that would refuse it.
std::string ProtectedText(const State& state, const Candidate& c, const Pod& pod,
                          std::optional<Instant>* runs_out) {
  std::string until;
  if (c.bound->do_not_disrupt == 0 || !Protected(state, pod, &until, runs_out)) return {};
  return "pod " + PodKey(pod.ns, pod.name) + " has karpenter.sh/do-not-disrupt" + until;
}
std::string PdbRefusal(const State& state, const Pod& pod) {
  if (state.cluster.pdbs.empty()) return {};
  std::vector<const PodDisruptionBudget*> matching;
  for (const auto& [key, pdb] : state.cluster.pdbs) {
    if (pdb.ns == pod.ns && SelectorMatches(pdb.selector, *pod.labels)) matching.push_back(&pdb);
  }
  if (matching.empty()) return {};
  std::string name = PodKey(pod.ns, pod.name);
  if (matching.size() > 1) {
    return "pod " + name + " is matched by several PodDisruptionBudgets (" + matching[0]->name +
           ", " + matching[1]->name + "); the Eviction API refuses it";
  }
  if (matching[0]->disruptions_allowed <= 0) {
    return "pod " + name + ": PDB " + matching[0]->name + " allows 0 disruptions";
  }
  return {};
}

}  // namespace

Obstacle GracefulBlocker(const State& state, const Candidate& c, std::optional<Instant>* runs_out,
                         bool pods) {
  if (c.node->do_not_disrupt) {
    return {Cause::kDoNotDisrupt, c.node->name,
            "node " + c.node->name + " has karpenter.sh/do-not-disrupt"};
  }
  // Neither a do-not-disrupt pod on the node nor a PodDisruptionBudget in the cluster: no pod
  // can block it (most nodes, most passes: no pod is read).
  if (!pods || (c.bound->do_not_disrupt == 0 && state.cluster.pdbs.empty())) return {};
  // Every running pod on the node counts, as Karpenter validates a candidate's pods: a
  // DaemonSet or mirror pod's do-not-disrupt blocks it, and so does a budget over a DaemonSet
  // pod (the Eviction API would refuse it; mirror pods are not evicted).
  for (const auto& [key, pod] : c.bound->pods) {
    if (!IsActive(*pod)) continue;
    if (std::string why = ProtectedText(state, c, *pod, runs_out); !why.empty()) {
      return {Cause::kDoNotDisrupt, PodKey(pod->ns, pod->name), std::move(why)};
    }
  }
  for (const auto& [key, pod] : c.bound->pods) {
    if (!IsActive(*pod) || pod->owner_kind == "Node") continue;
    if (std::string why = PdbRefusal(state, *pod); !why.empty()) {
      return {Cause::kPodDisruptionBudget, PodKey(pod->ns, pod->name), std::move(why)};
    }
  }
  return {};
}

namespace {

// Drift past blocked pods: the pods that can be evicted now, the ones its simulation moves
// (Karpenter's currently reschedulable pods); the rest wait on the node for the deadline.
std::vector<const Pod*> EvictableNow(const State& state, const Candidate& c) {
  std::vector<const Pod*> out;
  for (const Pod* pod : c.bound->reschedulable_in_placement_order) {
    std::optional<Instant> ignored;
    if (ProtectedText(state, c, *pod, &ignored).empty() && PdbRefusal(state, *pod).empty()) {
      out.push_back(pod);
    }
  }
  return out;
}

// Karpenter's disruption cost: the pods' eviction costs, scaled by the share of the claim's
// lifetime left.
std::int64_t DisruptionCost(const State& state, const Candidate& c) {
  const std::int64_t pods = c.bound->eviction_cost;
  if (!c.pool->expire_after || c.pool->expire_after->value <= 0) return pods;
  const Duration lifetime = *c.pool->expire_after;
  Duration left = std::clamp(lifetime - (state.now - c.claim->created), Duration{0}, lifetime);
  return static_cast<std::int64_t>(static_cast<__int128>(pods) * left.value / lifetime.value);
}

NameIndex<NodeEntry> IndexNodes(const State& state) {
  NameIndex<NodeEntry> index;
  BoundWalk bound(state.cluster.pods);
  index.Reserve(state.cluster.nodes.size());
  for (const auto& [name, node] : state.cluster.nodes) index.Add(name, {&node, &bound.At(name)});
  index.Seal();
  return index;
}

// Disruption-cost order, ties in the order gathered: a sort of (cost, position) keys, then one
// move of each candidate.
std::vector<Candidate> ByDisruptionCost(std::vector<Candidate>& out) {
  std::vector<std::pair<std::int64_t, std::size_t>> order;
  order.reserve(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) order.emplace_back(out[i].cost, i);
  std::sort(order.begin(), order.end());
  std::vector<Candidate> sorted;
  sorted.reserve(out.size());
  for (const auto& [cost, i] : order) sorted.push_back(std::move(out[i]));
  return sorted;
}

}  // namespace

std::string ClockUtc(Instant at) {
  return ClockText(at) + " UTC";
}

std::string PriceText(MicroUsdPerHour p) {
  return DollarsText(p) + "/h";
}

void KeepEarlier(std::optional<Instant>& earliest, std::optional<Instant> at) {
  if (at && (!earliest || *at < *earliest)) earliest = at;
}

void SetOutcome(DisruptionCandidate& record, std::string text, Cause cause, std::string subject) {
  record.outcome = std::move(text);
  record.cause = cause;
  record.subject = std::move(subject);
}

bool InReplacement(const State& state, const std::string& claim) {
  return std::any_of(
      state.disruption.replacing.begin(), state.disruption.replacing.end(), [&](const auto& w) {
        return std::find(w.candidates.begin(), w.candidates.end(), claim) != w.candidates.end() ||
               (w.draining && std::find(w.replacements.begin(), w.replacements.end(), claim) !=
                                  w.replacements.end());
      });
}

bool Consolidatable(const State& state, const Candidate& c) {
  if (!c.pool->consolidate_after) return false;
  const Instant since = std::max(c.claim->initialized, c.claim->last_pod_change);
  return state.now - since >= *c.pool->consolidate_after;
}

std::string ConsolidatableBlocker(const State& state, const Candidate& c) {
  if (Consolidatable(state, c)) return {};
  if (!c.pool->consolidate_after) return "consolidateAfter is Never";
  const Duration after = *c.pool->consolidate_after;
  const Instant since = std::max(c.claim->initialized, c.claim->last_pod_change);
  return "not consolidatable until " + ClockUtc(since + after) + " (consolidateAfter " +
         DurationText(after) + ")";
}

Lookups LookUpClaims(State& state) {
  Lookups out;
  out.nodes = IndexNodes(state);
  const NodePool* pool = nullptr;  // PoolOf's last.
  Lookups::PoolNodes* counts = nullptr;
  const std::string* counted = nullptr;  // The pool `counts` is of.
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (!claim.deleting && claim.phase == ClaimPhase::kPending) ++out.launching;
    if (claim.node_name.empty()) continue;
    const NodeEntry* node = out.nodes.Find(claim.node_name);
    // A pool's nodes: its claims with a node; those deleting, not ready or being replaced are
    // disrupting already.
    if (counted == nullptr || *counted != claim.nodepool) {  // Often the last one's.
      auto [it, fresh] = out.pool_nodes.try_emplace(claim.nodepool);
      counts = &it->second;
      counted = &it->first;
      if (fresh) {
        auto p = state.cluster.nodepools.find(claim.nodepool);
        counts->is_balanced = p != state.cluster.nodepools.end() &&
                              p->second.consolidation_policy == ConsolidationPolicy::kBalanced;
      }
    }
    ++counts->total;
    if (claim.deleting || node == nullptr || !node->node->ready || InReplacement(state, name)) {
      ++counts->disrupting;
    }
    // A Balanced pool's disruption cost counts every node of the pool.
    if (counts->is_balanced && node != nullptr) {
      counts->balanced.disruption += kCostUnit + node->bound->positive_eviction_cost;
    }
    if (claim.deleting || claim.phase != ClaimPhase::kInitialized) continue;
    PoolOf(state, claim, pool);
    if (pool == nullptr || node == nullptr) continue;
    const BalancedTotals* balanced = nullptr;
    if (counts->is_balanced) {
      counts->balanced.cost += claim.price.value;
      balanced = &counts->balanced;
    }
    out.claims.push_back({&claim, pool, node->node, node->bound, {}, balanced});
  }
  FindDrift(state, out.claims);
  return out;
}

std::vector<Candidate> Gather(const State& state, const Claims& claims, const Decider& decider,
                              Pass& pass, const std::vector<std::string>* only) {
  std::vector<Candidate> out;
  for (const ClaimFacts& facts : claims) {
    const NodeClaim& claim = *facts.claim;
    const std::string& name = claim.name;
    if (only != nullptr && std::find(only->begin(), only->end(), name) == only->end()) continue;
    if (InReplacement(state, name)) continue;
    Candidate c;
    c.claim = &claim;
    c.node = facts.node;
    c.pool = facts.pool;
    c.bound = facts.bound;
    c.drifted = &facts.drifted;
    c.balanced = facts.balanced;
    Obstacle blocker{Cause::kPolicy, claim.nodepool, decider.blocker(state, c)};
    if (blocker.text == "-") continue;
    std::optional<Instant> runs_out;
    if (blocker.empty() && claim.nominated_until > state.now) {
      blocker = {Cause::kNominated, "",
                 "nominated for pending pods until " + ClockUtc(claim.nominated_until)};
      runs_out = claim.nominated_until;
    }
    if (blocker.empty()) blocker = GracefulBlocker(state, c, &runs_out, !c.past_blocked_pods);
    if (blocker.empty() && c.past_blocked_pods) c.moving = EvictableNow(state, c);
    KeepEarlier(pass.runs_out, runs_out);
    if (!blocker.empty() && !c.why.empty()) blocker.text = c.why + ", but " + blocker.text;
    c.cost = DisruptionCost(state, c);
    c.record = pass.candidates.size();
    if (blocker.empty()) {
      pass.candidates.push_back({name, claim.nodepool, "selected", Cause::kNone, ""});
      out.push_back(std::move(c));
    } else {
      pass.candidates.push_back({name, claim.nodepool, std::move(blocker.text), blocker.cause,
                                 std::move(blocker.subject)});
    }
  }
  return ByDisruptionCost(out);
}

}  // namespace tenon::core::disruption
