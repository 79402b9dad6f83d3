// tenon explain: the causal chain behind a pod, a node or a NodeClaim, each line citing the
// sequence number of the record it comes from.
#include <algorithm>
#include <cinttypes>
#include <set>

#include "log/codec.h"
#include "replay/index.h"
#include "replay/replay.h"

namespace tenon::replay {
namespace {

// The decisions under a term through `at`, in id order; without an index, every decision
// `keep` accepts.
std::vector<Decision> DecisionsUnder(const log::EventLog& log, const std::string& term,
                                     std::optional<Instant> at,
                                     const std::function<bool(const Decision&)>& keep) {
  std::vector<Decision> out;
  auto take = [&](const std::string& payload) {
    Decision d = log::DecodeDecision(payload);
    if ((!at || d.at <= *at) && keep(d)) out.push_back(std::move(d));
  };
  if (!log.HasDecisionIndex()) {
    log.ScanDecisions(1, [&](const log::DecisionRecord& r) {
      take(r.payload);
      return true;
    });
    return out;
  }
  for (std::uint64_t id : IdsUnder(log, term)) {
    if (auto r = log.ReadDecision(id)) take(r->payload);
  }
  return out;
}

std::string OfferingText(const OfferingChoice& o) {
  return o.instance_type + " in " + o.zone + " (" + o.capacity_type + ") at " +
         DollarsText(o.price) + "/h";
}

// The offerings a launch found without capacity, from the FleetLaunched or FleetFailed event
// the Launched / LaunchFailed decision followed, with how long each is kept out of launches.
void AddCapacityErrors(const log::EventLog& log, const Decision& d, std::vector<ExplainLine>& out) {
  auto record = log.Read(d.cause);
  if (!record) return;
  auto entry = log::DecodeEntry(record->payload);
  const auto* event = std::get_if<Event>(&entry);
  if (event == nullptr) return;
  const std::vector<FleetError>* errors = nullptr;
  if (const auto* l = std::get_if<FleetLaunched>(event)) errors = &l->errors;
  if (const auto* f = std::get_if<FleetFailed>(event)) errors = &f->errors;
  if (errors == nullptr) return;
  for (const auto& e : *errors) {
    if (e.code != ErrorCode::kInsufficientCapacity) continue;
    out.push_back({d.at, d.cause,
                   "offering " + e.instance_type + "/" + e.zone + "/" + e.capacity_type +
                       " had no capacity (" + e.message + "); kept out of launches until " +
                       ClockText(d.at + kUnavailableOfferingTtl)});
  }
}

// A step about one pod of the claim (an eviction) that concerns another pod than `pod`.
bool AboutAnotherPod(const LifecycleDecision& l, const std::string& pod) {
  const bool pod_step = l.transition == Transition::kEvicted ||
                        l.transition == Transition::kEvictionRefused ||
                        l.transition == Transition::kPodForceDeleted;
  return !pod.empty() && pod_step && l.reason.find(pod) == std::string::npos;
}

// `pod` (optional) leaves out the steps about the claim's other pods.
void ClaimLines(const log::EventLog& log, const std::string& claim, const std::string& pod,
                std::optional<Instant> at, std::vector<ExplainLine>& out) {
  auto decisions = DecisionsUnder(log, log::IndexTerm(log::IndexKind::kNodeClaim, claim), at,
                                  [&](const Decision&) { return true; });
  std::vector<std::string> replacements;  // Of the claim's latest replacing disruption.
  for (const Decision& d : decisions) {
    const Seq seq = d.cause;
    if (const auto* p = std::get_if<ProvisioningDecision>(&d.body)) {
      for (const auto& plan : p->new_claims) {
        if (plan.nodeclaim != claim) continue;
        std::string text = "batch opened " + ClockText(p->batch_opened) + " closed with " +
                           std::to_string(p->pods.size()) + " pods; NodePool " + plan.nodepool +
                           " planned NodeClaim " + claim + " for " +
                           std::to_string(plan.pods.size()) + " of them";
        if (!plan.offerings.empty()) {
          text += ", first choice " + OfferingText(plan.offerings.front()) + " of " +
                  std::to_string(plan.offerings.size()) + " offerings";
        }
        out.push_back({d.at, seq, text});
      }
    } else if (const auto* l = std::get_if<LifecycleDecision>(&d.body)) {
      if (l->nodeclaim != claim || AboutAnotherPod(*l, pod)) continue;
      if (l->transition == Transition::kLaunched || l->transition == Transition::kLaunchFailed) {
        AddCapacityErrors(log, d, out);
      }
      out.push_back({d.at, seq,
                     "NodeClaim " + claim + " " + Name(l->transition) + ": " +
                         ReadableOutcome(l->reason, replacements)});
    } else if (const auto* x = std::get_if<DisruptionDecision>(&d.body)) {
      const bool acted =
          std::find(x->nodeclaims.begin(), x->nodeclaims.end(), claim) != x->nodeclaims.end();
      if (acted) {
        if (x->phase == DisruptionPhase::kReplacing) replacements = LaunchedBy(log, seq);
        out.push_back({d.at, seq,
                       std::string(Name(x->method)) + " " + Name(x->phase) + " on " + claim + ": " +
                           x->reason});
        continue;
      }
      for (const auto& c : x->candidates) {
        if (c.nodeclaim != claim) continue;
        out.push_back({d.at, seq,
                       std::string(Name(x->method)) + " did not disrupt " + claim + ": " +
                           ReadableOutcome(c.outcome, {})});
      }
    }
  }
}

std::vector<std::string> ClaimsOf(const log::EventLog& log, const std::string& node,
                                  std::optional<Instant> at) {
  std::set<std::string> claims;
  auto decisions =
      DecisionsUnder(log, log::IndexTerm(log::IndexKind::kNode, node), at, [&](const Decision& d) {
        const auto* l = std::get_if<LifecycleDecision>(&d.body);
        return l != nullptr && l->node_name == node;
      });
  for (const auto& d : decisions) claims.insert(std::get<LifecycleDecision>(d.body).nodeclaim);
  claims.erase("");
  return {claims.begin(), claims.end()};
}

// The batches that placed pods on the node as it stood.
void NodePlacementLines(const log::EventLog& log, const std::string& node,
                        std::optional<Instant> at, std::vector<ExplainLine>& out) {
  auto decisions = DecisionsUnder(
      log, log::IndexTerm(log::IndexKind::kNode, node), at,
      [](const Decision& d) { return std::holds_alternative<ProvisioningDecision>(d.body); });
  for (const Decision& d : decisions) {
    const auto& p = std::get<ProvisioningDecision>(d.body);
    std::vector<const PodOutcome*> placed;
    for (const auto& outcome : p.pods) {
      if (outcome.target == node) placed.push_back(&outcome);
    }
    if (placed.empty()) continue;
    std::string text = "batch closed with " + std::to_string(p.pods.size()) + " pods; " +
                       std::to_string(placed.size()) + " placed on node " + node + " (" +
                       placed.front()->pod + (placed.size() > 1 ? ", ..." : "") +
                       "): " + placed.front()->reason;
    out.push_back({d.at, d.cause, text});
  }
}

// Each event of the log through `at` (zero: all of it), with the time of the last tick before it.
void ScanEventsThrough(const log::EventLog& log, std::optional<Instant> at,
                       const std::function<void(Instant, Seq, const Event&)>& each) {
  Instant now;
  log.Scan(log.FirstSeq(), Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    const auto* event = std::get_if<Event>(&entry);
    if (event == nullptr) return true;
    if (const auto* tick = std::get_if<Tick>(event)) {
      if (at && tick->now > *at) return false;
      now = std::max(now, tick->now);
    }
    each(now, record.seq, *event);
    return true;
  });
}

// What the events say about the node: first seen, being deleted, deleted.
void NodeEventLines(const log::EventLog& log, const std::string& name, std::optional<Instant> at,
                    std::vector<ExplainLine>& out) {
  bool seen = false, deleting = false;
  ScanEventsThrough(log, at, [&](Instant now, Seq seq, const Event& event) {
    if (const auto* u = std::get_if<NodeUpserted>(&event)) {
      if (u->node.name != name) return;
      if (!seen) {
        out.push_back({now, seq,
                       "node " + name + " appeared" +
                           (u->node.provider_id.empty() ? "" : " (" + u->node.provider_id + ")")});
      }
      if (u->node.deleting && !deleting) {
        out.push_back({now, seq, "node " + name + " is being deleted"});
      }
      seen = true;
      deleting = u->node.deleting;
    } else if (const auto* d = std::get_if<NodeDeleted>(&event)) {
      if (d->name != name) return;
      out.push_back({now, seq, "node " + name + " deleted"});
      seen = deleting = false;
    }
  });
}

// What the events say about the pod: pending, bound (and to which node), deleted.
void PodEventLines(const log::EventLog& log, const std::string& key, std::optional<Instant> at,
                   std::vector<ExplainLine>& out) {
  std::optional<std::string> node;  // Unknown until the pod's first upsert.
  ScanEventsThrough(log, at, [&](Instant now, Seq seq, const Event& event) {
    if (const auto* u = std::get_if<PodUpserted>(&event)) {
      if (u->pod.ns + "/" + u->pod.name != key || node == u->pod.node_name) return;
      out.push_back(
          {now, seq,
           u->pod.node_name.empty()
               ? "pod " + key + " pending" + (u->pod.unschedulable ? " (unschedulable)" : "")
               : "pod " + key + " bound to node " + u->pod.node_name.str()});
      node = u->pod.node_name;
    } else if (const auto* d = std::get_if<PodDeleted>(&event)) {
      if (d->ns + "/" + d->name == key) out.push_back({now, seq, "pod " + key + " deleted"});
    }
  });
}

// The batches that considered the pod and where each put it; returns the claims planned for it.
std::vector<std::string> PodDecisionLines(const log::EventLog& log, const std::string& key,
                                          std::optional<Instant> at,
                                          std::vector<ExplainLine>& out) {
  std::vector<std::string> claims;
  auto decisions = DecisionsUnder(
      log, log::IndexTerm(log::IndexKind::kPod, key), at,
      [](const Decision& d) { return std::holds_alternative<ProvisioningDecision>(d.body); });
  for (const Decision& d : decisions) {
    const auto& p = std::get<ProvisioningDecision>(d.body);
    for (const auto& outcome : p.pods) {
      if (outcome.pod != key) continue;
      const bool planned =
          std::any_of(p.new_claims.begin(), p.new_claims.end(),
                      [&](const ClaimPlan& c) { return c.nodeclaim == outcome.target; });
      if (planned) {
        claims.push_back(outcome.target);
        continue;  // The claim's own chain says which batch and NodePool.
      }
      std::string text = outcome.target.empty()
                             ? "batch closed with " + std::to_string(p.pods.size()) +
                                   " pods; nothing fits " + key + ": " + outcome.reason
                             : "batch closed with " + std::to_string(p.pods.size()) + " pods; " +
                                   key + " placed on " + outcome.target + ": " + outcome.reason;
      out.push_back({d.at, d.cause, text});
    }
  }
  return claims;
}

}  // namespace

std::vector<ExplainLine> Explain(const log::EventLog& log, Subject subject, const std::string& name,
                                 std::optional<Instant> at) {
  std::vector<ExplainLine> out;
  std::vector<std::string> claims;
  switch (subject) {
    case Subject::kPod:
      PodEventLines(log, name, at, out);
      claims = PodDecisionLines(log, name, at, out);
      break;
    case Subject::kNode:
      NodeEventLines(log, name, at, out);
      NodePlacementLines(log, name, at, out);
      claims = ClaimsOf(log, name, at);
      break;
    case Subject::kNodeClaim:
      claims = {name};
      break;
  }
  const std::string pod = subject == Subject::kPod ? name : "";
  for (const auto& claim : claims) ClaimLines(log, claim, pod, at, out);
  // Log order; lines from one record keep the order they were made in.
  std::stable_sort(out.begin(), out.end(),
                   [](const ExplainLine& a, const ExplainLine& b) { return a.seq < b.seq; });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string ExplainText(const std::vector<ExplainLine>& lines) {
  std::string text;
  for (const auto& line : lines) {
    text +=
        ClockText(line.at) + "  " + line.text + "  (seq " + std::to_string(line.seq.value) + ")\n";
  }
  return text;
}

}  // namespace tenon::replay
