// Provisioning: the batch window, and turning one scheduling pass into commands.
//
// The window opens on the first provisionable pod and closes after BATCH_IDLE_DURATION
// without a new one or BATCH_MAX_DURATION in all, measured on ticks. The pass itself is
// Schedule (scheduler.cc); here its planned claims get their names and become
// CreateNodeClaim + LaunchInstance commands, and the whole pass becomes one decision record.
#include <algorithm>
#include <cassert>
#include <map>
#include <set>
#include <string_view>

#include "reducers/internal.h"

namespace tenon::core {
namespace {

// The tags of a launch, as Karpenter's getTags: the NodePool, the NodeClaim, the EC2NodeClass,
// and the cluster (kubernetes.io/cluster/NAME and eks:eks-cluster-name).
Labels LaunchTags(const State& state, const NodeClaim& claim) {
  return {{label::kNodePool, claim.nodepool},
          {label::kNodeClaim, claim.name},
          {"karpenter.k8s.aws/ec2nodeclass", claim.nodeclass},
          {"kubernetes.io/cluster/" + state.settings.cluster_name, "owned"},
          {label::kEksClusterName, state.settings.cluster_name}};
}

}  // namespace

void FillLaunch(const State& state, LaunchInstance& launch) {
  LaunchNode& node = launch.node;
  node = LaunchNode{};
  node.cluster_name = state.settings.cluster_name;
  node.cluster_endpoint = state.settings.cluster_endpoint;
  node.cluster_ca_bundle = state.settings.cluster_ca_bundle;
  if (const auto pool = state.cluster.nodepools.find(launch.nodepool);
      pool != state.cluster.nodepools.end()) {
    node.labels = pool->second.labels;
    node.taints = pool->second.taints;
    node.taints.insert(node.taints.end(), pool->second.startup_taints.begin(),
                       pool->second.startup_taints.end());
  }
  node.labels[label::kNodePool] = launch.nodepool;
  if (const auto nc = state.cluster.nodeclasses.find(launch.nodeclass);
      nc != state.cluster.nodeclasses.end()) {
    node.ami_family = nc->second.ami_family;
    node.user_data = nc->second.user_data;
    node.max_pods = nc->second.max_pods;
    node.tags = nc->second.tags;
  }
  node.tags["karpenter.k8s.aws/ec2nodeclass"] = launch.nodeclass;
  node.tags["kubernetes.io/cluster/" + state.settings.cluster_name] = "owned";
  const auto resolved = state.nodeclass.resolutions.find(launch.nodeclass);
  if (resolved == state.nodeclass.resolutions.end()) {
    for (LaunchOverride& o : launch.overrides) o.subnet = o.image = "";
    return;
  }
  const NodeClassResolution& r = resolved->second;
  node.instance_profile = r.instance_profile;
  for (const ResolvedSecurityGroup& g : r.security_groups) node.security_groups.push_back(g.id);
  // Per zone the subnet with the most free addresses (the first of them on a tie), as
  // Karpenter's ZonalSubnetsForLaunch.
  std::map<std::string, const ResolvedSubnet*> subnets;
  for (const ResolvedSubnet& s : r.subnets) {
    auto [it, added] = subnets.emplace(s.zone, &s);
    if (!added && s.free_ips > it->second->free_ips) it->second = &s;
  }
  // Per architecture the newest AMI, the lower id on a tie, as Karpenter sorts them (creation
  // dates are ISO 8601 in one format, so they compare as text; none is the oldest).
  std::map<std::string, const ResolvedAmi*> images;
  for (const ResolvedAmi& a : r.amis) {
    auto [it, added] = images.emplace(a.arch, &a);
    const ResolvedAmi& best = *it->second;
    if (!added && (a.created > best.created || (a.created == best.created && a.id < best.id))) {
      it->second = &a;
    }
  }
  for (LaunchOverride& o : launch.overrides) {
    const auto type = state.cluster.catalog->find(o.instance_type);
    const auto subnet = subnets.find(o.zone);
    const auto image =
        type == state.cluster.catalog->end() ? images.end() : images.find(type->second.type.arch);
    o.subnet = subnet == subnets.end() ? "" : subnet->second->id;
    o.image = image == images.end() ? "" : image->second->id;
  }
  // An offering the NodeClass cannot launch into any more is not asked for.
  std::erase_if(launch.overrides,
                [](const LaunchOverride& o) { return o.subnet.empty() || o.image.empty(); });
}

namespace {

// As Karpenter resolves a NodeClaim's custom labels: a requirement on a label of the user's
// own (not well known, not restricted) that still allows several values once the pods have
// narrowed it is settled on one (the first), so the claim and its Node carry `key=value` and
// pods that need another value go elsewhere. Every single-valued requirement is a label of the
// claim (NodeClaimObject, ClaimLabels, SyncPatch). A custom Exists that no pod narrowed gets no
// label (Karpenter invents a random number for it).
std::vector<Requirement> ResolveCustomLabels(std::vector<Requirement> requirements) {
  for (Requirement& r : requirements) {
    if (r.op != RequirementOp::kIn || r.values.size() <= 1) continue;
    if (IsWellKnownLabel(r.key) || !RestrictedLabel(r.key).empty()) continue;
    r.values.resize(1);
  }
  return requirements;
}

}  // namespace

ClaimPlan LaunchClaim(State& state, Seq seq, const PlannedClaim& plan, Output& out) {
  assert(!plan.offerings.empty());
  NodeClaim claim;
  claim.name = NewClaimName(state, plan.nodepool);
  claim.nodepool = plan.nodepool;
  claim.nodeclass = plan.nodeclass;
  claim.requirements = ResolveCustomLabels(plan.requirements);
  claim.requests = plan.requests;
  std::vector<std::string>& types = claim.instance_types.Mutable();
  for (const auto& o : plan.offerings) {
    if (std::find(types.begin(), types.end(), o.instance_type) == types.end()) {
      types.push_back(o.instance_type);
    }
  }
  claim.allocatable = plan.allocatable;
  claim.created = state.now;
  if (auto pool = state.cluster.nodepools.find(plan.nodepool);
      pool != state.cluster.nodepools.end()) {
    claim.nodepool_hash = TemplateHash(pool->second);
  }
  if (auto nc = state.cluster.nodeclasses.find(plan.nodeclass);
      nc != state.cluster.nodeclasses.end()) {
    claim.nodeclass_hash = NodeClassHash(nc->second);
  }
  LaunchInstance launch{claim.name,
                        claim.nodepool,
                        claim.nodeclass,
                        claim.name,
                        plan.capacity_type,
                        {},
                        LaunchTags(state, claim),
                        plan.allocation_strategy,
                        {}};
  for (const auto& o : plan.offerings) {
    launch.overrides.push_back({o.instance_type, o.zone, o.capacity_type, o.price, "", ""});
  }
  FillLaunch(state, launch);
  AddClaim(state, claim);
  Issue(state, seq, CreateNodeClaim{state.lifecycle.nodeclaims.at(claim.name)}, out);
  Issue(state, seq, std::move(launch), out);
  return ClaimPlan{claim.name, claim.nodepool, plan.pods, plan.requests, plan.offerings};
}

namespace {

void Provision(State& state, Seq seq, Instant opened, Output& out) {
  ScheduleResult result = Schedule(state);
  ProvisioningDecision decision{opened, {}, std::move(result.pods)};
  std::vector<std::string> names;
  for (const PlannedClaim& plan : result.claims) {
    decision.new_claims.push_back(LaunchClaim(state, seq, plan, out));
    names.push_back(decision.new_claims.back().nodeclaim);
  }
  // Karpenter's nomination: capacity chosen for pending pods is not disrupted while they are
  // on their way to it: twice the longest batch, and at least 10 seconds (kube-scheduler's
  // retry of an unschedulable pod can take that long).
  constexpr Duration kNominationMin{10 * kSecond.value};
  const Duration nomination =
      std::max(state.settings.batch_max + state.settings.batch_max, kNominationMin);
  std::set<std::string_view> targets;
  for (const PodOutcome& outcome : decision.pods) {
    if (!outcome.target.empty() && outcome.target[0] != '#') targets.insert(outcome.target);
  }
  if (!targets.empty()) Nominate(state, targets, state.now + nomination);
  std::vector<std::string> overlay_notes;
  for (const ClaimPlan& plan : decision.new_claims) {
    overlay_notes.push_back(OverlayNote(state, plan.nodepool, plan.offerings));
  }
  for (PodOutcome& outcome : decision.pods) {
    if (outcome.target.empty() || outcome.target[0] != '#') continue;
    std::size_t index = std::stoul(outcome.target.substr(1));
    assert(index < names.size());
    outcome.target = names[index];
    outcome.reason = "new nodeclaim from nodepool " + result.claims[index].nodepool;
    if (!overlay_notes[index].empty()) outcome.reason += " (" + overlay_notes[index] + ")";
  }
  if (!decision.pods.empty()) Decide(state, seq, std::move(decision), out);
}

}  // namespace

void NotePodForBatch(State& state, const Pod&) {
  if (!state.batch.open) {
    state.batch.open = true;
    state.batch.opened = state.now;
  }
  state.batch.last_pod = state.now;
}

void ReconsiderPendingPods(State& state) {
  const PodTable::View& pending = state.cluster.pods.Provisionable();
  if (!pending.empty()) NotePodForBatch(state, *pending.begin()->second);
}

void MaybeProvision(State& state, Seq seq, Output& out) {
  if (!state.batch.open) return;
  bool idle = state.now - state.batch.last_pod >= state.settings.batch_idle;
  bool full = state.now - state.batch.opened >= state.settings.batch_max;
  if (!idle && !full) return;
  const Instant opened = state.batch.opened;
  state.batch = BatchWindow{};
  Provision(state, seq, opened, out);
}

}  // namespace tenon::core
