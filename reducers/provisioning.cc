// Provisioning: the batch window and one scheduling pass over the pending pods.
//
// The pass follows Karpenter's shape: pods sorted by CPU, memory, creation time and uid; each
// is placed on an existing node or in-flight NodeClaim, else on a NodeClaim planned in this
// pass, else on a new NodeClaim from the highest-weight compatible NodePool. A planned
// NodeClaim keeps the set of instance types that can still host all of its pods. The full
// constraint set (affinity, spread, limits, minValues) belongs to the scheduler issue; this
// pass honours requests, nodeSelector, NodePool requirements and taints.
#include <algorithm>
#include <cassert>

#include "reducers/internal.h"

namespace tenon::core {
namespace {

constexpr std::size_t kNameAttemptsMax = 16;
constexpr const char* kDaemonSetKind = "DaemonSet";

struct Bin {
  std::string name;
  const Labels* labels = nullptr;
  std::vector<Taint> taints;
  Resources remaining;
};

struct Plan {
  const NodePool* pool = nullptr;
  std::vector<Requirement> requirements;
  std::vector<const CatalogEntry*> types;
  Resources requests;
  std::vector<std::string> pods;
};

Resources PodNeed(const Pod& pod) {
  Resources need = pod.requests;
  need.pods = std::max<std::int64_t>(need.pods, 1);
  return need;
}

bool PodSortsBefore(const Pod* a, const Pod* b) {
  if (a->requests.cpu != b->requests.cpu) return a->requests.cpu > b->requests.cpu;
  if (a->requests.memory != b->requests.memory) return a->requests.memory > b->requests.memory;
  if (a->created != b->created) return a->created < b->created;
  return a->uid < b->uid;
}

std::vector<const Pod*> PendingPods(const State& state) {
  std::vector<const Pod*> pods;
  for (const auto& [key, pod] : state.pods) {
    if (pods.size() >= kPodsPerBatchMax) break;
    if (IsProvisionable(pod)) pods.push_back(&pod);
  }
  std::sort(pods.begin(), pods.end(), PodSortsBefore);
  return pods;
}

// A lookup over the labels a node launched from (pool, type, offering) would carry.
LabelLookup OfferingLabels(const NodePool& pool, const CatalogEntry& entry, const Offering& o) {
  return [&pool, &entry, &o](std::string_view key) -> std::optional<std::string_view> {
    if (key == label::kZone) return o.zone;
    if (key == label::kCapacityType) return o.capacity_type;
    if (key == label::kNodePool) return pool.name;
    if (auto it = pool.labels.find(std::string(key)); it != pool.labels.end()) return it->second;
    auto it = entry.labels.find(std::string(key));
    if (it != entry.labels.end()) return it->second;
    return std::nullopt;
  };
}

bool OfferingUsable(const State& state, const CatalogEntry& entry, const Offering& o) {
  return o.available && !state.unavailable_offerings.contains(
                            OfferingKey(entry.type.name, o.zone, o.capacity_type));
}

bool TypeAllowed(const State& state, const NodePool& pool, const CatalogEntry& entry,
                 const std::vector<Requirement>& requirements) {
  return std::any_of(entry.type.offerings.begin(), entry.type.offerings.end(),
                     [&](const Offering& o) {
                       return OfferingUsable(state, entry, o) &&
                              AllRequirementsAllow(requirements, OfferingLabels(pool, entry, o));
                     });
}

std::vector<Requirement> Merge(std::vector<Requirement> a, const std::vector<Requirement>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The types of `candidates` that still allow `requirements` and fit `need`.
std::vector<const CatalogEntry*> Narrow(const State& state, const NodePool& pool,
                                        const std::vector<const CatalogEntry*>& candidates,
                                        const std::vector<Requirement>& requirements,
                                        const Resources& need) {
  std::vector<const CatalogEntry*> out;
  for (const CatalogEntry* entry : candidates) {
    if (Fits(need, entry->allocatable) && TypeAllowed(state, pool, *entry, requirements)) {
      out.push_back(entry);
    }
  }
  return out;
}

std::vector<Bin> ExistingBins(const State& state) {
  std::map<std::string, Resources> used;
  for (const auto& [key, pod] : state.pods) {
    if (!pod.node_name.empty() && pod.phase != "Succeeded" && pod.phase != "Failed") {
      used[pod.node_name] = used[pod.node_name] + PodNeed(pod);
    }
  }
  std::vector<Bin> bins;
  for (const auto& [name, node] : state.nodes) {
    Bin bin{name, &node.labels, {}, node.allocatable - used[name]};
    // The unregistered taint goes away at registration, so it does not block placement.
    for (const auto& taint : node.taints) {
      if (taint.key != label::kUnregisteredTaint) bin.taints.push_back(taint);
    }
    bins.push_back(std::move(bin));
  }
  for (const auto& [name, claim] : state.nodeclaims) {
    if (!claim.node_name.empty() && state.nodes.contains(claim.node_name)) continue;
    auto pool = state.nodepools.find(claim.nodepool);
    if (pool == state.nodepools.end()) continue;
    bins.push_back(Bin{name, &pool->second.labels, pool->second.taints, claim.allocatable});
  }
  return bins;
}

bool BinAccepts(const Bin& bin, const Pod& pod) {
  if (!Fits(PodNeed(pod), bin.remaining)) return false;
  if (!ToleratesAll(pod.tolerations, bin.taints)) return false;
  return std::all_of(pod.node_selector.begin(), pod.node_selector.end(), [&](const auto& kv) {
    auto it = bin.labels->find(kv.first);
    return it != bin.labels->end() && it->second == kv.second;
  });
}

std::vector<const NodePool*> PoolsByWeight(const State& state) {
  std::vector<const NodePool*> pools;
  for (const auto& [name, pool] : state.nodepools) pools.push_back(&pool);
  std::stable_sort(pools.begin(), pools.end(),
                   [](const NodePool* a, const NodePool* b) { return a->weight > b->weight; });
  return pools;
}

// Opens a plan for `pod` from the first compatible pool; returns a reason per rejected pool.
std::optional<Plan> OpenPlan(const State& state, const Pod& pod, std::string& reasons) {
  std::vector<const CatalogEntry*> all;
  for (const auto& [name, entry] : state.catalog) all.push_back(&entry);
  for (const NodePool* pool : PoolsByWeight(state)) {
    auto nodeclass = state.nodeclasses.find(pool->nodeclass);
    std::string why;
    if (nodeclass == state.nodeclasses.end() || !nodeclass->second.ready) {
      why = "nodeclass " + pool->nodeclass + " not found or not ready";
    } else if (!ToleratesAll(pod.tolerations, pool->taints)) {
      why = "pod does not tolerate the nodepool's taints";
    } else {
      auto requirements = Merge(pool->requirements, SelectorRequirements(pod.node_selector));
      auto types = Narrow(state, *pool, all, requirements, PodNeed(pod));
      if (!types.empty()) return Plan{pool, std::move(requirements), std::move(types), {}, {}};
      why = "no instance type satisfies the requirements and fits the pod";
    }
    reasons += (reasons.empty() ? "" : "; ") + ("nodepool " + pool->name + ": " + why);
  }
  if (state.nodepools.empty()) reasons = "no nodepool";
  return std::nullopt;
}

bool JoinPlan(const State& state, Plan& plan, const Pod& pod) {
  auto requirements = Merge(plan.requirements, SelectorRequirements(pod.node_selector));
  if (!ToleratesAll(pod.tolerations, plan.pool->taints)) return false;
  Resources need = plan.requests + PodNeed(pod);
  auto types = Narrow(state, *plan.pool, plan.types, requirements, need);
  if (types.empty()) return false;
  plan.types = std::move(types);
  plan.requirements = std::move(requirements);
  return true;
}

void AddToPlan(Plan& plan, const Pod& pod) {
  plan.requests = plan.requests + PodNeed(pod);
  plan.pods.push_back(PodKey(pod.ns, pod.name));
}

std::uint64_t SplitMix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Karpenter names NodeClaims "<nodepool>-<5 random characters>"; ours come from the logged seed.
std::string NextClaimName(State& state, const std::string& pool) {
  constexpr const char* kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  for (std::size_t attempt = 0; attempt < kNameAttemptsMax; ++attempt) {
    std::uint64_t bits = SplitMix64(state.seed ^ SplitMix64(state.next_nodeclaim++));
    std::string name = pool + "-";
    for (int i = 0; i < 5; ++i, bits /= 27) name += kAlphabet[bits % 27];
    if (!state.nodeclaims.contains(name)) return name;
  }
  assert(false && "nodeclaim name space exhausted");
  return pool + "-" + std::to_string(state.next_nodeclaim);
}

bool OfferingCheaper(const OfferingChoice& a, const OfferingChoice& b) {
  if (a.price != b.price) return a.price < b.price;
  if (a.instance_type != b.instance_type) return a.instance_type < b.instance_type;
  if (a.zone != b.zone) return a.zone < b.zone;
  return a.capacity_type < b.capacity_type;
}

// The offerings handed to CreateFleet: spot when any spot offering is no pricier than the
// cheapest on-demand one, else on-demand; the cheapest kFleetOverridesMax of them.
std::vector<OfferingChoice> ChooseOfferings(const State& state, const Plan& plan) {
  std::vector<OfferingChoice> all;
  for (const CatalogEntry* entry : plan.types) {
    for (const Offering& o : entry->type.offerings) {
      if (!OfferingUsable(state, *entry, o)) continue;
      if (!AllRequirementsAllow(plan.requirements, OfferingLabels(*plan.pool, *entry, o))) continue;
      all.push_back({entry->type.name, o.zone, o.capacity_type, o.price});
    }
  }
  std::sort(all.begin(), all.end(), OfferingCheaper);
  auto od = std::find_if(all.begin(), all.end(),
                         [](const auto& o) { return o.capacity_type == kCapacityOnDemand; });
  bool any_spot = std::any_of(all.begin(), all.end(), [&](const auto& o) {
    return o.capacity_type == kCapacitySpot && (od == all.end() || o.price <= od->price);
  });
  std::string wanted = any_spot ? kCapacitySpot : kCapacityOnDemand;
  std::erase_if(all, [&](const auto& o) {
    return o.capacity_type != wanted || (od != all.end() && o.price > od->price);
  });
  if (all.size() > kFleetOverridesMax) all.resize(kFleetOverridesMax);
  return all;
}

Resources SmallestAllocatable(const State& state, const std::vector<OfferingChoice>& offerings) {
  Resources smallest;
  bool first = true;
  for (const auto& o : offerings) {
    const Resources& a = state.catalog.at(o.instance_type).allocatable;
    if (first) smallest = a;
    smallest = {std::min(smallest.cpu, a.cpu),
                std::min(smallest.memory, a.memory),
                std::min(smallest.pods, a.pods),
                {}};
    first = false;
  }
  return smallest;
}

Labels LaunchTags(const State& state, const NodeClaim& claim) {
  return {{label::kNodePool, claim.nodepool},
          {"karpenter.sh/nodeclaim", claim.name},
          {"karpenter.k8s.aws/ec2nodeclass", claim.nodeclass},
          {"kubernetes.io/cluster/" + state.settings.cluster_name, "owned"}};
}

// Turns one plan into CreateNodeClaim + LaunchInstances; returns its record for the decision.
std::optional<ClaimPlan> Commit(State& state, Seq seq, const Plan& plan, Output& out) {
  auto offerings = ChooseOfferings(state, plan);
  if (offerings.empty()) return std::nullopt;
  NodeClaim claim;
  claim.name = NextClaimName(state, plan.pool->name);
  claim.nodepool = plan.pool->name;
  claim.nodeclass = plan.pool->nodeclass;
  claim.requirements = plan.requirements;
  claim.requests = plan.requests;
  for (const auto& o : offerings) {
    if (std::find(claim.instance_types.begin(), claim.instance_types.end(), o.instance_type) ==
        claim.instance_types.end()) {
      claim.instance_types.push_back(o.instance_type);
    }
  }
  claim.allocatable = SmallestAllocatable(state, offerings);
  claim.created = state.now;
  LaunchInstances launch{claim.name,
                         claim.nodepool,
                         claim.nodeclass,
                         claim.name,
                         offerings.front().capacity_type,
                         {},
                         LaunchTags(state, claim)};
  for (const auto& o : offerings) {
    launch.overrides.push_back({o.instance_type, o.zone, o.capacity_type, o.price});
  }
  state.nodeclaims[claim.name] = claim;
  Issue(state, seq, CreateNodeClaim{claim}, out);
  Issue(state, seq, std::move(launch), out);
  return ClaimPlan{claim.name, claim.nodepool, plan.pods, plan.requests, std::move(offerings)};
}

bool PlaceOnBins(std::vector<Bin>& bins, const Pod& pod, PodOutcome& outcome) {
  for (Bin& bin : bins) {
    if (!BinAccepts(bin, pod)) continue;
    bin.remaining = bin.remaining - PodNeed(pod);
    outcome.target = bin.name;
    outcome.reason = "fits existing capacity";
    return true;
  }
  return false;
}

bool PlaceOnPlans(const State& state, std::vector<Plan>& plans, const Pod& pod) {
  std::vector<Plan*> order;
  for (Plan& plan : plans) order.push_back(&plan);
  std::stable_sort(order.begin(), order.end(),
                   [](const Plan* a, const Plan* b) { return a->pods.size() < b->pods.size(); });
  for (Plan* plan : order) {
    if (!JoinPlan(state, *plan, pod)) continue;
    AddToPlan(*plan, pod);
    return true;
  }
  return false;
}

void Provision(State& state, Seq seq, Nanos opened, Output& out) {
  std::vector<Bin> bins = ExistingBins(state);
  std::vector<Plan> plans;
  ProvisioningDecision decision{opened, {}, {}};
  std::map<std::string, std::size_t> planned_outcome;  // pod key -> index in decision.pods
  for (const Pod* pod : PendingPods(state)) {
    PodOutcome outcome{PodKey(pod->ns, pod->name), {}, {}, {}};
    if (PlaceOnBins(bins, *pod, outcome)) {
      decision.pods.push_back(std::move(outcome));
      continue;
    }
    bool placed = PlaceOnPlans(state, plans, *pod);
    if (!placed && plans.size() < kNodeClaimsPerBatchMax) {
      if (auto plan = OpenPlan(state, *pod, outcome.reason)) {
        AddToPlan(*plan, *pod);
        plans.push_back(std::move(*plan));
        placed = true;
      }
    }
    if (placed) planned_outcome[outcome.pod] = decision.pods.size();
    decision.pods.push_back(std::move(outcome));
  }
  for (const Plan& plan : plans) {
    auto committed = Commit(state, seq, plan, out);
    for (const auto& pod : plan.pods) {
      PodOutcome& outcome = decision.pods[planned_outcome.at(pod)];
      outcome.target = committed ? committed->nodeclaim : "";
      outcome.reason = committed ? "new nodeclaim from nodepool " + plan.pool->name
                                 : "no usable offering left for nodepool " + plan.pool->name;
    }
    if (committed) decision.new_claims.push_back(std::move(*committed));
  }
  if (!decision.pods.empty()) Decide(state, seq, std::move(decision), out);
}

}  // namespace

bool IsProvisionable(const Pod& pod) {
  return pod.node_name.empty() && pod.unschedulable && pod.phase == "Pending" &&
         pod.owner_kind != kDaemonSetKind;
}

void NotePodForBatch(State& state, const Pod&) {
  if (!state.batch.open) {
    state.batch.open = true;
    state.batch.opened = state.now;
  }
  state.batch.last_pod = state.now;
}

void MaybeProvision(State& state, Seq seq, Output& out) {
  if (!state.batch.open) return;
  bool idle = state.now - state.batch.last_pod >= state.settings.batch_idle;
  bool full = state.now - state.batch.opened >= state.settings.batch_max;
  if (!idle && !full) return;
  Nanos opened = state.batch.opened;
  state.batch = BatchWindow{};
  Provision(state, seq, opened, out);
}

}  // namespace tenon::core
