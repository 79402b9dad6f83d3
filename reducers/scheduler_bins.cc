// The pass's existing bins (nodes and in-flight NodeClaims, with what is bound to them), and
// consolidation's trials, which take some away and put them back.
#include <algorithm>
#include <cassert>

#include "reducers/scheduler_pass.h"

namespace tenon::core::placement {
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
  if (state.lifecycle.claims_by_node.Has(node.name)) return true;
  const bool made_for_a_pool =
      node.labels.contains(label::kNodePool) ||
      std::any_of(node.taints.begin(), node.taints.end(),
                  [](const Taint& t) { return t.key == label::kUnregisteredTaint; });
  return !made_for_a_pool;
}

}  // namespace

void Pass::AddVolumes(const Pod& pod, std::map<std::string, std::set<std::string>>& out) const {
  for (const auto& claim_name : pod.constraints->volume_claims) {
    auto pvc = state_.cluster.pvcs.find(PodKey(pod.ns, claim_name));
    if (pvc == state_.cluster.pvcs.end()) continue;
    std::string driver;
    std::string id = pvc->second.volume_name.empty() ? pvc->first : pvc->second.volume_name;
    if (auto pv = state_.cluster.pvs.find(pvc->second.volume_name);
        pv != state_.cluster.pvs.end()) {
      driver = pv->second.csi_driver;
    } else if (auto sc = state_.cluster.storage_classes.find(pvc->second.storage_class);
               sc != state_.cluster.storage_classes.end()) {
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
  if (auto type = state_.cluster.catalog->find(claim.instance_type);
      type != state_.cluster.catalog->end()) {
    for (const auto& [k, v] : type->second.labels) labels[k] = v;
  }
  if (!claim.zone.empty()) labels[label::kZone] = claim.zone;
  if (!claim.capacity_type.empty()) labels[label::kCapacityType] = claim.capacity_type;
  return labels;
}

std::set<std::string> Pass::Leaving() const {
  // Capacity being terminated is no place for a pod.
  std::set<std::string> leaving = excluded_nodes_;
  for (const auto& [name, claim] : state_.lifecycle.nodeclaims) {
    if (claim.deleting && !claim.node_name.empty()) leaving.insert(claim.node_name);
  }
  // So is capacity tainted for a disruption that waits on its replacements.
  for (const auto& wait : state_.disruption.replacing) {
    for (const auto& name : wait.candidates) {
      auto claim = state_.lifecycle.nodeclaims.find(name);
      if (claim != state_.lifecycle.nodeclaims.end()) leaving.insert(claim->second.node_name);
    }
  }
  return leaving;
}

NameIndex<std::size_t> Pass::AddNodeBins(const std::set<std::string>& leaving) {
  // The nodes' bins by name, for each claim to find its node's (one comparison, where a map
  // misses the cache at every level).
  NameIndex<std::size_t> node_bins;
  node_bins.Reserve(state_.cluster.nodes.size());
  BoundWalk bound_to(state_.cluster.pods);  // The nodes come in name order.
  for (const auto& [name, node] : state_.cluster.nodes) {
    if (leaving.contains(name) || !IsCapacity(state_, node)) continue;
    Bin bin;
    bin.name = name;
    bin.node = &node;  // Its labels and zone are read when a pod first tries it (Resolve).
    for (const auto& t : node.taints) {
      if (!Ephemeral(t)) bin.taints.push_back(t);
    }
    bin.remaining = node.allocatable;
    if (auto csi = state_.cluster.csi_nodes.find(name); csi != state_.cluster.csi_nodes.end()) {
      bin.volume_limits = csi->second.attach_limits;
    }
    AddBound(bin, bound_to.At(name));
    node_bins.Add(name, existing_.size());
    existing_.push_back(std::move(bin));
  }
  node_bins.Seal();
  return node_bins;
}

void Pass::CountClaimOnNode(Bin& bin, const NodeClaim& claim, const NodePool& pool) {
  std::erase_if(bin.taints, [&](const Taint& t) {
    return std::find(pool.startup_taints.begin(), pool.startup_taints.end(), t) !=
           pool.startup_taints.end();
  });
  // Until its Node is registered, Karpenter reads a node's labels from its NodeClaim: the
  // labels registration will give it count already, so a pod selecting them (its NodePool's,
  // say) is not planned onto yet another claim.
  if (bin.node->labels.contains(label::kRegistered)) return;
  Resolve(bin);
  NodeLabels labels = bin.labels();
  for (const auto& [key, value] : ClaimLabels(claim, pool)) {
    if (!labels.contains(key)) labels.Set(key, value);
  }
  bin.own_labels = std::move(labels);
  bin.node_labels = nullptr;
  if (auto zone = bin.own_labels.find(label::kZone); zone != bin.own_labels.end()) {
    bin.zone = zone->second;
  }
}

// A claim's node may still carry its startup taints; they will go, so they do not count.
// A claim without a node is a bin of its own (pods bound to its name, if any, in it).
void Pass::AddClaimBins(const std::set<std::string>& leaving,
                        const NameIndex<std::size_t>& node_bins) {
  BoundWalk claim_bound(state_.cluster.pods);  // The claims come in name order.
  for (const auto& [name, claim] : state_.lifecycle.nodeclaims) {
    auto pool = state_.cluster.nodepools.find(claim.nodepool);
    const std::size_t* on_node =
        claim.node_name.empty() ? nullptr : node_bins.Find(claim.node_name);
    if (on_node != nullptr) {
      if (pool == state_.cluster.nodepools.end() || claim.phase == ClaimPhase::kInitialized)
        continue;
      CountClaimOnNode(existing_[*on_node], claim, pool->second);
      continue;
    }
    if (pool == state_.cluster.nodepools.end() || claim.phase == ClaimPhase::kFailed) continue;
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
}

void Pass::BuildExistingBins() {
  const std::set<std::string> leaving = Leaving();
  // One allocation: growing the vector would hold two copies of thousands of bins at once.
  existing_.reserve(existing_.size() + state_.cluster.nodes.size() +
                    state_.lifecycle.nodeclaims.size());
  const NameIndex<std::size_t> node_bins = AddNodeBins(leaving);
  existing_index_ = node_bins;  // The claims' bins are added to it, then merged in (Seal).
  AddClaimBins(leaving, node_bins);
  existing_index_.Seal();
  uninitialized_.assign(existing_.size(), -1);
  rooms_.clear();
  for (const Bin& bin : existing_) rooms_.push_back(RoomOf(bin));
  block_room_.assign((rooms_.size() + kRoomBlock - 1) / kRoomBlock, BinRoom{});
  for (std::size_t b = 0; b < block_room_.size(); ++b) RefreshBlock(b);
}

void Pass::SetRoom(std::size_t index, const BinRoom& room) {
  const BinRoom before = rooms_[index];
  rooms_[index] = room;
  // A bin that only lost room, and held less than its block's most in each dimension it lost,
  // leaves the block's most as it was.
  const BinRoom& most = block_room_[index / kRoomBlock];
  const bool lost_only = !before.gone && !room.gone && room.cpu <= before.cpu &&
                         room.memory <= before.memory && room.pods <= before.pods;
  if (lost_only && (room.cpu == before.cpu || before.cpu < most.cpu) &&
      (room.memory == before.memory || before.memory < most.memory) &&
      (room.pods == before.pods || before.pods < most.pods)) {
    return;
  }
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
  const BinRoom& before = block_room_[block];
  if (most.cpu != before.cpu || most.memory != before.memory || most.pods != before.pods) {
    existing_room_dirty_ = true;  // The most any bin holds may have changed with it.
  }
  block_room_[block] = most;
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

}  // namespace tenon::core::placement
