// The EC2NodeClass's own lifecycle, as Karpenter's EC2NodeClass controller runs it: the
// karpenter.k8s.aws/termination finalizer on every EC2NodeClass, the instance profile for its
// spec.role, and, once it is deleted, a wait for the NodeClaims that use it (said with a
// WaitingOnNodeClaimTermination Event), then the deletion of what tenon made for it in AWS and
// of the finalizer. Every step is a command; its result comes back as an event.
#include "reducers/internal.h"

namespace tenon::core {
namespace {

// Karpenter records WaitingOnNodeClaimTermination again every 10 minutes while it waits.
constexpr Duration kWaitingReportEvery{600 * kSecond.value};
// A cleanup (or finalizer removal) that failed is tried again after this long.
constexpr Duration kCleanupRetry{60 * kSecond.value};
constexpr std::size_t kNamesShown = 5;

// A command of kind C about `nodeclass` is in flight (`match` narrows it further).
template <class C, class Match>
bool InFlight(const State& state, const std::string& nodeclass, Match match) {
  return std::any_of(state.inflight.begin(), state.inflight.end(), [&](const auto& entry) {
    const auto* c = std::get_if<C>(&entry.second.body);
    return c != nullptr && c->nodeclass == nodeclass && match(*c);
  });
}
template <class C>
bool InFlight(const State& state, const std::string& nodeclass) {
  return InFlight<C>(state, nodeclass, [](const C&) { return true; });
}

bool FinalizerInFlight(const State& state, const std::string& nodeclass, bool present) {
  return InFlight<SetNodeClassFinalizer>(
      state, nodeclass, [&](const SetNodeClassFinalizer& c) { return c.present == present; });
}

// The NodeClaims whose EC2NodeClass it is, by name.
std::vector<std::string> ClaimsUsing(const State& state, const std::string& nodeclass) {
  std::vector<std::string> names;
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (claim.nodeclass == nodeclass) names.push_back(name);
  }
  return names;
}

// "a, b, c, d, e and 2 other(s)", as Karpenter's pretty.Slice lists names.
std::string FewNames(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i == kNamesShown) {
      out += " and " + std::to_string(names.size() - i) + " other(s)";
      break;
    }
    out += (i > 0 ? ", " : "") + names[i];
  }
  return out;
}

// A deleted EC2NodeClass holding the finalizer: waits while NodeClaims use it, then deletes
// its AWS resources; the finalizer goes when that succeeds (OnNodeClassResult).
void Terminate(State& state, Seq seq, const NodeClass& nodeclass, Output& out) {
  NodeClassTermination& termination = state.nodeclass.terminations[nodeclass.name];
  const std::vector<std::string> claims = ClaimsUsing(state, nodeclass.name);
  if (!claims.empty()) {
    const std::string message = "Waiting on NodeClaim termination for " + FewNames(claims);
    if (message != termination.waiting_message ||
        state.now.value - termination.waiting_at.value >= kWaitingReportEvery.value) {
      termination.waiting_message = message;
      termination.waiting_at = state.now;
      Announce(state, seq,
               RecordKubeEvent{{"karpenter.k8s.aws/v1", "EC2NodeClass", "", nodeclass.name},
                               "Normal",
                               "WaitingOnNodeClaimTermination",
                               message},
               out);
    }
    return;
  }
  if (state.now < termination.retry_at ||
      InFlight<DeleteNodeClassResources>(state, nodeclass.name) ||
      FinalizerInFlight(state, nodeclass.name, false)) {
    return;
  }
  Issue(state, seq,
        DeleteNodeClassResources{nodeclass.name, state.settings.cluster_name,
                                 !nodeclass.role.empty()},
        out);
}

// The part of a resolution the EC2NodeClass status shows: all but the free addresses and the
// images' creation dates.
NodeClassResolution StatusPart(NodeClassResolution resolution) {
  for (auto& subnet : resolution.subnets) subnet.free_ips = 0;
  for (auto& ami : resolution.amis) ami.created.clear();
  return resolution;
}

}  // namespace

void Announce(State& state, Seq cause, RecordKubeEvent event, Output& out) {
  Command command{state.next_command, cause, std::move(event)};
  state.next_command = CommandId{state.next_command.value + 1};
  out.commands.push_back(std::move(command));
}

void ReconcileNodeClass(State& state, Seq seq, const std::string& name, Output& out) {
  auto it = state.cluster.nodeclasses.find(name);
  if (it == state.cluster.nodeclasses.end()) {
    state.nodeclass.terminations.erase(name);
    return;
  }
  const NodeClass& nodeclass = it->second;
  if (nodeclass.terminating) {
    if (nodeclass.finalizer) Terminate(state, seq, nodeclass, out);
    return;
  }
  state.nodeclass.terminations.erase(name);
  if (!nodeclass.finalizer && !FinalizerInFlight(state, name, true)) {
    // Added before anything is made for it in AWS, as Karpenter's controller adds it: a
    // deletion then waits for the cleanup.
    Issue(state, seq, SetNodeClassFinalizer{name, true}, out);
  }
  // The resolver only reads: a profile missing (or holding another role) is made here.
  auto resolution = state.nodeclass.resolutions.find(name);
  if (resolution != state.nodeclass.resolutions.end() &&
      resolution->second.reason == kInstanceProfileNotFound && !nodeclass.role.empty() &&
      !InFlight<EnsureInstanceProfile>(state, name)) {
    Issue(state, seq, EnsureInstanceProfile{name, nodeclass.role, state.settings.cluster_name},
          out);
  }
}

void AdvanceNodeClassTerminations(State& state, Seq seq, Output& out) {
  if (state.nodeclass.terminations.empty()) {
    // The first tick after a deletion is seen starts it (ReconcileNodeClass on the upsert
    // records it); nothing else to walk.
    return;
  }
  std::vector<std::string> names;
  for (const auto& [name, termination] : state.nodeclass.terminations) names.push_back(name);
  for (const std::string& name : names) ReconcileNodeClass(state, seq, name, out);
}

bool OnNodeClassResult(State& state, Seq seq, CommandId id, bool succeeded, Output& out) {
  auto it = state.inflight.find(id);
  if (it == state.inflight.end()) return false;
  const CommandBody body = it->second.body;
  std::string nodeclass;
  if (const auto* c = std::get_if<DeleteNodeClassResources>(&body)) {
    nodeclass = c->nodeclass;
  } else if (const auto* c = std::get_if<SetNodeClassFinalizer>(&body)) {
    nodeclass = c->nodeclass;
  } else if (!std::holds_alternative<EnsureInstanceProfile>(body)) {
    return false;
  }
  state.inflight.erase(it);
  auto termination = state.nodeclass.terminations.find(nodeclass);
  if (termination == state.nodeclass.terminations.end()) return true;
  // Tried again after a failure; after a finalizer removal, the EC2NodeClass's deletion is
  // waited for instead of cleaning up again before the watch brings it.
  if (!succeeded || std::holds_alternative<SetNodeClassFinalizer>(body)) {
    termination->second.retry_at = state.now + kCleanupRetry;
  }
  if (succeeded && std::holds_alternative<DeleteNodeClassResources>(body)) {
    Issue(state, seq, SetNodeClassFinalizer{nodeclass, false}, out);
  }
  return true;
}

// The latest resolution is kept; the status is written when what it shows changes, and for the
// first resolution of an EC2NodeClass.
void OnNodeClassResolved(State& state, Seq seq, const NodeClassResolved& event, Output& out) {
  auto [it, added] = state.nodeclass.resolutions.try_emplace(event.nodeclass, event.resolution);
  const bool changed = added || StatusPart(it->second) != StatusPart(event.resolution);
  it->second = event.resolution;
  if (changed) Issue(state, seq, PatchNodeClassStatus{event.nodeclass, event.resolution}, out);
  ReconcileNodeClass(state, seq, event.nodeclass, out);
}

void ForgetNodeClass(State& state, const std::string& name) {
  state.nodeclass.resolutions.erase(name);
  state.nodeclass.terminations.erase(name);
}

}  // namespace tenon::core
