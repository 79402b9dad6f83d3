// Topology: spread constraints, pod affinity and anti-affinity as groups of pods counted per
// domain (Karpenter's topology.go and topologygroup.go). Where Karpenter picks among equal
// domains by Go map order, tenon takes the smallest domain name, so a pass is reproducible.
#include "reducers/topology.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <tuple>

#include "reducers/templates.h"

namespace tenon::core {
namespace {

std::string GroupSignature(const TopologyGroup& g) {
  std::string s;
  s.reserve(128);
  s += static_cast<char>('0' + static_cast<int>(g.kind));
  ((s += '|') += g.key) += '|';
  for (const auto& ns : g.namespaces) (s += ns) += ',';
  s += g.all_namespaces ? "*|" : "|";
  for (const auto& [k, v] : g.selector.match_labels) (((s += k) += '=') += v) += ',';
  s += '|';
  if (!g.selector.match_expressions.empty()) {
    s += Requirements(g.selector.match_expressions).Signature();
  }
  ((s += '|') += std::to_string(g.max_skew)) += '|';
  s += std::to_string(g.min_domains);
  if (g.filter_affinity) (s += "|A") += g.filter_requirements.Signature();
  if (g.filter_taints) {
    s += "|T";
    for (const auto& t : g.filter_tolerations) {
      (((s += t.key) += t.op_exists ? '?' : '=') += t.value) += ':';
      (s += t.effect ? std::to_string(static_cast<int>(*t.effect)) : "*") += ',';
    }
  }
  return s;
}

LabelSelector WithMatchLabelKeys(LabelSelector selector, const std::vector<std::string>& keys,
                                 const Labels& labels) {
  for (const auto& key : keys) {
    if (auto it = labels.find(key); it != labels.end()) selector.match_labels[key] = it->second;
  }
  return selector;
}

bool IsHostname(const std::string& key) {
  return key == label::kHostname;
}

std::optional<std::string> Label(const NodeLabels& labels, const std::string& key) {
  auto it = labels.find(key);
  if (it == labels.end()) return std::nullopt;
  return it->second;
}

bool NodeTaintsTolerated(const std::vector<Toleration>& tolerations,
                         const std::vector<Taint>& taints) {
  return std::all_of(taints.begin(), taints.end(), [&](const Taint& t) {
    return t.effect == TaintEffect::kPreferNoSchedule || Tolerates(tolerations, t);
  });
}

}  // namespace

bool Topology::Selects(const TopologyGroup& g, const Pod& pod) const {
  if (!g.all_namespaces && !std::binary_search(g.namespaces.begin(), g.namespaces.end(), pod.ns)) {
    return false;
  }
  return SelectorMatches(g.selector, *pod.labels);
}

bool Topology::NodeCounts(const TopologyGroup& g, const NodeLabels& labels,
                          const std::vector<Taint>& taints) const {
  if (g.kind != GroupKind::kSpread) return true;
  if (g.filter_affinity &&
      !g.filter_requirements.Matches([&](const std::string& key) { return labels.Lookup(key); })) {
    return false;
  }
  return !g.filter_taints || NodeTaintsTolerated(g.filter_tolerations, taints);
}

bool Topology::ClaimCounts(const TopologyGroup& g, const PoolTemplate& t,
                           const Requirements& reqs) const {
  if (g.kind != GroupKind::kSpread) return true;
  if (g.filter_affinity && !reqs.Compatible(g.filter_requirements, true).empty()) return false;
  return !g.filter_taints || NodeTaintsTolerated(g.filter_tolerations, t.pool->taints);
}

// Every value of `key` a node could carry: from the pools' types and offerings, and from the
// existing nodes. Spread groups honour their node filters here, as Karpenter's domain groups do.
void Topology::Register(TopologyGroup& g) {
  if (IsHostname(g.key)) return;  // Hostname domains are the bins themselves.
  for (const PoolTemplate& t : *templates_) {
    if (t.nodeclass == nullptr) continue;
    if (g.kind == GroupKind::kSpread) {
      if (g.filter_taints && !NodeTaintsTolerated(g.filter_tolerations, t.pool->taints)) continue;
      if (g.filter_affinity && !t.requirements.Compatible(g.filter_requirements, true).empty()) {
        continue;
      }
    }
    const ValueSet* allowed = t.requirements.Get(g.key);
    if (!IsTypeKey(g.key) && g.key != label::kZone && g.key != label::kCapacityType) {
      // A label the NodePool defines itself: its values are the domains.
      if (allowed && !allowed->complement)
        g.domains.insert(allowed->values.begin(), allowed->values.end());
      continue;
    }
    for (const TypeRow& row : t.types) {
      if (g.key == label::kZone || g.key == label::kCapacityType) {
        for (const Offering* o : row.offerings) {
          const std::string& v = g.key == label::kZone ? o->zone : o->capacity_type;
          if (!allowed || allowed->Has(v)) g.domains.insert(v);
        }
      } else if (auto v = TypeLabel(t, row, g.key)) {
        if (!allowed || allowed->Has(*v)) g.domains.insert(std::string(*v));
      }
    }
  }
  for (const auto& [name, node] : state_->cluster.nodes) {
    auto v = Label(node.labels, g.key);
    if (v && NodeCounts(g, node.labels, node.taints)) g.domains.insert(*v);
  }
}

// Counts the pods already bound to nodes into a new group. A selector with matchLabels
// looks only at the pods carrying its first label.
void Topology::CountExisting(TopologyGroup& g) {
  if (!bound_ready_) {
    for (const auto& [key, pod] : state_->cluster.pods) {
      if (pod.node_name.empty() || pod.phase == PodPhase::kSucceeded ||
          pod.phase == PodPhase::kFailed)
        continue;
      if (excluded_nodes_->contains(pod.node_name)) continue;
      auto node = state_->cluster.nodes.find(pod.node_name);
      if (node == state_->cluster.nodes.end()) continue;
      for (const auto& label : *pod.labels) bound_by_label_[label].push_back(bound_.size());
      bound_.emplace_back(&pod, &node->second);
    }
    bound_ready_ = true;
  }
  auto count = [&](const Pod& pod, const Node& node) {
    auto domain =
        IsHostname(g.key) ? std::optional<std::string>(node.name) : Label(node.labels, g.key);
    if (domain && Selects(g, pod) && NodeCounts(g, node.labels, node.taints)) g.counts[*domain]++;
  };
  if (g.selector.match_labels.empty()) {
    for (const auto& [pod, node] : bound_) count(*pod, *node);
    return;
  }
  auto carrying = bound_by_label_.find(*g.selector.match_labels.begin());
  if (carrying == bound_by_label_.end()) return;
  for (std::size_t i : carrying->second) count(*bound_[i].first, *bound_[i].second);
}

std::size_t Topology::Intern(TopologyGroup g) {
  std::string signature = GroupSignature(g);
  if (auto it = index_.find(signature); it != index_.end()) return it->second;
  assert(groups_.size() < kTopologyGroupsMax);
  Register(g);
  CountExisting(g);
  groups_.push_back(std::move(g));
  std::size_t index = groups_.size() - 1;
  index_[signature] = index;
  for (const auto& [pod, node] : unbound_) Uncount(index, *pod, *node);
  return index;
}

std::size_t Topology::ForSpread(const Pod& pod, const TopologySpreadConstraint& c) {
  TopologyGroup g;
  g.kind = GroupKind::kSpread;
  g.key = c.topology_key;
  g.namespaces = {pod.ns};
  g.selector = WithMatchLabelKeys(c.selector, c.match_label_keys, *pod.labels);
  g.max_skew = std::max(1, c.max_skew);
  g.min_domains = c.min_domains;
  g.filter_affinity = c.node_affinity_honor;
  if (g.filter_affinity) {
    for (const auto& [k, v] : pod.constraints->node_selector)
      g.filter_requirements.Add(k, ValueSet::Exactly(v));
    if (!pod.constraints->node_affinity_required.empty()) {
      g.filter_requirements.Add(pod.constraints->node_affinity_required.front().requirements);
    }
  }
  g.filter_taints = c.node_taints_honor;
  if (g.filter_taints) g.filter_tolerations = pod.constraints->tolerations;
  return Intern(std::move(g));
}

std::size_t Topology::ForAffinity(const Pod& pod, const PodAffinityTerm& term, bool anti) {
  TopologyGroup g;
  g.kind = anti ? GroupKind::kAntiAffinity : GroupKind::kAffinity;
  g.key = term.topology_key;
  g.all_namespaces = term.all_namespaces;
  g.namespaces = term.namespaces.empty() ? std::vector<std::string>{pod.ns} : term.namespaces;
  std::sort(g.namespaces.begin(), g.namespaces.end());
  if (g.all_namespaces) g.namespaces.clear();
  g.selector = WithMatchLabelKeys(term.selector, term.match_label_keys, *pod.labels);
  return Intern(std::move(g));
}

void Topology::AddExistingAntiAffinity() {
  for (const auto& [key, pod_ptr] : state_->cluster.pods.BoundWithAntiAffinity()) {
    const Pod& pod = *pod_ptr;
    if (excluded_nodes_->contains(pod.node_name)) continue;
    if (pod.phase == PodPhase::kSucceeded || pod.phase == PodPhase::kFailed) continue;
    auto node = state_->cluster.nodes.find(pod.node_name);
    if (node == state_->cluster.nodes.end()) continue;
    for (const auto& term : pod.constraints->pod_anti_affinity_required) {
      std::size_t g = ForAffinity(pod, term, true);
      auto domain = IsHostname(term.topology_key) ? std::optional<std::string>(node->first)
                                                  : Label(node->second.labels, term.topology_key);
      if (domain) groups_[g].owners[*domain]++;
    }
  }
}

std::int32_t Topology::Count(const TopologyGroup& g, std::string_view domain) const {
  auto it = g.counts.find(domain);
  return it == g.counts.end() ? 0 : it->second;
}

bool Topology::Narrow(const PodView& view, const TopologyGroup& g, bool owned,
                      std::vector<std::string_view>& node_domains, std::string* why) const {
  auto fail = [&](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  bool self = Selects(g, *view.pod);
  if (!owned) {
    // Another pod's anti-affinity selects this one: stay out of the domains it occupies.
    std::erase_if(node_domains, [&](std::string_view d) {
      auto it = g.owners.find(d);
      return it != g.owners.end() && it->second > 0;
    });
    return !node_domains.empty() ||
           fail("anti-affinity of a placed pod on " + g.key + " excludes it");
  }
  switch (g.kind) {
    case GroupKind::kSpread: {
      std::int32_t min = 0;
      if (!IsHostname(g.key) && g.min_stamp == view.stamp && g.min_version == g.version) {
        min = g.min_count;
      } else if (!IsHostname(g.key)) {
        // The least-loaded domain among those the pod itself may use.
        const ValueSet* mine = view.requirements.Get(g.key);
        std::int32_t usable = 0;
        min = std::numeric_limits<std::int32_t>::max();
        for (const auto& d : g.domains) {
          if (mine && !mine->Has(d)) continue;
          usable++;
          min = std::min(min, Count(g, d));
        }
        if (usable == 0 || (g.min_domains > 0 && usable < g.min_domains)) min = 0;
        if (view.stamp != 0)
          std::tie(g.min_stamp, g.min_version, g.min_count) =
              std::tuple(view.stamp, g.version, min);
      }
      std::string_view best;
      std::int32_t best_count = std::numeric_limits<std::int32_t>::max();
      for (std::string_view d : node_domains) {
        std::int32_t count = Count(g, d) + (self ? 1 : 0);
        if (count - min <= g.max_skew && count < best_count) {
          best = d;
          best_count = count;
        }
      }
      if (best_count == std::numeric_limits<std::int32_t>::max()) {
        node_domains.clear();
        return fail("topology spread on " + g.key + " (maxSkew " + std::to_string(g.max_skew) +
                    ") has no domain left");
      }
      node_domains.assign(1, best);
      return true;
    }
    case GroupKind::kAffinity: {
      bool occupied = std::any_of(g.counts.begin(), g.counts.end(),
                                  [](const auto& entry) { return entry.second > 0; });
      if (!occupied && self) {
        // Nothing to be near yet and the pod selects itself: any one domain bootstraps it.
        if (!node_domains.empty()) node_domains.resize(1);
        return !node_domains.empty() || fail("pod affinity on " + g.key + " has no domain");
      }
      std::erase_if(node_domains, [&](std::string_view d) { return Count(g, d) == 0; });
      return !node_domains.empty() || fail("pod affinity on " + g.key + " matches no pod in reach");
    }
    case GroupKind::kAntiAffinity: {
      std::erase_if(node_domains, [&](std::string_view d) { return Count(g, d) > 0; });
      return !node_domains.empty() ||
             fail("pod anti-affinity on " + g.key + " excludes every domain");
    }
  }
  return true;
}

bool Topology::Check(const PodView& view, std::string_view bin_name, const NodeLabels* labels,
                     const Requirements* claim, Choices* chosen, bool* permanent, std::string* why,
                     Memo* memo) const {
  std::vector<std::string_view> node_domains;
  auto check = [&](std::size_t index, bool owned) -> bool {
    const TopologyGroup& g = groups_[index];
    node_domains.clear();
    if (IsHostname(g.key)) {
      node_domains.push_back(bin_name);
    } else if (labels != nullptr) {
      auto it = labels->find(g.key);
      if (it == labels->end()) {
        if (owned && why != nullptr) *why = "node has no " + g.key + " label";
        return !owned;
      }
      if (memo != nullptr && !IsHostname(g.key)) {
        std::string_view domain = it->second.str();
        for (const auto& [i, o, d, ok] : memo->verdicts) {
          if (i == index && o == owned && d == domain) return ok;
        }
        node_domains.push_back(domain);
        bool ok = Narrow(view, g, owned, node_domains, why);
        memo->verdicts.emplace_back(index, owned, domain, ok);
        if (!ok && g.key == label::kZone) memo->refused_zones.push_back(domain);
        return ok;
      }
      node_domains.push_back(it->second.str());
    } else {
      // A planned claim may still use any domain both it and the pod allow.
      const ValueSet* theirs = claim != nullptr ? claim->Get(g.key) : nullptr;
      const ValueSet* mine = view.requirements.Get(g.key);
      for (const auto& d : g.domains) {
        if ((!theirs || theirs->Has(d)) && (!mine || mine->Has(d))) node_domains.push_back(d);
      }
    }
    if (!Narrow(view, g, owned, node_domains, why)) {
      // Counts only grow and a claim's domains only narrow during a pass, so these refusals
      // hold for the rest of it; spread and affinity on other keys can change their mind.
      bool lasting = g.kind == GroupKind::kAntiAffinity || !owned ||
                     (IsHostname(g.key) && g.kind == GroupKind::kSpread);
      if (permanent != nullptr) *permanent = lasting;
      return false;
    }
    if (labels == nullptr && !IsHostname(g.key) && chosen != nullptr) {
      chosen->emplace_back(index, node_domains);
    }
    return true;
  };
  for (std::size_t i : view.groups) {
    if (!check(i, true)) return false;
  }
  if (view.selecting != nullptr) {
    for (std::size_t i : *view.selecting) {
      const TopologyGroup& g = groups_[i];
      if (g.kind != GroupKind::kAntiAffinity || g.owners.empty()) continue;
      if (!check(i, false)) return false;
    }
  }
  return true;
}

bool Topology::RefusalOutlivesTrial(const PodView& view, std::string_view bin_name) const {
  auto refuses = [&](std::size_t index, bool owned) {
    const TopologyGroup& g = groups_[index];
    if (!IsHostname(g.key) || g.kind == GroupKind::kAffinity) return false;
    bool changed = std::any_of(changes_.begin(), changes_.end(), [&](const Change& c) {
      return c.index == index && c.domain == bin_name;
    });
    if (changed) return false;
    std::vector<std::string_view> domains{bin_name};
    return !Narrow(view, g, owned, domains, nullptr);
  };
  for (std::size_t i : view.groups) {
    if (refuses(i, true)) return true;
  }
  if (view.selecting != nullptr) {
    for (std::size_t i : *view.selecting) {
      const TopologyGroup& g = groups_[i];
      if (g.kind == GroupKind::kAntiAffinity && !g.owners.empty() && refuses(i, false)) return true;
    }
  }
  return false;
}

bool Topology::Narrows(const Choices& chosen, const Requirements& claim) const {
  for (const auto& [index, values] : chosen) {
    const ValueSet* existing = claim.Get(groups_[index].key);
    if (existing == nullptr || existing->complement) return true;
    for (const auto& v : existing->values) {
      if (std::find(values.begin(), values.end(), v) == values.end()) return true;
    }
    if (existing->absent_ok) return true;
  }
  return false;
}

void Topology::Apply(const Choices& chosen, Requirements& claim) const {
  for (const auto& [index, values] : chosen) {
    ValueSet set{false, {values.begin(), values.end()}, {}, {}, false, 0};
    std::sort(set.values.begin(), set.values.end());
    claim.Add(groups_[index].key, set);
  }
}

void Topology::Record(const PodView& view, std::string_view bin_name, const NodeLabels* labels,
                      const PoolTemplate* t, const Requirements* claim_reqs) {
  std::vector<std::string_view> domains;
  auto record = [&](std::size_t index, bool selected, bool owned) {
    TopologyGroup& g = groups_[index];
    if (selected && g.kind == GroupKind::kSpread) {
      bool counts =
          labels != nullptr ? NodeCounts(g, *labels, {}) : ClaimCounts(g, *t, *claim_reqs);
      if (!counts) selected = false;
    }
    domains.clear();
    if (IsHostname(g.key)) {
      domains.push_back(bin_name);
    } else if (labels != nullptr) {
      if (auto it = labels->find(g.key); it != labels->end()) domains.push_back(it->second.str());
    } else {
      const ValueSet* allowed = claim_reqs->Get(g.key);
      for (const auto& d : g.domains) {
        if (!allowed || allowed->Has(d)) domains.push_back(d);
      }
    }
    if (selected && (g.kind == GroupKind::kAntiAffinity || domains.size() == 1)) {
      // Spread and affinity count a pod only where its domain is known; anti-affinity blocks
      // every domain the pod might end up in.
      Touch(index);
      for (std::string_view d : domains) {
        if (Add(index, false, d, 1) == 1 || g.kind == GroupKind::kSpread) g.version++;
      }
    }
    if (owned && g.kind == GroupKind::kAntiAffinity) {
      Touch(index);
      for (std::string_view d : domains) {
        if (Add(index, true, d, 1) == 1) g.owners_version++;
      }
    }
  };
  auto owns = [&](std::size_t index) {
    return std::find(view.groups.begin(), view.groups.end(), index) != view.groups.end();
  };
  assert(view.selecting != nullptr);
  for (std::size_t i : *view.selecting) record(i, true, owns(i));
  for (std::size_t i : view.groups) {
    bool selected =
        std::find(view.selecting->begin(), view.selecting->end(), i) != view.selecting->end();
    if (!selected && groups_[i].kind == GroupKind::kAntiAffinity) record(i, false, true);
  }
}

void Topology::Selecting(const Pod& pod, std::vector<std::size_t>& cache,
                         std::size_t& scanned) const {
  for (; scanned < groups_.size(); ++scanned) {
    if (Selects(groups_[scanned], pod)) cache.push_back(scanned);
  }
}

void Topology::BeginTrial() {
  assert(!trial_ && saved_.empty() && unbound_.empty());
  trial_ = true;
}

// Saves the group's versions the first time a trial changes it.
void Topology::Touch(std::size_t index) {
  if (!trial_) return;
  if (touched_.size() <= index) touched_.resize(groups_.size(), false);
  if (touched_[index]) return;
  touched_[index] = true;
  const TopologyGroup& g = groups_[index];
  saved_.push_back({index, g.version, g.owners_version});
}

// Adds `delta` to a domain's count (or owners), dropping the entry at zero as a fresh pass
// would not have it; in a trial the old value is journaled first. Returns the new value.
std::int32_t Topology::Add(std::size_t index, bool owners, std::string_view domain,
                           std::int32_t delta) {
  DomainCounts& counts = owners ? groups_[index].owners : groups_[index].counts;
  auto it = counts.find(domain);
  std::int32_t before = it == counts.end() ? 0 : it->second;
  if (trial_) changes_.push_back({index, owners, std::string(domain), before});
  std::int32_t after = before + delta;
  assert(after >= 0);
  if (after <= 0) {
    if (it != counts.end()) counts.erase(it);
  } else if (it != counts.end()) {
    it->second = after;
  } else {
    counts.emplace(std::string(domain), after);
  }
  return after;
}

// Takes a bound pod out of one group's counts, as CountExisting would not have counted it.
void Topology::Uncount(std::size_t index, const Pod& pod, const Node& node) {
  const TopologyGroup& g = groups_[index];
  if (!Selects(g, pod) || !NodeCounts(g, node.labels, node.taints)) return;
  auto domain =
      IsHostname(g.key) ? std::optional<std::string>(node.name) : Label(node.labels, g.key);
  if (!domain) return;
  Touch(index);
  Add(index, false, *domain, -1);
}

void Topology::Unbind(const Pod& pod, const Node& node) {
  assert(trial_);
  for (const auto& term : pod.constraints->pod_anti_affinity_required) {
    std::size_t index = ForAffinity(pod, term, true);
    auto domain = IsHostname(term.topology_key) ? std::optional<std::string>(node.name)
                                                : Label(node.labels, term.topology_key);
    if (!domain) continue;
    Touch(index);
    Add(index, true, *domain, -1);
  }
  for (std::size_t index = 0; index < groups_.size(); ++index) Uncount(index, pod, node);
  unbound_.emplace_back(&pod, &node);
}

void Topology::Undo() {
  assert(trial_);
  for (auto change = changes_.rbegin(); change != changes_.rend(); ++change) {
    TopologyGroup& g = groups_[change->index];
    DomainCounts& counts = change->owners ? g.owners : g.counts;
    if (change->before == 0) {
      counts.erase(change->domain);
    } else {
      counts[change->domain] = change->before;
    }
  }
  changes_.clear();
  for (const Saved& s : saved_) {
    groups_[s.index].version = s.version;
    groups_[s.index].owners_version = s.owners_version;
    touched_[s.index] = false;
  }
  saved_.clear();
  unbound_.clear();
  trial_ = false;
}

std::uint64_t Topology::Epoch(const PodView& view) const {
  std::uint64_t epoch = 0;
  for (std::size_t i : view.groups) epoch += groups_[i].version;
  for (std::size_t i : *view.selecting) epoch += groups_[i].owners_version;
  return epoch;
}

}  // namespace tenon::core
