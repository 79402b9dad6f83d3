// Decisions: what the core chose and why, kept for audit, and a fold's Output (the commands
// and decisions one event led to).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "model/commands.h"

namespace tenon {

struct OfferingChoice {
  std::string instance_type;
  std::string zone;
  std::string capacity_type;
  MicroUsdPerHour price{0};
  friend bool operator==(const OfferingChoice&, const OfferingChoice&) = default;
};

struct ClaimPlan {
  std::string nodeclaim;
  std::string nodepool;
  std::vector<std::string> pods;  // ns/name
  Resources requests;
  std::vector<OfferingChoice> offerings;  // Cheapest first, at most kFleetOverridesMax.
  friend bool operator==(const ClaimPlan&, const ClaimPlan&) = default;
};

// What kind of thing a decision's cause is, as a code: Kubernetes Events, metric labels, reports
// and tests read it, never the English of a reason or an outcome. kNone in decisions recorded
// before causes were coded, and where a decision has no cause to name.
enum class Cause : std::uint8_t {
  kNone,
  // Why a disruption candidate cannot go now.
  kDoNotDisrupt,         // karpenter.sh/do-not-disrupt on its node or one of its pods
  kPodDisruptionBudget,  // a PodDisruptionBudget would refuse an eviction
  kDisruptionBudget,     // its NodePool's disruption budget allows no more now
  kNotSettled,           // NodeClaims are still launching: what they will be is not known
  kNominated,            // nominated for pending pods
  kPolicy,               // consolidationPolicy or consolidateAfter says not (yet)
  kNoBetterPlacement,    // the method's own verdict: its pods would not fit, nothing cheaper
  kNotConsidered,        // others went first (one node per command, the group's size)
  // What happened to an instance.
  kInsufficientCapacity,  // a launch found no capacity
  kLaunchError,           // a launch failed otherwise
  kSpotInterruption,
  kRebalanceRecommendation,
  kScheduledChange,
  kInstanceStopping,
  kInstanceTerminating,
  // Why a NodeClaim is deleted, besides a launch failure or an interruption above.
  kEmpty,                   // Emptiness: no pods but daemons
  kUnderutilized,           // consolidation: its pods fit elsewhere, or on something cheaper
  kDrifted,                 // its NodePool or EC2NodeClass no longer describes it
  kExpired,                 // older than its NodePool's expireAfter
  kDeletedThroughApi,       // someone deleted the NodeClaim
  kNodeDeleted,             // someone deleted its Node
  kAdoptedWithoutInstance,  // found in the cluster with no instance behind it
  kLaunchTimeout,           // not launched in time
  kRegistrationTimeout,     // its node never registered in time
  kInstanceGone,            // its instance went away under it
  // Why a disruption candidate cannot go now (added later, so numbered after the rest).
  kBalancedScore,  // consolidationPolicy Balanced: the savings do not outweigh the disruption
  // Why a NodeClaim is deleted (added later).
  kOverprovisioned,  // a static NodePool has more nodes than its replicas
  kUnhealthy,        // node repair: its node has been unhealthy past the toleration
};
inline constexpr Cause kCauseLast = Cause::kUnhealthy;
// The code as metric labels spell it ("DoNotDisrupt"); "" for kNone.
const char* CauseName(Cause cause);

// How a NodeClaim is disrupted: Karpenter's disruption methods, and SoftExpiration beyond them
// (Settings::soft_expiration: expiration as a graceful, budgeted method).
enum class DisruptionMethod : std::uint8_t {
  kEmptiness,
  kDrift,
  kExpiration,
  kSoftExpiration,
  kInterruption,
  kSingleNodeConsolidation,
  kMultiNodeConsolidation,
};
// Where a disruption stands: a pass that found candidates but could not act (blocked), one
// proposing an action and waiting out its validation (proposed), an action dropped by that
// validation (invalidated), replacing its candidates (replacing) and done with that (replaced,
// or rolled back when a replacement failed), or deleting its candidates outright (executed).
enum class DisruptionPhase : std::uint8_t {
  kBlocked,
  kProposed,
  kInvalidated,
  kReplacing,
  kReplaced,
  kRolledBack,
  kExecuted,
};
// One step of a NodeClaim's life (or of an instance no NodeClaim owns).
enum class Transition : std::uint8_t {
  kLaunched,
  kLaunchFailed,
  kRegistered,
  kInitialized,
  kAdopted,
  kTainted,    // karpenter.sh/disrupted before its replacements launch
  kUntainted,  // a replacement failed: the disruption rolled back
  kRebalanceRecommendation,
  kInstanceStateChange,
  kInterrupted,
  kInterruptionIgnored,  // a message about an instance no NodeClaim has
  kDeleting,
  kEvicted,
  kEvictionRefused,
  kPodForceDeleted,  // terminationGracePeriod left no time to evict
  kDrained,
  kInstanceTerminated,
  kInstanceGone,
  kFinalized,
  kLeakedInstance,
  kLeakedInstanceTerminated,
};
// The names the log, the metrics and the incident tools use ("SingleNodeConsolidation",
// "rolled back", "LaunchFailed"), and back; nullopt for a name that is none of them.
const char* Name(DisruptionMethod method);
const char* Name(DisruptionPhase phase);
const char* Name(Transition transition);
std::optional<DisruptionMethod> ParseDisruptionMethod(std::string_view name);
std::optional<DisruptionPhase> ParseDisruptionPhase(std::string_view name);
std::optional<Transition> ParseTransition(std::string_view name);

struct PodOutcome {
  std::string pod;     // ns/name
  std::string target;  // node or nodeclaim the pod was placed on; empty when unschedulable.
  std::string reason;  // Why it was placed there, or why nothing fitted (per NodePool).
  std::vector<std::string> relaxed;  // Preferences dropped, in the order they were dropped.
  friend bool operator==(const PodOutcome&, const PodOutcome&) = default;
};

struct ProvisioningDecision {
  Instant batch_opened;
  std::vector<ClaimPlan> new_claims;
  std::vector<PodOutcome> pods;
  friend bool operator==(const ProvisioningDecision&, const ProvisioningDecision&) = default;
};

// One step of a NodeClaim's life, with its cause: what `tenon replay` shows as its history.
struct LifecycleDecision {
  std::string nodeclaim;  // Empty for a leaked instance.
  Transition transition = Transition::kLaunched;
  std::string reason;
  std::string node_name;
  std::string instance_id;
  Cause cause = Cause::kNone;  // Set for launch failures and interruptions.
  std::string subject;         // The pod an eviction was of (ns/name); empty otherwise.
  friend bool operator==(const LifecycleDecision&, const LifecycleDecision&) = default;
};

// One disruption pass or action: what was considered, what stood in the way, what was done.
struct DisruptionCandidate {
  std::string nodeclaim;
  std::string nodepool;
  std::string outcome;  // "selected", or the precise blocker.
  // The outcome's kind: kNone when it may go (or the method did not look at it); why not
  // otherwise; for an interruption, what the message said.
  Cause cause = Cause::kNone;
  std::string subject;  // The pod, node or NodePool the cause names; empty when none.
  friend bool operator==(const DisruptionCandidate&, const DisruptionCandidate&) = default;
};
struct BudgetState {
  std::string nodepool;
  std::string reason;  // Empty, Drifted, Underutilized.
  std::int64_t allowed = 0;
  std::string detail;  // Which budget decided it, and until when.
  friend bool operator==(const BudgetState&, const BudgetState&) = default;
};
// What a disruption costs and saves, per hour: the nodes it removes, each replacement's first
// choice (the cheapest offering its fleet request may launch), and removed minus those. Set on
// proposed, replacing and executed graceful disruptions; zero and empty otherwise, and in
// decisions recorded before tenon kept them.
struct DisruptionPrices {
  MicroUsdPerHour removed{0};
  std::vector<OfferingChoice> replacements;
  MicroUsdPerHour saving{0};
  friend bool operator==(const DisruptionPrices&, const DisruptionPrices&) = default;
};
struct DisruptionDecision {
  DisruptionMethod method = DisruptionMethod::kEmptiness;
  DisruptionPhase phase = DisruptionPhase::kBlocked;
  std::vector<std::string> nodeclaims;  // Acted on (or to be, once validated).
  std::vector<DisruptionCandidate> candidates;
  std::vector<BudgetState> budgets;
  std::string reason;
  DisruptionPrices prices;
  friend bool operator==(const DisruptionDecision&, const DisruptionDecision&) = default;
};

using DecisionBody = std::variant<ProvisioningDecision, LifecycleDecision, DisruptionDecision>;

struct Decision {
  DecisionId id{0};
  Seq cause{0};
  Instant at;
  DecisionBody body;
  friend bool operator==(const Decision&, const Decision&) = default;
};

struct Output {
  std::vector<Command> commands;
  std::vector<Decision> decisions;
  bool empty() const { return commands.empty() && decisions.empty(); }
  std::size_t size() const { return commands.size() + decisions.size(); }
  friend bool operator==(const Output&, const Output&) = default;
};

}  // namespace tenon
