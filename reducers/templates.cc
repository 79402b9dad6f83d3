// The per-pass NodePool templates: each pool's requirements and the instance types it could
// launch, with allocatable after the NodeClass kubelet settings and the DaemonSets that would
// run there. Built once per pass, O(pools x types), never per pod.
#include <algorithm>
#include <cassert>
#include <set>

#include "reducers/scheduling.h"
#include "reducers/templates.h"

namespace tenon::core {

TypeMask::TypeMask(std::size_t size, bool all) : words_((size + 63) / 64, 0) {
  if (!all) return;
  for (std::size_t i = 0; i < size; ++i) Set(i);
}

bool TypeMask::Any() const {
  return std::any_of(words_.begin(), words_.end(), [](std::uint64_t w) { return w != 0; });
}

std::size_t TypeMask::Count() const {
  std::size_t n = 0;
  for (std::uint64_t w : words_) n += static_cast<std::size_t>(__builtin_popcountll(w));
  return n;
}

bool TypeMask::Intersects(const TypeMask& other) const {
  for (std::size_t w = 0; w < words_.size() && w < other.words_.size(); ++w) {
    if (words_[w] & other.words_[w]) return true;
  }
  return false;
}

void TypeMask::ClearAll() {
  std::fill(words_.begin(), words_.end(), 0);
}

TypeMask& TypeMask::operator&=(const TypeMask& other) {
  assert(words_.size() == other.words_.size());
  for (std::size_t i = 0; i < words_.size(); ++i) words_[i] &= other.words_[i];
  return *this;
}

TypeMask& TypeMask::AndNot(const TypeMask& other) {
  assert(words_.size() == other.words_.size());
  for (std::size_t i = 0; i < words_.size(); ++i) words_[i] &= ~other.words_[i];
  return *this;
}

namespace {

bool IsExotic(const CatalogEntry& entry) {
  const auto& t = entry.type;
  return t.gpu_count > 0 || t.accelerator_count > 0 || t.bare_metal ||
         t.name.find("metal") != std::string::npos;
}

bool OfferingUsable(const State& state, const InstanceType& type, const Offering& o) {
  return o.available && !state.lifecycle.unavailable_offerings.contains(
                            OfferingKey(type.name, o.zone, o.capacity_type));
}

// Requirements a DaemonSet pod puts on the node it runs on.
Requirements DaemonRequirements(const Pod& pod) {
  Requirements r;
  for (const auto& [key, value] : pod.constraints->node_selector)
    r.Add(key, ValueSet::Exactly(value));
  if (!pod.constraints->node_affinity_required.empty())
    r.Add(pod.constraints->node_affinity_required.front().requirements);
  return r;
}

bool DaemonRunsOn(const PoolTemplate& t, const Pod& daemon, const Requirements& daemon_reqs,
                  const TypeRow& row) {
  for (const auto& taint : t.pool->taints) {
    if (taint.effect != TaintEffect::kPreferNoSchedule &&
        !Tolerates(daemon.constraints->tolerations, taint)) {
      return false;
    }
  }
  if (!t.requirements.Compatible(daemon_reqs, true).empty()) return false;
  return TypeAllows(t, row, daemon_reqs);
}

void ApplyDaemonSets(const State& state, PoolTemplate& t) {
  std::vector<std::pair<const Pod*, Requirements>> daemons;
  for (const auto& [key, ds] : state.cluster.daemonsets) {
    daemons.emplace_back(&ds.pod, DaemonRequirements(ds.pod));
  }
  for (TypeRow& row : t.types) {
    for (const auto& [pod, reqs] : daemons) {
      if (!DaemonRunsOn(t, *pod, reqs, row)) continue;
      Resources need = pod->requests;
      need.pods = 1;
      row.daemon_overhead += need;
    }
    row.allocatable -= row.daemon_overhead;
  }
}

Resources Capacity(const InstanceType& type) {
  Resources r{type.cpu, type.memory, 0, {}};
  return r;
}

// Limits left for the pool after the claims that already exist (launched or in flight).
void ApplyLimits(const State& state, PoolTemplate& t) {
  const NodePoolLimits& limits = t.pool->limits;
  t.limited = limits.cpu || limits.memory || limits.nodes || !limits.extended.empty();
  if (!t.limited) return;
  constexpr std::int64_t kUnlimited = std::int64_t{1} << 60;
  t.remaining = {limits.cpu.value_or(Millicores{kUnlimited}),
                 limits.memory.value_or(Bytes{kUnlimited}), 0, limits.extended};
  t.nodes_remaining = limits.nodes.value_or(kUnlimited);
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (claim.nodepool != t.pool->name) continue;
    t.nodes_remaining -= 1;
    Resources used;
    if (auto it = state.cluster.catalog->find(claim.instance_type);
        it != state.cluster.catalog->end()) {
      used = Capacity(it->second.type);
    } else {
      // Not launched yet: count the largest type it could become, as Karpenter does.
      for (const auto& type : *claim.instance_types) {
        if (auto c = state.cluster.catalog->find(type); c != state.cluster.catalog->end()) {
          used = Max(used, Capacity(c->second.type));
        }
      }
    }
    t.remaining -= used;
  }
}

}  // namespace

Resources TypeCapacity(const TypeRow& row) {
  Resources r = Capacity(row.entry->type);
  r.extended = row.entry->allocatable.extended;
  return r;
}

std::optional<std::string_view> TypeLabel(const PoolTemplate& t, const TypeRow& row,
                                          const std::string& key) {
  if (auto it = row.entry->labels.find(key); it != row.entry->labels.end()) return it->second;
  if (auto it = t.labels.find(key); it != t.labels.end()) return it->second;
  return std::nullopt;
}

bool IsTypeKey(const std::string& key) {
  return key == label::kInstanceType || key == label::kArch || key == label::kOs ||
         key.starts_with("karpenter.k8s.aws/instance-");
}

namespace {

// TypeAllows' first half: the requirements on the labels an instance type determines.
bool TypeLabelsAllow(const PoolTemplate& t, const TypeRow& row, const Requirements& reqs) {
  for (const auto& [key, set] : reqs.sets()) {
    if (!IsTypeKey(key) && !t.catalog_keys.contains(key)) continue;
    if (!set.Allows(TypeLabel(t, row, key))) return false;
  }
  return true;
}

}  // namespace

bool TypeAllows(const PoolTemplate& t, const TypeRow& row, const Requirements& reqs) {
  const ValueSet* zone = reqs.Get(label::kZone);
  const ValueSet* capacity = reqs.Get(label::kCapacityType);
  if (!TypeLabelsAllow(t, row, reqs)) return false;
  return std::any_of(row.offerings.begin(), row.offerings.end(), [&](const Offering* o) {
    return (!zone || zone->Has(o->zone)) && (!capacity || capacity->Has(o->capacity_type));
  });
}

const TypeMask& TypesFor(PoolTemplate& t, const Requirements& reqs) {
  std::string signature;
  for (const auto& [key, set] : reqs.sets()) {
    if (!IsTypeKey(key) && !t.catalog_keys.contains(key) && key != label::kZone &&
        key != label::kCapacityType) {
      continue;
    }
    Requirements one;
    one.Add(key, set);
    signature += one.Signature();
  }
  auto [it, inserted] = t.mask_cache.try_emplace(signature);
  if (!inserted) return it->second;
  TypeMask mask(t.types.size());
  for (std::size_t i = 0; i < t.types.size(); ++i) {
    if (TypeAllows(t, t.types[i], reqs)) mask.Set(i);
  }
  it->second = std::move(mask);
  return it->second;
}

std::vector<PoolTemplate> BuildTemplates(const State& state) {
  std::vector<PoolTemplate> out;
  for (const auto& [name, pool] : state.cluster.nodepools) {
    PoolTemplate t;
    t.pool = &pool;
    auto nc = state.cluster.nodeclasses.find(pool.nodeclass);
    if (nc == state.cluster.nodeclasses.end()) {
      t.unusable = "EC2NodeClass " + pool.nodeclass + " not found";
    } else if (!nc->second.ready) {
      t.unusable = "EC2NodeClass " + pool.nodeclass + " not ready";
    } else if (nc->second.terminating) {
      t.unusable = "EC2NodeClass " + pool.nodeclass + " is being deleted";
    } else {
      t.nodeclass = &nc->second;
      t.launch_zones = nc->second.zones;
      t.launch_archs = nc->second.archs;
    }
    // What the cloud resolved its selector terms to last is newer than the status written from
    // an earlier resolution: launches need a subnet in the zone and an AMI for the type.
    if (const auto r = state.nodeclass.resolutions.find(pool.nodeclass);
        t.nodeclass != nullptr && r != state.nodeclass.resolutions.end()) {
      if (!r->second.reason.empty()) {
        t.nodeclass = nullptr;
        t.unusable = "EC2NodeClass " + pool.nodeclass + " not ready (" + r->second.reason + ")";
      } else {
        std::set<std::string> zones;
        std::set<std::string> archs;
        for (const ResolvedSubnet& s : r->second.subnets) zones.insert(s.zone);
        for (const ResolvedAmi& a : r->second.amis) archs.insert(a.arch);
        t.launch_zones.assign(zones.begin(), zones.end());
        t.launch_archs.assign(archs.begin(), archs.end());
      }
    }
    t.labels = pool.labels;
    t.labels[label::kNodePool] = pool.name;
    // No defaults, as in Karpenter v1: a key the pool leaves out allows every value offered
    // (a pool without a capacity-type requirement launches spot when spot is offered).
    t.requirements.Add(pool.requirements);
    for (const auto& [key, value] : t.labels) t.requirements.Add(key, ValueSet::Exactly(value));
    // A key the catalog's types carry is defined, as a well-known label is: pods may select on
    // it without the pool naming it, and the types' own values decide.
    for (const auto& [name, entry] : *state.cluster.catalog) {
      for (const auto& [key, value] : entry.type.labels) t.catalog_keys.insert(key);
    }
    for (const auto& key : t.catalog_keys) {
      if (t.requirements.Get(key) == nullptr) t.requirements.Add(key, ValueSet{});
    }
    out.push_back(std::move(t));
  }
  // Heaviest weight first; equal weights by name, so the order never depends on input order.
  std::stable_sort(out.begin(), out.end(), [](const PoolTemplate& a, const PoolTemplate& b) {
    return a.pool->weight > b.pool->weight;
  });
  return out;
}

namespace {

// Zone and capacity-type names interned per template, and each row's compact offers.
void IndexOffers(PoolTemplate& t) {
  std::set<std::string> zones;
  std::set<std::string> capacities;
  for (const TypeRow& row : t.types) {
    for (const Offering* o : row.offerings) {
      zones.insert(o->zone);
      capacities.insert(o->capacity_type);
    }
  }
  t.zones.assign(zones.begin(), zones.end());
  t.capacities.assign(capacities.begin(), capacities.end());
  auto index = [](const std::vector<std::string>& names, const std::string& name) {
    return static_cast<std::uint16_t>(std::lower_bound(names.begin(), names.end(), name) -
                                      names.begin());
  };
  for (TypeRow& row : t.types) {
    row.offers.clear();
    for (const Offering* o : row.offerings) {
      row.offers.push_back(
          {index(t.zones, o->zone), index(t.capacities, o->capacity_type), o->price, o});
    }
  }
}

// The per-dimension threshold masks KeepFitting looks up.
void BuildThresholds(PoolTemplate& t) {
  t.with_extended = TypeMask(t.types.size());
  for (std::size_t i = 0; i < t.types.size(); ++i) {
    if (!t.types[i].allocatable.extended.empty()) t.with_extended.Set(i);
  }
  for (std::size_t d = 0; d < 3; ++d) {
    auto amount = [&](const TypeRow& row) {
      const Resources& a = row.allocatable;
      return d == 0 ? a.cpu.value : d == 1 ? a.memory.value : a.pods;
    };
    std::vector<std::int64_t> values;
    for (const TypeRow& row : t.types) values.push_back(amount(row));
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    auto& steps = t.thresholds[d];
    steps.clear();
    for (std::int64_t v : values) {
      PoolTemplate::Threshold step{v, TypeMask(t.types.size())};
      for (std::size_t i = 0; i < t.types.size(); ++i) {
        if (amount(t.types[i]) >= v) step.types.Set(i);
      }
      steps.push_back(std::move(step));
    }
  }
}

}  // namespace

void FillTypes(const State& state, PoolTemplate& t, AllocatableCache& per_nodeclass) {
  if (t.nodeclass == nullptr) {
    t.all = TypeMask(0);
    return;
  }
  auto consider = [&](const CatalogEntry& entry) {
    TypeRow row;
    row.entry = &entry;
    // The labels first: a pool that names a few types turns the rest of the catalog away
    // before its offerings are looked at.
    if (!TypeLabelsAllow(t, row, t.requirements)) return;
    // Only what the NodeClass can launch: a type of an architecture none of its AMIs serve,
    // or an offering in a zone none of its subnets are in, is not offered (as Karpenter builds
    // its offerings from the NodeClass's subnet zones).
    auto allows = [](const std::vector<std::string>& list, const std::string& value) {
      return list.empty() || std::find(list.begin(), list.end(), value) != list.end();
    };
    if (!allows(t.launch_archs, entry.type.arch)) return;
    for (const auto& o : entry.type.offerings) {
      if (allows(t.launch_zones, o.zone) && OfferingUsable(state, entry.type, o)) {
        row.offerings.push_back(&o);
      }
    }
    if (row.offerings.empty() || !TypeAllows(t, row, t.requirements)) return;
    // Allocatable depends on the NodeClass kubelet settings; computed once per NodeClass and
    // type. The type and its labels are the catalog's own.
    auto [it, fresh] = per_nodeclass.try_emplace({t.nodeclass, &entry});
    if (fresh) it->second = Allocatable(entry.type, state.settings, t.nodeclass);
    row.allocatable = it->second;
    row.exotic = IsExotic(entry);
    t.types.push_back(std::move(row));
  };
  // A pool that names its instance types (In, a finite list) has them looked up rather than
  // the catalog walked: an entry's instance-type label is its name (DeriveLabels), so no other
  // entry could be allowed. The list is sorted, so the types come in the walk's order.
  // The catalog as the pool sees it, NodeOverlays applied.
  const Catalog& catalog = CatalogFor(state, t.pool->name);
  const ValueSet* named = t.requirements.Get(label::kInstanceType);
  if (named != nullptr && !named->complement && !named->gt && !named->lt) {
    for (const auto& name : named->values) {
      auto entry = catalog.find(name);
      if (entry == catalog.end()) continue;
      assert(entry->second.labels.at(label::kInstanceType) == name);
      consider(entry->second);
    }
  } else {
    for (const auto& [name, entry] : catalog) consider(entry);
  }
  IndexOffers(t);
  t.all = TypeMask(t.types.size(), true);
  t.exotic = TypeMask(t.types.size());
  for (std::size_t i = 0; i < t.types.size(); ++i) {
    if (t.types[i].exotic) t.exotic.Set(i);
    std::map<std::string, MicroUsdPerHour> cheapest;
    for (const Offering* o : t.types[i].offerings) {
      auto [it, inserted] = cheapest.try_emplace(o->capacity_type, o->price);
      if (!inserted) it->second = std::min(it->second, o->price);
    }
    for (const auto& [ct, price] : cheapest) t.by_price[ct].push_back({price, i});
  }
  for (auto& [ct, rows] : t.by_price) {
    std::sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first < b.first;
      return t.types[a.second].entry->type.name < t.types[b.second].entry->type.name;
    });
  }
  ApplyDaemonSets(state, t);
  ApplyLimits(state, t);
  BuildThresholds(t);
}

void KeepFitting(const PoolTemplate& t, TypeMask& mask, const Resources& requests) {
  const std::int64_t need[3] = {requests.cpu.value, requests.memory.value, requests.pods};
  for (std::size_t d = 0; d < 3; ++d) {
    if (need[d] <= 0) continue;
    const auto& steps = t.thresholds[d];
    auto it = std::lower_bound(steps.begin(), steps.end(), need[d],
                               [](const auto& step, std::int64_t n) { return step.at_least < n; });
    if (it == steps.end()) {
      mask.ClearAll();
      return;
    }
    mask &= it->types;
  }
  if (requests.extended.empty()) return;
  mask.ForEach([&](std::size_t i) {
    if (!Fits(requests, t.types[i].allocatable)) mask.Clear(i);
  });
}

Resources Room(const PoolTemplate& t, const TypeMask& mask) {
  // Per dimension, the largest threshold some type in the mask reaches.
  Resources room;
  std::int64_t* dims[3] = {&room.cpu.value, &room.memory.value, &room.pods};
  for (std::size_t d = 0; d < 3; ++d) {
    const auto& steps = t.thresholds[d];
    for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
      if (mask.Intersects(it->types)) {
        *dims[d] = it->at_least;
        break;
      }
    }
  }
  if (!t.with_extended.Intersects(mask)) return room;
  TypeMask extended = mask;
  extended &= t.with_extended;
  extended.ForEach([&](std::size_t i) {
    for (const auto& [name, n] : t.types[i].allocatable.extended) {
      room.extended[name] = std::max(room.extended[name], n);
    }
  });
  return room;
}

}  // namespace tenon::core
