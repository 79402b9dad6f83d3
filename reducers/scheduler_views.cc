// The pass's views of the pods: each pod's requirements, preferences, topology and shape as the
// pass tries it, relaxed one preference at a time, and why a pod fits nowhere.
#include <algorithm>
#include <cassert>

#include "reducers/scheduler_pass.h"

namespace tenon::core::placement {
namespace {

template <class T>
std::vector<T> HeaviestFirst(std::vector<T> terms) {
  std::stable_sort(terms.begin(), terms.end(),
                   [](const T& a, const T& b) { return a.weight > b.weight; });
  return terms;
}

// Volume topology: a bound volume's node affinity, else its StorageClass's topologies.
void AddVolumeTopology(const State& state, const Pod& pod, PodView& v) {
  for (const auto& claim_name : pod.constraints->volume_claims) {
    auto pvc = state.cluster.pvcs.find(PodKey(pod.ns, claim_name));
    if (pvc == state.cluster.pvcs.end()) continue;
    if (auto pv = state.cluster.pvs.find(pvc->second.volume_name); pv != state.cluster.pvs.end()) {
      if (!pv->second.node_affinity.empty()) {
        v.volume_requirements.Add(pv->second.node_affinity.front().requirements);
      }
    } else if (auto sc = state.cluster.storage_classes.find(pvc->second.storage_class);
               sc != state.cluster.storage_classes.end() &&
               !sc->second.allowed_topologies.empty()) {
      Requirements any_of;
      for (const auto& term : sc->second.allowed_topologies) {
        for (const auto& r : term.requirements) {
          const ValueSet* prior = any_of.Get(r.key);
          ValueSet set = ValueSet::From(r);
          if (prior != nullptr) {
            std::vector<std::string> merged = prior->values;
            merged.insert(merged.end(), set.values.begin(), set.values.end());
            set = ValueSet::From({r.key, RequirementOp::kIn, merged, 0});
            Requirements replaced;
            for (const auto& [k, s] : any_of.sets()) {
              if (k != r.key) replaced.Add(k, s);
            }
            any_of = replaced;
          }
          any_of.Add(r.key, set);
        }
      }
      v.volume_requirements.Add(any_of);
    }
  }
}

}  // namespace

void Pass::MakeView(const Pod& pod, PodView& v) {
  const bool shared = pod.constraints->volume_claims.empty();
  const auto base = std::make_tuple(static_cast<const void*>(&pod.ns.str()),
                                    static_cast<const void*>(&*pod.constraints),
                                    static_cast<const void*>(&*pod.labels));
  if (shared) {
    if (auto it = base_views_.find(base); it != base_views_.end()) {
      // A view left untouched by the last run (most are: no preference was relaxed) is already
      // the stored one but for what is the pod's own.
      if (v.base != &it->second) {
        v = it->second;
        v.base = &it->second;
      }
      v.target.clear();
      v.tries = 0;
      v.pod = &pod;
      v.key.assign(pod.ns.str()).append("/").append(pod.name);  // PodKey, in v's own buffer.
      v.need = pod.requests;
      v.need.pods = 1;
      v.stamp = ++stamps_;
      return;
    }
  }
  v = PodView{};
  v.pod = &pod;
  v.key = PodKey(pod.ns, pod.name);
  v.need = pod.requests;
  v.need.pods = 1;
  AddVolumes(pod, v.volumes);
  AddVolumeTopology(state_, pod, v);
  if (!state_.settings.ignore_preferences) {
    v.preferred_node = HeaviestFirst(pod.constraints->node_affinity_preferred);
    v.preferred_affinity = HeaviestFirst(pod.constraints->pod_affinity_preferred);
    v.preferred_anti_affinity = HeaviestFirst(pod.constraints->pod_anti_affinity_preferred);
  } else {
    v.tolerate_prefer_no_schedule = true;
  }
  v.spread_dropped.assign(pod.constraints->topology_spread.size(), false);
  for (std::size_t i = 0; i < pod.constraints->topology_spread.size(); ++i) {
    bool soft = !pod.constraints->topology_spread[i].do_not_schedule;
    if (soft && state_.settings.ignore_preferences) v.spread_dropped[i] = true;
  }
  Refresh(v);
  // The stored view keeps no key: each pod that copies it writes its own.
  if (shared) {
    PodView& stored = base_views_.emplace(base, v).first->second;
    stored.key.clear();
    v.base = &stored;
  }
}

void Pass::Refresh(PodView& v) {
  const Pod& pod = *v.pod;
  v.stamp = ++stamps_;
  v.requirements = Requirements();
  for (const auto& [key, value] : pod.constraints->node_selector)
    v.requirements.Add(key, ValueSet::Exactly(value));
  if (v.required_term < pod.constraints->node_affinity_required.size()) {
    v.requirements.Add(pod.constraints->node_affinity_required[v.required_term].requirements);
  }
  if (v.preferred_node_dropped < v.preferred_node.size()) {
    v.requirements.Add(v.preferred_node[v.preferred_node_dropped].requirements);
  }
  v.requirements.Add(v.volume_requirements);
  v.groups.clear();
  for (std::size_t i = 0; i < pod.constraints->topology_spread.size(); ++i) {
    if (!v.spread_dropped[i])
      v.groups.push_back(topology_.ForSpread(pod, pod.constraints->topology_spread[i]));
  }
  for (const auto& term : pod.constraints->pod_affinity_required) {
    v.groups.push_back(topology_.ForAffinity(pod, term, false));
  }
  for (std::size_t i = v.preferred_affinity_dropped; i < v.preferred_affinity.size(); ++i) {
    v.groups.push_back(topology_.ForAffinity(pod, v.preferred_affinity[i], false));
  }
  for (const auto& term : pod.constraints->pod_anti_affinity_required) {
    v.groups.push_back(topology_.ForAffinity(pod, term, true));
  }
  for (std::size_t i = v.preferred_anti_affinity_dropped; i < v.preferred_anti_affinity.size();
       ++i) {
    v.groups.push_back(topology_.ForAffinity(pod, v.preferred_anti_affinity[i], true));
  }
  v.shape = ShapeOf(v);
  v.selecting = &selecting_[v.shape].first;
}

// Everything about a pod that decides whether a claim can take it, except its size.
std::size_t Pass::ShapeOf(const PodView& v) {
  const Pod& pod = *v.pod;
  std::string s;
  s.reserve(128);
  ((s += pod.ns) += '|') += v.requirements.Signature();
  s += '|';
  for (const auto& [k, val] : *pod.labels) (((s += k) += '=') += val) += ',';
  s += '|';
  for (std::size_t g : v.groups) (s += std::to_string(g)) += ',';
  s += '|';
  for (const auto& t : pod.constraints->tolerations) {
    ((s += t.key) += t.op_exists ? '?' : '=') += t.value;
    (s += t.effect ? std::to_string(static_cast<int>(*t.effect)) : "*") += ',';
  }
  s += v.tolerate_prefer_no_schedule ? "|P|" : "|-|";
  for (const auto& p : pod.constraints->host_ports) {
    (((s += std::to_string(p.port)) += p.protocol) += p.host_ip) += ',';
  }
  for (const auto& [driver, ids] : v.volumes) {
    (s += driver) += ':';
    for (const auto& id : ids) (s += id) += ',';
  }
  auto [it, inserted] = shapes_.try_emplace(s, shapes_.size());
  if (inserted) {
    refused_.emplace_back();
    refused_existing_.emplace_back();
    refused_forever_.push_back(0);
    selecting_.emplace_back();
  }
  return it->second;
}

// Remembers that planned claim `index` turned the pod's shape away. A claim still being tried
// for its first pod is dropped if refused, so its refusals are not kept.
void Pass::Refuse(const PodView& v, std::size_t index, std::uint64_t until) {
  if (planned_[index].pods.empty()) return;
  auto& refused = refused_[v.shape];
  if (refused.size() <= index) refused.resize(planned_.size(), 0);
  if (refused[index] == kRefusedForever) return;
  refused[index] = until;
  if (until == kRefusedForever) refused_forever_[v.shape]++;
}

// One relaxation step, in Karpenter's order. False when nothing is left to relax.
bool Pass::Relax(PodView& v) {
  const Pod& pod = *v.pod;
  v.base = nullptr;  // No longer a copy of the stored view.
  if (v.relaxed.size() >= kPreferenceRelaxationsMax) return false;
  auto done = [&](std::string what) {
    v.relaxed.push_back(std::move(what));
    Refresh(v);
    return true;
  };
  if (v.required_term + 1 < pod.constraints->node_affinity_required.size()) {
    v.required_term++;
    return done("required node affinity term " + std::to_string(v.required_term - 1));
  }
  if (v.preferred_affinity_dropped < v.preferred_affinity.size()) {
    v.preferred_affinity_dropped++;
    return done("preferred pod affinity on " +
                v.preferred_affinity[v.preferred_affinity_dropped - 1].topology_key);
  }
  if (v.preferred_anti_affinity_dropped < v.preferred_anti_affinity.size()) {
    v.preferred_anti_affinity_dropped++;
    return done("preferred pod anti-affinity on " +
                v.preferred_anti_affinity[v.preferred_anti_affinity_dropped - 1].topology_key);
  }
  if (v.preferred_node_dropped < v.preferred_node.size()) {
    v.preferred_node_dropped++;
    return done("preferred node affinity (weight " +
                std::to_string(v.preferred_node[v.preferred_node_dropped - 1].weight) + ")");
  }
  for (std::size_t i = 0; i < pod.constraints->topology_spread.size(); ++i) {
    if (v.spread_dropped[i] || pod.constraints->topology_spread[i].do_not_schedule) continue;
    v.spread_dropped[i] = true;
    return done("ScheduleAnyway topology spread on " +
                pod.constraints->topology_spread[i].topology_key);
  }
  if (!v.tolerate_prefer_no_schedule) {
    v.tolerate_prefer_no_schedule = true;
    return done("tolerate PreferNoSchedule taints");
  }
  return false;
}

// Why no NodePool could take the pod, one reason per pool (what `tenon explain` prints).
std::string Pass::Explain(PodView& v) {
  Prepare(v);
  if (planned_.size() >= kNodeClaimsPerBatchMax) {
    return "too many new nodeclaims in one batch (" + std::to_string(kNodeClaimsPerBatchMax) +
           "); the next batch takes it";
  }
  std::string out;
  for (PoolTemplate& t : templates_) {
    std::string why = t.unusable;
    if (why.empty() && t.pool->replicas) why = "a static NodePool launches for its replicas only";
    if (why.empty() && t.types.empty()) why = "no instance type is available";
    if (why.empty()) TolerantOf(v, t.pool->taints, &why);
    if (why.empty()) why = t.requirements.Compatible(v.requirements, true);
    if (why.empty() && NamesAHost(v)) {
      why =
          "it needs a node of a given kubernetes.io/hostname (a volume's or its own), and a "
          "new node's name is not known before it registers";
    }
    if (why.empty()) {
      Requirements reqs = t.requirements;
      reqs.Add(v.requirements);
      topology_.Check(v, "#new", nullptr, &reqs, nullptr, nullptr, &why);
      if (why.empty()) {
        FitTypes(t, t.all, &reqs, v.need, nullptr, &why);
        if (const ValueSet* zone = reqs.Get(label::kZone);
            zone && !zone->complement && !why.empty()) {
          why += " in zone " +
                 zone->Describe(label::kZone).substr(std::string(label::kZone).size() + 1);
        }
      }
    }
    if (why.empty()) why = "fits a new node, but an earlier pod in the batch took the capacity";
    out += (out.empty() ? "" : "; ") + ("NodePool " + t.pool->name + ": " + why);
  }
  if (templates_.empty()) out = "no NodePool";
  return out;
}

}  // namespace tenon::core::placement
