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
  for (const auto& [id, i] : instances_) {
    if (!keep(i)) continue;
    if (best == nullptr || i.launched < best->launched) best = &i;
  }
  return best;
}

std::vector<Event> World::RunActions() {
  std::vector<Event> events;
  while (next_action_ < scenario_.actions.size() &&
         scenario_.start + scenario_.actions[next_action_].at <= now_) {
    const Action& action = scenario_.actions[next_action_++];
    room_may_have_changed_ = true;
    switch (action.kind) {
      case Action::Kind::kDeleteNodeClaim: {
        const SimInstance* i = Oldest([&](const SimInstance& x) {
          return nodeclaims_.contains(x.nodeclaim) && !deleting_.contains(x.nodeclaim);
        });
        if (i == nullptr) break;
        deleting_.insert(i->nodeclaim);
        events.push_back(NodeClaimDeleting{i->nodeclaim});
        break;
      }
      case Action::Kind::kTerminateInstance: {
        const SimInstance* i = Oldest([](const SimInstance&) { return true; });
        if (i == nullptr) break;
        for (auto& e : RemoveInstance(i->id)) events.push_back(std::move(e));
        break;
      }
      case Action::Kind::kSpotInterruption:
      case Action::Kind::kRebalanceRecommendation:
      case Action::Kind::kScheduledChange:
      case Action::Kind::kInstanceStopping: {
        const SimInstance* i = Oldest([](const SimInstance&) { return true; });
        if (i == nullptr) break;
        std::string id = "msg-" + std::to_string(next_message_++);
        switch (action.kind) {
          case Action::Kind::kSpotInterruption:
            --next_message_;  // InterruptSpot names the message.
            for (auto& e : InterruptSpot(*i)) events.push_back(std::move(e));
            break;
          case Action::Kind::kRebalanceRecommendation:
            events.push_back(
                InterruptionReceived{id, InterruptionKind::kRebalanceRecommendation, i->id, ""});
            break;
          case Action::Kind::kScheduledChange:
            events.push_back(InterruptionReceived{id, InterruptionKind::kScheduledChange, i->id,
                                                  "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"});
            break;
          default:
            events.push_back(
                InterruptionReceived{id, InterruptionKind::kStateChange, i->id, "stopping"});
            break;
        }
        break;
      }
      case Action::Kind::kSpotInterruptionStorm: {
        std::vector<const SimInstance*> spot;
        for (const auto& [id, i] : instances_) {
          if (i.capacity_type == kCapacitySpot) spot.push_back(&i);
        }
        std::sort(spot.begin(), spot.end(), [](const SimInstance* a, const SimInstance* b) {
          return a->launched != b->launched ? a->launched < b->launched : a->id < b->id;
        });
        if (spot.size() > static_cast<std::size_t>(action.count)) spot.resize(action.count);
        for (const SimInstance* i : spot) {
          for (auto& e : InterruptSpot(*i)) events.push_back(std::move(e));
        }
        break;
      }
      case Action::Kind::kPriceChange:
        ChangePrice(action);
        events.push_back(CatalogRefreshed{catalog_});
        break;
      case Action::Kind::kCatalogRefresh:
        catalog_ = action.catalog;
        events.push_back(CatalogRefreshed{catalog_});
        break;
      case Action::Kind::kInterruptOffering:
        for (auto& e : InterruptOffering(action)) events.push_back(std::move(e));
        break;
      case Action::Kind::kDeleteNodeClaimOfOffering:
      case Action::Kind::kTerminateInstanceOfOffering:
        for (auto& e : ByHandOnOffering(action)) events.push_back(std::move(e));
        break;
      case Action::Kind::kApplyNodePool:
        ApplyNodePool(action.nodepool);
        events.push_back(NodePoolUpserted{Pool(action.nodepool)});
        break;
      case Action::Kind::kMalformedMessage:
        // The queue adapter keeps what it cannot read for audit; the core deletes it.
        events.push_back(InputRejected{"sqs", "not an EventBridge event: missing detail-type",
                                       "{\"version\":\"0\",\"source\":\"aws.ec2\"}",
                                       "msg-" + std::to_string(next_message_++)});
        break;
      case Action::Kind::kCordonNode:
      case Action::Kind::kUncordonNode: {
        auto node = nodes_.find(action.node);
        if (node == nodes_.end()) break;  // Gone since: nothing to cordon.
        std::vector<Taint>& taints = node->second.taints;
        std::erase_if(taints, [](const Taint& t) { return t.key == kUnschedulableTaint; });
        if (action.kind == Action::Kind::kCordonNode) {
          taints.push_back({kUnschedulableTaint, "", TaintEffect::kNoSchedule});
        }
        room_may_have_changed_ = true;
        events.push_back(NodeUpserted{node->second});
        break;
      }
      case Action::Kind::kProtectNode: {
        const SimInstance* i =
            Oldest([&](const SimInstance& x) { return nodes_.contains(x.node_name); });
        if (i == nullptr) break;
        Node& node = nodes_.at(i->node_name);
        node.do_not_disrupt = true;
        events.push_back(NodeUpserted{node});
        break;
      }
      case Action::Kind::kReleaseAmi: {
        ++ami_release_;
        for (const auto& c : scenario_.nodeclasses) {
          events.push_back(NodeClassUpserted{Resolved(c)});
          events.push_back(NodeClassResolved{c.name, Resolution(c)});
        }
        break;
      }
      case Action::Kind::kLabelNodePool: {
        const NodePool& pool = nodepools_.front();
        auto eq = action.label.find('=');
        added_pool_labels_[pool.name][action.label.substr(0, eq)] = action.label.substr(eq + 1);
        events.push_back(NodePoolUpserted{Pool(pool)});
        break;
      }
      case Action::Kind::kStrayInstance: {
        char id[32];
        std::snprintf(id, sizeof id, "i-%017llx",
                      static_cast<unsigned long long>(Mix(scenario_.seed ^ next_instance_++) >> 4));
        instances_[id] = SimInstance{id,
                                     "stray-" + std::string(id),
                                     "",
                                     action.instance_type,
                                     action.zone,
                                     kCapacityOnDemand,
                                     MicroUsdPerHour{0},
                                     now_,
                                     "",
                                     ""};
        break;
      }
    }
  }
  return events;
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
    return nodeclaims_.contains(x.nodeclaim) && !deleting_.contains(x.nodeclaim);
  });
  if (i == nullptr) {
    ++unmatched_by_hand_;
    return {};
  }
  if (action.kind == Action::Kind::kTerminateInstanceOfOffering) return RemoveInstance(i->id);
  deleting_.insert(i->nodeclaim);
  return {NodeClaimDeleting{i->nodeclaim}};
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
  return {InterruptionReceived{"msg-" + std::to_string(next_message_++), action.interruption, i->id,
                               action.detail}};
}

}  // namespace tenon::sim
