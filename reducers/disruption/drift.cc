// Drift, as Karpenter's drift method: a claim that no longer matches what it would be launched
// as today is replaced, one per command, its replacements launched first whatever they cost.
// Soft expiration (soft_expiration.cc) is disrupted the same way.
#include <algorithm>
#include <limits>
#include <optional>

#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

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
    auto it = state.cluster.nodeclasses.find(name);
    if (it == state.cluster.nodeclasses.end()) return nullptr;
    last_class_ = &it->second;
    return last_class_;
  }
  const CatalogEntry* Type(const State& state, const std::string& name) {
    auto [it, fresh] = types_.try_emplace(name, nullptr);
    if (fresh) {
      auto entry = state.cluster.catalog->find(name);
      if (entry != state.cluster.catalog->end()) it->second = &entry->second;
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

// Why the claim's EC2NodeClass no longer launches what it is, or empty.
std::string NodeClassDrift(const NodeClaim& claim, const NodeClass& c, DriftReference& reference) {
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
      (mine.size() != now.size() || !std::is_permutation(mine.begin(), mine.end(), now.begin()))) {
    std::vector<std::string> sorted_mine = mine, sorted_now = now;
    std::sort(sorted_mine.begin(), sorted_mine.end());
    std::sort(sorted_now.begin(), sorted_now.end());
    return "SecurityGroupDrift: security groups [" + Join(sorted_mine) +
           "] differ from EC2NodeClass " + c.name + "'s [" + Join(sorted_now) + "]";
  }
  return {};
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
    if (std::string why = NodeClassDrift(claim, *nc, reference); !why.empty()) return why;
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

std::string DriftBlocker(const State& /*state*/, Candidate& c) {
  if (c.drifted->empty()) return "-";
  c.why = "drifted (" + *c.drifted + ")";
  // Karpenter's eventual disruption: drift of a claim whose pool sets a
  // terminationGracePeriod is not held back by its pods.
  c.past_blocked_pods = c.pool->termination_grace_period.has_value();
  return "";
}

// Since when the claim has drifted (the Drifted condition's transition).
std::int64_t DriftedSince(const Candidate& c) {
  auto drifted = c.claim->disruption_conditions.find("Drifted");
  if (drifted == c.claim->disruption_conditions.end() || drifted->second == 0) {
    return std::numeric_limits<std::int64_t>::max();  // Drifted this pass: not published yet.
  }
  return drifted->second;
}

// Karpenter's static drift: a static pool's node is replaced one for one by a node of the
// pool's template, launched first, whatever its pods need; not while the pool is over its
// replicas (a trim is under way), nor when limits.nodes leaves no room for the replacement.
Plan PlanStatic(const State& state, const Candidate& c) {
  Plan plan;
  plan.removed = c.claim->price;
  const NodePool& pool = *c.pool;
  const StaticCount n = CountStatic(state, pool.name);
  if (n.active + n.pending > *pool.replicas) {
    plan.blocker = "static NodePool " + pool.name + " has more nodes than its " +
                   std::to_string(*pool.replicas) + " replicas: they are removed first";
    return plan;
  }
  if (pool.limits.nodes && n.active + n.deleting + n.pending + 1 > *pool.limits.nodes) {
    plan.blocker = "static NodePool " + pool.name + " is at its node limit (limits.nodes " +
                   std::to_string(*pool.limits.nodes) + "): no room for a replacement";
    return plan;
  }
  std::optional<PlannedClaim> replacement = StaticClaim(state, pool);
  if (!replacement) {
    plan.blocker = "static NodePool " + pool.name + " cannot launch a replacement now";
    return plan;
  }
  plan.text = "replace one for one (static NodePool " + pool.name +
              "): " + replacement->offerings.front().instance_type + " from " +
              PriceText(replacement->offerings.front().price) + " first";
  plan.replacements.push_back(std::move(*replacement));
  return plan;
}

Plan PlanDrift(const State& state, Simulation& sim, const std::vector<const Candidate*>& group) {
  if (group.size() == 1 && group.front()->pool->replicas) return PlanStatic(state, *group.front());
  return PlanReplacing(state, sim, group);
}

void SelectDrift(const State& state, Simulation& sim, std::vector<Candidate>& cands, Pass& pass,
                 Lookups& looked, bool /*validating*/) {
  SelectEventual(state, sim, kDrift, DriftedSince, cands, pass, looked);
}

}  // namespace

void FindDrift(const State& state, Claims& claims) {
  DriftReference reference;
  for (ClaimFacts& facts : claims) {
    facts.drifted = Drifted(state, *facts.claim, *facts.pool, reference, facts.node);
  }
}

Plan PlanReplacing(const State& state, Simulation& sim,
                   const std::vector<const Candidate*>& group) {
  Simulated simulated = Simulate(state, sim, group, false);
  Plan& plan = simulated.plan;
  if (simulated.settled) return std::move(plan);
  plan.replacements = std::move(simulated.result.claims);
  plan.text = "replace with " + std::to_string(plan.replacements.size()) +
              " new node(s) first; its pods move: " + MovesText(sim, simulated);
  return std::move(plan);
}

// Drift (and soft expiration), as Karpenter's drift: one candidate per command, the empty
// ones first, then the longest drifted; the first within its pool's budget whose pods all
// fit somewhere (on the rest of the cluster or on replacements) is selected, and the rest
// wait for the next pass. So no command moves pods onto a node another command removes.
void SelectEventual(const State& state, Simulation& sim, const Decider& decider,
                    std::int64_t (*since)(const Candidate& c), std::vector<Candidate>& cands,
                    Pass& pass, Lookups& looked) {
  std::stable_sort(cands.begin(), cands.end(), [&](const Candidate& a, const Candidate& b) {
    const bool a_empty = a.bound->reschedulable.empty(), b_empty = b.bound->reschedulable.empty();
    if (a_empty != b_empty) return a_empty;
    return since(a) < since(b);
  });
  Budgets budgets(state, MethodInfo(decider).reason, pass, looked);
  SelectFirst(state, sim, decider, cands, pass, budgets);
}

std::string EventualDeletionReason(const std::string& outcome) {
  return outcome.substr(std::string("selected: ").size());
}

const Decider kDrift{
    .blocker = DriftBlocker,
    .plan = PlanDrift,
    .select = SelectDrift,
    .deletion_cause = Cause::kDrifted,
    .deletion_reason = EventualDeletionReason,
    .gone = "no longer drifted or no longer exists",
};

}  // namespace tenon::core::disruption
