// The pure core: the State folded from the log and the one function that folds it.
//
//   Output Step(State&, Seq, const Event&)
//
// Step reads no clock, no environment, no randomness and does no I/O: time arrives as Tick
// events and the seed as ControllerStarted. Folding the same events gives the same State, the
// same StateHash and the same Output on every machine, which is what replay verifies.
#pragma once

#include <cassert>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "model/state.h"

namespace tenon {

// Folds one event. `seq` is the event's sequence number in the log.
Output Step(State& state, Seq seq, const Event& event);

// The Kubernetes Events for what `output` decided (Karpenter's reasons and messages); `state` is
// the state after the fold that produced it. Events whose dedupe key `state.event_limits` still
// holds are left out; Step applies the rest of Karpenter's limits (EventLimits) and issues what
// passes as RecordKubeEvent commands.
std::vector<RecordKubeEvent> KubeEventsFor(const Output& output, const State& state);

// Derived numbers for one instance type (AWS formulas: ENI-limited pods, kube-reserved CPU and
// memory, VM memory overhead, eviction threshold).
// `nodeclass` may be null; its kubelet maxPods / podsPerCore override the ENI-limited pods.
CatalogEntry MakeCatalogEntry(const InstanceType& type, const Settings& settings,
                              const NodeClass* nodeclass = nullptr);
// The allocatable part of MakeCatalogEntry alone.
Resources Allocatable(const InstanceType& type, const Settings& settings,
                      const NodeClass* nodeclass);

// ---- The scheduler: one provisioning pass, pure and without side effects on the state. ----

struct PlannedClaim {
  std::string nodepool;
  std::string nodeclass;
  std::vector<std::string> pods;  // namespace/name, in placement order.
  Resources requests;             // Including the daemonset overhead and one pod slot per pod.
  std::vector<Requirement> requirements;
  std::string capacity_type;
  std::string allocation_strategy;        // price-capacity-optimized | lowest-price
  std::vector<OfferingChoice> offerings;  // The CreateFleet overrides, cheapest first.
  Resources allocatable;                  // The smallest allocatable among the chosen types.
  friend bool operator==(const PlannedClaim&, const PlannedClaim&) = default;
};

struct ScheduleResult {
  std::vector<PlannedClaim> claims;
  // One outcome per pending pod. A pod placed on a planned claim has target "#<index>".
  std::vector<PodOutcome> pods;
  std::size_t existing_placements = 0;
  // A trial asked to stop once blocked (Simulation::Without's `until_blocked`) that did: `pods`
  // lists the moving pods' outcomes up to the one that landed on an uninitialized node, and
  // `claims` is empty.
  bool cut_short = false;
  friend bool operator==(const ScheduleResult&, const ScheduleResult&) = default;
};

// Places every provisionable pod of `state` on an existing node, an in-flight NodeClaim or a
// new NodeClaim, as Karpenter's provisioner does.
ScheduleResult Schedule(const State& state);
// The same over an explicit pod list (the benchmark and tests call this directly).
ScheduleResult Schedule(const State& state, const std::vector<const Pod*>& pods);
// As if `excluded_nodeclaims` and their nodes (and the pods bound there) were gone: what a
// disruption simulation asks.
ScheduleResult Schedule(const State& state, const std::vector<const Pod*>& pods,
                        const std::set<std::string>& excluded_nodeclaims);

// Whether a pod's target (a node, an in-flight NodeClaim, or "#<index>" for a planned claim) is
// a destination Karpenter's disruption does not move pods to: a NodeClaim not initialized yet
// (in flight, or its node not Ready). A node tenon does not manage counts as initialized.
bool UninitializedTarget(const State& state, const std::string& target);

struct SimulationImpl;

// Consolidation's what-if, as Karpenter's disruption controller simulates it: the scheduling
// pass over the whole cluster, built once, then asked many times where the pods of some
// NodeClaims would go if those claims (and their nodes) were gone. Each answer is undone before
// the next, so an answer does not depend on what was asked before. `state` must outlive it,
// unchanged.
class Simulation {
 public:
  explicit Simulation(const State& state);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // The pods that would have to move: active, bound to the claim's node, not DaemonSet or
  // mirror pods.
  const std::vector<const Pod*>& PodsOf(const NodeClaim& claim);
  // Reschedules the pods of `nodeclaims` onto the rest of the cluster and new claims.
  ScheduleResult Without(const std::vector<std::string>& nodeclaims);
  // The same, for claims the caller has already looked up: each with its node (or null) and
  // the pods that would move (PodsOf).
  struct Removal {
    const NodeClaim* claim = nullptr;
    const Node* node = nullptr;
    std::span<const Pod* const> pods;
    bool in_placement_order = false;  // `pods` already are (Bound::..._in_placement_order).
  };
  // With `offerings` false each planned claim is brief: its pool, capacity type, requests,
  // allocatable and only its first (cheapest) offering; no pods or requirements. Enough to tell
  // what it would launch, for a question that asks no more (the pod outcomes are all there).
  // With `pending_outcomes` false the result lists the outcomes of the removals' pods only;
  // the pending pods are placed all the same, and counted in existing_placements.
  // With `until_blocked` (and `pending_outcomes` false) the trial stops at the first moving pod
  // that lands on an uninitialized node while every moving pod before it, in placement order,
  // landed on an initialized one (ScheduleResult::cut_short): whatever the rest of the trial
  // would do, the move is blocked by that pod, as consolidation reads the answer.
  ScheduleResult Without(const std::vector<Removal>& removals, bool offerings = true,
                         bool pending_outcomes = true, bool until_blocked = false);

 private:
  // With SelfChecks::simulation: the trial placed again without its hints, and in full when it
  // was cut short; throws std::logic_error at a difference.
  void Audit(const std::vector<Removal>& removals, bool offerings,
             const std::vector<const Pod*>& pods, bool hinted, const std::vector<bool>& reported,
             const ScheduleResult& result);
  const State& state_;
  std::unique_ptr<SimulationImpl> impl_;  // Built by the first Without.
};

inline constexpr const char* kAllocationSpot = "price-capacity-optimized";
inline constexpr const char* kAllocationOnDemand = "lowest-price";

// How long a capacity error keeps an offering out of consideration.
inline constexpr Duration kUnavailableOfferingTtl{3 * kMinute.value};
// NodeClaim lifecycle and termination, with Karpenter's timeouts.
inline constexpr Duration kRelaunchBackoffBase{kSecond.value};  // A failed launch, again.
inline constexpr Duration kRelaunchBackoffMax{kMinute.value};
inline constexpr Duration kLaunchTimeout{5 * kMinute.value};        // Pending without a launch.
inline constexpr Duration kRegistrationTtl{15 * kMinute.value};     // Launched, no Node yet.
inline constexpr Duration kLeakedInstanceAge{30 * kSecond.value};   // Untracked instance age.
inline constexpr Duration kEvictionBackoffBase{100 * 1'000'000};    // First retry after a 429.
inline constexpr Duration kEvictionBackoffMax{10 * kSecond.value};  // Retries back off to this.
// Disruption: Karpenter's pass interval and validation delay.
inline constexpr Duration kDisruptionPassInterval{10 * kSecond.value};
// An unchanged cluster is consolidated again after this long anyway: what the core cannot see
// change (offering availability, budget windows, do-not-disrupt durations) may allow it now.
inline constexpr Duration kConsolidationRecheck{5 * kMinute.value};
inline constexpr Duration kDisruptionValidation{15 * kSecond.value};
inline constexpr Duration kBudgetScheduleHorizonMax{7 * 24 * 60 * kMinute.value};
inline constexpr Duration kHandledMessagesKept{24 * 60 * kMinute.value};
inline constexpr Duration kFinishedNodeClaimsKept{60 * kMinute.value};

// A label selector (matchLabels and matchExpressions) matches a label set: whom a
// PodDisruptionBudget or a pod affinity term selects.
bool SelectorMatches(const LabelSelector& selector, const Labels& labels);

}  // namespace tenon
