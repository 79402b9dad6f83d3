// The scheduler: one provisioning pass over the pending pods, as Karpenter's provisioner runs it.
//
// Pods are taken largest first. Each goes to an existing node or in-flight NodeClaim, else to
// a NodeClaim planned in this pass (fewest pods first), else to a new NodeClaim from the
// heaviest NodePool that can take it. Preferences start out as requirements and are relaxed
// one at a time in Karpenter's order when a pod fits nowhere. Pods that still fit nowhere go
// to the back of the queue; the pass ends when a full turn of the queue places nothing.
#include <algorithm>
#include <cassert>
#include <deque>
#include <limits>
#include <set>
#include <tuple>

#include "reducers/launch.h"
#include "reducers/scheduling.h"
#include "reducers/templates.h"
#include "reducers/topology.h"

namespace tenon::core {
namespace {

// Taints on an existing node that say nothing about where pods belong once it is up.
bool Ephemeral(const Taint& t) {
  return t.key == label::kUnregisteredTaint || t.key == "node.kubernetes.io/not-ready" ||
         t.key == "node.kubernetes.io/unreachable" ||
         t.key == "node.cloudprovider.kubernetes.io/uninitialized";
}

// Whether pods may be planned onto an existing node. Not one being deleted, and not a node made
// for a NodePool (its label or the unregistered taint) that no NodeClaim owns: nothing will
// register it or take the unregistered taint off, so pods planned there would wait on it for
// ever (a leaked instance's node, one whose NodeClaim was deleted).
bool IsCapacity(const State& state, const Node& node) {
  if (node.deleting) return false;
  if (state.claims_by_node.Has(node.name)) return true;
  const bool made_for_a_pool =
      node.labels.contains(label::kNodePool) ||
      std::any_of(node.taints.begin(), node.taints.end(),
                  [](const Taint& t) { return t.key == label::kUnregisteredTaint; });
  return !made_for_a_pool;
}

std::string TaintText(const Taint& t) {
  static constexpr const char* kEffects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
  return t.key + (t.value.empty() ? "" : "=" + t.value) + ":" +
         kEffects[static_cast<int>(t.effect)];
}

bool PortsConflict(const HostPort& a, const HostPort& b) {
  if (a.port != b.port || a.protocol != b.protocol) return false;
  bool any_a = a.host_ip.empty() || a.host_ip == "0.0.0.0";
  bool any_b = b.host_ip.empty() || b.host_ip == "0.0.0.0";
  return any_a || any_b || a.host_ip == b.host_ip;
}

template <class T>
std::vector<T> HeaviestFirst(std::vector<T> terms) {
  std::stable_sort(terms.begin(), terms.end(),
                   [](const T& a, const T& b) { return a.weight > b.weight; });
  return terms;
}

std::string Quantity(const Resources& r) {
  std::string s = "cpu " + std::to_string(r.cpu.value) + "m, memory " +
                  std::to_string(r.memory.value / kMebibyte.value) + "Mi";
  for (const auto& [name, n] : r.extended) s += ", " + name + " " + std::to_string(n);
  return s;
}

constexpr std::uint64_t kRefusedForever = std::numeric_limits<std::uint64_t>::max();

void DropUnlaunchable(ScheduleResult& result);

class Pass {
 public:
  Pass(const State& state, const std::set<std::string>& excluded)
      : state_(state),
        excluded_(excluded),
        excluded_nodes_(NodesOf(state, excluded)),
        templates_(BuildTemplates(state)),
        topology_(state, templates_, excluded_nodes_) {
    AllocatableCache per_nodeclass;
    for (PoolTemplate& t : templates_) FillTypes(state, t, per_nodeclass);
    BuildExistingBins();
    topology_.AddExistingAntiAffinity();
  }

  ScheduleResult Run(const std::vector<const Pod*>& pods);

  // Trials (consolidation's what-if): the removals' nodes and the pods bound there are taken
  // away, Run places the pods, and EndTrial undoes all of it. Needs a pass that has planned
  // nothing. `brief`: the trial's planned claims are brief (Simulation::Without without
  // offerings).
  void BeginTrial(const std::vector<Simulation::Removal>& removals, bool brief);
  void EndTrial();

 private:
  void BuildExistingBins();
  // Takes the pods bound to the bin's node out of its room (their ports and volumes too).
  void AddBound(Bin& bin, const PodTable::Bound& bound);
  // An existing node's bin reads its labels and zone from the node when first needed: most
  // bins of a full cluster never hold the pod a pass tries.
  void Resolve(Bin& bin);
  Labels ClaimLabels(const NodeClaim& claim, const NodePool& pool) const;
  void AddVolumes(const Pod& pod, std::map<std::string, std::set<std::string>>& out) const;
  // Makes `v` the pod's view (assigned over whatever view it held, reusing its allocations).
  void MakeView(const Pod& pod, PodView& v);
  void Prepare(PodView& v);
  void Refresh(PodView& v);
  std::size_t ShapeOf(const PodView& v);
  void Refuse(const PodView& v, std::size_t index, std::uint64_t until);
  bool Relax(PodView& v);
  bool TryPlace(PodView& v);
  bool TryExisting(PodView& v, Bin& bin, std::size_t index);
  bool TryPlanned(PodView& v, std::size_t index, std::uint64_t epoch);
  bool TolerantOf(const PodView& v, const std::vector<Taint>& taints, std::string* why) const;
  bool VolumesFit(const PodView& v, const Bin& bin) const;
  bool PortsFit(const Pod& pod, const Bin& bin) const;
  TypeMask FitTypes(PoolTemplate& t, const TypeMask& candidates, const Requirements* reqs,
                    const Resources& requests, const Bin* claim, std::string* why);
  std::string Explain(PodView& v);
  void Commit(PodView& v, Bin& bin);

  static std::set<std::string> NodesOf(const State& state, const std::set<std::string>& claims) {
    std::set<std::string> nodes;
    for (const auto& name : claims) {
      auto claim = state.nodeclaims.find(name);
      if (claim != state.nodeclaims.end() && !claim->second.node_name.empty()) {
        nodes.insert(claim->second.node_name);
      }
    }
    return nodes;
  }

  const State& state_;
  const std::set<std::string>& excluded_;  // NodeClaims treated as gone.
  std::set<std::string> excluded_nodes_;   // Their nodes.
  std::vector<PoolTemplate> templates_;
  Topology topology_;
  std::vector<Bin> existing_;
  NameIndex<std::size_t> existing_index_;  // The same, for a trial's lookups.
  std::vector<Bin> planned_;
  // An existing bin as it was before a trial changed it.
  struct SavedBin {
    std::size_t index = 0;
    Resources remaining;
    std::size_t pods = 0;
    std::size_t host_ports = 0;
    std::map<std::string, std::set<std::string>> volumes;
  };
  bool trial_ = false;
  bool brief_ = false;  // This trial's planned claims are brief.
  std::vector<SavedBin> saved_bins_;
  std::vector<bool> bin_saved_;
  std::vector<std::size_t> gone_;
  // Per existing bin, what the scan over them reads first, packed for the cache: its CPU,
  // memory and pod room and whether a trial took it away.
  struct BinRoom {
    Millicores cpu{0};
    Bytes memory{0};
    std::int64_t pods = 0;
    bool gone = false;
  };
  static BinRoom RoomOf(const Bin& bin) {
    return {bin.remaining.cpu, bin.remaining.memory, bin.remaining.pods, bin.gone};
  }
  std::vector<BinRoom> rooms_;
  // The most room any bin of each block of kRoomBlock bins holds (gone bins hold none), so the
  // scan skips a block of full bins at one look, in the same first-fit order.
  static constexpr std::size_t kRoomBlock = 32;
  std::vector<BinRoom> block_room_;
  void SetRoom(std::size_t index, const BinRoom& room);
  void RefreshBlock(std::size_t block);
  static bool Holds(const BinRoom& room, const Resources& need) {
    return !room.gone && need.cpu <= room.cpu && need.memory <= room.memory &&
           need.pods <= room.pods;
  }
  // CPU, memory and pods: the most any existing bin still holds (recomputed after a change).
  Resources existing_room_;
  bool existing_room_dirty_ = true;
  std::vector<std::pair<Resources, std::int64_t>> saved_reserved_;  // Per template.
  void Save(const Bin& bin);
  ClaimOrder order_;
  std::map<std::string, std::size_t> shapes_;  // shape signature -> id
  std::uint64_t stamps_ = 0;                   // PodView::stamp, never reused in a pass.
  // [shape][planned claim]: refused for good (kRefusedForever), or while the shape's
  // topology epoch + 1 equals the value; 0 when never refused.
  std::vector<std::vector<std::uint64_t>> refused_;
  std::vector<std::size_t> refused_forever_;  // [shape]
  // [shape][existing bin]: refused by taints, requirements or a hostname spread or
  // anti-affinity count, which no later placement or trial can undo.
  std::vector<std::vector<bool>> refused_existing_;
  Topology::Memo memo_;
  // Views as MakeView first builds them, for pods without volume claims: such a view depends
  // only on the pod's namespace, constraints and labels (its requests, name and stamp are set
  // per pod), which the pods of one template share. Keyed by those three, by address: the
  // state, and so every address, is unchanged while the pass lives.
  std::map<std::tuple<const void*, const void*, const void*>, PodView> base_views_;
  // ChooseLaunch's answers: what a planned claim launches depends on its pool, types and
  // requirements, not its pods, and consolidation's trials plan the same few claims over and
  // over. A short list, searched in order.
  struct Launched {
    std::size_t pool = 0;
    TypeMask types;
    Requirements requirements;
    PlannedClaim claim;
  };
  static constexpr std::size_t kLaunchesKept = 32;
  std::vector<Launched> launches_;
  PlannedClaim Launch(const Bin& bin);
  // "#<index>", kept for the pass: a planned bin's name.
  std::string_view PlannedName(std::size_t index) {
    while (planned_names_.size() <= index) {
      planned_names_.push_back("#" + std::to_string(planned_names_.size()));
    }
    return planned_names_[index];
  }
  std::deque<std::string> planned_names_;
  static PlannedClaim Brief(const PlannedClaim& full);
  // [shape]: the topology groups selecting the shape's pods, and how many groups were seen.
  std::deque<std::pair<std::vector<std::size_t>, std::size_t>> selecting_;
  std::vector<PodView> views_;     // Run's, kept between runs (only the first pods.size() count).
  std::deque<std::size_t> queue_;  // Run's queue and when each view was last tried, kept
  std::vector<std::size_t> last_seen_;  // between runs for their allocations.
};

void Pass::AddVolumes(const Pod& pod, std::map<std::string, std::set<std::string>>& out) const {
  for (const auto& claim_name : pod.constraints->volume_claims) {
    auto pvc = state_.pvcs.find(PodKey(pod.ns, claim_name));
    if (pvc == state_.pvcs.end()) continue;
    std::string driver;
    std::string id = pvc->second.volume_name.empty() ? pvc->first : pvc->second.volume_name;
    if (auto pv = state_.pvs.find(pvc->second.volume_name); pv != state_.pvs.end()) {
      driver = pv->second.csi_driver;
    } else if (auto sc = state_.storage_classes.find(pvc->second.storage_class);
               sc != state_.storage_classes.end()) {
      driver = sc->second.provisioner;
    }
    if (!driver.empty()) out[driver].insert(id);
  }
}

// The labels a NodeClaim's node will carry: its NodePool's, the pool's name, each requirement
// with a single value, and once launched its instance type's, zone and capacity type.
Labels Pass::ClaimLabels(const NodeClaim& claim, const NodePool& pool) const {
  Labels labels = pool.labels;
  labels[label::kNodePool] = claim.nodepool;
  for (const auto& r : *claim.requirements) {
    if (r.op == RequirementOp::kIn && r.values.size() == 1) labels[r.key] = r.values[0];
  }
  for (const auto& [key, value] : OwnRequirementLabels(*claim.requirements, &pool)) {
    labels.try_emplace(key, value);
  }
  if (auto type = state_.catalog->find(claim.instance_type); type != state_.catalog->end()) {
    for (const auto& [k, v] : type->second.labels) labels[k] = v;
  }
  if (!claim.zone.empty()) labels[label::kZone] = claim.zone;
  if (!claim.capacity_type.empty()) labels[label::kCapacityType] = claim.capacity_type;
  return labels;
}

void Pass::BuildExistingBins() {
  // Capacity being terminated is no place for a pod.
  std::set<std::string> leaving = excluded_nodes_;
  for (const auto& [name, claim] : state_.nodeclaims) {
    if (claim.deleting && !claim.node_name.empty()) leaving.insert(claim.node_name);
  }
  // So is capacity tainted for a disruption that waits on its replacements.
  for (const auto& wait : state_.replacing) {
    for (const auto& name : wait.candidates) {
      auto claim = state_.nodeclaims.find(name);
      if (claim != state_.nodeclaims.end()) leaving.insert(claim->second.node_name);
    }
  }
  // One allocation: growing the vector would hold two copies of thousands of bins at once.
  existing_.reserve(existing_.size() + state_.nodes.size() + state_.nodeclaims.size());
  // The nodes' bins by name, for each claim to find its node's (one comparison, where a map
  // misses the cache at every level).
  NameIndex<std::size_t> node_bins;
  node_bins.Reserve(state_.nodes.size());
  BoundWalk bound_to(state_.pods);  // The nodes come in name order.
  for (const auto& [name, node] : state_.nodes) {
    if (leaving.contains(name) || !IsCapacity(state_, node)) continue;
    Bin bin;
    bin.name = name;
    bin.node = &node;  // Its labels and zone are read when a pod first tries it (Resolve).
    for (const auto& t : node.taints) {
      if (!Ephemeral(t)) bin.taints.push_back(t);
    }
    bin.remaining = node.allocatable;
    if (auto csi = state_.csi_nodes.find(name); csi != state_.csi_nodes.end()) {
      bin.volume_limits = csi->second.attach_limits;
    }
    AddBound(bin, bound_to.At(name));
    node_bins.Add(name, existing_.size());
    existing_.push_back(std::move(bin));
  }
  node_bins.Seal();
  existing_index_ = node_bins;  // The claims' bins are added to it, then merged in (Seal).
  // A claim's node may still carry its startup taints; they will go, so they do not count.
  // A claim without a node is a bin of its own (pods bound to its name, if any, in it).
  BoundWalk claim_bound(state_.pods);  // The claims come in name order.
  for (const auto& [name, claim] : state_.nodeclaims) {
    auto pool = state_.nodepools.find(claim.nodepool);
    const std::size_t* on_node =
        claim.node_name.empty() ? nullptr : node_bins.Find(claim.node_name);
    if (on_node != nullptr) {
      if (pool == state_.nodepools.end() || claim.phase == ClaimPhase::kInitialized) continue;
      Bin& bin = existing_[*on_node];
      std::erase_if(bin.taints, [&](const Taint& t) {
        return std::find(pool->second.startup_taints.begin(), pool->second.startup_taints.end(),
                         t) != pool->second.startup_taints.end();
      });
      // Until its Node is registered, Karpenter reads a node's labels from its NodeClaim: the
      // labels registration will give it count already, so a pod selecting them (its
      // NodePool's, say) is not planned onto yet another claim.
      if (!bin.node->labels.contains(label::kRegistered)) {
        Resolve(bin);
        NodeLabels labels = bin.labels();
        for (const auto& [key, value] : ClaimLabels(claim, pool->second)) {
          if (!labels.contains(key)) labels.Set(key, value);
        }
        bin.own_labels = std::move(labels);
        bin.node_labels = nullptr;
        if (auto zone = bin.own_labels.find(label::kZone); zone != bin.own_labels.end()) {
          bin.zone = zone->second;
        }
      }
      continue;
    }
    if (pool == state_.nodepools.end() || claim.phase == ClaimPhase::kFailed) continue;
    if (claim.deleting || excluded_.contains(name)) continue;
    // Its node is left out (being replaced, or taken away by a trial): so is the claim.
    if (!claim.node_name.empty() && leaving.contains(claim.node_name)) continue;
    Bin bin;
    bin.name = name;
    Labels labels = ClaimLabels(claim, pool->second);
    labels[label::kHostname] = name;
    bin.own_labels = labels;
    if (auto zone = labels.find(label::kZone); zone != labels.end()) bin.zone = zone->second;
    bin.taints = pool->second.taints;
    bin.remaining = claim.allocatable;
    AddBound(bin, claim_bound.At(name));
    existing_index_.Add(name, existing_.size());
    existing_.push_back(std::move(bin));
  }
  existing_index_.Seal();
  rooms_.clear();
  for (const Bin& bin : existing_) rooms_.push_back(RoomOf(bin));
  block_room_.assign((rooms_.size() + kRoomBlock - 1) / kRoomBlock, BinRoom{});
  for (std::size_t b = 0; b < block_room_.size(); ++b) RefreshBlock(b);
}

void Pass::SetRoom(std::size_t index, const BinRoom& room) {
  rooms_[index] = room;
  RefreshBlock(index / kRoomBlock);
}

void Pass::RefreshBlock(std::size_t block) {
  BinRoom most{Millicores{0}, Bytes{0}, 0, false};
  const std::size_t end = std::min(rooms_.size(), (block + 1) * kRoomBlock);
  for (std::size_t i = block * kRoomBlock; i < end; ++i) {
    const BinRoom& room = rooms_[i];
    if (room.gone) continue;
    most.cpu = std::max(most.cpu, room.cpu);
    most.memory = std::max(most.memory, room.memory);
    most.pods = std::max(most.pods, room.pods);
  }
  block_room_[block] = most;
}

void Pass::MakeView(const Pod& pod, PodView& v) {
  const bool shared = pod.constraints->volume_claims.empty();
  const auto base = std::make_tuple(static_cast<const void*>(&pod.ns.str()),
                                    static_cast<const void*>(&*pod.constraints),
                                    static_cast<const void*>(&*pod.labels));
  if (shared) {
    if (auto it = base_views_.find(base); it != base_views_.end()) {
      v = it->second;
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
  // Volume topology: a bound volume's node affinity, else its StorageClass's topologies.
  for (const auto& claim_name : pod.constraints->volume_claims) {
    auto pvc = state_.pvcs.find(PodKey(pod.ns, claim_name));
    if (pvc == state_.pvcs.end()) continue;
    if (auto pv = state_.pvs.find(pvc->second.volume_name); pv != state_.pvs.end()) {
      if (!pv->second.node_affinity.empty()) {
        v.volume_requirements.Add(pv->second.node_affinity.front().requirements);
      }
    } else if (auto sc = state_.storage_classes.find(pvc->second.storage_class);
               sc != state_.storage_classes.end() && !sc->second.allowed_topologies.empty()) {
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
  if (shared) base_views_.emplace(base, v).first->second.key.clear();
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

bool Pass::TolerantOf(const PodView& v, const std::vector<Taint>& taints, std::string* why) const {
  for (const Taint& t : taints) {
    if (t.effect == TaintEffect::kPreferNoSchedule && v.tolerate_prefer_no_schedule) continue;
    if (Tolerates(v.pod->constraints->tolerations, t)) continue;
    if (why != nullptr) *why = "taint " + TaintText(t) + " not tolerated";
    return false;
  }
  return true;
}

bool Pass::PortsFit(const Pod& pod, const Bin& bin) const {
  for (const auto& mine : pod.constraints->host_ports) {
    for (const auto& theirs : bin.host_ports) {
      if (PortsConflict(mine, theirs)) return false;
    }
  }
  return true;
}

bool Pass::VolumesFit(const PodView& v, const Bin& bin) const {
  for (const auto& [driver, ids] : v.volumes) {
    auto limit = bin.volume_limits.find(driver);
    if (limit == bin.volume_limits.end()) continue;
    std::set<std::string> all = ids;
    if (auto used = bin.volumes.find(driver); used != bin.volumes.end()) {
      all.insert(used->second.begin(), used->second.end());
    }
    if (static_cast<std::int64_t>(all.size()) > limit->second) return false;
  }
  return true;
}

void Pass::AddBound(Bin& bin, const PodTable::Bound& bound) {
  if (bound.active.pods > 0) bin.remaining -= bound.active;
  if (bound.ports_or_volumes == 0) return;
  for (const auto& [key, pod] : bound.pods) {
    if (!IsActive(*pod)) continue;
    for (const auto& p : pod->constraints->host_ports) bin.host_ports.push_back(p);
    AddVolumes(*pod, bin.volumes);
  }
}

void Pass::Resolve(Bin& bin) {
  if (bin.node == nullptr) return;
  const Node& node = *bin.node;
  bin.node = nullptr;
  if (auto host = node.labels.find(label::kHostname);
      host != node.labels.end() && host->second == bin.name) {
    bin.node_labels = &node.labels;
  } else {
    bin.own_labels = node.labels;
    bin.own_labels.Set(label::kHostname, std::string(bin.name));
  }
  if (auto zone = bin.labels().find(label::kZone); zone != bin.labels().end()) {
    bin.zone = zone->second;
  }
}

bool Pass::TryExisting(PodView& v, Bin& bin, std::size_t index) {
  if (!Fits(v.need, bin.remaining)) return false;
  Resolve(bin);
  auto never = [&] {  // Refused for the rest of the pass and every trial of it.
    auto& refused = refused_existing_[v.shape];
    if (refused.size() < existing_.size()) refused.resize(existing_.size(), false);
    refused[index] = true;
    return false;
  };
  if (!TolerantOf(v, bin.taints, nullptr)) return never();
  bool match =
      v.requirements.Matches([&](const std::string& key) { return bin.labels().Lookup(key); });
  if (!match) return never();
  if (!PortsFit(*v.pod, bin) || !VolumesFit(v, bin)) return false;
  if (!topology_.Check(v, bin.name, &bin.labels(), nullptr, nullptr, nullptr, nullptr, &memo_)) {
    return topology_.RefusalOutlivesTrial(v, bin.name) ? never() : false;
  }
  Save(bin);
  bin.remaining -= v.need;
  SetRoom(index, RoomOf(bin));
  existing_room_dirty_ = true;
  topology_.Record(v, bin.name, &bin.labels(), nullptr, nullptr);
  Commit(v, bin);
  return true;
}

// The candidate types that allow `reqs` (null: the candidates already do), hold `requests`,
// honour minValues and fit the NodePool's remaining limits (counting what other planned claims
// already reserve). `why` (optional) says why none is left.
TypeMask Pass::FitTypes(PoolTemplate& t, const TypeMask& candidates, const Requirements* reqs,
                        const Resources& requests, const Bin* claim, std::string* why) {
  TypeMask mask = candidates;
  if (reqs != nullptr) mask &= TypesFor(t, *reqs);
  if (!mask.Any()) {
    if (why != nullptr) *why = "no instance type satisfies " + reqs->Describe();
    return mask;
  }
  bool limited = t.limited;
  Resources available;
  if (limited) {
    Resources own = claim != nullptr ? claim->reservation : Resources{};
    available = t.remaining - (t.reserved - own);
    std::int64_t nodes = t.nodes_remaining - t.nodes_reserved + (claim != nullptr ? 1 : 0);
    if (nodes < 1) {
      if (why != nullptr) *why = "nodepool limit on nodes reached";
      return TypeMask(t.types.size());
    }
  }
  KeepFitting(t, mask, requests);
  bool any_fit = mask.Any();
  if (limited) {
    mask.ForEach([&](std::size_t i) {
      if (!Fits(TypeCapacity(t.types[i]), available)) mask.Clear(i);
    });
  }
  if (!mask.Any()) {
    if (why != nullptr) {
      *why = any_fit ? "no instance type with room for " + Quantity(requests) + " within limits"
                     : "no instance type has room for " + Quantity(requests);
    }
    return mask;
  }
  const Requirements& all = reqs != nullptr ? *reqs : claim->requirements;
  if (!state_.settings.min_values_best_effort && all.HasMinValues()) {
    if (auto missing = MinValuesShortfall(t, mask, all); !missing.empty()) {
      if (why != nullptr) *why = missing;
      return TypeMask(t.types.size());
    }
  }
  return mask;
}

// Whether the pod's requirements name the hosts it may run on: no new node can be one of them
// (Karpenter's NodeClaim templates carry a placeholder hostname for that reason).
// Why the pod's volumes keep it from being provisioned for, as Karpenter validates a pending
// pod's claims (the pod is ignored, with the reason): a claim that does not exist, a bound one
// whose volume does not, an unbound one without a StorageClass, with one that does not exist, or
// with one that binds at once (Immediate: the volume comes first, and its place decides).
std::string VolumeErrorOf(const State& state, const Pod& pod) {
  for (const auto& name : pod.constraints->volume_claims) {
    auto pvc = state.pvcs.find(PodKey(pod.ns, name));
    if (pvc == state.pvcs.end()) return "persistentvolumeclaim " + name + " not found";
    const PersistentVolumeClaim& claim = pvc->second;
    if (!claim.volume_name.empty()) {
      if (!state.pvs.contains(claim.volume_name)) {
        return "persistentvolumeclaim " + name + ": persistentvolume " + claim.volume_name +
               " not found";
      }
      continue;
    }
    if (claim.storage_class.empty()) {
      return "unbound persistentvolumeclaim " + name + " must define a storage class";
    }
    auto sc = state.storage_classes.find(claim.storage_class);
    if (sc == state.storage_classes.end()) {
      return "persistentvolumeclaim " + name + ": storage class " + claim.storage_class +
             " not found";
    }
    if (!sc->second.wait_for_first_consumer) {
      return "persistentvolumeclaim " + name + " is unbound and its storage class binds " +
             "immediately: waiting for its volume";
    }
  }
  return {};
}

static bool NamesAHost(const PodView& v) {
  const ValueSet* host = v.requirements.Get(label::kHostname);
  return host != nullptr && !host->complement && !host->values.empty();
}

bool Pass::TryPlanned(PodView& v, std::size_t index, std::uint64_t epoch) {
  Bin& bin = planned_[index];
  PoolTemplate& t = templates_[bin.pool];
  Resources requests = bin.requests + v.need;
  if (!bin.pods.empty() && !Fits(requests, bin.room)) return false;
  if (!TolerantOf(v, bin.taints, nullptr)) return Refuse(v, index, kRefusedForever), false;
  if (!bin.requirements.Compatible(v.requirements, true).empty() || NamesAHost(v)) {
    return Refuse(v, index, kRefusedForever), false;
  }
  if (!PortsFit(*v.pod, bin)) return Refuse(v, index, kRefusedForever), false;
  Topology::Choices chosen;
  bool lasting = false;
  if (!topology_.Check(v, bin.name, nullptr, &bin.requirements, &chosen, &lasting)) {
    Refuse(v, index, lasting ? kRefusedForever : epoch + 1);
    return false;
  }
  // Narrow the claim only when the pod or its topology actually adds a constraint.
  Requirements narrowed;
  bool changed =
      bin.requirements.Narrows(v.requirements) || topology_.Narrows(chosen, bin.requirements);
  if (changed) {
    narrowed = bin.requirements;
    narrowed.Add(v.requirements);
    topology_.Apply(chosen, narrowed);
  }
  TypeMask mask = FitTypes(t, bin.types, changed ? &narrowed : nullptr, requests, &bin, nullptr);
  if (!mask.Any()) return false;
  if (changed) bin.requirements = std::move(narrowed);
  if (bin.pods.empty() || mask != bin.types) {
    bin.types = std::move(mask);
    bin.room = Room(t, bin.types);
    if (t.limited) {
      Resources largest;
      bin.types.ForEach([&](std::size_t i) { largest = Max(largest, TypeCapacity(t.types[i])); });
      t.reserved = t.reserved - bin.reservation + largest;
      bin.reservation = largest;
    }
  }
  bin.requests = std::move(requests);
  topology_.Record(v, bin.name, nullptr, &t, &bin.requirements);
  if (bin.pods.empty()) order_.Add(index);
  Commit(v, bin);
  order_.Bump(index);
  return true;
}

void Pass::Commit(PodView& v, Bin& bin) {
  if (bin.planned) bin.pods.push_back(&v.key);  // Only a planned claim lists its pods.
  for (const auto& p : v.pod->constraints->host_ports) bin.host_ports.push_back(p);
  for (const auto& [driver, ids] : v.volumes) bin.volumes[driver].insert(ids.begin(), ids.end());
  v.target = bin.name;
}

void Pass::Prepare(PodView& v) {
  auto& [groups, scanned] = selecting_[v.shape];
  topology_.Selecting(*v.pod, groups, scanned);
}

bool Pass::TryPlace(PodView& v) {
  Prepare(v);
  // Most bins are full for a large pod: when not even the roomiest holds it, skip the scan.
  // (CPU, memory and pods only: the cheap dimensions.)
  if (existing_room_dirty_) {
    existing_room_ = Resources{};
    for (const BinRoom& room : block_room_) {
      existing_room_.cpu = std::max(existing_room_.cpu, room.cpu);
      existing_room_.memory = std::max(existing_room_.memory, room.memory);
      existing_room_.pods = std::max(existing_room_.pods, room.pods);
    }
    existing_room_dirty_ = false;
  }
  if (v.need.cpu <= existing_room_.cpu && v.need.memory <= existing_room_.memory &&
      v.need.pods <= existing_room_.pods) {
    const auto& refused = refused_existing_[v.shape];
    memo_.verdicts.clear();  // Nothing is placed during the scan, so verdicts hold across it.
    memo_.refused_zones.clear();
    for (std::size_t b = 0; b < block_room_.size(); ++b) {
      if (!Holds(block_room_[b], v.need)) continue;
      const std::size_t end = std::min(existing_.size(), (b + 1) * kRoomBlock);
      for (std::size_t i = b * kRoomBlock; i < end; ++i) {
        if (!Holds(rooms_[i], v.need)) continue;
        if (i < refused.size() && refused[i]) continue;
        if (!memo_.refused_zones.empty()) {
          Resolve(existing_[i]);
          if (std::find(memo_.refused_zones.begin(), memo_.refused_zones.end(),
                        existing_[i].zone) != memo_.refused_zones.end()) {
            continue;
          }
        }
        if (TryExisting(v, existing_[i], i)) return true;
      }
    }
  }
  std::uint64_t epoch = topology_.Epoch(v);
  if (refused_forever_[v.shape] < planned_.size()) {
    auto& refused = refused_[v.shape];
    refused.resize(planned_.size(), 0);
    for (std::size_t index : order_.claims()) {
      if (refused[index] == kRefusedForever || refused[index] == epoch + 1) continue;
      if (TryPlanned(v, index, epoch)) return true;
    }
  }
  if (planned_.size() >= kNodeClaimsPerBatchMax) return false;
  for (std::size_t p = 0; p < templates_.size(); ++p) {
    PoolTemplate& t = templates_[p];
    if (t.nodeclass == nullptr || t.types.empty()) continue;
    Bin bin;
    bin.planned = true;
    bin.pool = p;
    bin.name = PlannedName(planned_.size());
    bin.taints = t.pool->taints;
    bin.requirements = t.requirements;
    bin.types = t.all;
    planned_.push_back(std::move(bin));
    std::size_t index = planned_.size() - 1;
    if (t.limited) t.nodes_reserved++;
    if (TryPlanned(v, index, epoch)) return true;
    if (t.limited) t.nodes_reserved--;
    planned_.pop_back();
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

ScheduleResult Pass::Run(const std::vector<const Pod*>& pods) {
  // The views of the last run are assigned over: a trial's pods reuse their allocations.
  if (views_.size() < pods.size()) views_.resize(pods.size());
  const std::span<PodView> views(views_.data(), pods.size());
  for (std::size_t i = 0; i < pods.size(); ++i) MakeView(*pods[i], views[i]);
  std::deque<std::size_t>& queue = queue_;
  queue.clear();
  for (std::size_t i = 0; i < views.size(); ++i) queue.push_back(i);
  // view -> queue length when last tried; a pod seeing the same length again means a full
  // turn of the queue placed nothing.
  constexpr std::size_t kNever = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t>& last_seen = last_seen_;
  last_seen.assign(views.size(), kNever);
  std::size_t turns = 0;
  while (!queue.empty() && turns < kQueuePassesMax * (views.size() + 1)) {
    ++turns;
    std::size_t i = queue.front();
    if (last_seen[i] == queue.size()) break;
    last_seen[i] = queue.size();
    queue.pop_front();
    PodView& v = views[i];
    bool placed = false;
    do {
      placed = TryPlace(v);
    } while (!placed && Relax(v));
    if (!placed) queue.push_back(i);
  }
  ScheduleResult result;
  result.pods.reserve(views.size());
  result.claims.reserve(planned_.size());
  // The claims first: they copy their pods' keys, which the outcomes then take.
  for (const Bin& bin : planned_) result.claims.push_back(Launch(bin));
  for (std::size_t i = 0; i < views.size(); ++i) {
    PodView& v = views[i];
    PodOutcome outcome{std::move(v.key), {}, {}, std::move(v.relaxed)};
    if (!v.target.empty()) {
      outcome.target = std::move(v.target);
      bool planned = outcome.target[0] == '#';
      outcome.reason = planned ? "new nodeclaim" : "fits existing capacity";
      if (!planned) result.existing_placements++;
    } else {
      outcome.reason = Explain(v);
    }
    result.pods.push_back(std::move(outcome));
  }
  DropUnlaunchable(result);
  return result;
}

// A NodeClaim with no offering to launch is never created: its pods stay pending, with why.
// Planning keeps only types with an offering the claim allows, so this guards what the launch
// choice filters after it (spot dearer than on-demand, the cut for minValues).
void DropUnlaunchable(ScheduleResult& result) {
  constexpr std::size_t kDropped = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> renumbered(result.claims.size(), kDropped);
  std::vector<PlannedClaim> kept;
  for (std::size_t i = 0; i < result.claims.size(); ++i) {
    if (result.claims[i].offerings.empty()) continue;
    renumbered[i] = kept.size();
    kept.push_back(std::move(result.claims[i]));
  }
  if (kept.size() == result.claims.size()) {
    result.claims = std::move(kept);
    return;
  }
  for (PodOutcome& outcome : result.pods) {
    if (outcome.target.empty() || outcome.target[0] != '#') continue;
    const std::size_t i = std::stoul(outcome.target.substr(1));
    if (renumbered[i] != kDropped) {
      outcome.target = "#" + std::to_string(renumbered[i]);
      continue;
    }
    outcome.target.clear();
    outcome.reason = "NodePool " + result.claims[i].nodepool +
                     ": no offering of the instance types it fits is available in the zones "
                     "and capacity types it allows";
  }
  result.claims = std::move(kept);
}

PlannedClaim Pass::Launch(const Bin& bin) {
  const PlannedClaim* known = nullptr;
  for (const Launched& l : launches_) {
    if (l.pool != bin.pool || l.types != bin.types || l.requirements != bin.requirements) continue;
    known = &l.claim;
    break;
  }
  if (known == nullptr) {
    PlannedClaim claim = ChooseLaunch(templates_[bin.pool], bin);
    if (launches_.size() >= kLaunchesKept) return brief_ ? Brief(claim) : claim;
    launches_.push_back({bin.pool, bin.types, bin.requirements, std::move(claim)});
    launches_.back().claim.pods.clear();
    known = &launches_.back().claim;
  }
  if (brief_) {
    PlannedClaim claim = Brief(*known);
    claim.requests = bin.requests;
    return claim;
  }
  PlannedClaim claim = *known;
  claim.pods = PodKeys(bin);
  claim.requests = bin.requests;
  return claim;
}

PlannedClaim Pass::Brief(const PlannedClaim& full) {
  PlannedClaim claim;
  claim.nodepool = full.nodepool;
  claim.nodeclass = full.nodeclass;
  claim.requests = full.requests;
  claim.capacity_type = full.capacity_type;
  claim.allocation_strategy = full.allocation_strategy;
  if (!full.offerings.empty()) claim.offerings.push_back(full.offerings.front());
  claim.allocatable = full.allocatable;
  return claim;
}

void Pass::Save(const Bin& bin) {
  if (!trial_) return;
  std::size_t index = static_cast<std::size_t>(&bin - existing_.data());
  assert(index < existing_.size());
  if (bin_saved_[index]) return;
  bin_saved_[index] = true;
  saved_bins_.push_back(
      {index, bin.remaining, bin.pods.size(), bin.host_ports.size(), bin.volumes});
}

void Pass::BeginTrial(const std::vector<Simulation::Removal>& removals, bool brief) {
  assert(!trial_ && planned_.empty());
  trial_ = true;
  brief_ = brief;
  existing_room_dirty_ = true;
  bin_saved_.assign(existing_.size(), false);
  saved_reserved_.clear();
  for (const PoolTemplate& t : templates_)
    saved_reserved_.emplace_back(t.reserved, t.nodes_reserved);
  topology_.BeginTrial();
  for (const Simulation::Removal& r : removals) {
    if (r.node == nullptr) continue;
    if (const std::size_t* index = existing_index_.Find(r.node->name)) {
      existing_[*index].gone = true;
      SetRoom(*index, RoomOf(existing_[*index]));
      gone_.push_back(*index);
    }
    for (const Pod* pod : r.pods) topology_.Unbind(*pod, *r.node);  // Each is bound there.
  }
}

void Pass::EndTrial() {
  assert(trial_);
  for (SavedBin& saved : saved_bins_) {
    Bin& bin = existing_[saved.index];
    bin.remaining = saved.remaining;
    bin.pods.resize(saved.pods);
    bin.host_ports.resize(saved.host_ports);
    bin.volumes = std::move(saved.volumes);
  }
  for (const SavedBin& saved : saved_bins_) SetRoom(saved.index, RoomOf(existing_[saved.index]));
  saved_bins_.clear();
  existing_room_dirty_ = true;
  for (std::size_t index : gone_) {
    existing_[index].gone = false;
    SetRoom(index, RoomOf(existing_[index]));
  }
  gone_.clear();
  for (std::size_t i = 0; i < templates_.size(); ++i) {
    std::tie(templates_[i].reserved, templates_[i].nodes_reserved) = saved_reserved_[i];
  }
  planned_.clear();
  order_.Clear();
  for (auto& refused : refused_) refused.clear();
  std::fill(refused_forever_.begin(), refused_forever_.end(), 0);
  topology_.Undo();
  trial_ = false;
  brief_ = false;
}

}  // namespace

void ClaimOrder::Swap(std::size_t a, std::size_t b) {
  std::swap(order_[a], order_[b]);
  pos_[order_[a]] = a;
  pos_[order_[b]] = b;
}

void ClaimOrder::Add(std::size_t claim) {
  if (pos_.size() <= claim) {
    pos_.resize(claim + 1);
    count_.resize(claim + 1);
  }
  std::size_t at = order_.size();
  order_.push_back(claim);
  pos_[claim] = at;
  count_[claim] = 0;
  if (start_.empty()) start_.push_back(0);
  // Walk down past every fuller bucket: each gives its first claim to the slot after its end.
  for (std::size_t b = start_.size() - 1; b > 0; --b) {
    std::size_t first = start_[b];
    Swap(at, first);
    start_[b]++;
    at = first;
  }
}

void ClaimOrder::Clear() {
  order_.clear();
  pos_.clear();
  count_.clear();
  start_.clear();
}

void ClaimOrder::Bump(std::size_t claim) {
  std::size_t k = count_[claim];
  if (start_.size() <= k + 1) start_.push_back(order_.size());
  std::size_t last = start_[k + 1] - 1;  // The end of bucket k.
  Swap(pos_[claim], last);
  start_[k + 1]--;
  count_[claim]++;
}

}  // namespace tenon::core

namespace tenon {

ScheduleResult Schedule(const State& state, const std::vector<const Pod*>& pods,
                        const std::set<std::string>& excluded_nodeclaims) {
  using namespace core;
  std::vector<const Pod*> sorted = pods;
  std::sort(sorted.begin(), sorted.end(), PlacedBefore);
  return Pass(state, excluded_nodeclaims).Run(sorted);
}

ScheduleResult Schedule(const State& state, const std::vector<const Pod*>& pods) {
  return Schedule(state, pods, {});
}

struct SimulationImpl {
  explicit SimulationImpl(const State& state) : pass(state, none) {}
  std::set<std::string> none;  // Declared first: the pass keeps a reference to it.
  core::Pass pass;
};

Simulation::Simulation(const State& state) : state_(state) {}

Simulation::~Simulation() = default;

const std::vector<const Pod*>& Simulation::PodsOf(const NodeClaim& claim) {
  return state_.pods.OnNode(claim.node_name).reschedulable;
}

ScheduleResult Simulation::Without(const std::vector<std::string>& nodeclaims) {
  std::vector<Removal> removals;
  for (const auto& name : nodeclaims) {
    auto claim = state_.nodeclaims.find(name);
    if (claim == state_.nodeclaims.end()) continue;
    auto node = state_.nodes.find(claim->second.node_name);
    removals.push_back({&claim->second, node == state_.nodes.end() ? nullptr : &node->second,
                        PodsOf(claim->second)});
  }
  return Without(removals);
}

ScheduleResult Simulation::Without(const std::vector<Removal>& removals, bool offerings) {
  std::vector<const Pod*> pods;
  for (const Removal& r : removals) pods.insert(pods.end(), r.pods.begin(), r.pods.end());
  // The pods waiting for capacity are placed too, as Karpenter's disruption simulation places
  // them: a move must not take room they would get, and what they need is part of the answer.
  const auto& pending = state_.pods.Provisionable();
  for (auto it = pending.begin(); it != pending.end() && pods.size() < kPodsPerBatchMax; ++it) {
    pods.push_back(it->second);
  }
  if (removals.size() != 1 || !removals.front().in_placement_order || !pending.empty()) {
    std::sort(pods.begin(), pods.end(), PlacedBefore);
  }
  assert(std::is_sorted(pods.begin(), pods.end(), PlacedBefore));
  // The pass over the whole cluster is built on the first question: most disruption passes
  // find no candidate worth simulating.
  if (impl_ == nullptr) impl_ = std::make_unique<SimulationImpl>(state_);
  impl_->pass.BeginTrial(removals, !offerings);
  ScheduleResult result = impl_->pass.Run(pods);
  impl_->pass.EndTrial();
  return result;
}

ScheduleResult Schedule(const State& state) {
  std::vector<const Pod*> pods;
  // A pod asking for a restricted label is not Karpenter's to launch for: it is ignored, with
  // the reason, and nothing is planned for it (a new node could never carry that label).
  std::vector<PodOutcome> ignored;
  for (const auto& [key, pod] : state.pods.Provisionable()) {
    if (pods.size() >= kPodsPerBatchMax) break;
    if (std::string why = core::PodRequirementError(*pod); !why.empty()) {
      ignored.push_back({std::string(key), "", why, {}});
      continue;
    }
    if (std::string why = core::VolumeErrorOf(state, *pod); !why.empty()) {
      ignored.push_back({std::string(key), "", why, {}});
      continue;
    }
    pods.push_back(pod);
  }
  ScheduleResult result = Schedule(state, pods);
  std::move(ignored.begin(), ignored.end(), std::back_inserter(result.pods));
  return result;
}

}  // namespace tenon
