// NodeOverlays (FEATURE_GATES NodeOverlay): the catalog as each NodePool sees it once the
// overlays have changed prices and capacity. The semantics are Karpenter's node overlay store:
//
//   - Overlays are taken heaviest weight first, the later name first among equal weights.
//   - An overlay matches an instance type of a NodePool when the type's labels, its offerings'
//     zones and capacity types, the NodePool's name, its EC2NodeClass and its template labels
//     are compatible with every requirement; it matches the offerings whose zone and capacity
//     type its requirements allow.
//   - Each offering takes the price change of the first overlay that matches it; a later one of
//     the same weight that also changes it is in conflict. Capacity merges per type, the first
//     overlay's value of a resource kept; a later one of the same weight naming a resource the
//     previous one named is in conflict. An overlay in conflict anywhere is applied nowhere.
//   - A price change is computed from the cloud's price and never below zero. Capacity applies
//     to the whole type, and hugepages are taken from its memory (catalog.cc).
#include <algorithm>
#include <set>

#include "reducers/internal.h"

namespace tenon::core {
namespace {

constexpr char kNodeClassLabel[] = "karpenter.k8s.aws/ec2nodeclass";
constexpr char kRuntimeValidation[] = "RuntimeValidation";
constexpr char kConflict[] = "Conflict";
constexpr char kConflictMessage[] = "conflict with another overlay";

// What the overlays taken so far stored for one instance type of one NodePool.
struct TypeStore {
  // Per offering (zone/capacity type): the overlay whose price applies, and the lowest weight
  // of the overlays that matched it.
  std::map<std::string, std::pair<const NodeOverlay*, std::int32_t>> price;
  bool has_capacity = false;
  std::map<std::string, std::int64_t> capacity;
  std::vector<std::string> capacity_by;
  std::int32_t capacity_weight = 0;
  std::map<std::string, std::int64_t> last_capacity;  // Of the last overlay stored.
};
using PoolStore = std::map<std::string, TypeStore>;  // By instance type.

struct Match {
  const NodePool* pool;
  const CatalogEntry* entry;
  std::vector<std::string> offerings;  // zone/capacity type.
};

std::string OfferingSlot(const Offering& o) {
  return o.zone + "/" + o.capacity_type;
}

// Karpenter's Compatible of the type's requirements (every value it or its NodePool defines)
// with the overlay's: each key the overlay names must have a value both allow; a key neither
// the type nor the pool defines allows only NotIn and DoesNotExist.
bool TypeMatches(const Requirements& want, const NodePool& pool, const CatalogEntry& entry) {
  for (const auto& requirement : want.sets()) {
    const std::string& key = requirement.first;
    const ValueSet& set = requirement.second;  // Named: a lambda below takes it.
    std::vector<std::string_view> values;
    if (key == label::kZone || key == label::kCapacityType) {
      for (const Offering& o : entry.type.offerings) {
        values.push_back(key == label::kZone ? o.zone : o.capacity_type);
      }
    } else if (key == label::kNodePool) {
      values.push_back(pool.name);
    } else if (key == kNodeClassLabel) {
      values.push_back(pool.nodeclass);
    } else if (auto l = pool.labels.find(key); l != pool.labels.end()) {
      values.push_back(l->second);
    } else if (auto t = entry.labels.find(key); t != entry.labels.end()) {
      values.push_back(t->second);
    }
    if (values.empty()) {
      if (!set.absent_ok) return false;
      continue;
    }
    if (std::none_of(values.begin(), values.end(),
                     [&](std::string_view v) { return set.Has(v); })) {
      return false;
    }
  }
  return true;
}

// The offering's zone and capacity type against the overlay's requirements on them.
bool OfferingMatches(const Requirements& want, const Offering& o) {
  const ValueSet* zone = want.Get(label::kZone);
  const ValueSet* capacity = want.Get(label::kCapacityType);
  return (zone == nullptr || zone->Has(o.zone)) &&
         (capacity == nullptr || capacity->Has(o.capacity_type));
}

std::vector<Match> Matches(const State& state, const NodeOverlay& overlay) {
  const Requirements want(overlay.requirements);
  std::vector<Match> out;
  for (const auto& [pool_name, pool] : state.cluster.nodepools) {
    for (const auto& [type_name, entry] : *state.cluster.catalog) {
      if (!TypeMatches(want, pool, entry)) continue;
      Match m{&pool, &entry, {}};
      for (const Offering& o : entry.type.offerings) {
        if (OfferingMatches(want, o)) m.offerings.push_back(OfferingSlot(o));
      }
      if (!m.offerings.empty()) out.push_back(std::move(m));
    }
  }
  return out;
}

bool InConflict(const NodeOverlay& overlay, const std::vector<Match>& matches,
                std::map<std::string, PoolStore>& store) {
  for (const Match& m : matches) {
    const TypeStore& slot = store[m.pool->name][m.entry->type.name];
    if (overlay.price) {
      for (const std::string& o : m.offerings) {
        auto it = slot.price.find(o);
        if (it != slot.price.end() && it->second.second == overlay.weight) return true;
      }
    }
    if (!overlay.capacity.empty() && slot.has_capacity && slot.capacity_weight == overlay.weight) {
      for (const auto& [name, amount] : overlay.capacity) {
        if (slot.last_capacity.contains(name)) return true;
      }
    }
  }
  return false;
}

void Store(const NodeOverlay& overlay, const std::vector<Match>& matches,
           std::map<std::string, PoolStore>& store) {
  for (const Match& m : matches) {
    TypeStore& slot = store[m.pool->name][m.entry->type.name];
    if (overlay.price) {
      for (const std::string& o : m.offerings) {
        auto [it, fresh] = slot.price.try_emplace(o, &overlay, overlay.weight);
        if (!fresh) it->second.second = overlay.weight;
      }
    }
    if (!overlay.capacity.empty()) {
      bool added = false;
      for (const auto& [name, amount] : overlay.capacity) {
        added = slot.capacity.try_emplace(name, amount).second || added;
      }
      if (added) slot.capacity_by.push_back(overlay.name);
      slot.has_capacity = true;
      slot.capacity_weight = overlay.weight;
      slot.last_capacity = overlay.capacity;
    }
  }
}

// The type with its stored changes made: prices from the cloud's, capacity merged in.
InstanceType Overlaid(const InstanceType& type, const TypeStore& slot) {
  InstanceType out = type;
  for (Offering& o : out.offerings) {
    auto it = slot.price.find(OfferingSlot(o));
    if (it != slot.price.end()) o.price = AdjustedPrice(o.price, *it->second.first->price);
  }
  for (const auto& [name, amount] : slot.capacity) {
    out.extended[name] = amount;
    if (out.allocatable) out.allocatable->extended[name] = amount;
  }
  return out;
}

OverlaidCatalog Apply(const State& state, const PoolStore& pool) {
  OverlaidCatalog out;
  Catalog catalog = *state.cluster.catalog;
  for (const auto& [type_name, slot] : pool) {
    auto entry = catalog.find(type_name);
    if (entry == catalog.end() || (slot.price.empty() && slot.capacity.empty())) continue;
    entry->second = MakeCatalogEntry(Overlaid(entry->second.type, slot), state.settings);
    for (const auto& [offering, by] : slot.price) {
      out.priced_by[type_name + "/" + offering] = by.first->name;
    }
    if (!slot.capacity_by.empty()) out.capacity_by[type_name] = slot.capacity_by;
  }
  out.catalog = std::move(catalog);
  return out;
}

// The overlaid catalogs, and each overlay's status, from the state's inputs.
std::map<std::string, NodeOverlayStatus> Build(State& state) {
  state.cluster.overlaid.by_pool.clear();
  state.cluster.overlaid.stale = false;
  std::map<std::string, NodeOverlayStatus> statuses;
  if (!state.settings.node_overlay) return statuses;
  std::vector<const NodeOverlay*> ordered;
  for (const auto& [name, overlay] : state.cluster.nodeoverlays) ordered.push_back(&overlay);
  std::sort(ordered.begin(), ordered.end(), [](const NodeOverlay* a, const NodeOverlay* b) {
    return a->weight != b->weight ? a->weight > b->weight : a->name > b->name;
  });
  std::map<std::string, PoolStore> store;
  for (const NodeOverlay* overlay : ordered) {
    NodeOverlayStatus& status = statuses[overlay->name];
    if (!overlay->invalid.empty()) {
      status = {false, kRuntimeValidation, overlay->invalid};
      continue;
    }
    const std::vector<Match> matches = Matches(state, *overlay);
    if (InConflict(*overlay, matches, store)) {
      status = {false, kConflict, kConflictMessage};
      continue;
    }
    Store(*overlay, matches, store);
  }
  for (const auto& [pool, types] : store) {
    OverlaidCatalog overlaid = Apply(state, types);
    if (!overlaid.priced_by.empty() || !overlaid.capacity_by.empty()) {
      state.cluster.overlaid.by_pool[pool] = std::move(overlaid);
    }
  }
  return statuses;
}

}  // namespace

MicroUsdPerHour AdjustedPrice(MicroUsdPerHour price, const PriceChange& change) {
  std::int64_t adjusted = price.value;
  switch (change.kind) {
    case PriceChange::Kind::kSet:
      adjusted = change.value;
      break;
    case PriceChange::Kind::kAdd:
      adjusted = price.value + change.value;
      break;
    case PriceChange::Kind::kPercent: {
      // The change rounded to the nearest micro-dollar, half away from zero.
      const __int128 scaled = static_cast<__int128>(price.value) * change.value;
      const __int128 half = scaled < 0 ? -500'000'000 : 500'000'000;
      adjusted = price.value + static_cast<std::int64_t>((scaled + half) / 1'000'000'000);
      break;
    }
  }
  return MicroUsdPerHour{std::max<std::int64_t>(0, adjusted)};
}

const Catalog& CatalogFor(const State& state, const std::string& nodepool) {
  const OverlaidCatalog* overlaid = OverlaidFor(state, nodepool);
  return overlaid != nullptr ? *overlaid->catalog : *state.cluster.catalog;
}

const OverlaidCatalog* OverlaidFor(const State& state, const std::string& nodepool) {
  if (state.cluster.overlaid.by_pool.empty()) return nullptr;
  auto it = state.cluster.overlaid.by_pool.find(nodepool);
  return it == state.cluster.overlaid.by_pool.end() ? nullptr : &it->second;
}

void RebuildOverlays(State& state) {
  Build(state);
}

void RefreshOverlays(State& state, Seq seq, Output& out) {
  std::set<std::string> pools;
  for (const auto& [pool, overlaid] : state.cluster.overlaid.by_pool) pools.insert(pool);
  const std::map<std::string, NodeOverlayStatus> statuses = Build(state);
  for (const auto& [pool, overlaid] : state.cluster.overlaid.by_pool) pools.insert(pool);
  RepriceClaims(state, pools);
  for (const auto& [name, status] : statuses) {
    auto [it, fresh] = state.cluster.nodeoverlay_status.try_emplace(name, status);
    if (!fresh && it->second == status) continue;
    it->second = status;
    Issue(state, seq, PatchNodeOverlayStatus{name, status}, out);
  }
  std::erase_if(state.cluster.nodeoverlay_status, [&](const auto& entry) {
    return !state.cluster.nodeoverlays.contains(entry.first);
  });
}

std::string OverlayNote(const State& state, const std::string& nodepool,
                        const std::vector<OfferingChoice>& offerings) {
  const OverlaidCatalog* overlaid = OverlaidFor(state, nodepool);
  if (overlaid == nullptr) return "";
  std::map<std::string, std::set<std::string>> priced;    // Overlay -> offerings.
  std::map<std::string, std::set<std::string>> capacity;  // Overlay -> types.
  std::set<std::string> types;
  for (const OfferingChoice& o : offerings) {
    types.insert(o.instance_type);
    const std::string key = OfferingKey(o.instance_type, o.zone, o.capacity_type);
    if (auto by = overlaid->priced_by.find(key); by != overlaid->priced_by.end()) {
      priced[by->second].insert(key);
    }
    if (auto by = overlaid->capacity_by.find(o.instance_type); by != overlaid->capacity_by.end()) {
      for (const std::string& name : by->second) capacity[name].insert(o.instance_type);
    }
  }
  std::string note;
  auto add = [&](const std::string& text) { note += (note.empty() ? "" : "; ") + text; };
  for (const auto& [name, keys] : priced) {
    add("NodeOverlay " + name + " priced " + std::to_string(keys.size()) + " of its " +
        std::to_string(offerings.size()) + " offerings");
  }
  for (const auto& [name, names] : capacity) {
    add("NodeOverlay " + name + " added capacity to " + std::to_string(names.size()) + " of its " +
        std::to_string(types.size()) + " instance types");
  }
  return note;
}

}  // namespace tenon::core
