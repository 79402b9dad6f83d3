// Consolidation's Simulation: one scheduling pass over the cluster, asked where the pods of some
// NodeClaims would go without them, trial after trial.
#include <algorithm>
#include <cassert>
#include <stdexcept>

#include "reducers/scheduler_pass.h"

namespace tenon {

namespace {

// Whether where the pod may go depends on nothing but the bin it tries (Pass::BaseRun).
bool ReadsOnlyItsBin(const Pod* pod) {
  return !core::placement::OwnsTopologyGroups(*pod) && pod->constraints->volume_claims.empty();
}

}  // namespace

bool UninitializedTarget(const State& state, const std::string& target) {
  if (target.empty() || target.front() == '#') return false;  // A new claim of the answer.
  if (auto claim = state.lifecycle.nodeclaims.find(target);
      claim != state.lifecycle.nodeclaims.end()) {
    return claim->second.phase != ClaimPhase::kInitialized;
  }
  bool uninitialized = false;
  state.lifecycle.claims_by_node.ForEach(target, [&](const std::string& name) {
    uninitialized =
        uninitialized || state.lifecycle.nodeclaims.at(name).phase != ClaimPhase::kInitialized;
  });
  return uninitialized;
}

struct SimulationImpl {
  explicit SimulationImpl(const State& state) : pass(state, none) {
    // The pods waiting for capacity are the same in every trial of one simulation: sorted into
    // placement order once, then merged with each candidate's pods (already in that order).
    const auto& pending = state.cluster.pods.Provisionable();
    for (auto it = pending.begin(); it != pending.end() && by_key.size() < kPodsPerBatchMax; ++it) {
      by_key.push_back(it->second);
    }
    waiting = by_key;
    std::sort(waiting.begin(), waiting.end(), PlacedBefore);
    if (!waiting.empty() && state.cluster.pods.BoundWithAntiAffinity().empty() &&
        std::all_of(waiting.begin(), waiting.end(), ReadsOnlyItsBin)) {
      hints = pass.BaseRun(waiting);
    }
  }
  std::set<std::string> none;  // Declared first: the pass keeps a reference to it.
  core::placement::Pass pass;
  // The provisionable pods a batch takes (the first in key order), as they come and in
  // placement order.
  std::vector<const Pod*> by_key;
  std::vector<const Pod*> waiting;
  // The waiting pods' hints (Pass::BaseRun), when every trial's pending pods may use them.
  std::vector<std::size_t> hints;
};

Simulation::Simulation(const State& state) : state_(state) {}

Simulation::~Simulation() = default;

const std::vector<const Pod*>& Simulation::PodsOf(const NodeClaim& claim) {
  return state_.cluster.pods.OnNode(claim.node_name).reschedulable;
}

ScheduleResult Simulation::Without(const std::vector<std::string>& nodeclaims) {
  std::vector<Removal> removals;
  for (const auto& name : nodeclaims) {
    auto claim = state_.lifecycle.nodeclaims.find(name);
    if (claim == state_.lifecycle.nodeclaims.end()) continue;
    auto node = state_.cluster.nodes.find(claim->second.node_name);
    removals.push_back({&claim->second,
                        node == state_.cluster.nodes.end() ? nullptr : &node->second,
                        PodsOf(claim->second)});
  }
  return Without(removals);
}

ScheduleResult Simulation::Without(const std::vector<Removal>& removals, bool offerings,
                                   bool pending_outcomes, bool until_blocked) {
  assert(!until_blocked || !pending_outcomes);
  // The pass over the whole cluster is built on the first question: most disruption passes
  // find no candidate worth simulating.
  if (impl_ == nullptr) impl_ = std::make_unique<SimulationImpl>(state_);
  // The removed claims' pods, and the pods waiting for capacity, as Karpenter's disruption
  // simulation places them: a move must not take room they would get, and what they need is
  // part of the answer.
  std::vector<const Pod*> moving;
  for (const Removal& r : removals) moving.insert(moving.end(), r.pods.begin(), r.pods.end());
  if (removals.size() != 1 || !removals.front().in_placement_order) {
    std::sort(moving.begin(), moving.end(), PlacedBefore);
  }
  const std::vector<const Pod*>& waiting = impl_->waiting;
  const std::size_t count = moving.size() + waiting.size();
  const bool hinted = !impl_->hints.empty() && count <= kPodsPerBatchMax &&
                      std::all_of(moving.begin(), moving.end(), ReadsOnlyItsBin);
  std::vector<const Pod*> pods;
  std::vector<std::size_t> hints;  // Per pod, when hinted.
  std::vector<bool> reported;      // Per pod, when the pending pods' outcomes are left out.
  if (count <= kPodsPerBatchMax) {
    // As std::merge does: a moving pod goes before a waiting one not placed before it.
    pods.reserve(count);
    auto take = [&](const Pod* pod, std::size_t hint, bool is_moving) {
      pods.push_back(pod);
      if (hinted) hints.push_back(hint);
      if (!pending_outcomes) reported.push_back(is_moving);
    };
    std::size_t w = 0;
    for (const Pod* pod : moving) {
      for (; w < waiting.size() && PlacedBefore(waiting[w], pod); ++w) {
        take(waiting[w], hinted ? impl_->hints[w] : core::placement::kNoHint, false);
      }
      take(pod, core::placement::kNoHint, true);
    }
    for (; w < waiting.size(); ++w) {
      take(waiting[w], hinted ? impl_->hints[w] : core::placement::kNoHint, false);
    }
  } else {
    // Past the limit, the waiting pods taken are the first in key order, as a provisioning
    // pass takes them.
    pods = moving;
    const std::size_t room = kPodsPerBatchMax - std::min(pods.size(), kPodsPerBatchMax);
    pods.insert(pods.end(), impl_->by_key.begin(),
                impl_->by_key.begin() + std::min(room, impl_->by_key.size()));
    std::sort(pods.begin(), pods.end(), PlacedBefore);
    if (!pending_outcomes) {
      std::sort(moving.begin(), moving.end());
      for (const Pod* pod : pods) {
        reported.push_back(std::binary_search(moving.begin(), moving.end(), pod));
      }
    }
  }
  impl_->pass.BeginTrial(removals, !offerings);
  ScheduleResult result = impl_->pass.Run(pods, hints, reported, until_blocked);
  impl_->pass.EndTrial();
  if (state_.checks.simulation) Audit(removals, offerings, pods, hinted, reported, result);
  return result;
}

void Simulation::Audit(const std::vector<Removal>& removals, bool offerings,
                       const std::vector<const Pod*>& pods, bool hinted,
                       const std::vector<bool>& reported, const ScheduleResult& result) {
  auto run = [&](bool stop) {
    impl_->pass.BeginTrial(removals, !offerings);
    ScheduleResult again = impl_->pass.Run(pods, {}, reported, stop);
    impl_->pass.EndTrial();
    return again;
  };
  auto differs = [&](const char* how) {
    std::string claims;
    for (const Removal& r : removals) claims += (claims.empty() ? "" : ", ") + r.claim->name;
    throw std::logic_error("simulation audit: the trial without " + claims + " " + how);
  };
  if (!std::is_sorted(pods.begin(), pods.end(), PlacedBefore)) {
    differs("had its pods out of placement order");
  }
  if (hinted && !(run(result.cut_short) == result)) {
    differs("placed its pods otherwise with the base run's hints");
  }
  if (result.cut_short) {
    // The full trial places the moving pods up to the blocked one as the cut one did.
    const ScheduleResult full = run(false);
    if (full.pods.size() < result.pods.size() ||
        !std::equal(result.pods.begin(), result.pods.end(), full.pods.begin())) {
      differs("placed its pods otherwise when stopped once blocked");
    }
  }
}

}  // namespace tenon
