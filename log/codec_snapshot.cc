// Snapshots: the whole State as a head and parts of at most kSnapshotPartItems items each.
#include "log/codec_parts.h"
#include "model/fields.h"

namespace tenon::log {
using namespace parts;

// Every field of the State is in a snapshot: the head or the parts write them, and decoding makes
// the shared parts and indexes (the cluster's pod_parts and node_parts, the lifecycle's
// claim_parts and claims_by_node) from them; the idle notes start empty (the first tick walks the
// cluster, as after a fresh start), the overlaid catalogs stale (the first step makes them
// again) and the self checks off. A field added to the State or a slice of it fails the build here
// until the snapshot carries it, or recovery would lose it.
static_assert(FieldCount<ClusterView>() == 14 + 3,
              "ClusterView: encode the field added in the snapshot (PutHead*, GetHead*)");
static_assert(FieldCount<ClaimLifecycle>() == 8 + 2,
              "ClaimLifecycle: encode the field added in the snapshot (PutHead*, GetHead*)");
static_assert(FieldCount<NodeClassLifecycle>() == 2,
              "NodeClassLifecycle: encode the field added in the snapshot (PutHead*, GetHead*)");
static_assert(FieldCount<DisruptionState>() == 11,
              "DisruptionState: encode the field added in the snapshot (PutHead*, GetHead*)");
static_assert(FieldCount<State>() == 17 + 2,
              "State: encode the field added in the snapshot (PutHead*, GetHead*)");

namespace {

// The large collections of a snapshot follow its head in parts of at most this many items, so
// that no buffer ever holds the whole state (tens of MB at 5,000 nodes).
constexpr std::size_t kSnapshotPartItems = 1024;

// Writes `map` as snapshot parts, each a Snapshot message with only the list `init` makes.
template <class Map, class Init>
void PutSlices(const Map& map, Init init, const std::function<void(std::string_view)>& sink) {
  auto it = map.begin();
  for (std::size_t left = map.size(); left > 0;) {
    const std::size_t n = std::min(left, kSnapshotPartItems);
    capnp::MallocMessageBuilder message;
    auto list = init(message.initRoot<s::Snapshot>(), static_cast<unsigned>(n));
    for (unsigned i = 0; i < n; ++i, ++it) Put(list[i], it->second);
    sink(ToBytes(message));
    left -= n;
  }
}

// The head's first half: the clock, the settings and configuration, the offerings out of
// capacity, the batch window, the commands in flight and the counters.
void PutHeadConfiguration(s::Snapshot::Builder b, const State& state) {
  b.setStateHash(StateHash(state));
  b.setLastSeq(state.last_seq.value);
  b.setNowNs(state.now.value);
  b.setStarted(state.started);
  b.setSeed(state.seed);
  b.setVersion(T(state.version));
  Put(b.initSettings(), state.settings);
  PutValues(b.initNodePools(state.cluster.nodepools.size()), state.cluster.nodepools);
  PutValues(b.initNodeClasses(state.cluster.nodeclasses.size()), state.cluster.nodeclasses);
  auto unavailable = b.initUnavailableOfferings(state.lifecycle.unavailable_offerings.size());
  unsigned i = 0;
  for (const auto& [key, until] : state.lifecycle.unavailable_offerings) {
    unavailable[i].setKey(T(key));
    unavailable[i].setUntilNs(until.value);
    ++i;
  }
  b.setBatchOpen(state.batch.open);
  b.setBatchOpenedNs(state.batch.opened.value);
  b.setBatchLastPodNs(state.batch.last_pod.value);
  PutValues(b.initInflight(state.inflight.size()), state.inflight);
  PutValues(b.initRelaunches(state.lifecycle.relaunches.size()), state.lifecycle.relaunches);
  b.setNextCommand(state.next_command.value);
  b.setNextDecision(state.next_decision.value);
  b.setNextNodeClaim(state.lifecycle.next_nodeclaim);
  b.setRejectedInputs(state.rejected_inputs);
  b.setWatchesUnsynced(!state.cluster.watches_synced);
}

// The head's second half: the objects beside pods and nodes, the statuses, disruption and the
// controller's bookkeeping (messages handled, claims finished, Events recorded).
void PutHeadBookkeeping(s::Snapshot::Builder b, const State& state) {
  PutValues(b.initDaemonSets(state.cluster.daemonsets.size()), state.cluster.daemonsets);
  PutValues(b.initPersistentVolumeClaims(state.cluster.pvcs.size()), state.cluster.pvcs);
  PutValues(b.initPersistentVolumes(state.cluster.pvs.size()), state.cluster.pvs);
  PutValues(b.initStorageClasses(state.cluster.storage_classes.size()),
            state.cluster.storage_classes);
  PutValues(b.initCsiNodes(state.cluster.csi_nodes.size()), state.cluster.csi_nodes);
  PutNamed(b.initNodePoolStatus(state.lifecycle.nodepool_status.size()),
           state.lifecycle.nodepool_status, [](auto item) { return item.initStatus(); });
  PutValues(b.initNodeOverlays(state.cluster.nodeoverlays.size()), state.cluster.nodeoverlays);
  PutNamed(b.initNodeOverlayStatus(state.cluster.nodeoverlay_status.size()),
           state.cluster.nodeoverlay_status, [](auto item) { return item.initStatus(); });
  PutNamed(b.initNodeClassResolutions(state.nodeclass.resolutions.size()),
           state.nodeclass.resolutions, [](auto item) { return item.initResolution(); });
  {
    auto terminations = b.initNodeClassTerminations(state.nodeclass.terminations.size());
    unsigned i = 0;
    for (const auto& [name, t] : state.nodeclass.terminations) {
      terminations[i].setName(T(name));
      terminations[i].setWaitingMessage(T(t.waiting_message));
      terminations[i].setWaitingAtNs(t.waiting_at.value);
      terminations[i++].setRetryAtNs(t.retry_at.value);
    }
  }
  b.setLastInstanceListingNs(state.lifecycle.last_instance_listing.value);
  std::map<std::string, std::int64_t> healthy(state.lifecycle.registration_healthy.begin(),
                                              state.lifecycle.registration_healthy.end());
  Put(b.initRegistrationHealthy(healthy.size()), healthy);
  b.setLastDisruptionPassNs(Ns(state.disruption.last_pass));
  if (const std::optional<PendingDisruption>& pending = state.disruption.pending) {
    b.setPendingMethod(Name(pending->method));
    PutTexts(b.initPendingNodeClaims(pending->nodeclaims.size()), pending->nodeclaims);
  }
  b.setPendingSinceNs(state.disruption.latest_proposal.at.value);
  b.setLastDisruptionDigest(state.disruption.last_digest);
  b.setClusterGeneration(state.cluster_generation);
  b.setConsolidatedGeneration(state.disruption.consolidated_generation);
  b.setConsolidatedAtNs(Ns(state.disruption.consolidated_at));
  b.setConsolidationRecheckAtNs(Ns(state.disruption.recheck_at));
  b.setDeletionCostRankedAtNs(Ns(state.disruption.deletion_cost_ranked_at));
  b.setDeletionCostGeneration(state.disruption.deletion_cost_generation);
  PutValues(b.initPodDisruptionBudgets(state.cluster.pdbs.size()), state.cluster.pdbs);
  b.setPendingReplacements(state.disruption.latest_proposal.replacements);
  PutList(b.initReplacing(state.disruption.replacing.size()), state.disruption.replacing);
  std::map<std::string, std::int64_t> handled;
  for (const auto& [id, at] : state.disruption.handled_messages) handled[id] = at.value;
  Put(b.initHandledMessages(handled.size()), handled);
  std::map<std::string, std::int64_t> finished;
  for (const auto& [name, at] : state.lifecycle.finished_nodeclaims) finished[name] = at.value;
  Put(b.initFinishedNodeClaims(finished.size()), finished);
  std::map<std::string, std::int64_t> recorded;
  for (const auto& [key, until] : state.event_limits.recorded) recorded[key] = until.value;
  Put(b.initEventsRecorded(recorded.size()), recorded);
  b.setNominatedMilliTokens(state.event_limits.nominated_milli_tokens);
  b.setNominatedAtNs(state.event_limits.nominated_at.value);
  b.setEventsPrunedAtNs(state.event_limits.pruned_at.value);
}

}  // namespace

void EncodeSnapshot(const State& state, const std::function<void(std::string_view)>& sink) {
  capnp::MallocMessageBuilder message;
  auto b = message.initRoot<s::Snapshot>();
  PutHeadConfiguration(b, state);
  PutHeadBookkeeping(b, state);
  sink(ToBytes(message));
  PutSlices(
      *state.cluster.catalog, [](s::Snapshot::Builder p, unsigned n) { return p.initCatalog(n); },
      sink);
  PutSlices(
      state.cluster.pods, [](s::Snapshot::Builder p, unsigned n) { return p.initPods(n); }, sink);
  PutSlices(
      state.cluster.nodes, [](s::Snapshot::Builder p, unsigned n) { return p.initNodes(n); }, sink);
  PutSlices(
      state.lifecycle.nodeclaims,
      [](s::Snapshot::Builder p, unsigned n) { return p.initNodeClaims(n); }, sink);
}

namespace {

// The head's scalars, read from the first part only.
void GetHead(s::Snapshot::Reader r, State& state, std::uint64_t* stored_hash) {
  if (stored_hash != nullptr) *stored_hash = r.getStateHash();
  state.last_seq = tenon::Seq{r.getLastSeq()};
  state.now = Instant{r.getNowNs()};
  state.started = r.getStarted();
  state.seed = r.getSeed();
  state.version = S(r.getVersion());
  state.settings = Get(r.getSettings());
  state.next_command = CommandId{r.getNextCommand()};
  state.next_decision = DecisionId{r.getNextDecision()};
  state.lifecycle.next_nodeclaim = r.getNextNodeClaim();
  state.rejected_inputs = r.getRejectedInputs();
  state.cluster.watches_synced = !r.getWatchesUnsynced();
  state.batch = {r.getBatchOpen(), Instant{r.getBatchOpenedNs()}, Instant{r.getBatchLastPodNs()}};
  state.lifecycle.last_instance_listing = Instant{r.getLastInstanceListingNs()};
  state.disruption.last_pass = InstantOrNone(r.getLastDisruptionPassNs());
  if (r.getPendingMethod().size() > 0) {
    state.disruption.pending =
        PendingDisruption{Named(ParseDisruptionMethod, r.getPendingMethod(), "disruption method"),
                          GetTexts(r.getPendingNodeClaims())};
  } else if (r.getPendingNodeClaims().size() > 0) {
    throw CodecError("pendingNodeClaims: NodeClaims pending disruption with no pendingMethod");
  }
  state.disruption.latest_proposal.at = Instant{r.getPendingSinceNs()};
  state.disruption.last_digest = r.getLastDisruptionDigest();
  state.cluster_generation = r.getClusterGeneration();
  state.disruption.consolidated_generation = r.getConsolidatedGeneration();
  state.disruption.consolidated_at = InstantOrNone(r.getConsolidatedAtNs());
  state.disruption.recheck_at = InstantOrNone(r.getConsolidationRecheckAtNs());
  state.disruption.deletion_cost_ranked_at = InstantOrNone(r.getDeletionCostRankedAtNs());
  state.disruption.deletion_cost_generation = r.getDeletionCostGeneration();
  state.disruption.latest_proposal.replacements = r.getPendingReplacements();
  state.disruption.replacing = GetList<ReplacementWait>(r.getReplacing());
  state.event_limits.nominated_milli_tokens = r.getNominatedMilliTokens();
  state.event_limits.nominated_at = Instant{r.getNominatedAtNs()};
  state.event_limits.pruned_at = Instant{r.getEventsPrunedAtNs()};
}

// The collections, which any part may hold.
void GetCollections(s::Snapshot::Reader r, State& state) {
  for (auto p : r.getNodePools()) state.cluster.nodepools[S(p.getName())] = Get(p);
  for (auto c : r.getNodeClasses()) state.cluster.nodeclasses[S(c.getName())] = Get(c);
  if (r.getCatalog().size() > 0) {
    Catalog& catalog = state.cluster.catalog.Mutable();
    for (auto e : r.getCatalog()) catalog[S(e.getType().getName())] = Get(e);
  }
  for (auto p : r.getPods()) {
    Pod pod = Get(p);
    state.cluster.pod_parts.Share(pod);
    const std::string key = PodKey(pod.ns, pod.name);
    state.cluster.pods.Upsert(key, std::move(pod));
  }
  for (auto n : r.getNodes()) {
    Node& node = state.cluster.nodes[S(n.getName())] = Get(n);
    state.cluster.node_parts.Share(node, state.cluster.pod_parts.node_names);
  }
  for (auto c : r.getNodeClaims()) {
    NodeClaim& claim = state.lifecycle.nodeclaims[S(c.getName())] = Get(c);
    state.lifecycle.claim_parts.Share(claim);
    state.lifecycle.claims_by_node.Add(claim.node_name, claim.name);
  }
  for (auto u : r.getUnavailableOfferings()) {
    state.lifecycle.unavailable_offerings[S(u.getKey())] = Instant{u.getUntilNs()};
  }
  for (auto c : r.getInflight()) state.inflight[CommandId{c.getId()}] = Get(c);
  for (auto c : r.getRelaunches()) {
    Command command = Get(c);
    const auto* launch = std::get_if<LaunchInstance>(&command.body);
    if (launch == nullptr) throw CodecError("snapshot: a relaunch that is not a launch");
    state.lifecycle.relaunches[launch->nodeclaim] = std::move(command);
  }
  for (auto d : r.getDaemonSets()) {
    state.cluster.daemonsets[PodKey(S(d.getNamespace()), S(d.getName()))] = Get(d);
  }
  for (auto c : r.getPersistentVolumeClaims()) {
    state.cluster.pvcs[PodKey(S(c.getNamespace()), S(c.getName()))] = Get(c);
  }
  for (auto v : r.getPersistentVolumes()) state.cluster.pvs[S(v.getName())] = Get(v);
  for (auto c : r.getStorageClasses()) state.cluster.storage_classes[S(c.getName())] = Get(c);
  for (auto c : r.getCsiNodes()) state.cluster.csi_nodes[S(c.getName())] = Get(c);
  for (auto p : r.getNodePoolStatus())
    state.lifecycle.nodepool_status[S(p.getName())] = Get(p.getStatus());
  for (auto o : r.getNodeOverlays()) state.cluster.nodeoverlays[S(o.getName())] = Get(o);
  for (auto o : r.getNodeOverlayStatus()) {
    state.cluster.nodeoverlay_status[S(o.getName())] = Get(o.getStatus());
  }
  for (auto p : r.getNodeClassResolutions()) {
    state.nodeclass.resolutions[S(p.getName())] = Get(p.getResolution());
  }
  for (auto t : r.getNodeClassTerminations()) {
    state.nodeclass.terminations[S(t.getName())] = {
        S(t.getWaitingMessage()), Instant{t.getWaitingAtNs()}, Instant{t.getRetryAtNs()}};
  }
  for (const auto& [pool, healthy] : GetInts(r.getRegistrationHealthy())) {
    state.lifecycle.registration_healthy[pool] = healthy != 0;
  }
  for (auto p : r.getPodDisruptionBudgets()) {
    state.cluster.pdbs[PodKey(S(p.getNamespace()), S(p.getName()))] = Get(p);
  }
  for (const auto& [id, at] : GetInts(r.getHandledMessages())) {
    state.disruption.handled_messages[id] = Instant{at};
  }
  for (const auto& [name, at] : GetInts(r.getFinishedNodeClaims())) {
    state.lifecycle.finished_nodeclaims[name] = Instant{at};
  }
  for (const auto& [key, until] : GetInts(r.getEventsRecorded())) {
    state.event_limits.recorded[key] = Instant{until};
  }
}

// Reads one snapshot part into `state`: the head's scalars only from the first part, the
// collections from every part (a snapshot of one part, as older logs have, holds them all).
void GetSnapshotPart(s::Snapshot::Reader r, bool head, State& state, std::uint64_t* stored_hash) {
  if (head) GetHead(r, state, stored_hash);
  GetCollections(r, state);
}

}  // namespace

State DecodeSnapshot(const std::vector<std::string>& parts, std::uint64_t* stored_hash) {
  if (parts.empty()) throw CodecError("a snapshot without parts");
  State state;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    WithReader<s::Snapshot>(parts[i], [&](s::Snapshot::Reader r) {
      GetSnapshotPart(r, i == 0, state, stored_hash);
      return 0;
    });
  }
  return state;
}

std::uint64_t SnapshotStoredHash(std::string_view head) {
  return WithReader<s::Snapshot>(head, [](s::Snapshot::Reader r) { return r.getStateHash(); });
}

}  // namespace tenon::log
