// What multi-node and single-node consolidation share (Karpenter's consolidation of
// underutilized nodes): which claims they look at, the wait for a settled cluster, and the
// cheaper replacement a group's pods may move to.
#include <algorithm>
#include <cassert>
#include <optional>
#include <set>

#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

// Karpenter's limit: spot-to-spot replacement needs 15 cheaper instance types and launches from
// those.
constexpr std::size_t kSpotToSpotTypesMin = 15;

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
    auto entry = state.cluster.catalog->find(types[i]);
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
      } else if (entry != state.cluster.catalog->end()) {
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

// Keeps the replacement's instance types cheaper than the nodes (strictly, and by at least the
// configured saving, off by default); why none is, or empty.
std::string KeepCheaper(const State& state, PlannedClaim& replacement, MicroUsdPerHour total,
                        std::size_t group_size) {
  const OfferingChoice cheapest = replacement.offerings.front();
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
  if (!replacement.offerings.empty()) return {};
  return "no cheaper replacement: cheapest fit " + cheapest.instance_type + " costs " +
         PriceText(cheapest.price) + ", the node" + (group_size > 1 ? "s cost " : " costs ") +
         PriceText(total) + (margin > 0 ? " and savings under the minimum do not count" : "");
}

// Karpenter's filterOutSameInstanceType: nodes replaced together by one of a type among them
// must save more than keeping the cheapest of that type (deleting the others moves fewer
// pods). Why the replacement cannot, or empty; `types` follows what is left.
std::string KeepUnlikeRemoved(const std::vector<const Candidate*>& group, PlannedClaim& replacement,
                              std::vector<std::string>& types) {
  std::optional<MicroUsdPerHour> kept;
  for (const Candidate* c : group) {
    if (std::find(types.begin(), types.end(), c->claim->instance_type) == types.end()) continue;
    if (!kept || c->claim->price < *kept) kept = c->claim->price;
  }
  if (!kept) return {};
  std::map<std::string, MicroUsdPerHour> cheapest_of;
  for (const auto& o : replacement.offerings) cheapest_of.try_emplace(o.instance_type, o.price);
  std::erase_if(replacement.offerings,
                [&](const OfferingChoice& o) { return cheapest_of.at(o.instance_type) >= *kept; });
  if (replacement.offerings.empty()) {
    return "the replacement would be of a type being removed, for no less than " +
           PriceText(*kept) + " (keeping that node costs no more)";
  }
  types = TypesByPrice(replacement);
  return {};
}

// Spot replacing one spot node launches from the 15 cheapest types, or as many as minValues
// needs; why there are too few, or empty.
std::string KeepSpotToSpotTypes(PlannedClaim& replacement, std::vector<std::string>& types,
                                std::size_t need) {
  if (types.size() < kSpotToSpotTypesMin) {
    return "spot-to-spot replacement needs " + std::to_string(kSpotToSpotTypesMin) +
           " cheaper instance types, " + std::to_string(types.size()) + " found";
  }
  types.resize(std::max<std::size_t>(kSpotToSpotTypesMin, need));
  std::erase_if(replacement.offerings, [&](const OfferingChoice& o) {
    return std::find(types.begin(), types.end(), o.instance_type) == types.end();
  });
  return {};
}

std::string ReplaceText(const PlannedClaim& replacement, MicroUsdPerHour total,
                        const std::string& moves) {
  MicroUsdPerHour dearest = replacement.offerings.front().price;
  for (const auto& o : replacement.offerings) dearest = std::max(dearest, o.price);
  std::set<std::string> kept_types;
  for (const auto& o : replacement.offerings) kept_types.insert(o.instance_type);
  return "replace with one " + replacement.capacity_type + " node (" +
         replacement.offerings.front().instance_type + " from " +
         PriceText(replacement.offerings.front().price) + ", " + std::to_string(kept_types.size()) +
         " types), saving at least " + PriceText(total - dearest) + "; its pods move: " + moves;
}

// Why the one replacement cannot be had cheaper than the group, or empty; what is left of it
// is what may launch.
std::string KeepReplacement(const State& state, const std::vector<const Candidate*>& group,
                            PlannedClaim& replacement, MicroUsdPerHour total, bool all_spot) {
  assert(!replacement.offerings.empty());
  bool spot_to_spot = all_spot && replacement.capacity_type == kCapacitySpot;
  if (spot_to_spot && !state.settings.spot_to_spot_consolidation) {
    return "spot-to-spot consolidation is off (feature gate SpotToSpotConsolidation): "
           "a spot node is not replaced by another spot node";
  }
  if (std::string why = KeepCheaper(state, replacement, total, group.size()); !why.empty()) {
    return why;
  }
  std::vector<std::string> types = TypesByPrice(replacement);
  std::optional<std::size_t> need = MinValuesNeed(state, replacement, types);
  if (!need) {
    return "no cheaper replacement that meets the NodePool's minValues (" +
           std::to_string(types.size()) + " cheaper instance types)";
  }
  if (group.size() > 1) {
    if (std::string why = KeepUnlikeRemoved(group, replacement, types); !why.empty()) return why;
  }
  if (spot_to_spot && group.size() == 1) return KeepSpotToSpotTypes(replacement, types, *need);
  return {};
}

// A move of nodes of Balanced pools goes only when each such pool's score passes; the scores
// go into the plan's text, before the pods' moves.
void Score(const std::vector<const Candidate*>& group, MicroUsdPerHour savings, Plan& plan) {
  std::string scores;
  if (std::string refused = ScoreGroup(group, savings, scores); !refused.empty()) {
    plan.blocker = std::move(refused);
    plan.cause = Cause::kBalancedScore;
    return;
  }
  if (scores.empty()) return;
  constexpr std::string_view kMoves = "; its pods move: ";
  const auto at = plan.text.find(kMoves);
  plan.text.insert(at == std::string::npos ? plan.text.size() : at, "; " + scores);
}

}  // namespace

std::string ConsolidationBlocker(const State& state, Candidate& c) {
  // consolidateAfter: Never turns consolidation off for the pool: it does not look at its
  // nodes, so its passes record nothing about them.
  if (!c.pool->consolidate_after) return "-";
  if (c.bound->reschedulable.empty()) return "-";  // Emptiness's.
  if (c.pool->replicas) return "-";                // A static pool's count is its own.
  if (c.pool->consolidation_policy == ConsolidationPolicy::kWhenEmpty) {
    return "consolidationPolicy is WhenEmpty";
  }
  return ConsolidatableBlocker(state, c);
}

// Re-simulates scheduling without `group`: every pod must fit on the rest of the cluster, or on
// one new claim strictly cheaper than the group (pinned to spot when it may be spot; spot
// replacing spot only behind the SpotToSpotConsolidation gate).
Plan PlanCheaper(const State& state, Simulation& sim, const std::vector<const Candidate*>& group) {
  bool all_spot = true;
  for (const Candidate* c : group) all_spot = all_spot && c->claim->capacity_type == kCapacitySpot;
  // Spot nodes consolidated without spot-to-spot: a spot replacement is refused whatever it
  // offers, so the simulation's claims need no offerings past the first unless the one
  // replacement would be on-demand.
  const bool brief = all_spot && !state.settings.spot_to_spot_consolidation;
  Simulated simulated = Simulate(state, sim, group, brief);
  Plan& plan = simulated.plan;
  if (simulated.settled) {
    if (plan.blocker.empty()) Score(group, plan.removed, plan);  // A deletion saves it all.
    return std::move(plan);
  }
  ScheduleResult& result = simulated.result;
  if (result.claims.size() > 1) {
    plan.blocker = "its pods need " + std::to_string(result.claims.size()) + " new nodes";
    return std::move(plan);
  }
  PlannedClaim replacement = std::move(result.claims.front());
  plan.blocker = KeepReplacement(state, group, replacement, plan.removed, all_spot);
  if (!plan.blocker.empty()) return std::move(plan);
  plan.text = ReplaceText(replacement, plan.removed, MovesText(sim, simulated));
  // Karpenter's estimate of a replacement's savings: the replacement at its cheapest offering.
  MicroUsdPerHour cheapest = replacement.offerings.front().price;
  for (const auto& o : replacement.offerings) cheapest = std::min(cheapest, o.price);
  plan.replacements.push_back(std::move(replacement));
  Score(group, plan.removed - cheapest, plan);
  if (!plan.blocker.empty()) plan.replacements.clear();
  return std::move(plan);
}

// Consolidation waits, as Karpenter's disruption waits for its cluster state to sync, while a
// NodeClaim is not launched yet: what it will be is not known. Pending pods do not hold it back:
// each simulation places them too, and only a moving pod that fits nowhere, or would land on a
// node not initialized yet, blocks a move.
bool AwaitSettled(const std::vector<Candidate>& cands, Pass& pass, const Lookups& looked) {
  const std::size_t launching = looked.launching;
  if (launching == 0) return false;
  const std::string why =
      "cluster not settled: " + std::to_string(launching) + " NodeClaims not launched yet";
  for (const Candidate& c : cands) SetOutcome(pass.candidates[c.record], why, Cause::kNotSettled);
  return true;
}

std::string ConsolidationDeletionReason(const std::string& outcome) {
  return "underutilized: " + outcome.substr(std::string("selected: ").size());
}

}  // namespace tenon::core::disruption
