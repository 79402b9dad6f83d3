// Disruption, as Karpenter's disruption controller does it: expiration, and the 10 s disruption
// pass with emptiness, drift, consolidation, budgets and the 15 s validation (interruption
// messages are interruption.cc's).
//
// Expiration is forceful: it starts termination at once and is not budgeted (the drain still
// honours PDBs until the terminationGracePeriod). Emptiness is
// graceful: a pass proposes the empty candidates the budgets allow, waits 15 s, re-checks
// candidates and budgets, and only then deletes, recording every step and, for candidates it
// leaves alone, the precise blocker.
#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <limits>
#include <optional>
#include <set>
#include <span>

#include "reducers/cron.h"
#include "reducers/internal.h"
#include "reducers/vocabulary.h"

namespace tenon::core {
namespace {

std::string ClockUtc(Nanos at) {
  return ClockText(at) + " UTC";
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

// A claim tainted for a disruption that waits on its replacements, or a replacement whose
// candidates are still draining onto it.
bool InReplacement(const State& state, const std::string& claim) {
  return std::any_of(state.replacing.begin(), state.replacing.end(), [&](const auto& w) {
    return std::find(w.candidates.begin(), w.candidates.end(), claim) != w.candidates.end() ||
           (w.draining &&
            std::find(w.replacements.begin(), w.replacements.end(), claim) != w.replacements.end());
  });
}

struct Allowance {
  std::int64_t allowed = 0;
  std::string detail;
};

// The state's nodes with their bound pods, by name, for one lookup per claim.
struct NodeEntry {
  const Node* node = nullptr;
  const PodTable::Bound* bound = nullptr;
};

// Karpenter's rule: the most restrictive active budget for `reason` wins, minus the pool's
// nodes already deleting or not ready.
Allowance Allowed(const State& state, const NodePool& pool, const std::string& reason,
                  const NameIndex<NodeEntry>& nodes) {
  std::int64_t total = 0;
  std::int64_t disrupting = 0;
  for (const auto& [name, claim] : state.nodeclaims) {
    if (claim.nodepool != pool.name || claim.node_name.empty()) continue;
    ++total;
    const NodeEntry* node = nodes.Find(claim.node_name);
    if (claim.deleting || node == nullptr || !node->node->ready || InReplacement(state, name)) {
      ++disrupting;
    }
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
        window = ", schedule '" + b.schedule + "' until " + ClockUtc(*fired + b.duration);
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

// Karpenter's limits: multi-node consolidation looks at the cheapest 100 candidates to
// disrupt; spot-to-spot replacement needs 15 cheaper instance types and launches from those.
constexpr std::size_t kMultiNodeCandidatesMax = 100;
constexpr std::size_t kSpotToSpotTypesMin = 15;

bool IsConsolidation(DisruptionMethod method) {
  return method == DisruptionMethod::kMultiNodeConsolidation ||
         method == DisruptionMethod::kSingleNodeConsolidation;
}

std::string PriceText(MicroUsdPerHour p) {
  return DollarsText(p) + "/h";
}

// A node the method could disrupt: its claim, node, pool and the pods that would move.
struct Candidate {
  const NodeClaim* claim = nullptr;
  const Node* node = nullptr;
  const NodePool* pool = nullptr;
  const PodTable::Bound* bound = nullptr;  // Its node's pods; `reschedulable` would move.
  std::int64_t cost = 0;   // Karpenter's disruption cost: cheaper to disrupt goes first.
  std::size_t record = 0;  // Its entry in Pass::candidates.
  std::string why;         // Drift and soft expiration: why it qualifies.
  const std::string* drifted = nullptr;  // Why the claim has drifted, or empty.
  // Drift under a terminationGracePeriod: only these pods move; the blocked ones stay.
  bool past_blocked_pods = false;
  std::vector<const Pod*> moving;
};

// What drift compares each claim with, computed once per pass rather than once per claim: each
// NodePool's template hash and requirements (one Requirements per entry), each EC2NodeClass's
// hash, each instance type's catalog entry (the claims name a few types of a large catalog).
class DriftReference {
 public:
  struct Pool {
    std::uint64_t hash = 0;
    std::vector<Requirements> requirements;
  };
  const Pool& Of(const NodePool& pool) {
    if (&pool == last_pool_) return *last_;  // A pool's claims are often neighbours.
    auto [it, fresh] = pools_.try_emplace(&pool);
    last_pool_ = &pool;
    last_ = &it->second;
    if (fresh) {
      it->second.hash = TemplateHash(pool);
      for (const auto& r : pool.requirements) it->second.requirements.emplace_back().Add(r);
    }
    return it->second;
  }
  std::uint64_t Of(const NodeClass& nodeclass) {
    auto [it, fresh] = classes_.try_emplace(&nodeclass, 0);
    if (fresh) it->second = NodeClassHash(nodeclass);
    return it->second;
  }
  // The EC2NodeClass named `name`, or null (the last one found is asked for again first).
  const NodeClass* Class(const State& state, const std::string& name) {
    if (last_class_ != nullptr && last_class_->name == name) return last_class_;
    auto it = state.nodeclasses.find(name);
    if (it == state.nodeclasses.end()) return nullptr;
    last_class_ = &it->second;
    return last_class_;
  }
  const CatalogEntry* Type(const State& state, const std::string& name) {
    auto [it, fresh] = types_.try_emplace(name, nullptr);
    if (fresh) {
      auto entry = state.catalog->find(name);
      if (entry != state.catalog->end()) it->second = &entry->second;
    }
    return it->second;
  }

 private:
  std::map<std::string, const CatalogEntry*, std::less<>> types_;
  std::map<const NodePool*, Pool> pools_;
  std::map<const NodeClass*, std::uint64_t> classes_;
  const NodePool* last_pool_ = nullptr;
  const Pool* last_ = nullptr;
  const NodeClass* last_class_ = nullptr;
};

// What disrupting some candidates would take: nothing, or new claims launched first.
struct Plan {
  std::string blocker;         // Empty when it can go.
  MicroUsdPerHour removed{0};  // What the nodes it deletes cost.
  std::vector<PlannedClaim> replacements;
  std::string text;  // "delete, saving ...; its pods move: ...", or "replace with ...".
};

struct Pass {
  std::vector<DisruptionCandidate> candidates;
  std::vector<BudgetState> budgets;
  std::vector<std::string> selected;
  std::vector<Plan> plans;  // Per selected claim (Emptiness, Drift) or one for the group.
  Nanos runs_out{0};        // The earliest a candidate's blocker goes away by itself, or 0.
};

// `earliest` becomes `at` when `at` is set and earlier (0: not set).
void KeepEarlier(Nanos& earliest, Nanos at) {
  if (at.value != 0 && (earliest.value == 0 || at < earliest)) earliest = at;
}

// A label of a claim's node as far as its NodePool's requirements are concerned: its instance
// type, zone, capacity type and pool, else what the node shows, else the instance type's.
std::optional<std::string_view> ClaimLabel(const NodeClaim& claim, const Node* node,
                                           const CatalogEntry* entry, const std::string& key) {
  // As string_views: their lengths are known, so most comparisons end at the size.
  if (key == std::string_view(label::kInstanceType)) return claim.instance_type;
  if (key == std::string_view(label::kZone)) return claim.zone;
  if (key == std::string_view(label::kCapacityType)) return claim.capacity_type;
  if (key == std::string_view(label::kNodePool)) return claim.nodepool;
  if (node != nullptr) {
    if (auto value = node->labels.Lookup(key)) return value;
  }
  if (entry != nullptr) {
    if (auto it = entry->labels.find(key); it != entry->labels.end()) return it->second;
  }
  return std::nullopt;
}

// Why a claim no longer matches what it would be launched as today, or empty: Karpenter's
// drift reason (NodePoolDrifted, AMIDrift, ...), a colon, and the particulars. The kube adapter
// writes the reason as the Drifted condition's reason.
std::string Drifted(const State& state, const NodeClaim& claim, const NodePool& pool,
                    DriftReference& reference, const Node* node) {
  const DriftReference::Pool& now = reference.Of(pool);
  if (claim.nodepool_hash != 0 && claim.nodepool_hash != now.hash) {
    return "NodePoolDrifted: NodePool " + pool.name +
           " template changed (labels, taints or nodeClassRef)";
  }
  if (const NodeClass* nc = reference.Class(state, claim.nodeclass); nc != nullptr) {
    const NodeClass& c = *nc;
    if (claim.nodeclass_hash != 0 && claim.nodeclass_hash != reference.Of(c)) {
      return "NodeClassDrift: EC2NodeClass " + claim.nodeclass + " changed";
    }
    auto has = [](const std::vector<std::string>& ids, const std::string& id) {
      return std::find(ids.begin(), ids.end(), id) != ids.end();
    };
    if (!c.amis.empty() && !claim.image_id.empty() && !has(c.amis, claim.image_id)) {
      return "AMIDrift: AMI " + claim.image_id + " is no longer selected by EC2NodeClass " + c.name;
    }
    if (!c.subnets.empty() && !claim.subnet_id.empty() && !has(c.subnets, claim.subnet_id)) {
      return "SubnetDrift: subnet " + claim.subnet_id + " is no longer selected by EC2NodeClass " +
             c.name;
    }
    const auto& mine = claim.security_groups;
    const auto& now = c.security_groups;
    if (!now.empty() && !mine.empty() &&
        (mine.size() != now.size() ||
         !std::is_permutation(mine.begin(), mine.end(), now.begin()))) {
      std::vector<std::string> sorted_mine = mine, sorted_now = now;
      std::sort(sorted_mine.begin(), sorted_mine.end());
      std::sort(sorted_now.begin(), sorted_now.end());
      return "SecurityGroupDrift: security groups [" + Join(sorted_mine) +
             "] differ from EC2NodeClass " + c.name + "'s [" + Join(sorted_now) + "]";
    }
  }
  const CatalogEntry* type = reference.Type(state, claim.instance_type);
  if (!claim.instance_type.empty() && type == nullptr) {
    return "InstanceTypeNotFound: instance type " + claim.instance_type + " is no longer offered";
  }
  for (const Requirements& one : now.requirements) {
    bool ok =
        one.Matches([&](const std::string& key) { return ClaimLabel(claim, node, type, key); });
    if (!ok) return "RequirementsDrifted: requirement " + one.Describe() + " no longer satisfied";
  }
  return {};
}

// The pod's do-not-disrupt, including the duration form (protected for that long after the
// pod was created: `runs_out` is then when).
bool Protected(const State& state, const Pod& pod, std::string* until, Nanos* runs_out) {
  if (!DoNotDisrupt(pod, state.now)) return false;
  if (pod.do_not_disrupt_for.value > 0) {
    *runs_out = pod.created + pod.do_not_disrupt_for;
    *until = " until " + ClockUtc(*runs_out);
  }
  return true;
}

// Why the pod may not be evicted now, or empty: do-not-disrupt (`runs_out`: set when that
// goes away by itself at a known time), or PodDisruptionBudgets that would refuse it.
std::string ProtectedText(const State& state, const Candidate& c, const Pod& pod, Nanos* runs_out) {
  std::string until;
  if (c.bound->do_not_disrupt == 0 || !Protected(state, pod, &until, runs_out)) return {};
  return "pod " + PodKey(pod.ns, pod.name) + " has karpenter.sh/do-not-disrupt" + until;
}
std::string PdbRefusal(const State& state, const Pod& pod) {
  if (state.pdbs.empty()) return {};
  std::vector<const PodDisruptionBudget*> matching;
  for (const auto& [key, pdb] : state.pdbs) {
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

// Why a candidate cannot go: the text its outcome records, the text's code and what it names.
struct Obstacle {
  Cause cause = Cause::kNone;
  std::string subject;
  std::string text;
  bool empty() const { return text.empty(); }
};

// Records what became of a candidate: the outcome's text, its code and what the code names.
void SetOutcome(DisruptionCandidate& record, std::string text, Cause cause = Cause::kNone,
                std::string subject = {}) {
  record.outcome = std::move(text);
  record.cause = cause;
  record.subject = std::move(subject);
}

// Why the candidate may not be disrupted gracefully now, or empty: do-not-disrupt on its node
// or a pod, or a PodDisruptionBudget that would refuse an eviction. `runs_out`: set when the
// blocker goes away by itself at a known time. With `pods` false only the node's own
// do-not-disrupt counts: drift under a terminationGracePeriod (Karpenter's eventual
// disruption) goes ahead past blocked pods, which the drain deletes by the deadline.
Obstacle GracefulBlocker(const State& state, const Candidate& c, Nanos* runs_out,
                         bool pods = true) {
  if (c.node->do_not_disrupt) {
    return {Cause::kDoNotDisrupt, c.node->name,
            "node " + c.node->name + " has karpenter.sh/do-not-disrupt"};
  }
  if (!pods) return {};
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

// Drift past blocked pods: the pods that can be evicted now, the ones its simulation moves
// (Karpenter's currently reschedulable pods); the rest wait on the node for the deadline.
std::vector<const Pod*> EvictableNow(const State& state, const Candidate& c) {
  std::vector<const Pod*> out;
  for (const Pod* pod : c.bound->reschedulable_in_placement_order) {
    Nanos ignored{0};
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
  Nanos lifetime = c.pool->expire_after;
  if (lifetime.value <= 0) return pods;
  Nanos left = std::clamp(lifetime - (state.now - c.claim->created), Nanos{0}, lifetime);
  return static_cast<std::int64_t>(static_cast<__int128>(pods) * left.value / lifetime.value);
}

// Whether consolidateAfter has passed since the claim's last pod change (or initialization).
bool Consolidatable(const State& state, const Candidate& c) {
  if (c.pool->consolidate_after.value < 0) return false;
  Nanos since = std::max(c.claim->initialized, c.claim->last_pod_change);
  return state.now - since >= c.pool->consolidate_after;
}

std::string ConsolidatableBlocker(const State& state, const Candidate& c) {
  if (Consolidatable(state, c)) return {};
  if (c.pool->consolidate_after.value < 0) return "consolidateAfter is Never";
  Nanos since = std::max(c.claim->initialized, c.claim->last_pod_change);
  return "not consolidatable until " + ClockUtc(since + c.pool->consolidate_after) +
         " (consolidateAfter " + DurationText(c.pool->consolidate_after) + ")";
}

// The methods, for tests made once per claim of a pass.
enum class Method { kEmptiness, kDrift, kSoftExpiration, kConsolidation };
Method KindOf(DisruptionMethod method) {
  if (method == DisruptionMethod::kEmptiness) return Method::kEmptiness;
  if (method == DisruptionMethod::kDrift) return Method::kDrift;
  if (method == DisruptionMethod::kSoftExpiration) return Method::kSoftExpiration;
  assert(IsConsolidation(method));
  return Method::kConsolidation;
}

// The method's own test of one claim: empty when it is a candidate, "-" when the method does
// not look at it at all, else why it is not one.
std::string MethodBlocker(const State& state, Method method, Candidate& c) {
  // consolidateAfter: Never turns emptiness and consolidation off for the pool: they do not
  // look at its nodes, so their passes record nothing about them.
  if (c.pool->consolidate_after.value < 0 &&
      (method == Method::kEmptiness || method == Method::kConsolidation)) {
    return "-";
  }
  const bool empty = c.bound->reschedulable.empty();
  if (method == Method::kEmptiness) return empty ? ConsolidatableBlocker(state, c) : "-";
  if (method == Method::kDrift) {
    if (c.drifted->empty()) return "-";
    c.why = "drifted (" + *c.drifted + ")";
    return "";
  }
  if (method == Method::kSoftExpiration) {
    Nanos after = c.pool->expire_after;
    if (after.value < 0 || state.now - c.claim->created < after) return "-";
    c.why = "expired (created " + DurationText(state.now - c.claim->created) +
            " ago, expireAfter " + DurationText(after) + ")";
    return "";
  }
  if (empty) return "-";  // Emptiness's.
  if (c.pool->consolidation_policy == ConsolidationPolicy::kWhenEmpty) {
    return "consolidationPolicy is WhenEmpty";
  }
  return ConsolidatableBlocker(state, c);
}

std::string MovesText(const ScheduleResult& result) {
  std::string where;
  for (const auto& outcome : result.pods) {
    where += (where.empty() ? "" : ", ") + outcome.pod + " -> " + outcome.target;
  }
  return where;
}

// Re-simulates scheduling without `group`. Consolidation: every pod must fit on the rest of
// the cluster, or on one new claim strictly cheaper than the group (pinned to spot when it may
// be spot; spot replacing spot only behind the SpotToSpotConsolidation gate). Drift: every pod
// must fit somewhere; replacements are launched whatever they cost.
// A destination Karpenter's disruption does not move pods to: a NodeClaim not initialized yet
// (in flight, or its node not Ready). A node tenon does not manage counts as initialized.
bool Uninitialized(const State& state, const std::string& target) {
  if (target.empty() || target.front() == '#') return false;  // A new claim of the answer.
  if (auto claim = state.nodeclaims.find(target); claim != state.nodeclaims.end()) {
    return claim->second.phase != ClaimPhase::kInitialized;
  }
  bool uninitialized = false;
  state.claims_by_node.ForEach(target, [&](const std::string& name) {
    uninitialized = uninitialized || state.nodeclaims.at(name).phase != ClaimPhase::kInitialized;
  });
  return uninitialized;
}

// The replacement's instance types, cheapest offering first.
std::vector<std::string> TypesByPrice(const PlannedClaim& replacement) {
  std::map<std::string, MicroUsdPerHour> cheapest;
  for (const auto& o : replacement.offerings) {
    auto [it, fresh] = cheapest.try_emplace(o.instance_type, o.price);
    if (!fresh) it->second = std::min(it->second, o.price);
  }
  std::vector<std::pair<MicroUsdPerHour, std::string>> order;
  for (const auto& [type, price] : cheapest) order.emplace_back(price, type);
  std::sort(order.begin(), order.end());
  std::vector<std::string> types;
  for (auto& [price, type] : order) types.push_back(std::move(type));
  return types;
}

// How many of `types` (cheapest first) the replacement needs for its requirements' minValues,
// counted as Karpenter's SatisfiesMinValues counts them (every value the types have); none
// when all of them are not enough.
std::optional<std::size_t> MinValuesNeed(const State& state, const PlannedClaim& replacement,
                                         const std::vector<std::string>& types) {
  std::vector<const Requirement*> mins;
  for (const auto& r : replacement.requirements) {
    if (r.min_values > 0) mins.push_back(&r);
  }
  if (mins.empty()) return 0;
  std::map<std::string, std::set<std::string>> seen;
  for (std::size_t i = 0; i < types.size(); ++i) {
    auto entry = state.catalog->find(types[i]);
    for (const Requirement* r : mins) {
      std::set<std::string>& values = seen[r->key];
      if (r->key == label::kInstanceType) {
        values.insert(types[i]);
      } else if (r->key == label::kZone || r->key == label::kCapacityType) {
        for (const auto& o : replacement.offerings) {
          if (o.instance_type == types[i]) {
            values.insert(r->key == label::kZone ? o.zone : o.capacity_type);
          }
        }
      } else if (entry != state.catalog->end()) {
        if (auto v = entry->second.labels.find(r->key); v != entry->second.labels.end()) {
          values.insert(v->second);
        }
      }
    }
    if (std::all_of(mins.begin(), mins.end(), [&](const Requirement* r) {
          return static_cast<std::int32_t>(seen[r->key].size()) >= r->min_values;
        })) {
      return i + 1;
    }
  }
  return std::nullopt;
}

Plan Consult(const State& state, Simulation& sim, DisruptionMethod method,
             const std::vector<const Candidate*>& group) {
  std::vector<Simulation::Removal> removals;
  MicroUsdPerHour total{0};
  bool all_spot = true;
  for (const Candidate* c : group) {
    removals.push_back({c->claim, c->node,
                        c->past_blocked_pods ? std::span<const Pod* const>(c->moving)
                                             : c->bound->reschedulable_in_placement_order,
                        true});
    total += c->claim->price;
    all_spot = all_spot && c->claim->capacity_type == kCapacitySpot;
  }
  // Spot nodes consolidated without spot-to-spot: a spot replacement is refused whatever it
  // offers, so the simulation's claims need no offerings past the first unless the one
  // replacement would be on-demand (then it runs again in full: the same answer, priced).
  const bool brief =
      IsConsolidation(method) && all_spot && !state.settings.spot_to_spot_consolidation;
  ScheduleResult result = sim.Without(removals, !brief);
  if (brief && result.claims.size() == 1 && result.claims.front().capacity_type != kCapacitySpot) {
    result = sim.Without(removals);
  }
  Plan plan;
  plan.removed = total;
  for (const auto& outcome : result.pods) {
    // A pending pod that fits nowhere does not hold the move back (Karpenter's
    // AllNonPendingPodsScheduled); a moving pod that fits nowhere does.
    if (state.pods.Provisionable().contains(outcome.pod)) continue;
    if (outcome.target.empty()) {
      plan.blocker = "pod " + outcome.pod + " would not reschedule: " + outcome.reason;
      return plan;
    }
    if (Uninitialized(state, outcome.target)) {
      plan.blocker =
          "pod " + outcome.pod + " would schedule against uninitialized " + outcome.target;
      return plan;
    }
  }
  if (result.claims.empty()) {
    std::string moves = MovesText(result);
    plan.text =
        "delete, saving " + PriceText(total) + (moves.empty() ? "" : "; its pods move: ") + moves;
    return plan;
  }
  if (method == DisruptionMethod::kDrift || method == DisruptionMethod::kSoftExpiration) {
    plan.replacements = std::move(result.claims);
    plan.text = "replace with " + std::to_string(plan.replacements.size()) +
                " new node(s) first; its pods move: " + MovesText(result);
    return plan;
  }
  if (result.claims.size() > 1) {
    plan.blocker = "its pods need " + std::to_string(result.claims.size()) + " new nodes";
    return plan;
  }
  PlannedClaim replacement = std::move(result.claims.front());
  assert(!replacement.offerings.empty());
  const OfferingChoice cheapest = replacement.offerings.front();
  bool spot_to_spot = all_spot && replacement.capacity_type == kCapacitySpot;
  if (spot_to_spot && !state.settings.spot_to_spot_consolidation) {
    plan.blocker =
        "spot-to-spot consolidation is off (feature gate SpotToSpotConsolidation): "
        "a spot node is not replaced by another spot node";
    return plan;
  }
  // Strictly cheaper, and by at least the configured saving (off by default).
  const Settings& s = state.settings;
  std::int64_t margin = std::max<std::int64_t>(
      s.consolidation_min_savings.value, total.value * s.consolidation_min_savings_percent / 100);
  MicroUsdPerHour ceiling{total.value - std::max<std::int64_t>(margin, 1)};
  // Karpenter's price filter: an instance type stays only if its dearest offering the launch
  // could take is cheaper than the nodes, so no choice EC2 makes costs more than them.
  std::map<std::string, MicroUsdPerHour> worst;
  for (const auto& o : replacement.offerings) {
    auto [it, fresh] = worst.try_emplace(o.instance_type, o.price);
    if (!fresh) it->second = std::max(it->second, o.price);
  }
  std::erase_if(replacement.offerings,
                [&](const OfferingChoice& o) { return worst.at(o.instance_type) > ceiling; });
  if (replacement.offerings.empty()) {
    plan.blocker = "no cheaper replacement: cheapest fit " + cheapest.instance_type + " costs " +
                   PriceText(cheapest.price) + ", the node" +
                   (group.size() > 1 ? "s cost " : " costs ") + PriceText(total) +
                   (margin > 0 ? " and savings under the minimum do not count" : "");
    return plan;
  }
  std::vector<std::string> types = TypesByPrice(replacement);
  std::optional<std::size_t> need = MinValuesNeed(state, replacement, types);
  if (!need) {
    plan.blocker = "no cheaper replacement that meets the NodePool's minValues (" +
                   std::to_string(types.size()) + " cheaper instance types)";
    return plan;
  }
  // Karpenter's filterOutSameInstanceType: nodes replaced together by one of a type among
  // them must save more than keeping the cheapest of that type (deleting the others moves
  // fewer pods).
  if (group.size() > 1) {
    std::optional<MicroUsdPerHour> kept;
    for (const Candidate* c : group) {
      if (std::find(types.begin(), types.end(), c->claim->instance_type) == types.end()) continue;
      if (!kept || c->claim->price < *kept) kept = c->claim->price;
    }
    if (kept) {
      std::map<std::string, MicroUsdPerHour> cheapest_of;
      for (const auto& o : replacement.offerings) cheapest_of.try_emplace(o.instance_type, o.price);
      std::erase_if(replacement.offerings, [&](const OfferingChoice& o) {
        return cheapest_of.at(o.instance_type) >= *kept;
      });
      if (replacement.offerings.empty()) {
        plan.blocker = "the replacement would be of a type being removed, for no less than " +
                       PriceText(*kept) + " (keeping that node costs no more)";
        return plan;
      }
      types = TypesByPrice(replacement);
    }
  }
  if (spot_to_spot && group.size() == 1) {
    if (types.size() < kSpotToSpotTypesMin) {
      plan.blocker = "spot-to-spot replacement needs " + std::to_string(kSpotToSpotTypesMin) +
                     " cheaper instance types, " + std::to_string(types.size()) + " found";
      return plan;
    }
    // The 15 cheapest, or as many as minValues needs.
    types.resize(std::max<std::size_t>(kSpotToSpotTypesMin, *need));
    std::erase_if(replacement.offerings, [&](const OfferingChoice& o) {
      return std::find(types.begin(), types.end(), o.instance_type) == types.end();
    });
  }
  MicroUsdPerHour dearest = replacement.offerings.front().price;
  for (const auto& o : replacement.offerings) dearest = std::max(dearest, o.price);
  std::set<std::string> kept_types;
  for (const auto& o : replacement.offerings) kept_types.insert(o.instance_type);
  plan.text = "replace with one " + replacement.capacity_type + " node (" +
              replacement.offerings.front().instance_type + " from " +
              PriceText(replacement.offerings.front().price) + ", " +
              std::to_string(kept_types.size()) + " types), saving at least " +
              PriceText(total - dearest) + "; its pods move: " + MovesText(result);
  plan.replacements.push_back(std::move(replacement));
  return plan;
}

// A claim one disruption pass looks at (initialized, not deleting, with its NodePool and
// Node) and what the pass reads of it, looked up once: by-name lookups in the state's trees
// miss the cache at every step, and each method, the conditions and drift asked again.
struct ClaimFacts {
  NodeClaim* claim = nullptr;
  const NodePool* pool = nullptr;
  const Node* node = nullptr;
  const PodTable::Bound* bound = nullptr;  // Its node's pods.
  std::string drifted;                     // Why it has drifted (Drifted), or empty.
};
using Claims = std::vector<ClaimFacts>;

// What one disruption pass looks up once: the state's nodes by name, the claims it looks at,
// and each pool's budget allowance per reason (several methods ask for the same one; nothing
// they read changes while the pass evaluates).
struct Lookups {
  NameIndex<NodeEntry> nodes;
  Claims claims;
  std::map<std::pair<std::string, std::string>, Allowance> allowances;  // (pool, reason)
};

NameIndex<NodeEntry> IndexNodes(const State& state) {
  NameIndex<NodeEntry> index;
  BoundWalk bound(state.pods);
  index.Reserve(state.nodes.size());
  for (const auto& [name, node] : state.nodes) index.Add(name, {&node, &bound.At(name)});
  index.Seal();
  return index;
}

Lookups LookUpClaims(State& state) {
  Lookups out;
  out.nodes = IndexNodes(state);
  DriftReference reference;
  const NodePool* pool = nullptr;  // PoolOf's last.
  for (auto& [name, claim] : state.nodeclaims) {
    if (claim.deleting || claim.phase != ClaimPhase::kInitialized) continue;
    PoolOf(state, claim, pool);
    const NodeEntry* node = out.nodes.Find(claim.node_name);
    if (pool == nullptr || node == nullptr) continue;
    out.claims.push_back({&claim, pool, node->node, node->bound,
                          Drifted(state, claim, *pool, reference, node->node)});
  }
  return out;
}

// Every claim the method could look at, in disruption-cost order, each with its record.
std::vector<Candidate> Gather(const State& state, const Claims& claims, DisruptionMethod method,
                              Pass& pass, const std::vector<std::string>* only) {
  const Method kind = KindOf(method);
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
    Obstacle blocker{Cause::kPolicy, claim.nodepool, MethodBlocker(state, kind, c)};
    if (blocker.text == "-") continue;
    Nanos runs_out{0};
    if (blocker.empty() && claim.nominated_until > state.now) {
      blocker = {Cause::kNominated, "",
                 "nominated for pending pods until " + ClockUtc(claim.nominated_until)};
      runs_out = claim.nominated_until;
    }
    // Karpenter's eventual disruption: drift of a claim whose pool sets a
    // terminationGracePeriod is not held back by its pods.
    c.past_blocked_pods = kind == Method::kDrift && c.pool->termination_grace_period.value >= 0;
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
  // Disruption-cost order, ties in the order gathered: a sort of (cost, position) keys, then
  // one move of each candidate.
  std::vector<std::pair<std::int64_t, std::size_t>> order;
  order.reserve(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) order.emplace_back(out[i].cost, i);
  std::sort(order.begin(), order.end());
  std::vector<Candidate> sorted;
  sorted.reserve(out.size());
  for (const auto& [cost, i] : order) sorted.push_back(std::move(out[i]));
  return sorted;
}

// The budget allowance of each pool, computed once per pass and recorded.
class Budgets {
 public:
  Budgets(const State& state, std::string reason, Pass& pass, Lookups& looked)
      : state_(state), reason_(std::move(reason)), pass_(pass), looked_(looked) {}
  // What the pool's budgets still allow in this pass.
  std::int64_t& Left(const std::string& pool) { return Of(pool).left; }
  // Written once per pool: most of a large pool's candidates are over its budget.
  const std::string& Over(const std::string& pool) {
    Entry& e = Of(pool);
    if (e.over.empty()) {
      e.over = "over budget: " + reason_ + " allows " + std::to_string(e.allowed.allowed) +
               " now (" + e.allowed.detail + ")";
    }
    return e.over;
  }

 private:
  struct Entry {
    Allowance allowed;
    std::int64_t left = 0;
    std::string over;  // Over's text, once asked for.
  };
  Entry& Of(const std::string& pool) {
    auto [it, fresh] = pools_.try_emplace(pool);
    if (fresh) {
      auto [known, computed] = looked_.allowances.try_emplace({pool, reason_});
      if (computed) {
        known->second = Allowed(state_, state_.nodepools.at(pool), reason_, looked_.nodes);
      }
      it->second.allowed = known->second;
      it->second.left = it->second.allowed.allowed;
      pass_.budgets.push_back(
          {pool, reason_, it->second.allowed.allowed, it->second.allowed.detail});
    }
    return it->second;
  }
  const State& state_;
  std::string reason_;
  Pass& pass_;
  Lookups& looked_;
  std::map<std::string, Entry> pools_;
};

// Consolidation waits, as Karpenter's disruption waits for its cluster state to sync, while a
// NodeClaim is not launched yet: what it will be is not known. Pending pods do not hold it back:
// each simulation places them too, and only a moving pod that fits nowhere, or would land on a
// node not initialized yet, blocks a move.
std::string Unsettled(const State& state) {
  std::size_t launching = std::count_if(
      state.nodeclaims.begin(), state.nodeclaims.end(),
      [](const auto& e) { return !e.second.deleting && e.second.phase == ClaimPhase::kPending; });
  if (launching == 0) return {};
  return "cluster not settled: " + std::to_string(launching) + " NodeClaims not launched yet";
}

// Multi-node: the longest prefix (at least two) of the cheapest-to-disrupt candidates within
// budget that can go together, by binary search as Karpenter does.
void EvaluateMultiNode(const State& state, Simulation& sim, std::vector<Candidate>& cands,
                       Pass& pass, Lookups& looked, bool validating) {
  Budgets budgets(state, DisruptionReason(DisruptionMethod::kSingleNodeConsolidation), pass,
                  looked);
  std::vector<const Candidate*> within;
  for (const Candidate& c : cands) {
    std::int64_t& left = budgets.Left(c.claim->nodepool);
    if (left <= 0) {
      SetOutcome(pass.candidates[c.record], budgets.Over(c.claim->nodepool),
                 Cause::kDisruptionBudget, c.claim->nodepool);
      continue;
    }
    if (within.size() >= kMultiNodeCandidatesMax) {
      SetOutcome(pass.candidates[c.record], "beyond the 100 cheapest to disrupt",
                 Cause::kNotConsidered);
      continue;
    }
    --left;
    within.push_back(&c);
  }
  std::size_t best = 0;
  Plan chosen;
  if (validating) {
    Plan plan = Consult(state, sim, DisruptionMethod::kMultiNodeConsolidation, within);
    if (plan.blocker.empty() && within.size() >= 2) best = within.size(), chosen = std::move(plan);
  } else if (within.size() >= 2) {
    std::size_t lo = 2, hi = within.size();
    while (lo <= hi) {
      std::size_t mid = (lo + hi) / 2;
      std::vector<const Candidate*> prefix(within.begin(), within.begin() + mid);
      Plan plan = Consult(state, sim, DisruptionMethod::kMultiNodeConsolidation, prefix);
      if (plan.blocker.empty()) {
        best = mid;
        chosen = std::move(plan);
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
  }
  for (std::size_t i = 0; i < within.size(); ++i) {
    auto& record = pass.candidates[within[i]->record];
    if (i < best) {
      SetOutcome(record, "selected: " + std::to_string(best) + " nodes together: " + chosen.text);
      pass.selected.push_back(within[i]->claim->name);
    } else if (best == 0) {
      SetOutcome(record, "no group of two or more can go together", Cause::kNoBetterPlacement);
    } else {
      SetOutcome(record, "not in the largest group that can go together", Cause::kNotConsidered);
    }
  }
  if (best > 0) pass.plans.push_back(std::move(chosen));
}

// One node per command, as Karpenter's single-node consolidation and drift: candidates in
// order, simulated on their own; the first within its pool's budget that can go is selected
// and the rest wait for the next pass unsimulated. Each outcome starts with why the claim
// qualifies, when the method says (drift, expiration).
void SelectFirst(const State& state, Simulation& sim, DisruptionMethod method,
                 const std::vector<Candidate>& cands, Pass& pass, Budgets& budgets) {
  for (const Candidate& c : cands) {
    auto& record = pass.candidates[c.record];
    if (budgets.Left(c.claim->nodepool) <= 0) {
      SetOutcome(record, budgets.Over(c.claim->nodepool), Cause::kDisruptionBudget,
                 c.claim->nodepool);
      continue;
    }
    const std::string why = c.why.empty() ? "" : c.why + "; ";
    if (!pass.selected.empty()) {
      SetOutcome(record, why + "not simulated: another node was selected (one node per command)",
                 Cause::kNotConsidered);
      continue;
    }
    Plan plan = Consult(state, sim, method, {&c});
    if (!plan.blocker.empty()) {
      SetOutcome(record, (c.why.empty() ? "" : c.why + ", but ") + plan.blocker,
                 Cause::kNoBetterPlacement);
      continue;
    }
    SetOutcome(record, "selected: " + why + plan.text);
    pass.selected.push_back(c.claim->name);
    pass.plans.push_back(std::move(plan));
  }
}

// Single-node: candidates in disruption-cost order (no timeout: it is fast enough).
void EvaluateSingleNode(const State& state, Simulation& sim, std::vector<Candidate>& cands,
                        Pass& pass, Lookups& looked) {
  Budgets budgets(state, DisruptionReason(DisruptionMethod::kSingleNodeConsolidation), pass,
                  looked);
  SelectFirst(state, sim, DisruptionMethod::kSingleNodeConsolidation, cands, pass, budgets);
}

// When the claim became a candidate of the eventual method: drifted since (the Drifted
// condition's transition), or created (expiration).
std::int64_t EventualSince(const Candidate& c, DisruptionMethod method) {
  if (method == DisruptionMethod::kSoftExpiration) return c.claim->created.value;
  auto drifted = c.claim->disruption_conditions.find("Drifted");
  if (drifted == c.claim->disruption_conditions.end() || drifted->second == 0) {
    return std::numeric_limits<std::int64_t>::max();  // Drifted this pass: not published yet.
  }
  return drifted->second;
}

// Drift (and soft expiration), as Karpenter's drift: one candidate per command, the empty
// ones first, then the longest drifted; the first within its pool's budget whose pods all
// fit somewhere (on the rest of the cluster or on replacements) is selected, and the rest
// wait for the next pass. So no command moves pods onto a node another command removes.
void EvaluateEventual(const State& state, Simulation& sim, DisruptionMethod method,
                      std::vector<Candidate>& cands, Pass& pass, Lookups& looked) {
  std::stable_sort(cands.begin(), cands.end(), [&](const Candidate& a, const Candidate& b) {
    const bool a_empty = a.bound->reschedulable.empty(), b_empty = b.bound->reschedulable.empty();
    if (a_empty != b_empty) return a_empty;
    return EventualSince(a, method) < EventualSince(b, method);
  });
  Budgets budgets(state, DisruptionReason(method), pass, looked);
  SelectFirst(state, sim, method, cands, pass, budgets);
}

// Candidates for `method`, what blocks each, and which the budgets let go now. `only`
// (validation) restricts it to the claims proposed 15 s earlier, taken as one group.
// Multi-node and single-node consolidation look at the same candidates with the same blockers:
// the first to gather them in a pass leaves them here for the other.
struct Gathered {
  bool filled = false;
  Pass pass;
  std::vector<Candidate> cands;
};

Pass Evaluate(const State& state, DisruptionMethod method, Simulation& sim, Lookups& looked,
              const std::vector<std::string>* only = nullptr, Gathered* consolidation = nullptr) {
  Pass pass;
  std::vector<Candidate> cands;
  if (consolidation != nullptr && consolidation->filled) {
    // The second to ask takes them: no third does.
    pass = std::move(consolidation->pass);
    cands = std::move(consolidation->cands);
    consolidation->filled = false;
  } else {
    cands = Gather(state, looked.claims, method, pass, only);
    if (consolidation != nullptr) *consolidation = {true, pass, cands};
  }
  if (cands.empty()) return pass;
  if (IsConsolidation(method)) {
    if (std::string why = Unsettled(state); !why.empty()) {
      for (const Candidate& c : cands) {
        SetOutcome(pass.candidates[c.record], why, Cause::kNotSettled);
      }
      return pass;
    }
    if (method == DisruptionMethod::kMultiNodeConsolidation)
      EvaluateMultiNode(state, sim, cands, pass, looked, only != nullptr);
    if (method == DisruptionMethod::kSingleNodeConsolidation)
      EvaluateSingleNode(state, sim, cands, pass, looked);
    return pass;
  }
  if (method == DisruptionMethod::kDrift || method == DisruptionMethod::kSoftExpiration) {
    EvaluateEventual(state, sim, method, cands, pass, looked);
    return pass;
  }
  Budgets budgets(state, DisruptionReason(method), pass, looked);
  for (const Candidate& c : cands) {
    std::int64_t& left = budgets.Left(c.claim->nodepool);
    if (left <= 0) {
      SetOutcome(pass.candidates[c.record], budgets.Over(c.claim->nodepool),
                 Cause::kDisruptionBudget, c.claim->nodepool);
      continue;
    }
    Plan plan;
    plan.removed = c.claim->price;
    --left;
    pass.selected.push_back(c.claim->name);
    pass.plans.push_back(std::move(plan));
  }
  return pass;
}

// The pass as its digest reads it, appended to `text` (no temporary string per candidate).
void AppendSummary(const Pass& pass, std::string& text) {
  for (const auto& c : pass.candidates) {
    text.append(c.nodeclaim).append("|").append(c.outcome) += '\n';
  }
  for (const auto& b : pass.budgets) {
    text.append(b.nodepool).append("|").append(std::to_string(b.allowed)) += '\n';
  }
}

// What carrying out `plans` removes, their replacements' first choices, and the saving at
// those prices.
DisruptionPrices Prices(const std::vector<Plan>& plans) {
  DisruptionPrices prices;
  for (const Plan& plan : plans) {
    prices.removed += plan.removed;
    for (const PlannedClaim& replacement : plan.replacements) {
      assert(!replacement.offerings.empty());
      prices.replacements.push_back(replacement.offerings.front());
    }
  }
  prices.saving = prices.removed;
  for (const OfferingChoice& o : prices.replacements) prices.saving -= o.price;
  return prices;
}

const Taint kDisruptedTaint{label::kDisruptedTaint, "", TaintEffect::kNoSchedule};

// What a deletion by `method` is, by kind.
Cause DeletionCause(DisruptionMethod method) {
  if (method == DisruptionMethod::kEmptiness) return Cause::kEmpty;
  if (method == DisruptionMethod::kDrift) return Cause::kDrifted;
  if (method == DisruptionMethod::kSoftExpiration) return Cause::kExpired;
  return Cause::kUnderutilized;
}

std::string DeletionReason(DisruptionMethod method, const std::string& outcome) {
  if (method == DisruptionMethod::kEmptiness) return "empty: no workload pods";
  if (method == DisruptionMethod::kDrift || method == DisruptionMethod::kSoftExpiration) {
    return outcome.substr(std::string("selected: ").size());
  }
  return "underutilized: " + outcome.substr(std::string("selected: ").size());
}

// Carries out a validated plan: with nothing to launch, the candidates are deleted now;
// otherwise they are tainted, the replacements launched, and the deletion waits for them.
void Execute(State& state, Seq seq, DisruptionMethod method, const std::vector<std::string>& claims,
             const Plan& plan, const std::string& reason, Output& out) {
  if (plan.replacements.empty()) {
    for (const auto& name : claims) {
      BeginDeletion(state, seq, state.nodeclaims.at(name), reason, DeletionCause(method), true,
                    out);
    }
    return;
  }
  ReplacementWait wait{method, claims, {}, state.now, reason};
  for (const auto& name : claims) {
    const NodeClaim& claim = state.nodeclaims.at(name);
    Issue(state, seq, PatchNode{claim.node_name, {}, {}, {kDisruptedTaint}, {}}, out);
    RecordTransition(state, seq, claim, Transition::kTainted,
                     "disrupted taint before replacement: " + reason, out);
  }
  for (const PlannedClaim& replacement : plan.replacements) {
    wait.replacements.push_back(LaunchClaim(state, seq, replacement, out).nodeclaim);
  }
  state.replacing.push_back(std::move(wait));
}

// Karpenter v1's expiration: forceful and unbudgeted, unless soft expiration is asked for.
void Expire(State& state, Seq seq, const std::vector<NodeClaim*>& expired, Output& out) {
  if (state.settings.soft_expiration) return;
  const NodePool* pool = nullptr;
  for (NodeClaim* c : expired) {
    NodeClaim& claim = *c;
    const std::string& name = claim.name;
    if (claim.deleting || !Expired(state, claim, pool)) continue;
    const Nanos after = pool->expire_after;
    std::string reason = "expired: created " + DurationText(state.now - claim.created) +
                         " ago, expireAfter " + DurationText(after);
    Decide(state, seq,
           DisruptionDecision{DisruptionMethod::kExpiration,
                              DisruptionPhase::kExecuted,
                              {name},
                              {{name, claim.nodepool, reason, Cause::kNone, ""}},
                              {},
                              "forceful and not budgeted (v1)",
                              {}},
           out);
    BeginDeletion(state, seq, claim, reason, Cause::kExpired, true, out);
  }
}

void Validate(State& state, Lookups& looked, Seq seq, Output& out) {
  const DisruptionMethod method = *state.pending_method;
  std::vector<std::string> claims = state.pending_nodeclaims;
  state.pending_method.reset();
  state.pending_nodeclaims.clear();
  state.last_disruption_digest = 0;
  Simulation sim(state);
  Pass now = Evaluate(state, method, sim, looked, &claims);
  std::string changed;
  for (const auto& name : claims) {
    if (std::find(now.selected.begin(), now.selected.end(), name) != now.selected.end()) continue;
    auto it = std::find_if(now.candidates.begin(), now.candidates.end(),
                           [&](const auto& c) { return c.nodeclaim == name; });
    std::string gone =
        method == DisruptionMethod::kEmptiness        ? "no longer empty or no longer exists"
        : method == DisruptionMethod::kDrift          ? "no longer drifted or no longer exists"
        : method == DisruptionMethod::kSoftExpiration ? "no longer expired or no longer exists"
                                                      : "no longer a candidate or no longer exists";
    changed = name + ": " + (it != now.candidates.end() ? it->outcome : gone);
    break;
  }
  std::size_t replacements = 0;
  for (const Plan& plan : now.plans) replacements += plan.replacements.size();
  if (changed.empty() && replacements != state.pending_replacements) {
    changed = "the simulation now needs " + std::to_string(replacements) + " replacement(s), not " +
              std::to_string(state.pending_replacements);
  }
  if (!changed.empty()) {
    Decide(state, seq,
           DisruptionDecision{method,
                              DisruptionPhase::kInvalidated,
                              claims,
                              now.candidates,
                              now.budgets,
                              "after 15 s: " + changed,
                              {}},
           out);
    return;
  }
  Decide(state, seq,
         DisruptionDecision{
             method, replacements > 0 ? DisruptionPhase::kReplacing : DisruptionPhase::kExecuted,
             claims, now.candidates, now.budgets,
             replacements > 0 ? "unchanged after 15 s; tainting and launching " +
                                    std::to_string(replacements) + " replacement(s)"
                              : "unchanged after 15 s",
             Prices(now.plans)},
         out);
  auto outcome_of = [&](const std::string& name) {
    auto it = std::find_if(now.candidates.begin(), now.candidates.end(),
                           [&](const auto& c) { return c.nodeclaim == name; });
    return DeletionReason(method, it->outcome);
  };
  if (IsConsolidation(method)) {
    Execute(state, seq, method, claims, now.plans.front(), outcome_of(claims.front()), out);
    return;
  }
  for (std::size_t i = 0; i < now.selected.size(); ++i) {
    const std::string& name = now.selected[i];
    Execute(state, seq, method, {name}, now.plans[i], outcome_of(name), out);
  }
}

// Disruptions waiting on replacements: once every replacement is initialized the candidates
// are deleted (and the wait stays, keeping the replacements out of disruption, until they are
// gone); if one fails, the disrupted taint comes off and the candidates stay.
void AdvanceReplacements(State& state, Seq seq, Output& out) {
  for (std::size_t i = 0; i < state.replacing.size();) {
    ReplacementWait& w = state.replacing[i];
    if (w.draining) {
      bool gone = std::none_of(w.candidates.begin(), w.candidates.end(),
                               [&](const auto& name) { return state.nodeclaims.contains(name); });
      if (gone) {
        state.replacing.erase(state.replacing.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
      continue;
    }
    std::string failed;
    bool ready = true;
    for (const auto& name : w.replacements) {
      auto claim = state.nodeclaims.find(name);
      if (claim == state.nodeclaims.end() || claim->second.deleting ||
          claim->second.phase == ClaimPhase::kFailed) {
        failed =
            name + (claim == state.nodeclaims.end() ? " is gone"
                                                    : " failed: " + claim->second.deleting_reason);
        break;
      }
      ready = ready && claim->second.phase == ClaimPhase::kInitialized;
    }
    if (failed.empty() && !ready) {
      ++i;
      continue;
    }
    std::vector<DisruptionCandidate> candidates;
    for (const auto& name : w.candidates) {
      auto claim = state.nodeclaims.find(name);
      if (claim == state.nodeclaims.end() || claim->second.deleting) continue;
      candidates.push_back(
          {name, claim->second.nodepool, failed.empty() ? w.reason : "kept", Cause::kNone, ""});
      if (failed.empty()) {
        BeginDeletion(state, seq, claim->second, w.reason, DeletionCause(w.method), true, out);
      } else {
        Issue(state, seq, PatchNode{claim->second.node_name, {}, {label::kDisruptedTaint}, {}, {}},
              out);
        RecordTransition(state, seq, claim->second, Transition::kUntainted,
                         "replacement " + failed + "; disruption rolled back", out);
      }
    }
    Decide(state, seq,
           DisruptionDecision{
               w.method,
               failed.empty() ? DisruptionPhase::kReplaced : DisruptionPhase::kRolledBack,
               w.candidates,
               std::move(candidates),
               {},
               failed.empty() ? "replacements initialized: " + Join(w.replacements)
                              : "replacement " + failed + "; the disrupted taint is removed",
               {}},
           out);
    if (failed.empty()) {
      w.draining = true;
      ++i;
    } else {
      state.replacing.erase(state.replacing.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
}

// NodeClaim conditions Consolidatable (consolidateAfter has passed since the last pod change)
// and Drifted, published when they change, as Karpenter's status controllers do.
void PublishConditions(State& state, const Claims& claims, Seq seq, Output& out) {
  for (const ClaimFacts& facts : claims) {
    NodeClaim& claim = *facts.claim;
    Candidate c;
    c.claim = &claim;
    c.node = facts.node;
    c.pool = facts.pool;
    const bool consolidatable = Consolidatable(state, c);
    const std::string& drift = facts.drifted;
    // Most claims, most passes: both conditions already published as they are now.
    if (const auto& held = claim.disruption_conditions; held.size() == 2) {
      const auto& [first, second] = std::tie(*held.begin(), *std::next(held.begin()));
      if ((first.second != 0) == consolidatable && (second.second != 0) == !drift.empty() &&
          first.first == "Consolidatable" && second.first == "Drifted") {
        continue;
      }
    }
    const std::pair<const char*, bool> conditions[] = {{"Consolidatable", consolidatable},
                                                       {"Drifted", !drift.empty()}};
    for (const auto& [type, value] : conditions) {
      const std::int64_t since = value ? std::max<std::int64_t>(state.now.value, 1) : 0;
      auto [it, fresh] = claim.disruption_conditions.try_emplace(type, since);
      if (!fresh && (it->second != 0) == value) continue;
      it->second = since;
      // The message is written only when the condition changes.
      std::string message = type == std::string_view("Drifted")
                                ? (value ? drift : "NotDrifted")
                                : (value ? "Consolidatable" : ConsolidatableBlocker(state, c));
      Issue(state, seq,
            ClaimCondition(claim.name, type, value, std::move(message), claim.provider_id,
                           claim.node_name),
            out);
    }
  }
}

}  // namespace

bool Expired(const State& state, const NodeClaim& claim, const NodePool*& pool) {
  if (claim.deleting || claim.phase == ClaimPhase::kPending) return false;
  if (PoolOf(state, claim, pool) == nullptr) return false;
  const Nanos after = pool->expire_after;
  return after.value >= 0 && state.now - claim.created >= after;
}

void AdvanceDisruption(State& state, Seq seq, const std::vector<NodeClaim*>& expired, Output& out) {
  const std::size_t before = out.size();
  Expire(state, seq, expired, out);
  AdvanceReplacements(state, seq, out);
  const bool due = state.last_disruption_pass.value == 0 ||
                   state.now - state.last_disruption_pass >= kDisruptionPassInterval;
  Lookups looked;
  if (due) {
    state.last_disruption_pass = state.now;
    looked = LookUpClaims(state);
    PublishConditions(state, looked.claims, seq, out);
  }
  // Whatever this tick has done so far (expiry, replacements, conditions) is a change.
  if (out.size() != before) ++state.cluster_generation;
  if (!due) return;
  if (state.pending_method) {
    if (state.now - state.pending_since >= kDisruptionValidation) Validate(state, looked, seq, out);
    return;  // One method per pass; a pending one holds the pass until it is validated.
  }
  // Karpenter's consolidation state: consolidation that found nothing is not recomputed until
  // the cluster changes, or kConsolidationRecheck has passed, or (beyond Karpenter) a blocker
  // it found runs out by itself. Drift and expiration still are.
  const bool consolidated =
      state.consolidated_generation == state.cluster_generation &&
      state.consolidated_at.value != 0 &&
      state.now - state.consolidated_at < kConsolidationRecheck &&
      (state.consolidation_recheck_at.value == 0 || state.now < state.consolidation_recheck_at);
  // Karpenter's order: the first method with something to do acts; the others wait.
  Simulation sim(state);
  std::vector<std::pair<DisruptionMethod, Pass>> passes;
  Gathered consolidation;
  for (DisruptionMethod method :
       {DisruptionMethod::kEmptiness, DisruptionMethod::kSoftExpiration, DisruptionMethod::kDrift,
        DisruptionMethod::kMultiNodeConsolidation, DisruptionMethod::kSingleNodeConsolidation}) {
    if (method == DisruptionMethod::kSoftExpiration && !state.settings.soft_expiration) continue;
    if (consolidated && (IsConsolidation(method) || method == DisruptionMethod::kEmptiness))
      continue;
    Pass pass = Evaluate(state, method, sim, looked, nullptr,
                         IsConsolidation(method) ? &consolidation : nullptr);
    if (!pass.selected.empty()) {
      state.pending_method = method;
      state.pending_nodeclaims = pass.selected;
      state.pending_since = state.now;
      state.pending_replacements = 0;
      for (const Plan& plan : pass.plans) state.pending_replacements += plan.replacements.size();
      Decide(state, seq,
             DisruptionDecision{method, DisruptionPhase::kProposed, pass.selected, pass.candidates,
                                pass.budgets, "validating for 15 s", Prices(pass.plans)},
             out);
      return;
    }
    // Multi-node's candidates are single-node's too; their blockers are recorded there.
    if (!pass.candidates.empty() && method != DisruptionMethod::kMultiNodeConsolidation) {
      passes.emplace_back(method, std::move(pass));
    }
  }
  // A pass that skipped consolidation has seen no blocker change. Otherwise: nothing to
  // consolidate at this generation of the cluster.
  if (consolidated) return;
  state.consolidated_generation = state.cluster_generation;
  state.consolidated_at = state.now;
  state.consolidation_recheck_at = Nanos{0};
  for (const auto& [method, pass] : passes)
    KeepEarlier(state.consolidation_recheck_at, pass.runs_out);
  // Blocked candidates are recorded when what blocks them changes, not every 10 s.
  std::string text;
  for (const auto& [method, pass] : passes) {
    text.append(Name(method)) += '\n';
    AppendSummary(pass, text);
  }
  std::uint64_t digest = passes.empty() ? 0 : XXH3_64bits(text.data(), text.size());
  if (digest == state.last_disruption_digest) return;
  state.last_disruption_digest = digest;
  for (auto& [method, pass] : passes) {
    Decide(state, seq,
           DisruptionDecision{method,
                              DisruptionPhase::kBlocked,
                              {},
                              std::move(pass.candidates),
                              std::move(pass.budgets),
                              "no candidate can go now",
                              {}},
           out);
  }
}

void NotePodMoved(State& state, const std::string& node_name) {
  if (node_name.empty()) return;
  state.claims_by_node.ForEach(node_name, [&](const std::string& claim) {
    state.nodeclaims.at(claim).last_pod_change = state.now;
  });
}

}  // namespace tenon::core
