// Launch choice for a planned NodeClaim: which offerings go to CreateFleet, in what order.
#include "reducers/launch.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "reducers/templates.h"

namespace tenon::core {
namespace {

struct Candidate {
  std::size_t row = 0;
  std::vector<const TypeRow::Offer*> offers;  // Of the chosen capacity type, allowed zones.
  MicroUsdPerHour cheapest{0};
};

std::set<std::string> ValuesOf(const PoolTemplate& t, const TypeRow& row, const std::string& key) {
  std::set<std::string> out;
  if (key == label::kZone || key == label::kCapacityType) {
    for (const Offering* o : row.offerings) {
      out.insert(key == label::kZone ? o->zone : o->capacity_type);
    }
  } else if (auto v = TypeLabel(t, row, key)) {
    out.insert(std::string(*v));
  }
  return out;
}

// Zone and capacity-type requirements, resolved once per claim to the template's zone and
// capacity-type indexes, so the per-offering test is two lookups.
struct OfferingFilter {
  OfferingFilter(const PoolTemplate& t, const Requirements& reqs) {
    const ValueSet* zone = reqs.Get(label::kZone);
    const ValueSet* capacity = reqs.Get(label::kCapacityType);
    for (const auto& z : t.zones) zones.push_back(!zone || zone->Has(z));
    for (const auto& c : t.capacities) capacities.push_back(!capacity || capacity->Has(c));
  }
  bool operator()(const TypeRow::Offer& o) const { return zones[o.zone] && capacities[o.capacity]; }
  // The template's index of capacity type `ct`, or none when no offering has it or it is not
  // allowed.
  std::optional<std::uint16_t> Capacity(const PoolTemplate& t, const std::string& ct) const {
    auto it = std::lower_bound(t.capacities.begin(), t.capacities.end(), ct);
    if (it == t.capacities.end() || *it != ct) return std::nullopt;
    auto i = static_cast<std::uint16_t>(it - t.capacities.begin());
    if (!capacities[i]) return std::nullopt;
    return i;
  }
  std::vector<bool> zones;
  std::vector<bool> capacities;
};

const std::vector<std::pair<MicroUsdPerHour, std::size_t>>& ByPrice(const PoolTemplate& t,
                                                                    const std::string& ct) {
  static const std::vector<std::pair<MicroUsdPerHour, std::size_t>> kNone;
  auto it = t.by_price.find(ct);
  return it == t.by_price.end() ? kNone : it->second;
}

// The cheapest allowed offering of capacity type `ct` (a template index) on a row, if any.
std::optional<MicroUsdPerHour> Cheapest(const TypeRow& row, std::uint16_t ct,
                                        const OfferingFilter& allowed) {
  std::optional<MicroUsdPerHour> best;
  for (const auto& o : row.offers) {
    if (o.capacity != ct || !allowed(o)) continue;
    if (!best || o.price < *best) best = o.price;
  }
  return best;
}

bool Offers(const PoolTemplate& t, const TypeMask& rows, const std::string& ct,
            const OfferingFilter& allowed) {
  auto index = allowed.Capacity(t, ct);
  if (!index) return false;
  for (const auto& [price, r] : ByPrice(t, ct)) {
    if (rows.Test(r) && Cheapest(t.types[r], *index, allowed)) return true;
  }
  return false;
}

std::optional<MicroUsdPerHour> CheapestOnDemand(const PoolTemplate& t, const TypeMask& rows,
                                                const OfferingFilter& allowed) {
  auto index = allowed.Capacity(t, kCapacityOnDemand);
  if (!index) return std::nullopt;
  std::optional<MicroUsdPerHour> best;
  for (const auto& [floor, r] : ByPrice(t, kCapacityOnDemand)) {
    if (best && floor >= *best) break;  // Sorted by each row's floor: nothing cheaper follows.
    if (!rows.Test(r)) continue;
    auto price = Cheapest(t.types[r], *index, allowed);
    if (price && (!best || *price < *best)) best = price;
  }
  return best;
}

// Keeps the cheapest types, but first one type for each value a minValues key still needs.
std::vector<Candidate> Truncate(const PoolTemplate& t, std::vector<Candidate> sorted,
                                const Requirements& reqs) {
  if (sorted.size() <= kFleetOverridesMax) return sorted;
  std::vector<bool> keep(sorted.size(), false);
  std::size_t kept = 0;
  for (const auto& [key, set] : reqs.sets()) {
    if (set.min_values <= 0) continue;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      if (static_cast<std::int32_t>(seen.size()) >= set.min_values) break;
      bool adds = false;
      for (const auto& v : ValuesOf(t, t.types[sorted[i].row], key)) adds |= seen.insert(v).second;
      if (adds && !keep[i]) {
        keep[i] = true;
        ++kept;
      }
    }
  }
  for (std::size_t i = 0; i < sorted.size() && kept < kFleetOverridesMax; ++i) {
    if (!keep[i]) {
      keep[i] = true;
      ++kept;
    }
  }
  std::vector<Candidate> out;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (keep[i]) out.push_back(std::move(sorted[i]));
  }
  return out;
}

// Collects candidates in order of each row's cheapest offering; once kFleetOverridesMax are in
// hand, rows whose floor price is above the current cut-off cannot make the list. With
// minValues every row is kept, because a dearer type may be needed for its label value.
std::vector<Candidate> Collect(const PoolTemplate& t, const Bin& bin, const TypeMask& rows,
                               const std::string& capacity, const OfferingFilter& allowed,
                               std::optional<MicroUsdPerHour> ceiling) {
  bool min_values = std::any_of(bin.requirements.sets().begin(), bin.requirements.sets().end(),
                                [](const auto& kv) { return kv.second.min_values > 0; });
  std::vector<Candidate> out;
  auto index = allowed.Capacity(t, capacity);
  if (!index) return out;
  std::optional<MicroUsdPerHour> cutoff;
  for (const auto& [floor, r] : ByPrice(t, capacity)) {
    if (cutoff && floor > *cutoff) break;
    if (!rows.Test(r)) continue;
    Candidate c{r, {}, MicroUsdPerHour{0}};
    for (const auto& o : t.types[r].offers) {
      if (o.capacity != *index || !allowed(o)) continue;
      if (ceiling && o.price > *ceiling) continue;
      if (c.offers.empty() || o.price < c.cheapest) c.cheapest = o.price;
      c.offers.push_back(&o);
    }
    if (c.offers.empty()) continue;
    out.push_back(std::move(c));
    if (!min_values && !cutoff && out.size() >= kFleetOverridesMax) {
      std::vector<MicroUsdPerHour> prices;
      for (const auto& x : out) prices.push_back(x.cheapest);
      std::nth_element(prices.begin(), prices.begin() + (kFleetOverridesMax - 1), prices.end());
      cutoff = prices[kFleetOverridesMax - 1];
    }
  }
  return out;
}

}  // namespace

std::string MinValuesShortfall(const PoolTemplate& t, const TypeMask& mask,
                               const Requirements& reqs) {
  for (const auto& [key, set] : reqs.sets()) {
    if (set.min_values <= 0) continue;
    // As Karpenter counts: every value of the key the remaining types have (each type's
    // zones and capacity types offered, say), not only those the requirement allows.
    std::set<std::string> values;
    // The binding passed by name: clang before 16 cannot capture a structured binding.
    mask.ForEach([&, &name = key](std::size_t i) {
      for (const auto& v : ValuesOf(t, t.types[i], name)) values.insert(v);
    });
    if (static_cast<std::int32_t>(values.size()) < set.min_values) {
      return "minValues " + std::to_string(set.min_values) + " for " + key + " not met (" +
             std::to_string(values.size()) + " available)";
    }
  }
  return {};
}

PlannedClaim ChooseLaunch(const PoolTemplate& t, const Bin& bin) {
  assert(bin.types.Any());
  OfferingFilter allowed(t, bin.requirements);
  TypeMask rows = bin.types;
  TypeMask generic = rows;
  generic.AndNot(t.exotic);
  if (generic.Any()) rows = generic;
  std::string capacity = Offers(t, rows, kCapacityReserved, allowed) ? kCapacityReserved
                         : Offers(t, rows, kCapacitySpot, allowed)   ? kCapacitySpot
                                                                     : kCapacityOnDemand;
  // Spot dearer than the cheapest on-demand offering is never worth launching; unless the
  // claim has minValues to meet, which the dearer types may be needed for.
  const bool min_values =
      std::any_of(bin.requirements.sets().begin(), bin.requirements.sets().end(),
                  [](const auto& kv) { return kv.second.min_values > 0; });
  std::optional<MicroUsdPerHour> ceiling;
  if (capacity == kCapacitySpot && !min_values) ceiling = CheapestOnDemand(t, rows, allowed);
  std::vector<Candidate> candidates = Collect(t, bin, rows, capacity, allowed, ceiling);
  // Every spot offering it may take dearer than on-demand: on-demand, as Karpenter's
  // filtering of unwanted spot leaves the launch to the on-demand offerings then.
  if (candidates.empty() && capacity == kCapacitySpot && ceiling) {
    capacity = kCapacityOnDemand;
    candidates = Collect(t, bin, rows, capacity, allowed, std::nullopt);
  }
  std::sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.cheapest != b.cheapest) return a.cheapest < b.cheapest;
    return t.types[a.row].entry->type.name < t.types[b.row].entry->type.name;
  });
  candidates = Truncate(t, std::move(candidates), bin.requirements);
  PlannedClaim claim;
  claim.nodepool = t.pool->name;
  claim.nodeclass = t.pool->nodeclass;
  claim.pods = PodKeys(bin);
  claim.requests = bin.requests;
  claim.requirements = bin.requirements.ToList();
  claim.capacity_type = capacity;
  claim.allocation_strategy = capacity == kCapacitySpot ? kAllocationSpot : kAllocationOnDemand;
  bool first = true;
  for (const Candidate& c : candidates) {
    const TypeRow& row = t.types[c.row];
    claim.allocatable = first ? row.allocatable : Min(claim.allocatable, row.allocatable);
    first = false;
    std::vector<const TypeRow::Offer*> offers = c.offers;
    std::sort(offers.begin(), offers.end(), [](const auto* a, const auto* b) {
      return a->price != b->price ? a->price < b->price : a->zone < b->zone;
    });
    for (const auto* o : offers) {
      claim.offerings.push_back(
          {row.entry->type.name, t.zones[o->zone], t.capacities[o->capacity], o->price});
    }
  }
  return claim;
}

}  // namespace tenon::core
