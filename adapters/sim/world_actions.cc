// The scenario's scripted actions: NodeClaims deleted and instances terminated by hand,
// interruption messages, price and catalog changes, NodePool edits, cordons, AMI releases and
// stray instances, each at its time.
#include "adapters/sim/world.h"

#include <algorithm>
#include <cstdio>

#include "adapters/sim/world_parts.h"

namespace tenon::sim {
namespace {

// What the node lifecycle controller taints a cordoned (spec.unschedulable) node with.
constexpr const char* kUnschedulableTaint = "node.kubernetes.io/unschedulable";

}  // namespace

const SimInstance* World::Oldest(const std::function<bool(const SimInstance&)>& keep) const {
  const SimInstance* best = nullptr;
  for (const auto& [id, i] : record_.instances) {
    if (!keep(i)) continue;
    if (best == nullptr || i.launched < best->launched) best = &i;
  }
  return best;
}

std::vector<Event> World::RunActions() {
  std::vector<Event> events;
  while (record_.next_action < scenario_.actions.size() &&
         scenario_.start + scenario_.actions[record_.next_action].at <= record_.now) {
    const Action& action = scenario_.actions[record_.next_action++];
    room_may_have_changed_ = true;
    for (auto& e : RunAction(action)) events.push_back(std::move(e));
  }
  return events;
}

std::vector<Event> World::RunAction(const Action& action) {
  switch (action.kind) {
    case Action::Kind::kDeleteNodeClaim:
      return DeleteOldestNodeClaim();
    case Action::Kind::kTerminateInstance: {
      const SimInstance* i = Oldest([](const SimInstance&) { return true; });
      if (i == nullptr) return {};
      return RemoveInstance(i->id);
    }
    case Action::Kind::kSpotInterruption:
    case Action::Kind::kRebalanceRecommendation:
    case Action::Kind::kScheduledChange:
    case Action::Kind::kInstanceStopping:
      return MessageOnOldest(action.kind);
    case Action::Kind::kSpotInterruptionStorm:
      return SpotInterruptionStorm(action.count);
    case Action::Kind::kPriceChange:
      ChangePrice(action);
      return {CatalogRefreshed{catalog_}};
    case Action::Kind::kCatalogRefresh:
      catalog_ = action.catalog;
      return {CatalogRefreshed{catalog_}};
    case Action::Kind::kInterruptOffering:
      return InterruptOffering(action);
    case Action::Kind::kDeleteNodeClaimOfOffering:
    case Action::Kind::kTerminateInstanceOfOffering:
      return ByHandOnOffering(action);
    case Action::Kind::kApplyNodePool:
      ApplyNodePool(action.nodepool);
      return {NodePoolUpserted{Pool(action.nodepool)}};
    case Action::Kind::kMalformedMessage:
      // The queue adapter keeps what it cannot read for audit; the core deletes it.
      return {InputRejected{"sqs", "not an EventBridge event: missing detail-type",
                            "{\"version\":\"0\",\"source\":\"aws.ec2\"}",
                            "msg-" + std::to_string(record_.next_message++)}};
    case Action::Kind::kCordonNode:
    case Action::Kind::kUncordonNode:
      return Cordon(action);
    case Action::Kind::kProtectNode:
      return ProtectOldestNode();
    case Action::Kind::kNodeCondition:
      return ReportCondition(action);
    case Action::Kind::kReleaseAmi:
      return ReleaseAmi();
    case Action::Kind::kLabelNodePool:
      return LabelNodePool(action.label);
    case Action::Kind::kStrayInstance:
      AddStrayInstance(action);
      return {};
  }
  return {};
}

std::vector<Event> World::DeleteOldestNodeClaim() {
  const SimInstance* i = Oldest([&](const SimInstance& x) {
    return record_.nodeclaims.contains(x.nodeclaim) && !record_.deleting.contains(x.nodeclaim);
  });
  if (i == nullptr) return {};
  record_.deleting.insert(i->nodeclaim);
  return {NodeClaimDeletionRequested{i->nodeclaim}};
}

std::vector<Event> World::MessageOnOldest(Action::Kind kind) {
  const SimInstance* i = Oldest([](const SimInstance&) { return true; });
  if (i == nullptr) return {};
  std::string id = "msg-" + std::to_string(record_.next_message++);
  switch (kind) {
    case Action::Kind::kSpotInterruption:
      --record_.next_message;  // InterruptSpot names the message.
      return InterruptSpot(*i);
    case Action::Kind::kRebalanceRecommendation:
      return {InterruptionReceived{id, InterruptionKind::kRebalanceRecommendation, i->id, ""}};
    case Action::Kind::kScheduledChange:
      return {InterruptionReceived{id, InterruptionKind::kScheduledChange, i->id,
                                   "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"}};
    default:
      return {InterruptionReceived{id, InterruptionKind::kStateChange, i->id, "stopping"}};
  }
}

std::vector<Event> World::SpotInterruptionStorm(std::int64_t count) {
  std::vector<const SimInstance*> spot;
  for (const auto& [id, i] : record_.instances) {
    if (i.capacity_type == kCapacitySpot) spot.push_back(&i);
  }
  std::sort(spot.begin(), spot.end(), [](const SimInstance* a, const SimInstance* b) {
    return a->launched != b->launched ? a->launched < b->launched : a->id < b->id;
  });
  if (spot.size() > static_cast<std::size_t>(count)) spot.resize(count);
  std::vector<Event> events;
  for (const SimInstance* i : spot) {
    for (auto& e : InterruptSpot(*i)) events.push_back(std::move(e));
  }
  return events;
}

std::vector<Event> World::Cordon(const Action& action) {
  auto node = record_.nodes.find(action.node);
  if (node == record_.nodes.end()) return {};  // Gone since: nothing to cordon.
  std::vector<Taint>& taints = node->second.taints;
  std::erase_if(taints, [](const Taint& t) { return t.key == kUnschedulableTaint; });
  if (action.kind == Action::Kind::kCordonNode) {
    taints.push_back({kUnschedulableTaint, "", TaintEffect::kNoSchedule});
  }
  room_may_have_changed_ = true;
  return {NodeUpserted{node->second}};
}

std::vector<Event> World::ProtectOldestNode() {
  const SimInstance* i =
      Oldest([&](const SimInstance& x) { return record_.nodes.contains(x.node_name); });
  if (i == nullptr) return {};
  Node& node = record_.nodes.at(i->node_name);
  node.do_not_disrupt = true;
  return {NodeUpserted{node}};
}

std::vector<Event> World::ReportCondition(const Action& action) {
  std::vector<const SimInstance*> registered;
  for (const auto& [id, i] : record_.instances) {
    if (record_.nodes.contains(i.node_name) &&
        (action.in_pool.empty() || i.nodepool == action.in_pool)) {
      registered.push_back(&i);
    }
  }
  std::sort(registered.begin(), registered.end(), [](const SimInstance* a, const SimInstance* b) {
    return a->launched != b->launched ? a->launched < b->launched : a->id < b->id;
  });
  if (registered.size() > static_cast<std::size_t>(action.count)) registered.resize(action.count);
  const std::size_t eq = action.condition.find('=');
  const std::string type = action.condition.substr(0, eq);
  const std::string status = action.condition.substr(eq + 1);
  std::vector<Event> events;
  for (const SimInstance* i : registered) {
    Node& node = record_.nodes.at(i->node_name);
    std::erase_if(node.unhealthy, [&](const NodeCondition& c) { return c.type == type; });
    if (std::any_of(std::begin(kRepairPolicies), std::end(kRepairPolicies),
                    [&](const RepairPolicy& p) { return type == p.type && status == p.status; })) {
      node.unhealthy.push_back({type, status, record_.now});
    }
    if (type == "Ready") node.ready = status == "True";
    events.push_back(NodeUpserted{node});
  }
  room_may_have_changed_ = true;
  return events;
}

std::vector<Event> World::ReleaseAmi() {
  ++record_.ami_release;
  std::vector<Event> events;
  for (const auto& c : scenario_.nodeclasses) {
    events.push_back(NodeClassUpserted{Resolved(c)});
    events.push_back(NodeClassResolved{c.name, Resolution(c)});
  }
  return events;
}

std::vector<Event> World::LabelNodePool(const std::string& label) {
  const NodePool& pool = nodepools_.front();
  auto eq = label.find('=');
  record_.added_pool_labels[pool.name][label.substr(0, eq)] = label.substr(eq + 1);
  return {NodePoolUpserted{Pool(pool)}};
}

void World::AddStrayInstance(const Action& action) {
  char id[32];
  std::snprintf(
      id, sizeof id, "i-%017llx",
      static_cast<unsigned long long>(Mix(scenario_.seed ^ record_.next_instance++) >> 4));
  record_.instances[id] = SimInstance{id,
                                      "stray-" + std::string(id),
                                      "",
                                      action.instance_type,
                                      action.zone,
                                      kCapacityOnDemand,
                                      MicroUsdPerHour{0},
                                      record_.now,
                                      "",
                                      ""};
}

// The oldest instance `keep` accepts of the action's offering, else of its capacity type in its
// zone, else of its capacity type anywhere; null when there is none.
const SimInstance* World::OfOffering(const Action& action,
                                     const std::function<bool(const SimInstance&)>& keep) const {
  auto fresh = [&](const SimInstance& i) {
    return keep(i) && i.capacity_type == action.capacity_type;
  };
  const SimInstance* i = Oldest([&](const SimInstance& x) {
    return fresh(x) && x.instance_type == action.instance_type && x.zone == action.zone;
  });
  if (i == nullptr)
    i = Oldest([&](const SimInstance& x) { return fresh(x) && x.zone == action.zone; });
  if (i == nullptr) i = Oldest(fresh);
  return i;
}

// A recorded deletion of a NodeClaim or termination of an instance, done by hand to an instance
// of the what-if's that is not already going.
std::vector<Event> World::ByHandOnOffering(const Action& action) {
  const SimInstance* i = OfOffering(action, [&](const SimInstance& x) {
    return record_.nodeclaims.contains(x.nodeclaim) && !record_.deleting.contains(x.nodeclaim);
  });
  if (i == nullptr) {
    ++unmatched_by_hand_;
    return {};
  }
  if (action.kind == Action::Kind::kTerminateInstanceOfOffering) return RemoveInstance(i->id);
  record_.deleting.insert(i->nodeclaim);
  return {NodeClaimDeletionRequested{i->nodeclaim}};
}

// A recorded NodePool edit: the world serves the pool as edited from now on.
void World::ApplyNodePool(const NodePool& pool) {
  auto it = std::find_if(nodepools_.begin(), nodepools_.end(),
                         [&](const NodePool& p) { return p.name == pool.name; });
  if (it == nodepools_.end()) {
    nodepools_.push_back(pool);
  } else {
    *it = pool;
  }
}

std::vector<Event> World::InterruptOffering(const Action& action) {
  const SimInstance* i =
      OfOffering(action, [&](const SimInstance& x) { return !interrupted_.contains(x.id); });
  if (i == nullptr) {
    ++unmatched_interruptions_;
    return {};
  }
  interrupted_.insert(i->id);
  if (action.interruption == InterruptionKind::kSpotInterruption) return InterruptSpot(*i);
  return {InterruptionReceived{"msg-" + std::to_string(record_.next_message++), action.interruption,
                               i->id, action.detail}};
}

}  // namespace tenon::sim
