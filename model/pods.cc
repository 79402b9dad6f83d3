// PodTable: the State's pods and the views kept beside them; ClaimsByNode (state.h).
#include <algorithm>
#include <cassert>

#include "model/pod_rules.h"
#include "model/state.h"

namespace tenon {

PodTable::PodTable(const PodTable& other)
    : pods_(other.pods_), ignore_deletion_cost_(other.ignore_deletion_cost_) {
  for (const auto& entry : pods_) Index(entry);
}

PodTable& PodTable::operator=(const PodTable& other) {
  if (this == &other) return *this;
  clear();
  pods_ = other.pods_;
  ignore_deletion_cost_ = other.ignore_deletion_cost_;
  for (const auto& entry : pods_) Index(entry);
  indexed_ = true;
  return *this;
}

PodTable PodTable::PodsOnly(const PodTable& other) {
  PodTable copy;
  copy.pods_ = other.pods_;
  copy.ignore_deletion_cost_ = other.ignore_deletion_cost_;
  copy.indexed_ = false;
  return copy;
}

const Pod& PodTable::Upsert(const std::string& key, Pod pod) {
  assert(indexed_);
  auto [it, fresh] = pods_.try_emplace(key);
  if (!fresh) Unindex(*it);
  it->second = std::move(pod);
  Index(*it);
  return it->second;
}

void PodTable::Erase(const_iterator it) {
  assert(indexed_);
  Unindex(*it);
  pods_.erase(it);
}

void PodTable::clear() {
  pods_.clear();
  by_node_.clear();
  provisionable_.clear();
  anti_affinity_.clear();
  indexed_ = true;  // Empty views are the views of no pods.
}

void PodTable::swap(PodTable& other) noexcept {
  pods_.swap(other.pods_);
  by_node_.swap(other.by_node_);
  provisionable_.swap(other.provisionable_);
  anti_affinity_.swap(other.anti_affinity_);
  std::swap(indexed_, other.indexed_);
  std::swap(ignore_deletion_cost_, other.ignore_deletion_cost_);
}

void PodTable::IgnoreDeletionCost(bool ignore) {
  if (ignore == ignore_deletion_cost_) return;
  ignore_deletion_cost_ = ignore;
  for (auto& [node, bound] : by_node_) Recount(bound);
}

const PodTable::Bound& PodTable::OnNode(std::string_view node) const {
  assert(indexed_);
  static const Bound kNone;
  auto it = by_node_.find(node);
  return it == by_node_.end() ? kNone : it->second;
}

namespace {

// What an active pod takes from its node's room, and whether the node must see it on its own.
Resources Held(const Pod& pod) {
  Resources need = pod.requests;
  need.pods = 1;
  return need;
}
bool PortsOrVolumes(const Pod& pod) {
  return !pod.constraints->host_ports.empty() || !pod.constraints->volume_claims.empty();
}

// Where `key` is, or goes, among a node's pods in key order.
auto Slot(std::vector<std::pair<std::string_view, const Pod*>>& pods, std::string_view key) {
  return std::lower_bound(pods.begin(), pods.end(), key,
                          [](const auto& entry, std::string_view k) { return entry.first < k; });
}

}  // namespace

void PodTable::Index(const value_type& entry) {
  const auto& [key, pod] = entry;
  if (!pod.node_name.empty()) {
    Bound& bound = by_node_[pod.node_name.str()];
    bound.pods.emplace(Slot(bound.pods, key), key, &pod);
    if (IsActive(pod)) {
      bound.active = bound.active + Held(pod);
      if (PortsOrVolumes(pod)) bound.ports_or_volumes++;
    }
    Recount(bound);
    if (!pod.constraints->pod_anti_affinity_required.empty()) anti_affinity_.emplace(key, &pod);
  }
  if (IsProvisionable(pod)) provisionable_.emplace(key, &pod);
}

void PodTable::Unindex(const value_type& entry) {
  const auto& [key, pod] = entry;
  if (!pod.node_name.empty()) {
    auto node = by_node_.find(pod.node_name.str());
    Bound& bound = node->second;
    auto at = Slot(bound.pods, key);
    if (at != bound.pods.end() && at->first == key) bound.pods.erase(at);
    if (IsActive(pod)) {
      bound.active = bound.active - Held(pod);
      if (PortsOrVolumes(pod)) bound.ports_or_volumes--;
    }
    if (bound.pods.empty()) {
      by_node_.erase(node);
    } else {
      Recount(bound);
    }
    anti_affinity_.erase(key);
  }
  provisionable_.erase(key);
}

// Tens of pods at most: recounted whole rather than kept in key order piece by piece.
void PodTable::Recount(Bound& bound) const {
  bound.reschedulable.clear();
  bound.do_not_disrupt = 0;
  bound.eviction_cost = 0;
  bound.positive_eviction_cost = 0;
  for (const auto& [key, pod] : bound.pods) {
    // Every running pod's do-not-disrupt counts, DaemonSet and mirror pods' too.
    if (IsActive(*pod) && pod->do_not_disrupt) bound.do_not_disrupt++;
    if (!IsReschedulable(*pod)) continue;
    bound.reschedulable.push_back(pod);
    const std::int64_t cost = EvictionCost(*pod, ignore_deletion_cost_);
    bound.eviction_cost += cost;
    bound.positive_eviction_cost += std::max<std::int64_t>(cost, 0);
  }
  bound.reschedulable_in_placement_order = bound.reschedulable;
  std::sort(bound.reschedulable_in_placement_order.begin(),
            bound.reschedulable_in_placement_order.end(), PlacedBefore);
}

bool ClaimsByNode::Matches(const std::map<std::string, NodeClaim>& claims) const {
  std::set<std::pair<std::string, std::string>> expected;
  for (const auto& [name, claim] : claims) {
    if (!claim.node_name.empty()) expected.emplace(claim.node_name, name);
  }
  return expected == entries_;
}

}  // namespace tenon
