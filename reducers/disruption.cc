// Disruption (KARPENTER.md, Disruption and Interruption): expiration, interruption, and the
// 10 s disruption pass with emptiness, budgets and the 15 s validation.
//
// Expiration and interruption are forceful: they start termination at once and are not
// budgeted (the drain still honours PDBs until the terminationGracePeriod). Emptiness is
// graceful: a pass proposes the empty candidates the budgets allow, waits 15 s, re-checks
// candidates and budgets, and only then deletes, recording every step and, for candidates it
// leaves alone, the precise blocker.
#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <chrono>

#include "reducers/cron.h"
#include "reducers/internal.h"

namespace tenon::core {
namespace {

constexpr const char* kReasonEmpty = "Empty";

// Pods that would have to move if the node went: not DaemonSet or mirror pods.
bool Reschedulable(const Pod& pod) {
  return IsActive(pod) && pod.owner_kind != "DaemonSet" && pod.owner_kind != "Node";
}

std::string TwoDigits(std::int64_t n) {
  return (n < 10 ? "0" : "") + std::to_string(n);
}

std::string ClockText(Nanos at) {
  using namespace std::chrono;
  sys_time<nanoseconds> t{nanoseconds{at.value}};
  auto day = floor<days>(t);
  hh_mm_ss hms{floor<seconds>(t - day)};
  return TwoDigits(hms.hours().count()) + ":" + TwoDigits(hms.minutes().count()) + ":" +
         TwoDigits(hms.seconds().count()) + " UTC";
}

std::string DurationText(Nanos d) {
  std::int64_t s = d.value / kSecond.value;
  if (s % 3600 == 0 && s >= 3600) return std::to_string(s / 3600) + "h";
  if (s % 60 == 0 && s >= 60) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

// A budget's `nodes`: a count, or a percent of `total` rounded up. Unreadable: 0 (fail safe).
std::int64_t BudgetNodes(const std::string& nodes, std::int64_t total) {
  if (nodes.empty()) return 0;
  bool percent = nodes.back() == '%';
  std::string digits = percent ? nodes.substr(0, nodes.size() - 1) : nodes;
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return 0;
  if (digits.size() > 9) return 0;
  std::int64_t n = std::stoll(digits);
  return percent ? (total * n + 99) / 100 : n;
}

struct Allowance {
  std::int64_t allowed = 0;
  std::string detail;
};

// Karpenter's rule: the most restrictive active budget for `reason` wins, minus the pool's
// nodes already deleting or not ready.
Allowance Allowed(const State& state, const NodePool& pool, const std::string& reason) {
  std::int64_t total = 0;
  std::int64_t disrupting = 0;
  for (const auto& [name, claim] : state.nodeclaims) {
    if (claim.nodepool != pool.name || claim.node_name.empty()) continue;
    ++total;
    auto node = state.nodes.find(claim.node_name);
    if (claim.deleting || node == state.nodes.end() || !node->second.ready) ++disrupting;
  }
  std::optional<std::int64_t> least;
  std::string why = "no budget is active";
  for (std::size_t i = 0; i < pool.budgets.size(); ++i) {
    const DisruptionBudget& b = pool.budgets[i];
    if (!b.reasons.empty() &&
        std::find(b.reasons.begin(), b.reasons.end(), reason) == b.reasons.end()) {
      continue;
    }
    std::string window;
    if (!b.schedule.empty()) {
      try {
        Nanos horizon = std::min(b.duration, kBudgetScheduleHorizonMax);
        auto fired = Cron::Parse(b.schedule).LastFiring(state.now, horizon);
        if (!fired || *fired + b.duration <= state.now) continue;
        window = ", schedule '" + b.schedule + "' until " + ClockText(*fired + b.duration);
      } catch (const CronError& e) {
        window = ", unreadable schedule treated as active: " + std::string(e.what());
      }
    }
    std::int64_t nodes = BudgetNodes(b.nodes, total);
    if (!least || nodes < *least) {
      least = nodes;
      why = "budget " + std::to_string(i) + " (nodes " + b.nodes + window + ")";
    }
  }
  Allowance a;
  a.allowed = least ? std::max<std::int64_t>(0, *least - disrupting) : total;
  a.detail = why + ", " + std::to_string(disrupting) + " of " + std::to_string(total) +
             " nodes already disrupting";
  return a;
}

struct Pass {
  std::vector<DisruptionCandidate> candidates;
  std::vector<BudgetState> budgets;
  std::vector<std::string> selected;
};

constexpr const char* kEmptiness = "Emptiness";
constexpr const char* kDrift = "Drift";
constexpr const char* kReasonDrifted = "Drifted";
constexpr const char* kConsolidation = "SingleNodeConsolidation";
constexpr const char* kReasonUnderutilized = "Underutilized";

std::string BudgetReason(const std::string& method) {
  if (method == kDrift) return kReasonDrifted;
  if (method == kConsolidation) return kReasonUnderutilized;
  return kReasonEmpty;
}

// Re-simulates scheduling without `claim`: empty when every pod on it fits on the other
// nodes and in-flight claims with no new NodeClaim, else why not. `moves` gets where each pod
// would go.
std::string WithoutIt(const State& state, const NodeClaim& claim, std::vector<std::string>* moves) {
  std::vector<Pod> moving;
  for (const auto& [key, pod] : state.pods) {
    if (pod.node_name != claim.node_name || !Reschedulable(pod)) continue;
    moving.push_back(pod);
    moving.back().node_name.clear();
    moving.back().phase = "Pending";
    moving.back().unschedulable = true;
  }
  std::vector<const Pod*> pods;
  for (const Pod& pod : moving) pods.push_back(&pod);
  ScheduleResult result = Schedule(state, pods, {claim.name});
  for (const auto& outcome : result.pods) {
    if (outcome.target.empty()) {
      return "pod " + outcome.pod + " would not reschedule: " + outcome.reason;
    }
  }
  if (!result.claims.empty()) {
    return "its pods need a new node (" + result.claims.front().offerings.front().instance_type +
           " from " + std::to_string(result.claims.front().offerings.front().price.value) +
           " micro-USD/h); replacing a node is not implemented yet, only removing one";
  }
  if (moves != nullptr) {
    for (const auto& outcome : result.pods) moves->push_back(outcome.pod + " -> " + outcome.target);
  }
  return {};
}

// The labels a claim's node carries as far as its NodePool's requirements are concerned: the
// instance type's, its zone and capacity type, the pool's, and whatever the node shows.
Labels ClaimLabels(const State& state, const NodeClaim& claim, const Node* node) {
  Labels labels;
  if (auto entry = state.catalog.find(claim.instance_type); entry != state.catalog.end()) {
    labels = entry->second.labels;
  }
  if (node != nullptr) {
    for (const auto& [k, v] : node->labels) labels[k] = v;
  }
  labels[label::kInstanceType] = claim.instance_type;
  labels[label::kZone] = claim.zone;
  labels[label::kCapacityType] = claim.capacity_type;
  labels[label::kNodePool] = claim.nodepool;
  return labels;
}

// Why a claim no longer matches what it would be launched as today, or empty.
std::string Drifted(const State& state, const NodeClaim& claim, const NodePool& pool,
                    const Node* node) {
  if (claim.nodepool_hash != 0 && claim.nodepool_hash != TemplateHash(pool)) {
    return "NodePool " + pool.name + " template changed (labels, taints or nodeClassRef)";
  }
  if (auto nc = state.nodeclasses.find(claim.nodeclass);
      nc != state.nodeclasses.end() && claim.nodeclass_hash != 0 &&
      claim.nodeclass_hash != NodeClassHash(nc->second)) {
    return "EC2NodeClass " + claim.nodeclass + " changed";
  }
  if (!claim.instance_type.empty() && !state.catalog.contains(claim.instance_type)) {
    return "instance type " + claim.instance_type + " is no longer offered";
  }
  Labels labels = ClaimLabels(state, claim, node);
  for (const auto& r : pool.requirements) {
    Requirements one;
    one.Add(r);
    bool ok = one.Matches([&](const std::string& key) {
      auto it = labels.find(key);
      return it == labels.end() ? std::optional<std::string_view>()
                                : std::optional<std::string_view>(it->second);
    });
    if (!ok) return "requirement " + one.Describe() + " no longer satisfied";
  }
  return {};
}

// Candidates for `method` (Emptiness or Drift), what blocks each, and which the budgets let go
// now. Every method needs an initialized claim that is not already being deleted.
Pass Evaluate(const State& state, const std::string& method) {
  Pass pass;
  std::map<std::string, std::vector<const NodeClaim*>> eligible;  // By pool.
  std::map<std::string, std::string> why;                         // Drift: claim -> reason.
  for (const auto& [name, claim] : state.nodeclaims) {
    auto pool = state.nodepools.find(claim.nodepool);
    if (pool == state.nodepools.end() || claim.deleting) continue;
    if (claim.phase != ClaimPhase::kInitialized) continue;
    auto node = state.nodes.find(claim.node_name);
    if (node == state.nodes.end()) continue;
    const NodePool& p = pool->second;
    std::vector<const Pod*> pods;
    for (const auto& [key, pod] : state.pods) {
      if (pod.node_name == claim.node_name && Reschedulable(pod)) pods.push_back(&pod);
    }
    DisruptionCandidate c{name, claim.nodepool, "selected"};
    if (method == kConsolidation) {
      if (pods.empty()) continue;  // Emptiness's.
      Nanos since = std::max(claim.initialized, claim.last_pod_change);
      auto blocking = std::find_if(pods.begin(), pods.end(),
                                   [](const Pod* pod) { return pod->do_not_disrupt; });
      if (p.consolidation_policy == ConsolidationPolicy::kWhenEmpty) {
        c.outcome = "consolidationPolicy is WhenEmpty";
      } else if (p.consolidate_after.value < 0) {
        c.outcome = "consolidateAfter is Never";
      } else if (state.now - since < p.consolidate_after) {
        c.outcome = "not consolidatable until " + ClockText(since + p.consolidate_after) +
                    " (consolidateAfter " + DurationText(p.consolidate_after) + ")";
      } else if (blocking != pods.end()) {
        c.outcome = "pod " + PodKey((*blocking)->ns, (*blocking)->name) +
                    " has karpenter.sh/do-not-disrupt";
      }
    } else if (method == kEmptiness) {
      if (!pods.empty()) continue;
      Nanos since = std::max(claim.initialized, claim.last_pod_change);
      if (p.consolidate_after.value < 0) {
        c.outcome = "consolidateAfter is Never";
      } else if (state.now - since < p.consolidate_after) {
        c.outcome = "not consolidatable until " + ClockText(since + p.consolidate_after) +
                    " (consolidateAfter " + DurationText(p.consolidate_after) + ")";
      }
    } else {
      std::string drift = Drifted(state, claim, p, &node->second);
      if (drift.empty()) continue;
      why[name] = drift;
      auto blocking = std::find_if(pods.begin(), pods.end(),
                                   [](const Pod* pod) { return pod->do_not_disrupt; });
      if (blocking != pods.end()) {
        c.outcome = "drifted (" + drift + "), but pod " +
                    PodKey((*blocking)->ns, (*blocking)->name) + " has karpenter.sh/do-not-disrupt";
      }
    }
    if (c.outcome == "selected" && node->second.do_not_disrupt) {
      c.outcome = "node " + node->first + " has karpenter.sh/do-not-disrupt";
    }
    if (c.outcome == "selected") {
      eligible[claim.nodepool].push_back(&claim);
      if (method == kDrift) c.outcome = "selected: drifted (" + why[name] + ")";
    }
    pass.candidates.push_back(std::move(c));
  }
  std::string reason = BudgetReason(method);
  if (method == kConsolidation) {
    // Consolidation moves pods onto capacity that must really be there: it waits while pods are
    // pending or nodes are still coming up, whose plans would compete for the same room.
    std::size_t pending = std::count_if(state.pods.begin(), state.pods.end(),
                                        [](const auto& e) { return IsProvisionable(e.second); });
    std::size_t launching =
        std::count_if(state.nodeclaims.begin(), state.nodeclaims.end(), [](const auto& e) {
          return !e.second.deleting && e.second.phase != ClaimPhase::kInitialized;
        });
    if (pending > 0 || launching > 0) {
      for (auto& c : pass.candidates) {
        if (c.outcome != "selected") continue;
        c.outcome = "cluster not settled: " + std::to_string(pending) + " pods pending, " +
                    std::to_string(launching) + " nodes launching";
      }
      return pass;
    }
    // One node per pass: the first (fewest pods, then name) whose pods all fit elsewhere.
    std::vector<const NodeClaim*> order;
    for (const auto& [pool_name, claims] : eligible)
      order.insert(order.end(), claims.begin(), claims.end());
    auto pods_on = [&](const NodeClaim* claim) {
      return std::count_if(state.pods.begin(), state.pods.end(), [&](const auto& entry) {
        return entry.second.node_name == claim->node_name && Reschedulable(entry.second);
      });
    };
    std::stable_sort(order.begin(), order.end(), [&](const NodeClaim* a, const NodeClaim* b) {
      return pods_on(a) < pods_on(b);
    });
    std::map<std::string, Allowance> allowances;
    for (const NodeClaim* claim : order) {
      auto& c = *std::find_if(pass.candidates.begin(), pass.candidates.end(),
                              [&](const auto& x) { return x.nodeclaim == claim->name; });
      if (!pass.selected.empty()) {
        c.outcome = "not evaluated: one node per pass";
        continue;
      }
      auto [it, fresh] = allowances.try_emplace(claim->nodepool);
      if (fresh) {
        it->second = Allowed(state, state.nodepools.at(claim->nodepool), reason);
        pass.budgets.push_back({claim->nodepool, reason, it->second.allowed, it->second.detail});
      }
      if (it->second.allowed <= 0) {
        c.outcome = "over budget: " + reason + " allows 0 now (" + it->second.detail + ")";
        continue;
      }
      std::vector<std::string> moves;
      if (auto blocker = WithoutIt(state, *claim, &moves); !blocker.empty()) {
        c.outcome = blocker;
        continue;
      }
      std::string where;
      for (const auto& m : moves) where += (where.empty() ? "" : ", ") + m;
      c.outcome = "selected: delete, saving " + std::to_string(claim->price.value) +
                  " micro-USD/h; its pods move: " + where;
      pass.selected.push_back(claim->name);
    }
    return pass;
  }
  for (const auto& [pool_name, claims] : eligible) {
    Allowance a = Allowed(state, state.nodepools.at(pool_name), reason);
    pass.budgets.push_back({pool_name, reason, a.allowed, a.detail});
    for (std::size_t i = 0; i < claims.size(); ++i) {
      if (static_cast<std::int64_t>(i) < a.allowed) {
        pass.selected.push_back(claims[i]->name);
        continue;
      }
      for (auto& c : pass.candidates) {
        if (c.nodeclaim == claims[i]->name) {
          c.outcome = "over budget: " + reason + " allows " + std::to_string(a.allowed) + " now (" +
                      a.detail + ")";
        }
      }
    }
  }
  return pass;
}

std::string Summary(const Pass& pass) {
  std::string text;
  for (const auto& c : pass.candidates) text += c.nodeclaim + "|" + c.outcome + "\n";
  for (const auto& b : pass.budgets) text += b.nodepool + "|" + std::to_string(b.allowed) + "\n";
  return text;
}

void Expire(State& state, Seq seq, Output& out) {
  for (auto& [name, claim] : state.nodeclaims) {
    auto pool = state.nodepools.find(claim.nodepool);
    if (pool == state.nodepools.end() || claim.deleting) continue;
    Nanos after = pool->second.expire_after;
    if (after.value < 0 || claim.phase == ClaimPhase::kPending) continue;
    if (state.now - claim.created < after) continue;
    std::string reason = "expired: created " + DurationText(state.now - claim.created) +
                         " ago, expireAfter " + DurationText(after);
    Decide(state, seq,
           DisruptionDecision{"Expiration",
                              "executed",
                              {name},
                              {{name, claim.nodepool, reason}},
                              {},
                              "forceful and not budgeted (v1)"},
           out);
    BeginDeletion(state, seq, claim, reason, true, out);
  }
}

void Validate(State& state, Seq seq, Output& out) {
  Pass now = Evaluate(state, state.pending_method);
  std::string changed;
  for (const auto& name : state.pending_nodeclaims) {
    if (std::find(now.selected.begin(), now.selected.end(), name) != now.selected.end()) continue;
    changed = name + ": ";
    auto it = std::find_if(now.candidates.begin(), now.candidates.end(),
                           [&](const auto& c) { return c.nodeclaim == name; });
    changed += it != now.candidates.end()
                   ? it->outcome
                   : (state.pending_method == kEmptiness ? "no longer empty or no longer exists"
                                                         : "no longer drifted or no longer exists");
    break;
  }
  if (!changed.empty()) {
    Decide(state, seq,
           DisruptionDecision{state.pending_method, "invalidated", state.pending_nodeclaims,
                              now.candidates, now.budgets, "after 15 s: " + changed},
           out);
  } else {
    Decide(state, seq,
           DisruptionDecision{state.pending_method, "executed", state.pending_nodeclaims,
                              now.candidates, now.budgets, "unchanged after 15 s"},
           out);
    for (const auto& name : state.pending_nodeclaims) {
      std::string reason = "empty: no workload pods";
      if (state.pending_method == kConsolidation) {
        reason = "underutilized: its pods fit on the other nodes";
      } else if (state.pending_method == kDrift) {
        auto it = std::find_if(now.candidates.begin(), now.candidates.end(),
                               [&](const auto& c) { return c.nodeclaim == name; });
        reason = it != now.candidates.end() ? it->outcome.substr(10) : "drifted";  // "selected: "
      }
      BeginDeletion(state, seq, state.nodeclaims.at(name), reason, true, out);
    }
  }
  state.pending_method.clear();
  state.pending_nodeclaims.clear();
  state.last_disruption_digest = 0;
}

}  // namespace

void AdvanceDisruption(State& state, Seq seq, Output& out) {
  Expire(state, seq, out);
  if (state.last_disruption_pass.value != 0 &&
      state.now - state.last_disruption_pass < kDisruptionPassInterval) {
    return;
  }
  state.last_disruption_pass = state.now;
  if (!state.pending_method.empty()) {
    if (state.now - state.pending_since >= kDisruptionValidation) Validate(state, seq, out);
    return;  // One method per pass; a pending one holds the pass until it is validated.
  }
  // Karpenter's order: the first method with something to do acts; the others wait.
  std::vector<std::pair<std::string, Pass>> passes;
  for (const char* method : {kEmptiness, kDrift, kConsolidation}) {
    Pass pass = Evaluate(state, method);
    if (!pass.selected.empty()) {
      state.pending_method = method;
      state.pending_nodeclaims = pass.selected;
      state.pending_since = state.now;
      Decide(state, seq,
             DisruptionDecision{method, "proposed", pass.selected, pass.candidates, pass.budgets,
                                "validating for 15 s"},
             out);
      return;
    }
    if (!pass.candidates.empty()) passes.emplace_back(method, std::move(pass));
  }
  // Blocked candidates are recorded when what blocks them changes, not every 10 s.
  std::string text;
  for (const auto& [method, pass] : passes) text += method + "\n" + Summary(pass);
  std::uint64_t digest = passes.empty() ? 0 : XXH3_64bits(text.data(), text.size());
  if (digest == state.last_disruption_digest) return;
  state.last_disruption_digest = digest;
  for (auto& [method, pass] : passes) {
    Decide(state, seq,
           DisruptionDecision{method,
                              "blocked",
                              {},
                              std::move(pass.candidates),
                              std::move(pass.budgets),
                              "no candidate can go now"},
           out);
  }
}

void OnInterruption(State& state, Seq seq, const InterruptionReceived& event, Output& out) {
  Issue(state, seq, AcknowledgeMessage{event.message_id}, out);
  NodeClaim* claim = nullptr;
  for (auto& [name, c] : state.nodeclaims) {
    if (!event.instance_id.empty() && c.instance_id == event.instance_id) claim = &c;
  }
  static constexpr const char* kNames[] = {"spot interruption warning", "rebalance recommendation",
                                           "scheduled change", "instance state change"};
  std::string what = std::string(kNames[static_cast<int>(event.kind)]) +
                     (event.detail.empty() ? "" : " (" + event.detail + ")") + ", message " +
                     event.message_id;
  if (claim == nullptr) {
    Decide(state, seq,
           LifecycleDecision{"", "InterruptionIgnored", what + ": no NodeClaim has this instance",
                             "", event.instance_id},
           out);
    return;
  }
  switch (event.kind) {
    case InterruptionKind::kRebalanceRecommendation:
      RecordTransition(state, seq, *claim, "RebalanceRecommendation", what, out);
      return;
    case InterruptionKind::kStateChange:
      if (event.detail != "stopping" && event.detail != "stopped" &&
          event.detail != "shutting-down" && event.detail != "terminated") {
        RecordTransition(state, seq, *claim, "InstanceStateChange", what, out);
        return;
      }
      break;
    case InterruptionKind::kSpotInterruption:
      state.unavailable_offerings[OfferingKey(claim->instance_type, claim->zone,
                                              claim->capacity_type)] =
          state.now + kUnavailableOfferingTtl;
      break;
    case InterruptionKind::kScheduledChange:
      break;
  }
  if (claim->deleting) return;
  Decide(state, seq,
         DisruptionDecision{"Interruption",
                            "executed",
                            {claim->name},
                            {{claim->name, claim->nodepool, what}},
                            {},
                            "forceful and not budgeted"},
         out);
  BeginDeletion(state, seq, *claim, "interrupted: " + what, true, out);
}

void NotePodMoved(State& state, const std::string& node_name) {
  if (node_name.empty()) return;
  for (auto& [name, claim] : state.nodeclaims) {
    if (claim.node_name == node_name) claim.last_pod_change = state.now;
  }
}

}  // namespace tenon::core
