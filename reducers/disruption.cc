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

bool Active(const Pod& pod) {
  return pod.phase != "Succeeded" && pod.phase != "Failed";
}

// Pods that would have to move if the node went: not DaemonSet or mirror pods.
bool Reschedulable(const Pod& pod) {
  return Active(pod) && pod.owner_kind != "DaemonSet" && pod.owner_kind != "Node";
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

// Empty initialized claims, what blocks each, and which the budgets let go now.
Pass Emptiness(const State& state) {
  Pass pass;
  std::map<std::string, std::vector<const NodeClaim*>> eligible;  // By pool.
  for (const auto& [name, claim] : state.nodeclaims) {
    auto pool = state.nodepools.find(claim.nodepool);
    if (pool == state.nodepools.end() || claim.deleting) continue;
    if (claim.phase != ClaimPhase::kInitialized) continue;
    auto node = state.nodes.find(claim.node_name);
    if (node == state.nodes.end()) continue;
    bool empty = std::none_of(state.pods.begin(), state.pods.end(), [&](const auto& entry) {
      return entry.second.node_name == claim.node_name && Reschedulable(entry.second);
    });
    if (!empty) continue;
    DisruptionCandidate c{name, claim.nodepool, "selected"};
    Nanos since = std::max(claim.initialized, claim.last_pod_change);
    const NodePool& p = pool->second;
    if (p.consolidate_after.value < 0) {
      c.outcome = "consolidateAfter is Never";
    } else if (state.now - since < p.consolidate_after) {
      c.outcome = "not consolidatable until " + ClockText(since + p.consolidate_after) +
                  " (consolidateAfter " + DurationText(p.consolidate_after) + ")";
    } else if (node->second.do_not_disrupt) {
      c.outcome = "node " + node->first + " has karpenter.sh/do-not-disrupt";
    } else {
      eligible[claim.nodepool].push_back(&claim);
    }
    pass.candidates.push_back(std::move(c));
  }
  for (const auto& [pool_name, claims] : eligible) {
    Allowance a = Allowed(state, state.nodepools.at(pool_name), kReasonEmpty);
    pass.budgets.push_back({pool_name, kReasonEmpty, a.allowed, a.detail});
    for (std::size_t i = 0; i < claims.size(); ++i) {
      if (static_cast<std::int64_t>(i) < a.allowed) {
        pass.selected.push_back(claims[i]->name);
        continue;
      }
      for (auto& c : pass.candidates) {
        if (c.nodeclaim == claims[i]->name) {
          c.outcome =
              "over budget: Empty allows " + std::to_string(a.allowed) + " now (" + a.detail + ")";
        }
      }
    }
  }
  return pass;
}

std::uint64_t Digest(const Pass& pass) {
  std::string text;
  for (const auto& c : pass.candidates) text += c.nodeclaim + "|" + c.outcome + "\n";
  for (const auto& b : pass.budgets) text += b.nodepool + "|" + std::to_string(b.allowed) + "\n";
  return XXH3_64bits(text.data(), text.size());
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
  Pass now = Emptiness(state);
  std::string changed;
  for (const auto& name : state.pending_nodeclaims) {
    if (std::find(now.selected.begin(), now.selected.end(), name) != now.selected.end()) continue;
    changed = name + ": ";
    auto it = std::find_if(now.candidates.begin(), now.candidates.end(),
                           [&](const auto& c) { return c.nodeclaim == name; });
    changed += it != now.candidates.end() ? it->outcome : "no longer empty or no longer exists";
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
      BeginDeletion(state, seq, state.nodeclaims.at(name), "empty: no workload pods", true, out);
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
  Pass pass = Emptiness(state);
  if (!pass.selected.empty()) {
    state.pending_method = "Emptiness";
    state.pending_nodeclaims = pass.selected;
    state.pending_since = state.now;
    Decide(state, seq,
           DisruptionDecision{"Emptiness", "proposed", pass.selected, pass.candidates, pass.budgets,
                              "validating for 15 s"},
           out);
    return;
  }
  if (pass.candidates.empty()) return;
  // Blocked candidates are recorded when what blocks them changes, not every 10 s.
  std::uint64_t digest = Digest(pass);
  if (digest == state.last_disruption_digest) return;
  state.last_disruption_digest = digest;
  Decide(state, seq,
         DisruptionDecision{
             "Emptiness", "blocked", {}, pass.candidates, pass.budgets, "no candidate can go now"},
         out);
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
