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
  std::vector<const Offering*> offerings;  // Of the chosen capacity type, allowed zones.
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

// Zone and capacity-type requirements, looked up once per claim rather than per offering.
struct OfferingFilter {
  const ValueSet* zone = nullptr;
  const ValueSet* capacity = nullptr;
  bool operator()(const Offering& o) const {
    return (!zone || zone->Has(o.zone)) && (!capacity || capacity->Has(o.capacity_type));
  }
};

const std::vector<std::pair<MicroUsdPerHour, std::size_t>>& ByPrice(const PoolTemplate& t,
                                                                    const std::string& ct) {
  static const std::vector<std::pair<MicroUsdPerHour, std::size_t>> kNone;
  auto it = t.by_price.find(ct);
  return it == t.by_price.end() ? kNone : it->second;
}

// The cheapest allowed offering of `ct` on a row, if any.
std::optional<MicroUsdPerHour> Cheapest(const TypeRow& row, const std::string& ct,
                                        const OfferingFilter& allowed) {
  std::optional<MicroUsdPerHour> best;
  for (const Offering* o : row.offerings) {
    if (o->capacity_type != ct || !allowed(*o)) continue;
    if (!best || o->price < *best) best = o->price;
  }
  return best;
}

bool Offers(const PoolTemplate& t, const TypeMask& rows, const std::string& ct,
            const OfferingFilter& allowed) {
  if (allowed.capacity && !allowed.capacity->Has(ct)) return false;
  for (const auto& [price, r] : ByPrice(t, ct)) {
    if (rows.Test(r) && Cheapest(t.types[r], ct, allowed)) return true;
  }
  return false;
}

std::optional<MicroUsdPerHour> CheapestOnDemand(const PoolTemplate& t, const TypeMask& rows,
                                                const OfferingFilter& allowed) {
  std::optional<MicroUsdPerHour> best;
  for (const auto& [floor, r] : ByPrice(t, kCapacityOnDemand)) {
    if (best && floor >= *best) break;  // Sorted by each row's floor: nothing cheaper follows.
    if (!rows.Test(r)) continue;
    auto price = Cheapest(t.types[r], kCapacityOnDemand, allowed);
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
  std::optional<MicroUsdPerHour> cutoff;
  for (const auto& [floor, r] : ByPrice(t, capacity)) {
    if (cutoff && floor > *cutoff) break;
    if (!rows.Test(r)) continue;
    Candidate c{r, {}, MicroUsdPerHour{0}};
    for (const Offering* o : t.types[r].offerings) {
      if (o->capacity_type != capacity || !allowed(*o)) continue;
      if (ceiling && o->price > *ceiling) continue;
      if (c.offerings.empty() || o->price < c.cheapest) c.cheapest = o->price;
      c.offerings.push_back(o);
    }
    if (c.offerings.empty()) continue;
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
    std::set<std::string> values;
    mask.ForEach([&](std::size_t i) {
      for (const auto& v : ValuesOf(t, t.types[i], key)) {
        if (set.Has(v)) values.insert(v);
      }
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
  OfferingFilter allowed{bin.requirements.Get(label::kZone),
                         bin.requirements.Get(label::kCapacityType)};
  TypeMask rows = bin.types;
  TypeMask generic = rows;
  generic.AndNot(t.exotic);
  if (generic.Any()) rows = generic;
  std::string capacity = Offers(t, rows, kCapacityReserved, allowed) ? kCapacityReserved
                         : Offers(t, rows, kCapacitySpot, allowed)   ? kCapacitySpot
                                                                     : kCapacityOnDemand;
  // Spot dearer than the cheapest on-demand offering is never worth launching.
  std::optional<MicroUsdPerHour> ceiling;
  if (capacity == kCapacitySpot) ceiling = CheapestOnDemand(t, rows, allowed);
  std::vector<Candidate> candidates = Collect(t, bin, rows, capacity, allowed, ceiling);
  std::sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.cheapest != b.cheapest) return a.cheapest < b.cheapest;
    return t.types[a.row].entry->type.name < t.types[b.row].entry->type.name;
  });
  candidates = Truncate(t, std::move(candidates), bin.requirements);
  PlannedClaim claim;
  claim.nodepool = t.pool->name;
  claim.nodeclass = t.pool->nodeclass;
  claim.pods = bin.pods;
  claim.requests = bin.requests;
  claim.requirements = bin.requirements.ToList();
  claim.capacity_type = capacity;
  claim.allocation_strategy = capacity == kCapacitySpot ? kAllocationSpot : kAllocationOnDemand;
  bool first = true;
  for (const Candidate& c : candidates) {
    const TypeRow& row = t.types[c.row];
    claim.allocatable = first ? row.allocatable : Min(claim.allocatable, row.allocatable);
    first = false;
    std::vector<const Offering*> offerings = c.offerings;
    std::sort(offerings.begin(), offerings.end(), [](const Offering* a, const Offering* b) {
      return a->price != b->price ? a->price < b->price : a->zone < b->zone;
    });
    for (const Offering* o : offerings) {
      claim.offerings.push_back({row.entry->type.name, o->zone, o->capacity_type, o->price});
    }
  }
  return claim;
}

}  // namespace tenon::core
