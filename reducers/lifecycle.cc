// NodeClaim lifecycle: Pending -> Launched (FleetLaunched) -> Registered (a Node with the
// claim's providerID appears; labels synced, the unregistered taint removed) -> Initialized
// (the Node is Ready and no startup taint is left). Launch failures mark the failed offerings
// unavailable and hand the pods back to the next batch.
#include <algorithm>
#include <cassert>
#include <set>
#include <string_view>

#include "reducers/internal.h"

namespace tenon::core {
namespace {

NodeClaim* ClaimByName(State& state, const std::string& name) {
  auto it = state.lifecycle.nodeclaims.find(name);
  return it == state.lifecycle.nodeclaims.end() ? nullptr : &it->second;
}

NodeClaim* ClaimByProviderId(State& state, const std::string& provider_id,
                             const std::string& node) {
  if (provider_id.empty()) return nullptr;
  // A registered node's claim is indexed by the node's name: found without walking every
  // claim (a node is reported again at every status change, thousands of times an hour).
  NodeClaim* on_node = nullptr;
  state.lifecycle.claims_by_node.ForEach(node, [&](const std::string& name) {
    NodeClaim& claim = state.lifecycle.nodeclaims.at(name);
    if (on_node == nullptr && claim.provider_id == provider_id) on_node = &claim;
  });
  if (on_node != nullptr) return on_node;
  for (auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (claim.provider_id == provider_id) return &claim;
  }
  return nullptr;
}

bool HasTaint(const Node& node, const std::string& key) {
  return std::any_of(node.taints.begin(), node.taints.end(),
                     [&](const Taint& t) { return t.key == key; });
}

bool StartupTaintsGone(const State& state, const NodeClaim& claim, const Node& node) {
  auto pool = state.cluster.nodepools.find(claim.nodepool);
  if (pool == state.cluster.nodepools.end()) return true;
  return std::none_of(pool->second.startup_taints.begin(), pool->second.startup_taints.end(),
                      [&](const Taint& t) { return HasTaint(node, t.key); });
}

// The extended resources the instance type brings (GPUs, Neuron cores) are advertised by the
// node: their device plugins are up.
bool ExtendedResourcesPresent(const NodeClaim& claim, const Node& node) {
  for (const auto& [name, count] : claim.allocatable.extended) {
    auto it = node.allocatable.extended.find(name);
    if (count > 0 && (it == node.allocatable.extended.end() || it->second <= 0)) return false;
  }
  return true;
}

// A claim whose launch failed will never become a node: it is deleted (no instance to
// terminate, so termination goes straight to the finalizer) and its pods re-planned.
void FailClaim(State& state, Seq seq, NodeClaim& claim, const std::string& reason, Cause cause,
               Output& out) {
  RecordTransition(state, seq, claim, Transition::kLaunchFailed, reason, out, cause);
  BeginDeletion(state, seq, claim.name, "launch failed: " + reason, cause, true, out);
}

// A launch that failed for a reason other than capacity (the EC2NodeClass not resolved, a
// throttled or failed call): the claim stays, Launched=False, and the same launch is sent
// again after 1 s, doubling to 1 min, as Karpenter's lifecycle controller requeues it. The
// launch timeout still deletes a claim that never launches.
void RetryLaunch(State& state, Seq seq, NodeClaim& claim, const LaunchInstance& launch,
                 const std::string& reason, Output& out) {
  ++claim.launch_failures;
  Duration delay = kRelaunchBackoffBase;
  for (std::int32_t i = 1; i < claim.launch_failures && delay < kRelaunchBackoffMax; ++i) {
    delay = Duration{delay.value * 2};
  }
  delay = std::min(delay, kRelaunchBackoffMax);
  claim.relaunch_at = state.now + delay;
  state.lifecycle.relaunches[claim.name] = Command{CommandId{0}, seq, launch};
  RecordTransition(state, seq, claim, Transition::kLaunchFailed,
                   (reason.empty() ? std::string("launch failed") : reason) +
                       "; launching again in " + DurationText(delay),
                   out, Cause::kLaunchError);
}

std::string ErrorsText(const std::vector<FleetError>& errors) {
  std::string out;
  for (const auto& e : errors) {
    out += (out.empty() ? "" : "; ") + e.instance_type + "/" + e.zone + "/" + e.capacity_type +
           ": " + e.message;
  }
  return out;
}

void MarkUnavailable(State& state, const std::vector<FleetError>& errors) {
  for (const auto& error : errors) {
    switch (error.code) {
      case ErrorCode::kInsufficientCapacity:
        NoteOfferingUnavailable(state,
                                OfferingKey(error.instance_type, error.zone, error.capacity_type));
        break;
      case ErrorCode::kThrottled:
      case ErrorCode::kNotFound:
      case ErrorCode::kUnauthorized:
      case ErrorCode::kInvalid:
      case ErrorCode::kTransient:
      case ErrorCode::kDisruptionBudget:
        break;
    }
  }
}

bool PatchInflight(const State& state, const std::string& node_name) {
  for (const auto& [id, command] : state.inflight) {
    const auto* patch = std::get_if<PatchNode>(&command.body);
    if (patch != nullptr && patch->node_name == node_name) return true;
  }
  return false;
}

bool HasLabel(const Node& node, const std::string& key, const std::string& value) {
  auto it = node.labels.find(key);
  return it != node.labels.end() && it->second == value;
}

// The patch that brings a registered node in line with its claim: Karpenter's labels and no
// unregistered taint. Empty when the node is already in sync. Level-triggered, like
// Karpenter's reconcilers: a node that drifts back out of sync (a kubelet re-registering after
// a restart, a lost patch) is patched again.
// At registration the NodePool's taints are added too, if the kubelet did not bring them
// (Karpenter syncs them once, so an operator may remove one later). Every patch also makes sure
// the Node is owned by its NodeClaim and holds the termination finalizer.
PatchNode SyncPatch(const State& state, const NodeClaim& claim, const Node& node,
                    bool registering) {
  PatchNode patch{node.name, {}, {}, {}, claim.name};
  if (auto pool = state.cluster.nodepools.find(claim.nodepool);
      registering && pool != state.cluster.nodepools.end()) {
    for (const Taint& t : pool->second.taints) {
      if (std::find(node.taints.begin(), node.taints.end(), t) == node.taints.end()) {
        patch.add_taints.push_back(t);
      }
    }
  }
  // At registration the Node gets the NodeClaim's labels of the user's own (OwnRequirementLabels:
  // the template's labels, the custom labels resolved at launch, a value for each NotIn, Exists,
  // Gt and Lt requirement), as Karpenter's registration copies the NodeClaim's labels.
  if (registering) {
    auto pool = state.cluster.nodepools.find(claim.nodepool);
    const NodePool* own = pool == state.cluster.nodepools.end() ? nullptr : &pool->second;
    for (const auto& [key, value] : OwnRequirementLabels(*claim.requirements, own)) {
      if (!HasLabel(node, key, value)) patch.add_labels[key] = value;
    }
    // The launched type's own labels (karpenter.k8s.aws/instance-*, and those the catalog gives
    // it), which the NodeClaim carries after launch and no kubelet sets: pods select on them.
    if (auto type = state.cluster.catalog->find(claim.instance_type);
        type != state.cluster.catalog->end()) {
      for (const auto& [key, value] : type->second.labels) {
        const bool own =
            key.starts_with("karpenter.k8s.aws/") || type->second.type.labels.contains(key);
        if (own && !HasLabel(node, key, value)) {
          patch.add_labels[key] = value;
        }
      }
    }
  }
  if (!HasLabel(node, label::kRegistered, "true")) patch.add_labels[label::kRegistered] = "true";
  if (!HasLabel(node, label::kNodePool, claim.nodepool)) {
    patch.add_labels[label::kNodePool] = claim.nodepool;
  }
  if (claim.phase == ClaimPhase::kInitialized && !HasLabel(node, label::kInitialized, "true")) {
    patch.add_labels[label::kInitialized] = "true";
  }
  if (HasTaint(node, label::kUnregisteredTaint)) {
    patch.remove_taints.push_back(label::kUnregisteredTaint);
  }
  return patch;
}

void SyncNode(State& state, Seq seq, const NodeClaim& claim, const Node& node, bool registering,
              Output& out) {
  PatchNode patch = SyncPatch(state, claim, node, registering);
  const bool in_sync =
      patch.add_labels.empty() && patch.remove_taints.empty() && patch.add_taints.empty();
  if (in_sync && !registering) return;
  if (PatchInflight(state, node.name)) return;
  Issue(state, seq, std::move(patch), out);
}

// Once a claim registers, its instance is tagged as Karpenter's tagging controller tags it:
// Name (the Node's name), the claim and the cluster's name. Not for a claim being deleted.
void TagRegistered(State& state, Seq seq, const NodeClaim& claim, const Node& node, Output& out) {
  if (claim.instance_id.empty() || claim.deleting) return;
  Labels tags{{label::kNameTag, node.name}, {label::kNodeClaim, claim.name}};
  if (!state.settings.cluster_name.empty()) {
    tags[label::kEksClusterName] = state.settings.cluster_name;
  }
  Issue(state, seq, TagInstance{claim.instance_id, claim.name, std::move(tags)}, out);
}

// Defined below, with the Node's handler.
void ReconcileNode(State& state, Seq seq, NodeClaim& claim, const Node& node, Output& out);

}  // namespace

void OnFleetLaunched(State& state, Seq seq, const FleetLaunched& event, Output& out) {
  MarkUnavailable(state, event.errors);
  NodeClaim* claim = ClaimByName(state, event.nodeclaim);
  if (claim == nullptr || claim->phase != ClaimPhase::kPending) return;  // Duplicate result.
  claim->phase = ClaimPhase::kLaunched;
  claim->instance_id = event.instance_id;
  claim->provider_id = event.provider_id;
  claim->instance_type = event.instance_type;
  claim->zone = event.zone;
  claim->capacity_type = event.capacity_type;
  claim->price = event.price;
  claim->image_id = event.image_id;
  claim->subnet_id = event.subnet_id;
  claim->security_groups = event.security_groups;
  claim->launched = state.now;
  // The up-to-60 candidate types only mattered until one was chosen; at 5,000 nodes they were
  // a tenth of the state. What is left stands for the instance in NodePool limits.
  claim->instance_types = std::vector<std::string>{event.instance_type};
  state.lifecycle.claim_parts.instance_types.Intern(claim->instance_types);
  const Catalog& catalog = CatalogFor(state, claim->nodepool);
  auto entry = catalog.find(event.instance_type);
  if (entry != catalog.end()) claim->allocatable = entry->second.allocatable;
  std::string reason = event.instance_type + " in " + event.zone + " (" + event.capacity_type +
                       ", " + std::to_string(event.price.value) + " micro-USD/h)";
  if (const OverlaidCatalog* overlaid = OverlaidFor(state, claim->nodepool)) {
    const auto by =
        overlaid->priced_by.find(OfferingKey(event.instance_type, event.zone, event.capacity_type));
    if (by != overlaid->priced_by.end()) reason += ", priced by NodeOverlay " + by->second;
  }
  if (!event.errors.empty()) reason += " after " + ErrorsText(event.errors);
  // A launch that lands after the claim was given up on still has its instance terminated:
  // the claim is deleting, and termination now has an instance id to act on.
  RecordTransition(state, seq, *claim, Transition::kLaunched, reason, out);
  // Its Node may have registered before the launch's answer was folded (the answer comes back
  // from the AWS adapter's worker, the Node from the informer): as Karpenter, which finds a
  // claim's Node by providerID whenever it reconciles the claim.
  for (const auto& [name, node] : state.cluster.nodes) {
    if (!node.provider_id.empty() && node.provider_id == claim->provider_id) {
      ReconcileNode(state, seq, *claim, node, out);
      break;
    }
  }
}

void OnFleetFailed(State& state, Seq seq, const FleetFailed& event,
                   const std::optional<LaunchInstance>& launch, Output& out) {
  MarkUnavailable(state, event.errors);
  NodeClaim* claim = ClaimByName(state, event.nodeclaim);
  if (claim == nullptr || claim->phase != ClaimPhase::kPending || claim->deleting) return;
  // Karpenter's AWS provider: a launch whose every error is unfulfillable capacity (none at
  // all counts so too) is out of capacity, and the claim is deleted so that its pods are
  // planned anew without those offerings. Any other failure is retried.
  const bool out_of_capacity =
      std::all_of(event.errors.begin(), event.errors.end(),
                  [](const FleetError& e) { return e.code == ErrorCode::kInsufficientCapacity; });
  std::string text = ErrorsText(event.errors);
  if (out_of_capacity || !launch) {
    FailClaim(state, seq, *claim, text.empty() ? "CreateFleet launched nothing" : text,
              out_of_capacity ? Cause::kInsufficientCapacity : Cause::kLaunchError, out);
    return;
  }
  RetryLaunch(state, seq, *claim, *launch, text, out);
}

void OnCommandFailed(State& state, Seq seq, const CommandFailed& event, Output& out) {
  auto it = state.inflight.find(event.command);
  if (it == state.inflight.end()) return;
  const auto* launch = std::get_if<LaunchInstance>(&it->second.body);
  if (launch == nullptr) return;
  NodeClaim* claim = ClaimByName(state, launch->nodeclaim);
  if (claim != nullptr && claim->phase == ClaimPhase::kPending && !claim->deleting) {
    RetryLaunch(state, seq, *claim, *launch, event.message, out);
  }
}

void Relaunch(State& state, Seq seq, NodeClaim& claim, Output& out) {
  claim.relaunch_at.reset();
  auto it = state.lifecycle.relaunches.find(claim.name);
  if (it == state.lifecycle.relaunches.end()) return;
  LaunchInstance launch = std::get<LaunchInstance>(std::move(it->second.body));
  state.lifecycle.relaunches.erase(it);
  // Offerings found out of capacity since are not asked for again.
  std::erase_if(launch.overrides, [&](const LaunchOverride& o) {
    auto dry = state.lifecycle.unavailable_offerings.find(
        OfferingKey(o.instance_type, o.zone, o.capacity_type));
    return dry != state.lifecycle.unavailable_offerings.end() && dry->second > state.now;
  });
  if (launch.overrides.empty()) {
    FailClaim(state, seq, claim, "every offering it could launch is out of capacity",
              Cause::kInsufficientCapacity, out);
    return;
  }
  // With the EC2NodeClass's subnets and AMIs as they resolve now.
  FillLaunch(state, launch);
  if (launch.overrides.empty()) {
    FailClaim(state, seq, claim,
              "EC2NodeClass " + claim.nodeclass +
                  " no longer resolves to a subnet and an AMI for any offering it could launch",
              Cause::kLaunchError, out);
    return;
  }
  Issue(state, seq, std::move(launch), out);
}

namespace {

// The claim's side of its Node: registration, initialization, the Node's sync, and the claim's
// deletion when the Node is deleted.
void ReconcileNode(State& state, Seq seq, NodeClaim& claim, const Node& node, Output& out) {
  bool registering = claim.phase == ClaimPhase::kLaunched;
  if (registering) {
    claim.phase = ClaimPhase::kRegistered;
    SetClaimNode(state, claim, node.name);
    claim.registered = state.now;
    state.lifecycle.registration_healthy[claim.nodepool] = true;
    RecordTransition(state, seq, claim, Transition::kRegistered,
                     "node " + node.name + " has its providerID", out);
    TagRegistered(state, seq, claim, node, out);
  } else if (claim.node_name != node.name && claim.phase != ClaimPhase::kPending) {
    // Its node came back (deleted and registered again by the kubelet, or listed again after
    // a relist missed it): as in Karpenter, which finds a claim's Node by providerID each time.
    SetClaimNode(state, claim, node.name);
  }
  // Ready, registered (no unregistered taint) and every startup taint gone.
  bool ready = node.ready && !HasTaint(node, label::kUnregisteredTaint) &&
               StartupTaintsGone(state, claim, node) && ExtendedResourcesPresent(claim, node);
  if (claim.phase == ClaimPhase::kRegistered && ready) {
    claim.phase = ClaimPhase::kInitialized;
    claim.initialized = state.now;
    RecordTransition(state, seq, claim, Transition::kInitialized, "node Ready, startup taints gone",
                     out);
  }
  bool synced = claim.phase == ClaimPhase::kRegistered || claim.phase == ClaimPhase::kInitialized;
  if (synced && !claim.deleting) SyncNode(state, seq, claim, node, registering, out);
  // Deleting a Node deletes its NodeClaim, as in Karpenter: the Node's finalizer holds it while
  // the claim's termination drains it and terminates the instance.
  if (node.deleting && !claim.deleting) {
    BeginDeletion(state, seq, claim.name, "its node was deleted", Cause::kNodeDeleted, true, out);
  }
}

}  // namespace

void OnNodeUpserted(State& state, Seq seq, const Node& node, Output& out) {
  NodeClaim* claim = ClaimByProviderId(state, node.provider_id, node.name);
  if (claim == nullptr) return;
  ReconcileNode(state, seq, *claim, node, out);
}

// What the catalog says the adopted claim's offering costs, and the type's allocatable.
void PriceFromCatalog(const State& state, NodeClaim& claim) {
  const Catalog& catalog = CatalogFor(state, claim.nodepool);
  auto entry = catalog.find(claim.instance_type);
  if (entry == catalog.end()) return;
  if (claim.allocatable == Resources{}) claim.allocatable = entry->second.allocatable;
  for (const auto& o : entry->second.type.offerings) {
    if (o.zone == claim.zone && o.capacity_type == claim.capacity_type) claim.price = o.price;
  }
}

void OnNodeClaimObserved(State& state, Seq seq, const NodeClaim& observed, Output& out) {
  if (state.lifecycle.nodeclaims.contains(observed.name)) return;  // Its own, or adopted before.
  // One the core finished itself: a watch event that was on its way when the claim went.
  if (state.lifecycle.finished_nodeclaims.contains(observed.name)) return;
  NodeClaim claim = observed;
  claim.deleting = false;
  claim.nominated_until = Instant{};
  claim.disruption_conditions.clear();
  claim.launched = claim.registered = claim.initialized = Instant{};
  if (claim.phase != ClaimPhase::kPending) claim.launched = claim.created;
  PriceFromCatalog(state, claim);
  state.lifecycle.claim_parts.Share(claim);
  auto [it, inserted] = state.lifecycle.nodeclaims.emplace(claim.name, std::move(claim));
  assert(inserted);
  NodeClaim& adopted = it->second;
  IndexClaim(state, adopted);
  // Its instance was launched by someone else; whether a Node registered is for the Nodes the
  // core knows to say, as for its own claims.
  const bool launched = adopted.phase != ClaimPhase::kPending;
  adopted.phase = launched ? ClaimPhase::kLaunched : ClaimPhase::kPending;
  RecordTransition(state, seq, adopted, Transition::kAdopted,
                   launched ? "made by another controller; instance " + adopted.instance_id + " (" +
                                  adopted.instance_type + " in " + adopted.zone + ", " +
                                  adopted.capacity_type + ")"
                            : "made by another controller, never launched",
                   out);
  if (!launched) {
    // Its launch was another controller's to make; the pods it was for go to the next batch.
    BeginDeletion(state, seq, adopted.name, "adopted without an instance",
                  Cause::kAdoptedWithoutInstance, true, out);
    return;
  }
  for (const auto& [name, node] : state.cluster.nodes) {
    if (node.provider_id == adopted.provider_id) {
      OnNodeUpserted(state, seq, node, out);
      break;
    }
  }
}

void ResyncNode(State& state, Seq seq, const PatchNode& landed, Output& out) {
  auto node = state.cluster.nodes.find(landed.node_name);
  if (node == state.cluster.nodes.end()) return;
  NodeClaim* claim = ClaimByProviderId(state, node->second.provider_id, landed.node_name);
  if (claim == nullptr || claim->deleting) return;
  // Initialization is what can happen while the registration patch is in flight; the rest of
  // the sync waits for the node's next change, as it is level-triggered.
  if (claim->phase != ClaimPhase::kInitialized) return;
  if (HasLabel(node->second, label::kInitialized, "true") ||
      landed.add_labels.contains(label::kInitialized)) {
    return;
  }
  if (PatchInflight(state, node->second.name)) return;
  Issue(state, seq,
        PatchNode{node->second.name, {{label::kInitialized, "true"}}, {}, {}, claim->name}, out);
}

void OnNodeDeleted(State& state, const std::string& name) {
  std::vector<NodeClaim*> on_node;
  state.lifecycle.claims_by_node.ForEach(name, [&](const std::string& claim) {
    on_node.push_back(&state.lifecycle.nodeclaims.at(claim));
  });
  for (NodeClaim* claim : on_node) SetClaimNode(state, *claim, "");
}

void IndexClaim(State& state, const NodeClaim& claim) {
  state.lifecycle.claims_by_node.Add(claim.node_name, claim.name);
}

void ForgetClaim(State& state, const NodeClaim& claim) {
  state.lifecycle.claims_by_node.Remove(claim.node_name, claim.name);
}

void SetClaimNode(State& state, NodeClaim& claim, const std::string& node) {
  state.lifecycle.claims_by_node.Remove(claim.node_name, claim.name);
  claim.node_name = node;
  state.lifecycle.claims_by_node.Add(claim.node_name, claim.name);
}

void NoteOfferingUnavailable(State& state, const std::string& offering) {
  state.lifecycle.unavailable_offerings[offering] = state.now + kUnavailableOfferingTtl;
}

// Karpenter names NodeClaims "<nodepool>-<5 random characters>"; ours come from the logged seed.
std::string NewClaimName(State& state, const std::string& pool) {
  constexpr std::size_t kNameAttemptsMax = 16;
  constexpr const char* kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  const auto split_mix64 = [](std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  for (std::size_t attempt = 0; attempt < kNameAttemptsMax; ++attempt) {
    std::uint64_t bits = split_mix64(state.seed ^ split_mix64(state.lifecycle.next_nodeclaim++));
    std::string name = pool + "-";
    for (int i = 0; i < 5; ++i, bits /= 27) name += kAlphabet[bits % 27];
    if (!state.lifecycle.nodeclaims.contains(name)) return name;
  }
  assert(false && "nodeclaim name space exhausted");
  return pool + "-" + std::to_string(state.lifecycle.next_nodeclaim);
}

void AddClaim(State& state, NodeClaim claim) {
  state.lifecycle.claim_parts.Share(claim);
  const std::string name = claim.name;
  const NodeClaim& added = state.lifecycle.nodeclaims[name] = std::move(claim);
  IndexClaim(state, added);
}

void Nominate(State& state, const std::set<std::string_view>& targets, Instant until) {
  for (auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (targets.contains(name) || targets.contains(claim.node_name)) claim.nominated_until = until;
  }
}

void NotePodMoved(State& state, const std::string& node_name) {
  if (node_name.empty()) return;
  state.lifecycle.claims_by_node.ForEach(node_name, [&](const std::string& claim) {
    state.lifecycle.nodeclaims.at(claim).last_pod_change = state.now;
  });
}

// A claim's price is its offering's as its NodePool sees it.
void RepriceClaims(State& state, const std::set<std::string>& pools) {
  for (auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (claim.instance_type.empty() || !pools.contains(claim.nodepool)) continue;
    const Catalog& catalog = CatalogFor(state, claim.nodepool);
    auto entry = catalog.find(claim.instance_type);
    if (entry == catalog.end()) continue;
    for (const Offering& o : entry->second.type.offerings) {
      if (o.zone == claim.zone && o.capacity_type == claim.capacity_type) claim.price = o.price;
    }
  }
}

void SetDisruptionCondition(State& state, const std::string& name, const std::string& type,
                            std::int64_t since) {
  state.lifecycle.nodeclaims.at(name).disruption_conditions[type] = since;
}

void SetTerminationDeadline(State& state, const std::string& name, Instant deadline) {
  auto it = state.lifecycle.nodeclaims.find(name);
  if (it != state.lifecycle.nodeclaims.end()) it->second.termination_deadline = deadline;
}

void ExpireUnavailableOfferings(State& state) {
  const std::size_t before = state.lifecycle.unavailable_offerings.size();
  std::erase_if(state.lifecycle.unavailable_offerings,
                [&](const auto& entry) { return entry.second <= state.now; });
  // An offering back on offer may serve the pods its absence kept pending: a batch for them.
  if (state.lifecycle.unavailable_offerings.size() != before) {
    ReconsiderPendingPods(state);
    ++state.idle.changes;
  }
}

}  // namespace tenon::core
