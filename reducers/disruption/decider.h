// Private to reducers/: the disruption pass's pieces. Each graceful method is a Decider in a
// file of its own (emptiness.cc, soft_expiration.cc, drift.cc, multi_node_consolidation.cc,
// single_node_consolidation.cc), registered in the ordered table of methods.cc; the pass
// (pass.cc) consults them in that order over the candidates candidates.cc gathers, within the
// budgets of budgets.cc, and validation.cc checks a proposal again before execution.cc carries
// it out.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "reducers/disruption/methods.h"
#include "reducers/internal.h"

namespace tenon::core::disruption {

std::string ClockUtc(Instant at);
std::string PriceText(MicroUsdPerHour p);

// `earliest` becomes `at` when `at` is set and earlier, or `earliest` is not set.
void KeepEarlier(std::optional<Instant>& earliest, std::optional<Instant> at);

// The state's nodes with their bound pods, by name, for one lookup per claim.
struct NodeEntry {
  const Node* node = nullptr;
  const PodTable::Bound* bound = nullptr;
};

// A claim one disruption pass looks at (initialized, not deleting, with its NodePool and
// Node) and what the pass reads of it, looked up once: by-name lookups in the state's trees
// miss the cache at every step, and each method, the conditions and drift asked again.
// A Balanced NodePool's totals in one pass, what a move's savings and disruption are measured
// against (balanced.cc): what its nodes consolidation could look at cost an hour, and the
// disruption cost of all its nodes (units of kCostUnit).
struct BalancedTotals {
  std::int64_t cost = 0;  // Micro-dollars an hour.
  std::int64_t disruption = 0;
};

struct ClaimFacts {
  const NodeClaim* claim = nullptr;
  const NodePool* pool = nullptr;
  const Node* node = nullptr;
  const PodTable::Bound* bound = nullptr;    // Its node's pods.
  std::string drifted;                       // Why it has drifted (Drifted), or empty.
  const BalancedTotals* balanced = nullptr;  // Its pool's, when the pool is Balanced.
};
using Claims = std::vector<ClaimFacts>;

// What a pool's budgets allow for one reason, and which budget decided it.
struct Allowance {
  std::int64_t allowed = 0;
  std::string detail;
};

// What one disruption pass looks up once: the state's nodes by name, the claims it looks at,
// and each pool's budget allowance per reason (several methods ask for the same one; nothing
// they read changes while the pass evaluates).
struct Lookups {
  NameIndex<NodeEntry> nodes;
  Claims claims;
  std::map<std::pair<std::string, std::string>, Allowance> allowances;  // (pool, reason)
  // Counted in the same walk over the claims: each pool's nodes and how many of them are
  // already disrupting (what its budgets are taken from), and the claims still launching
  // (consolidation waits for them).
  struct PoolNodes {
    std::int64_t total = 0;
    std::int64_t disrupting = 0;
    bool is_balanced = false;  // Its consolidationPolicy is Balanced: `balanced` is summed.
    BalancedTotals balanced;
  };
  std::map<std::string, PoolNodes, std::less<>> pool_nodes;
  std::size_t launching = 0;
};

// A node the method could disrupt: its claim, node, pool and the pods that would move.
struct Candidate {
  const NodeClaim* claim = nullptr;
  const Node* node = nullptr;
  const NodePool* pool = nullptr;
  const PodTable::Bound* bound = nullptr;  // Its node's pods; `reschedulable` would move.
  std::int64_t cost = 0;   // Karpenter's disruption cost: cheaper to disrupt goes first.
  std::size_t record = 0;  // Its entry in Pass::candidates.
  std::string why;         // Drift and soft expiration: why it qualifies.
  const std::string* drifted = nullptr;      // Why the claim has drifted, or empty.
  const BalancedTotals* balanced = nullptr;  // Its pool's, when the pool is Balanced.
  // Drift under a terminationGracePeriod: only these pods move; the blocked ones stay.
  bool past_blocked_pods = false;
  std::vector<const Pod*> moving;
};

// What disrupting some candidates would take: nothing, or new claims launched first.
struct Plan {
  std::string blocker;                      // Empty when it can go.
  Cause cause = Cause::kNoBetterPlacement;  // The blocker's.
  MicroUsdPerHour removed{0};               // What the nodes it deletes cost.
  std::vector<PlannedClaim> replacements;
  std::string text;  // "delete, saving ...; its pods move: ...", or "replace with ...".
};

struct Pass {
  std::vector<DisruptionCandidate> candidates;
  std::vector<BudgetState> budgets;
  std::vector<std::string> selected;
  std::vector<Plan> plans;          // Per selected claim (Emptiness, Drift) or one for the group.
  std::optional<Instant> runs_out;  // The earliest a candidate's blocker goes away by itself.
};

// Why a candidate cannot go: the text its outcome records, the text's code and what it names.
struct Obstacle {
  Cause cause = Cause::kNone;
  std::string subject;
  std::string text;
  bool empty() const { return text.empty(); }
};

// Records what became of a candidate: the outcome's text, its code and what the code names.
void SetOutcome(DisruptionCandidate& record, std::string text, Cause cause = Cause::kNone,
                std::string subject = {});

// One graceful disruption method as the pass consults it: which claims it looks at, what
// acting on some of them would take, how it chooses, and what its deletions say. Defined in
// the method's own file; the table in methods.cc registers it, and its NodePool budgets are
// read for the reason the table gives its method (what a budget's `reasons:` names: Empty,
// Drifted, Underutilized, or Expired for soft expiration).
struct Decider {
  // Whether the settings turn the method on (null: always on).
  bool (*enabled)(const Settings& settings) = nullptr;
  // Its test of one claim: "" when it is a candidate (setting `c.why` when why it qualifies is
  // worth saying), "-" when the method does not look at it at all, else why it is not one. The
  // shared blockers (nomination, do-not-disrupt, PDBs) are applied after it (Gather).
  std::string (*blocker)(const State& state, Candidate& c) = nullptr;
  // What disrupting `group` together would take.
  Plan (*plan)(const State& state, Simulation& sim,
               const std::vector<const Candidate*>& group) = nullptr;
  // Chooses among its candidates (in disruption-cost order, none blocked so far) what goes
  // now, and records each one's outcome, the selection and its plans in `pass`. `validating`:
  // the candidates are the ones proposed 15 s earlier, taken as one group.
  void (*select)(const State& state, Simulation& sim, std::vector<Candidate>& cands, Pass& pass,
                 Lookups& looked, bool validating) = nullptr;
  // What a node it deletes is, and the reason the deletion records, from the node's
  // "selected: ..." outcome.
  Cause deletion_cause = Cause::kNone;
  std::string (*deletion_reason)(const std::string& outcome) = nullptr;
  // Validation's text for a proposed claim that is no longer a candidate.
  const char* gone = "";
  // Whether a pass that could not act records its blocked candidates (multi-node's are
  // single-node's too, and recorded there).
  bool records_blocked = true;
};

extern const Decider kEmptiness;
extern const Decider kSoftExpiration;
extern const Decider kDrift;
extern const Decider kMultiNodeConsolidation;
extern const Decider kSingleNodeConsolidation;

// ---- Candidates (candidates.cc). ----

// A claim tainted for a disruption that waits on its replacements, or a replacement whose
// candidates are still draining onto it.
bool InReplacement(const State& state, const std::string& claim);
// Whether consolidateAfter has passed since the claim's last pod change (or initialization),
// and, when it has not, why not.
bool Consolidatable(const State& state, const Candidate& c);
std::string ConsolidatableBlocker(const State& state, const Candidate& c);
// Why the candidate may not be disrupted gracefully now, or empty: do-not-disrupt on its node
// or a pod, or a PodDisruptionBudget that would refuse an eviction. `runs_out`: set when the
// blocker goes away by itself at a known time. With `pods` false only the node's own
// do-not-disrupt counts: drift under a terminationGracePeriod (Karpenter's eventual
// disruption) goes ahead past blocked pods, which the drain deletes by the deadline.
Obstacle GracefulBlocker(const State& state, const Candidate& c, std::optional<Instant>* runs_out,
                         bool pods = true);
// The claims a pass looks at, with the state's nodes by name.
Lookups LookUpClaims(State& state);
// Every claim the decider could look at, in disruption-cost order, each with its record in
// `pass`; those blocked are recorded and left out. `only`: just these claims.
std::vector<Candidate> Gather(const State& state, const Claims& claims, const Decider& decider,
                              Pass& pass, const std::vector<std::string>* only);

// ---- Drift (drift.cc). ----

// Why each claim has drifted (ClaimFacts::drifted): Karpenter's drift reason and particulars.
void FindDrift(const State& state, Claims& claims);

// ---- Budgets (budgets.cc). ----

// The budget allowance of each pool for one reason, computed once per pass and recorded in it.
class Budgets {
 public:
  Budgets(const State& state, std::string reason, Pass& pass, Lookups& looked)
      : state_(state), reason_(std::move(reason)), pass_(pass), looked_(looked) {}
  // What the pool's budgets still allow in this pass.
  std::int64_t& Left(const std::string& pool) { return Of(pool).left; }
  // Written once per pool: most of a large pool's candidates are over its budget.
  const std::string& Over(const std::string& pool);

 private:
  struct Entry {
    Allowance allowed;
    std::int64_t left = 0;
    std::string over;  // Over's text, once asked for.
  };
  Entry& Of(const std::string& pool);
  const State& state_;
  std::string reason_;
  Pass& pass_;
  Lookups& looked_;
  std::map<std::string, Entry> pools_;
};

// ---- Consulting the simulation (consult.cc). ----

// The group's pods rescheduled without it. The plan is done (`settled`) when a moving pod
// cannot go (its blocker) or nothing new is needed (a deletion); otherwise `result.claims`
// are the new claims its pods need. `brief`: the new claims need no offerings past the first
// unless there is one on-demand claim (then it runs again in full: the same answer, priced).
// `result` lists the outcomes of the group's pods only: the pending pods' outcomes, which the
// trials do not need, are asked for again (MovesText) only by a plan that can go.
struct Simulated {
  ScheduleResult result;
  Plan plan;
  bool settled = false;
  std::vector<Simulation::Removal> removals;
  bool offerings = true;  // What `result` was asked with.
};
Simulated Simulate(const State& state, Simulation& sim, const std::vector<const Candidate*>& group,
                   bool brief);
// "ns/a -> node-1, ns/b -> #0": where every pod of the simulation went, the pending pods too.
std::string MovesText(Simulation& sim, const Simulated& simulated);
// One node per command, as Karpenter's single-node consolidation and drift: candidates in
// order, each planned on its own by the decider; the first within its pool's budget that can go
// is selected and the rest wait for the next pass unsimulated.
void SelectFirst(const State& state, Simulation& sim, const Decider& decider,
                 const std::vector<Candidate>& cands, Pass& pass, Budgets& budgets);

// ---- Eventual disruption: drift and soft expiration (drift.cc). ----

// Every pod must fit somewhere; replacements are launched whatever they cost.
Plan PlanReplacing(const State& state, Simulation& sim, const std::vector<const Candidate*>& group);
// One candidate per command, the empty ones first, then the longest a candidate (`since`);
// the first within its pool's budget whose pods all fit somewhere is selected.
void SelectEventual(const State& state, Simulation& sim, const Decider& decider,
                    std::int64_t (*since)(const Candidate& c), std::vector<Candidate>& cands,
                    Pass& pass, Lookups& looked);
std::string EventualDeletionReason(const std::string& outcome);

// ---- Consolidation of underutilized nodes (consolidation.cc). ----

// Multi- and single-node consolidation's test of one claim.
std::string ConsolidationBlocker(const State& state, Candidate& c);
// Every pod must fit on the rest of the cluster, or on one new claim strictly cheaper than the
// group.
Plan PlanCheaper(const State& state, Simulation& sim, const std::vector<const Candidate*>& group);
// Records each candidate as waiting, and returns true, while the cluster is not settled.
bool AwaitSettled(const std::vector<Candidate>& cands, Pass& pass, const Lookups& looked);
std::string ConsolidationDeletionReason(const std::string& outcome);

// ---- Balanced consolidation (balanced.cc). ----

inline constexpr std::int64_t kBalancedK = 2;  // A move passes at a score of 1/k.
// A move's score against its pool's totals, and whether it passes.
struct BalancedScore {
  bool approved = false;
  std::int64_t savings = 0;     // Micro-dollars an hour.
  std::int64_t disruption = 0;  // Units of kCostUnit.
  BalancedTotals totals;
  // "score 2.81 >= threshold 0.50 (k: 2, savings 12.5% of the NodePool's cost, disruption 4.4%
  // of its disruption cost)"; the score rounded down.
  std::string Text() const;
};
BalancedScore ScoreMove(std::int64_t savings, std::int64_t disruption,
                        const BalancedTotals& totals);
// A node's disruption when it goes: 1, and its moving pods' eviction costs (at least 0 each).
std::int64_t MoveDisruption(const Candidate& c);
// The score of deleting the candidate outright when even that does not pass its pool's score:
// single-node consolidation does not simulate such a node (Karpenter's CanPassThreshold).
std::optional<BalancedScore> DeleteWouldFail(const Candidate& c);
// Scores `group`, saving `savings`, for each Balanced pool among its candidates, each credited
// with the savings in proportion to what its nodes cost. Why the first pool that refuses it
// refuses, or empty; `scores` gets every pool's score.
std::string ScoreGroup(const std::vector<const Candidate*>& group, MicroUsdPerHour savings,
                       std::string& scores);

// ---- Forceful expiration (expiration.cc). ----

// Karpenter v1's expiration of the claims AdvanceLifecycle found expired: unless soft
// expiration is asked for, each starts terminating at once, unbudgeted.
void Expire(State& state, Seq seq, const std::vector<const NodeClaim*>& expired, Output& out);

// ---- The pass (pass.cc), validation (validation.cc) and execution (execution.cc). ----

// Multi-node and single-node consolidation look at the same candidates with the same blockers:
// the first to gather them in a pass leaves them here for the other.
struct Gathered {
  bool filled = false;
  Pass pass;
  std::vector<Candidate> cands;
};
// Candidates for `method`, what blocks each, and which the budgets let go now. `only`
// (validation) restricts it to the claims proposed 15 s earlier, taken as one group.
Pass Evaluate(const State& state, const DisruptionMethodInfo& method, Simulation& sim,
              Lookups& looked, const std::vector<std::string>* only = nullptr,
              Gathered* shared = nullptr);
// What carrying out `plans` removes, their replacements' first choices, and the saving at
// those prices.
DisruptionPrices Prices(const std::vector<Plan>& plans);
// The proposal pending since 15 s ago, evaluated again: carried out when nothing changed.
void Validate(State& state, Lookups& looked, Seq seq, Output& out);
// Carries out a validated plan: with nothing to launch, the candidates are deleted now;
// otherwise they are tainted, the replacements launched, and the deletion waits for them.
void Execute(State& state, Seq seq, DisruptionMethod method, const std::vector<std::string>& claims,
             const Plan& plan, const std::string& reason, Output& out);
// Disruptions waiting on replacements, moved on (execution.cc).
void AdvanceReplacements(State& state, Seq seq, Output& out);

}  // namespace tenon::core::disruption
