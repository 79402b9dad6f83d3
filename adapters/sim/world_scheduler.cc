// The simulated kube-scheduler's binding pass: pending pods, oldest first, each bound to the
// first node (in name order) its filters (kube_scheduler.h) accept.
#include "adapters/sim/world.h"

#include <algorithm>
#include <cassert>

#include "adapters/sim/world_parts.h"

namespace tenon::sim {
namespace {

// What kube-scheduler's filter looks at in a pod: pods with the same shape fit the same nodes.
std::string Shape(const Pod& pod) {
  std::string shape =
      std::to_string(pod.requests.cpu.value) + " " + std::to_string(pod.requests.memory.value);
  for (const auto& [name, count] : pod.requests.extended) {
    shape += " " + name + "=" + std::to_string(count);
  }
  shape += " |";
  for (const auto& [key, value] : pod.constraints->node_selector) {
    shape += " " + key + "=" + value;
  }
  shape += " |";
  for (const auto& t : pod.constraints->tolerations) {
    shape += " " + t.key + (t.op_exists ? "?" : "=" + t.value) + ":" +
             std::to_string(t.effect ? static_cast<int>(*t.effect) : -1);
  }
  return shape;
}

}  // namespace

std::vector<Event> World::Schedule() {
  // A pod already found unschedulable is retried only once room may have appeared; until then
  // it would fail again, so leaving it out changes no binding.
  const bool retry = room_may_have_changed_;
  room_may_have_changed_ = false;
  std::vector<Pod*> pending;
  for (const auto& key : unbound_) {
    Pod& pod = pods_.at(key);
    assert(pod.node_name.empty());
    if (retry || !pod.unschedulable) pending.push_back(&pod);
  }
  if (pending.empty()) return {};
  std::sort(pending.begin(), pending.end(), [](const Pod* a, const Pod* b) {
    return a->created != b->created ? a->created < b->created : a->uid < b->uid;
  });
  // Free room per node, in the nodes' (name) order. Pods bound to a node that is gone take no
  // room: their entry in on_node_ matches no node.
  std::vector<std::pair<const Node*, Resources>> free;
  auto on = on_node_.begin();
  for (const auto& [name, node] : record_.nodes) {
    while (on != on_node_.end() && on->first < name) ++on;
    const bool used = on != on_node_.end() && on->first == name;
    free.emplace_back(&node, used ? node.allocatable - on->second.requested : node.allocatable);
  }
  // Within this pass room only shrinks, so a pod is not tried on the nodes that rejected an
  // earlier pod of its shape: first fit, without walking every node for every pod. Pods whose
  // place depends on other pods (spreads, affinity, ports, volumes), or any pod while some pod
  // refuses neighbours, are tried on every node: room alone does not decide for them.
  std::map<std::string, std::size_t> first_try;  // Shape -> index into `free`.
  std::vector<Event> events;
  bool waiting_on_neighbours = false;
  bool bound_any = false;
  for (Pod* pod : pending) {
    bool bound = false;
    std::size_t every_node = 0;
    // Required node affinity is not part of a shape either: such pods see every node too.
    const bool neighbours = refusing_pods_ > 0 || DependsOnNeighbours(*pod) ||
                            !pod->constraints->node_affinity_required.empty();
    std::size_t& i = neighbours ? every_node : first_try[Shape(*pod)];
    for (; i < free.size(); ++i) {
      auto& [node, room] = free[i];
      if (!Accepts(View(), *pod, *node, room)) continue;
      unbound_.erase(PodKey(pod->ns, pod->name));
      pod->node_name = node->name;
      pod_parts_.node_names.Intern(pod->node_name.SharedForInterning());
      pod->phase = PodPhase::kRunning;
      pod->unschedulable = false;
      Binding(*pod);
      room = room - Need(*pod);
      bound = bound_any = true;
      if (pod->owner_kind == "Job") StartJobTimer(*pod);
      for (auto& e : ProvisionFor(*pod)) events.push_back(std::move(e));
      break;
    }
    if (!bound && neighbours) waiting_on_neighbours = true;
    // Already reported as unschedulable: reported again only after a retry the cluster's change
    // prompted, as kube-scheduler rewrites the PodScheduled condition's message ("0/N nodes are
    // available: ...") on each failed attempt. A controller waiting on a NodeClaim that another
    // pod filled learns from it that this pod is still pending.
    if (!bound && pod->unschedulable && !retry) continue;
    if (!bound) pod->unschedulable = true;
    events.push_back(PodUpserted{*pod});
  }
  // A pod that waits on others (its affinity, a spread's skew) may fit once they are bound.
  if (bound_any && waiting_on_neighbours) room_may_have_changed_ = true;
  return events;
}

}  // namespace tenon::sim
