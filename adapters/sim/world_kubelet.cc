// The simulated kubelet: a launched instance's Node registers (labels, taints, allocatable),
// becomes Ready, and takes the patches the controller sends it.
#include "adapters/sim/world.h"

#include <algorithm>

#include "adapters/sim/kubelet.h"

namespace tenon::sim {

NodeUpserted World::Register(SimInstance& instance) {
  Node node = NewNode(instance);
  instance.node_name = node.name;
  node_parts_.Share(node, pod_parts_.node_names);
  record_.nodes[node.name] = node;
  AddTimer(record_.now + scenario_.cloud.ready_delay, Timer{Timer::Kind::kReady, instance.id});
  CheckPlanned(instance.nodeclaim);
  return NodeUpserted{node};
}

std::vector<Event> World::BecomeReady(const SimInstance& instance) {
  auto node = record_.nodes.find(instance.node_name);
  if (node == record_.nodes.end()) return {};
  node->second.ready = true;
  // Startup taints are removed by the agents that own them once the node is up.
  for (const auto& pool : nodepools_) {
    if (pool.name != instance.nodepool) continue;
    std::erase_if(node->second.taints, [&](const Taint& t) {
      return std::any_of(pool.startup_taints.begin(), pool.startup_taints.end(),
                         [&](const Taint& s) { return s.key == t.key; });
    });
  }
  std::vector<Event> events{NodeUpserted{node->second}};
  for (auto& e : PlaceDaemonPods(node->second)) events.push_back(std::move(e));
  return events;
}

Node World::NewNode(const SimInstance& instance) const {
  Node node;
  // EKS resource-name hostnames: i-0123456789abcdef0.us-east-1.compute.internal.
  std::string region = instance.zone.substr(0, instance.zone.size() - 1);
  node.name = instance.id + "." + region + ".compute.internal";
  node.provider_id = "aws:///" + instance.zone + "/" + instance.id;
  node.created = record_.now;
  node.ready = false;
  node.taints.push_back({label::kUnregisteredTaint, "", TaintEffect::kNoExecute});
  Labels labels;
  const NodeClass* nodeclass = nullptr;  // Its kubelet configuration: maxPods, podsPerCore.
  for (const auto& original : nodepools_) {
    if (original.name != instance.nodepool) continue;
    NodePool pool = Pool(original);
    for (const auto& c : scenario_.nodeclasses) {
      if (c.name == pool.nodeclass) nodeclass = &c;
    }
    labels = pool.labels;
    node.taints.insert(node.taints.end(), pool.taints.begin(), pool.taints.end());
    node.taints.insert(node.taints.end(), pool.startup_taints.begin(), pool.startup_taints.end());
  }
  labels[label::kHostname] = node.name;
  labels[label::kInstanceType] = instance.instance_type;
  labels[label::kZone] = instance.zone;
  labels["topology.kubernetes.io/region"] = instance.zone.substr(0, instance.zone.size() - 1);
  labels[label::kCapacityType] = instance.capacity_type;
  labels[label::kOs] = "linux";
  for (const auto& type : catalog_) {
    if (type.name != instance.instance_type) continue;
    labels[label::kArch] = type.arch;
    node.allocatable = KubeletAllocatable(type, nodeclass, scenario_.settings.reserved_enis);
  }
  if (scenario_.settings.node_overlay) {
    Labels matched = labels;
    matched[label::kNodePool] = instance.nodepool;
    AddOverlaidDevices(scenario_.overlays, matched, node.allocatable);
  }
  node.labels = labels;
  return node;
}

void World::CheckPlanned(const std::string& nodeclaim) {
  const auto planned = record_.planned.find(nodeclaim);
  const auto id = record_.client_tokens.find(nodeclaim);
  if (planned == record_.planned.end() || id == record_.client_tokens.end()) return;
  const auto instance = record_.instances.find(id->second);
  if (instance == record_.instances.end()) return;
  const auto node = record_.nodes.find(instance->second.node_name);
  if (node == record_.nodes.end() || record_.overestimated.contains(nodeclaim)) return;
  const Resources& want = planned->second;
  const Resources& have = node->second.allocatable;
  std::string short_of;
  auto compare = [&](const std::string& name, std::int64_t wanted, std::int64_t had) {
    if (wanted <= had) return;
    short_of += (short_of.empty() ? "" : ", ") + name + " " + std::to_string(wanted) +
                " planned, " + std::to_string(had) + " reported";
  };
  compare("cpu (millicores)", want.cpu.value, have.cpu.value);
  compare("memory (bytes)", want.memory.value, have.memory.value);
  compare("pods", want.pods, have.pods);
  for (const auto& [name, count] : want.extended) {
    const auto it = have.extended.find(name);
    compare(name, count, it == have.extended.end() ? 0 : it->second);
  }
  if (short_of.empty()) return;
  record_.overestimated[nodeclaim] = "NodeClaim " + nodeclaim + " (" +
                                     instance->second.instance_type + ", node " + node->first +
                                     "): " + short_of;
}

std::vector<Event> World::Patch(const Command& command, const PatchNode& patch) {
  auto it = record_.nodes.find(patch.node_name);
  if (it == record_.nodes.end()) {
    return {
        CommandFailed{command.id, ErrorCode::kNotFound, "node " + patch.node_name + " not found"}};
  }
  Node& node = it->second;
  room_may_have_changed_ = true;
  for (const auto& [k, v] : patch.add_labels) node.labels.Set(k, v);
  node_parts_.Share(node, pod_parts_.node_names);
  std::erase_if(node.taints, [&](const Taint& t) {
    return std::find(patch.remove_taints.begin(), patch.remove_taints.end(), t.key) !=
           patch.remove_taints.end();
  });
  for (const auto& t : patch.add_taints) {
    if (std::find(node.taints.begin(), node.taints.end(), t) == node.taints.end()) {
      node.taints.push_back(t);
    }
  }
  return {CommandSucceeded{command.id}, NodeUpserted{node}};
}

}  // namespace tenon::sim
