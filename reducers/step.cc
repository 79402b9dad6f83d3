// Step: the single entry point of the core. Each event kind has a small handler; control flow
// stays here, the leaf work in provisioning.cc and lifecycle.cc.
#include <cassert>

#include "reducers/internal.h"

namespace tenon {
namespace {

using namespace core;

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

void OnTick(State& state, Seq seq, const Tick& tick, Output& out) {
  // Time never runs backwards in the core: a late or duplicated tick is folded as a no-op.
  if (tick.now > state.now) state.now = tick.now;
  const std::size_t at_start = out.size();
  ExpireUnavailableOfferings(state);
  // Lifecycle (registration, termination) goes on regardless; choosing what to launch or
  // remove waits until the cluster has been read whole.
  const std::size_t before = out.size();
  if (state.cluster.watches_synced) MaybeProvision(state, seq, out);
  if (state.cluster.watches_synced) AdvanceStaticPools(state, seq, out);
  if (state.cluster.watches_synced) AdvanceNodeRepair(state, seq, out);
  const std::vector<const NodeClaim*> expired = AdvanceLifecycle(state, seq, out);
  if (out.size() != before) ++state.cluster_generation;
  if (state.cluster.watches_synced) AdvanceDisruption(state, seq, expired, out);
  if (state.cluster.watches_synced) AdvanceDeletionCost(state, seq, out);
  AdvanceNodeClassTerminations(state, seq, out);
  // What the tick did may give the next one something to do: the idle notes lapse.
  if (out.size() != at_start) ++state.idle.changes;
}

void OnStarted(State& state, const ControllerStarted& started) {
  // The first start fixes the seed, so NodeClaim names stay unique across restarts.
  if (!state.started) state.seed = started.seed;
  state.started = true;
  state.version = started.version;
  state.settings = started.settings;
  if (!state.cluster.catalog->empty()) {
    for (auto& [name, entry] : state.cluster.catalog.Mutable()) {
      entry = MakeCatalogEntry(entry.type, state.settings);
    }
  }
}

void OnCatalog(State& state, const CatalogRefreshed& refreshed) {
  Catalog& catalog = state.cluster.catalog.Mutable();
  catalog.clear();
  for (const auto& type : refreshed.instance_types) {
    catalog[type.name] = MakeCatalogEntry(type, state.settings);
  }
}

// A node as consolidation sees it: without the labels the controller writes to mirror its
// claim's registration and initialization, whose transitions counted when the claim made them.
Node WithoutLifecycleLabels(const Node& node) {
  Node out = node;
  Labels labels = node.labels.ToLabels();
  labels.erase(label::kRegistered);
  labels.erase(label::kInitialized);
  out.labels = NodeLabels(labels);
  return out;
}

// An EC2NodeClass seen again with nothing changed but its finalizer (the echo of the core's
// own SetNodeClassFinalizer): nothing a pod or a consolidation could be waiting for.
bool OnlyFinalizerChanged(const NodeClass& before, const NodeClass& after) {
  NodeClass same = before;
  same.finalizer = after.finalizer;
  return same == after;
}

// Whether folding `event` could change what consolidation finds: as Karpenter's
// MarkUnconsolidated, anything that may turn a cluster with nothing to consolidate into one
// with something. Ticks count through what they do (AdvanceDisruption), a pod only when it
// changed (OnPodUpserted), a listing of the instances only when garbage collection acted on it
// (Step). Never: a NodeClass resolution (what consolidation sees of it comes back with the
// status it writes, as NodeClassUpserted); a command's result that only published status,
// acknowledged a message or
// patched a node (the node's change arrives as its own NodeUpserted); a node reported again
// unchanged, or changed only in its registered/initialized labels (the echo of the controller's
// own patch, after the claim's transition); a change to a node whose NodeClaim is already being
// deleted (it is neither a candidate nor a place for pods: Karpenter's MarkedForDeletion is
// already true).
bool ChangesCluster(const State& state, const Event& event) {
  if (std::holds_alternative<Tick>(event) || std::holds_alternative<PodUpserted>(event) ||
      std::holds_alternative<InstancesListed>(event) ||
      std::holds_alternative<NodeClassResolved>(event)) {
    return false;
  }
  if (const auto* done = std::get_if<CommandSucceeded>(&event)) {
    auto it = state.inflight.find(done->command);
    if (it != state.inflight.end() &&
        (std::holds_alternative<PatchNodeClaimStatus>(it->second.body) ||
         std::holds_alternative<PatchNodePoolStatus>(it->second.body) ||
         std::holds_alternative<DeleteQueueMessage>(it->second.body) ||
         std::holds_alternative<TagInstance>(it->second.body) ||
         std::holds_alternative<PatchNodeClassStatus>(it->second.body) ||
         std::holds_alternative<SetNodeClassFinalizer>(it->second.body) ||
         std::holds_alternative<EnsureInstanceProfile>(it->second.body) ||
         std::holds_alternative<DeleteNodeClassResources>(it->second.body) ||
         std::holds_alternative<PatchNode>(it->second.body) ||
         std::holds_alternative<PatchNodeOverlayStatus>(it->second.body) ||
         std::holds_alternative<PatchPodDeletionCost>(it->second.body))) {
      return false;
    }
  }
  if (const auto* upserted = std::get_if<NodeClassUpserted>(&event)) {
    auto known = state.cluster.nodeclasses.find(upserted->nodeclass.name);
    return known == state.cluster.nodeclasses.end() ||
           !OnlyFinalizerChanged(known->second, upserted->nodeclass);
  }
  if (const auto* upserted = std::get_if<NodeUpserted>(&event)) {
    auto known = state.cluster.nodes.find(upserted->node.name);
    if (known == state.cluster.nodes.end()) return true;
    const Node& before = known->second;
    const Node& after = upserted->node;
    if (before == after) return false;
    if (!(before.labels == after.labels) &&
        WithoutLifecycleLabels(before) == WithoutLifecycleLabels(after)) {
      return false;
    }
    bool leaving = false;
    state.lifecycle.claims_by_node.ForEach(upserted->node.name, [&](const std::string& name) {
      auto claim = state.lifecycle.nodeclaims.find(name);
      leaving = leaving || (claim != state.lifecycle.nodeclaims.end() && claim->second.deleting);
    });
    return !leaving;
  }
  return true;
}

void OnPodUpserted(State& state, const Pod& pod) {
  const std::string key = PodKey(pod.ns, pod.name);
  static const Pod kAbsent;
  auto it = state.cluster.pods.find(key);
  const Pod& before = it == state.cluster.pods.end() ? kAbsent : it->second;
  // A pending pod reported again unchanged (kube-scheduler's retries) changes nothing
  // consolidation could see, but is still planned for again below; nor does a pod-deletion-cost
  // the controller wrote itself (consolidation does not read it then).
  bool changed = !(before == pod);
  if (changed && state.settings.pod_deletion_cost && before.deletion_cost != pod.deletion_cost) {
    Pod compared = pod;
    compared.deletion_cost = before.deletion_cost;
    changed = !(before == compared);
  }
  if (changed) ++state.cluster_generation;
  if (before.node_name != pod.node_name) {
    NotePodMoved(state, before.node_name);
    NotePodMoved(state, pod.node_name);
  }
  Pod stored = pod;
  state.cluster.pod_parts.Share(stored);
  state.cluster.pods.Upsert(key, std::move(stored));
  if (IsProvisionable(pod)) NotePodForBatch(state, pod);
}

}  // namespace

void core::ForgetPod(State& state, const std::string& ns, const std::string& name) {
  if (auto it = state.cluster.pods.find(PodKey(ns, name)); it != state.cluster.pods.end()) {
    NotePodMoved(state, it->second.node_name);
    state.cluster.pods.Erase(it);
  }
}

namespace {

// Input that could not be read is kept in the log for audit; a queue message it came in is
// deleted from the queue now that it is there (delivered again, it would only be rejected again).
void OnInputRejected(State& state, Seq seq, const InputRejected& event, Output& out) {
  state.rejected_inputs++;
  if (!event.message_id.empty()) Issue(state, seq, DeleteQueueMessage{event.message_id}, out);
}

void Complete(State& state, CommandId id) {
  state.inflight.erase(id);
}

}  // namespace

namespace {

// Each event's fold, by its type.
void Apply(State& state, Seq seq, const Tick& e, Output& out) {
  OnTick(state, seq, e, out);
}
void Apply(State& state, Seq seq, const ControllerStarted& e, Output& out) {
  OnStarted(state, e);
  RefreshOverlays(state, seq, out);
}
// A NodePool, EC2NodeClass or the catalog changed: pods left pending (perhaps for want
// of exactly this) are planned for again in the next batch.
void Apply(State& state, Seq seq, const CatalogRefreshed& e, Output& out) {
  OnCatalog(state, e);
  RefreshOverlays(state, seq, out);
  ReconsiderPendingPods(state);
}
// A NodePool or a NodeOverlay (which changes what the NodePools it matches see of the catalog)
// stored, when it changed: the overlaid catalogs are made again, and pods left pending are
// planned for again.
template <class T>
void Reconfigure(State& state, Seq seq, std::map<std::string, T>& objects, const T& object,
                 Output& out) {
  T& slot = objects[object.name];
  if (slot == object) return;
  slot = object;
  RefreshOverlays(state, seq, out);
  ReconsiderPendingPods(state);
}
void Apply(State& state, Seq seq, const NodePoolUpserted& e, Output& out) {
  Reconfigure(state, seq, state.cluster.nodepools, e.nodepool, out);
}
void Apply(State& state, Seq seq, const NodePoolDeleted& e, Output& out) {
  state.cluster.nodepools.erase(e.name);
  RefreshOverlays(state, seq, out);
}
void Apply(State& state, Seq seq, const NodeOverlayUpserted& e, Output& out) {
  Reconfigure(state, seq, state.cluster.nodeoverlays, e.overlay, out);
}
void Apply(State& state, Seq seq, const NodeOverlayDeleted& e, Output& out) {
  state.cluster.nodeoverlays.erase(e.name);
  RefreshOverlays(state, seq, out);
}
void Apply(State& state, Seq seq, const NodeClassUpserted& e, Output& out) {
  NodeClass& slot = state.cluster.nodeclasses[e.nodeclass.name];
  if (slot == e.nodeclass) return;
  const bool finalizer_only = OnlyFinalizerChanged(slot, e.nodeclass);
  slot = e.nodeclass;
  if (!finalizer_only) ReconsiderPendingPods(state);
  ReconcileNodeClass(state, seq, e.nodeclass.name, out);
}
void Apply(State& state, Seq, const NodeClassDeleted& e, Output&) {
  state.cluster.nodeclasses.erase(e.name);
  ForgetNodeClass(state, e.name);
}
void Apply(State& state, Seq, const PodUpserted& e, Output&) {
  OnPodUpserted(state, e.pod);
}
void Apply(State& state, Seq, const PodDeleted& e, Output&) {
  ForgetPod(state, e.ns, e.name);
}
void Apply(State& state, Seq seq, const NodeUpserted& e, Output& out) {
  Node& slot = state.cluster.nodes[e.node.name] = e.node;
  state.cluster.node_parts.Share(slot, state.cluster.pod_parts.node_names);
  OnNodeUpserted(state, seq, slot, out);
}
// Pods planned onto the node are planned for again.
void Apply(State& state, Seq, const NodeDeleted& e, Output&) {
  state.cluster.nodes.erase(e.name);
  OnNodeDeleted(state, e.name);
  ReconsiderPendingPods(state);
}
void Apply(State& state, Seq seq, const FleetLaunched& e, Output& out) {
  Complete(state, e.command);
  OnFleetLaunched(state, seq, e, out);
}
void Apply(State& state, Seq seq, const FleetFailed& e, Output& out) {
  std::optional<LaunchInstance> launch;
  if (auto it = state.inflight.find(e.command); it != state.inflight.end()) {
    if (const auto* l = std::get_if<LaunchInstance>(&it->second.body)) launch = *l;
  }
  Complete(state, e.command);
  OnFleetFailed(state, seq, e, launch, out);
}
void Apply(State& state, Seq seq, const CommandSucceeded& e, Output& out) {
  if (OnNodeClassResult(state, seq, e.command, true, out)) return;
  const std::size_t claims = state.lifecycle.nodeclaims.size();
  OnTerminationResult(state, seq, e.command, std::nullopt, out);
  std::optional<PatchNode> patched;
  if (auto it = state.inflight.find(e.command); it != state.inflight.end()) {
    if (const auto* p = std::get_if<PatchNode>(&it->second.body)) patched = *p;
  }
  Complete(state, e.command);
  if (patched) ResyncNode(state, seq, *patched, out);
  // A NodeClaim gone gives its NodePool's limit back: the pods the limit kept out
  // are worth another provisioning pass (nothing else would bring them back).
  if (state.lifecycle.nodeclaims.size() < claims) ReconsiderPendingPods(state);
}
void Apply(State& state, Seq seq, const CommandFailed& e, Output& out) {
  if (OnNodeClassResult(state, seq, e.command, false, out)) return;
  if (!OnTerminationResult(state, seq, e.command, e.code, out)) {
    OnCommandFailed(state, seq, e, out);
  }
  Complete(state, e.command);
}
void Apply(State& state, Seq seq, const InputRejected& e, Output& out) {
  OnInputRejected(state, seq, e, out);
}
void Apply(State& state, Seq, const DaemonSetUpserted& e, Output&) {
  state.cluster.daemonsets[PodKey(e.daemonset.ns, e.daemonset.name)] = e.daemonset;
}
void Apply(State& state, Seq, const DaemonSetDeleted& e, Output&) {
  state.cluster.daemonsets.erase(PodKey(e.ns, e.name));
}
void Apply(State& state, Seq, const PersistentVolumeClaimUpserted& e, Output&) {
  state.cluster.pvcs[PodKey(e.claim.ns, e.claim.name)] = e.claim;
}
void Apply(State& state, Seq, const PersistentVolumeClaimDeleted& e, Output&) {
  state.cluster.pvcs.erase(PodKey(e.ns, e.name));
}
void Apply(State& state, Seq, const PersistentVolumeUpserted& e, Output&) {
  state.cluster.pvs[e.volume.name] = e.volume;
}
void Apply(State& state, Seq, const PersistentVolumeDeleted& e, Output&) {
  state.cluster.pvs.erase(e.name);
}
void Apply(State& state, Seq, const StorageClassUpserted& e, Output&) {
  state.cluster.storage_classes[e.storage_class.name] = e.storage_class;
}
void Apply(State& state, Seq, const StorageClassDeleted& e, Output&) {
  state.cluster.storage_classes.erase(e.name);
}
void Apply(State& state, Seq, const CsiNodeUpserted& e, Output&) {
  state.cluster.csi_nodes[e.csi_node.name] = e.csi_node;
}
void Apply(State& state, Seq, const CsiNodeDeleted& e, Output&) {
  state.cluster.csi_nodes.erase(e.name);
}
void Apply(State& state, Seq seq, const NodeClaimDeletionRequested& e, Output& out) {
  OnNodeClaimDeletionRequested(state, seq, e, out);
}
void Apply(State& state, Seq seq, const InstancesListed& e, Output& out) {
  OnInstancesListed(state, seq, e, out);
  if (!out.empty()) ++state.cluster_generation;  // Garbage collection acted.
}
void Apply(State& state, Seq seq, const InterruptionReceived& e, Output& out) {
  OnInterruption(state, seq, e, out);
}
void Apply(State& state, Seq, const PodDisruptionBudgetUpserted& e, Output&) {
  state.cluster.pdbs[PodKey(e.pdb.ns, e.pdb.name)] = e.pdb;
}
void Apply(State& state, Seq, const PodDisruptionBudgetDeleted& e, Output&) {
  state.cluster.pdbs.erase(PodKey(e.ns, e.name));
}
void Apply(State& state, Seq, const WatchesStarted&, Output&) {
  state.cluster.watches_synced = false;
}
void Apply(State& state, Seq, const WatchesSynced&, Output&) {
  state.cluster.watches_synced = true;
}
void Apply(State& state, Seq seq, const NodeClaimObserved& e, Output& out) {
  OnNodeClaimObserved(state, seq, e.claim, out);
}
void Apply(State& state, Seq seq, const NodeClassResolved& e, Output& out) {
  OnNodeClassResolved(state, seq, e, out);
}

}  // namespace

Output Step(State& state, Seq seq, const Event& event) {
  assert(seq > state.last_seq);
  state.last_seq = seq;
  if (ChangesCluster(state, event)) ++state.cluster_generation;
  if (!std::holds_alternative<Tick>(event)) ++state.idle.changes;
  if (state.cluster.overlaid.stale) RebuildOverlays(state);
  state.cluster.pods.IgnoreDeletionCost(state.settings.pod_deletion_cost);
  Output out;
  std::visit([&](const auto& alternative) { Apply(state, seq, alternative, out); }, event);
  if (!out.decisions.empty()) AnnounceDecisionEvents(state, seq, out);
  return out;
}

namespace core {

Command& Issue(State& state, Seq cause, CommandBody body, Output& out) {
  Command command{state.next_command, cause, std::move(body)};
  state.next_command = CommandId{state.next_command.value + 1};
  state.inflight[command.id] = command;
  out.commands.push_back(std::move(command));
  return out.commands.back();
}

Decision& Decide(State& state, Seq cause, DecisionBody body, Output& out) {
  Decision decision{state.next_decision, cause, state.now, std::move(body)};
  state.next_decision = DecisionId{state.next_decision.value + 1};
  out.decisions.push_back(std::move(decision));
  return out.decisions.back();
}

}  // namespace core
}  // namespace tenon
