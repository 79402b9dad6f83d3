// The codec of the Command union: each alternative to its struct and back.
#include "log/codec_parts.h"

namespace tenon::log::parts {

namespace {

void PutAlt(s::Command::Builder b, const CreateNodeClaim& x) {
  Put(b.initCreateNodeClaim(), x.claim);
}
void PutAlt(s::Command::Builder b, const DeleteNodeClaim& x) {
  b.setDeleteNodeClaim(T(x.name));
}
void PutAlt(s::Command::Builder b, const LaunchInstance& x) {
  auto g = b.initLaunchInstance();
  g.setNodeClaim(T(x.nodeclaim));
  g.setNodePool(T(x.nodepool));
  g.setNodeClass(T(x.nodeclass));
  g.setClientToken(T(x.client_token));
  g.setCapacityType(T(x.capacity_type));
  PutList(g.initOverrides(x.overrides.size()), x.overrides);
  Put(g.initTags(x.tags.size()), x.tags);
  g.setAllocationStrategy(T(x.allocation_strategy));
  Put(g.initNode(), x.node);
}
void PutAlt(s::Command::Builder b, const PatchNode& x) {
  auto g = b.initPatchNode();
  g.setNodeName(T(x.node_name));
  Put(g.initAddLabels(x.add_labels.size()), x.add_labels);
  PutTexts(g.initRemoveTaints(x.remove_taints.size()), x.remove_taints);
  PutList(g.initAddTaints(x.add_taints.size()), x.add_taints);
  g.setOwnerNodeClaim(T(x.owner_nodeclaim));
}
void PutAlt(s::Command::Builder b, const EvictPod& x) {
  auto g = b.initEvictPod();
  g.setNamespace(T(x.ns));
  g.setName(T(x.name));
  g.setNodeClaim(T(x.nodeclaim));
}
void PutAlt(s::Command::Builder b, const DeletePod& x) {
  auto g = b.initDeletePod();
  g.setNamespace(T(x.ns));
  g.setName(T(x.name));
  g.setNodeClaim(T(x.nodeclaim));
}
void PutAlt(s::Command::Builder b, const TerminateInstance& x) {
  auto g = b.initTerminateInstance();
  g.setInstanceId(T(x.instance_id));
  g.setNodeClaim(T(x.nodeclaim));
}
void PutAlt(s::Command::Builder b, const RemoveFinalizer& x) {
  auto g = b.initRemoveFinalizer();
  g.setNodeClaim(T(x.nodeclaim));
  g.setNodeName(T(x.node_name));
}
void PutAlt(s::Command::Builder b, const PatchNodePoolStatus& x) {
  auto g = b.initPatchNodePoolStatus();
  g.setNodePool(T(x.nodepool));
  Put(g.initStatus(), x.status);
}
void PutAlt(s::Command::Builder b, const PatchNodeOverlayStatus& x) {
  auto g = b.initPatchNodeOverlayStatus();
  g.setNodeOverlay(T(x.overlay));
  Put(g.initStatus(), x.status);
}
void PutAlt(s::Command::Builder b, const PatchPodDeletionCost& x) {
  auto g = b.initPatchPodDeletionCost();
  g.setNamespace(T(x.ns));
  g.setName(T(x.name));
  g.setUid(T(x.uid));
  if (x.cost) PutOpt(g.initCost(), std::optional<std::int64_t>(*x.cost));
}
void PutAlt(s::Command::Builder b, const DeleteQueueMessage& x) {
  b.setDeleteQueueMessage(T(x.message_id));
}
void PutAlt(s::Command::Builder b, const TagInstance& x) {
  auto g = b.initTagInstance();
  g.setInstanceId(T(x.instance_id));
  g.setNodeClaim(T(x.nodeclaim));
  Put(g.initTags(x.tags.size()), x.tags);
}
void PutAlt(s::Command::Builder b, const PatchNodeClassStatus& x) {
  auto g = b.initPatchNodeClassStatus();
  g.setNodeClass(T(x.nodeclass));
  Put(g.initResolution(), x.resolution);
}
void PutAlt(s::Command::Builder b, const SetNodeClassFinalizer& x) {
  auto g = b.initSetNodeClassFinalizer();
  g.setNodeClass(T(x.nodeclass));
  g.setPresent(x.present);
}
void PutAlt(s::Command::Builder b, const EnsureInstanceProfile& x) {
  auto g = b.initEnsureInstanceProfile();
  g.setNodeClass(T(x.nodeclass));
  g.setRole(T(x.role));
  g.setClusterName(T(x.cluster_name));
}
void PutAlt(s::Command::Builder b, const DeleteNodeClassResources& x) {
  auto g = b.initDeleteNodeClassResources();
  g.setNodeClass(T(x.nodeclass));
  g.setClusterName(T(x.cluster_name));
  g.setInstanceProfile(x.instance_profile);
}
void PutAlt(s::Command::Builder b, const RecordKubeEvent& x) {
  auto g = b.initRecordKubeEvent();
  g.setApiVersion(T(x.object.api_version));
  g.setKind(T(x.object.kind));
  g.setNamespace(T(x.object.ns));
  g.setName(T(x.object.name));
  g.setType(T(x.type));
  g.setReason(T(x.reason));
  g.setMessage(T(x.message));
}
void PutAlt(s::Command::Builder b, const PatchNodeClaimStatus& x) {
  auto g = b.initPatchNodeClaimStatus();
  g.setNodeClaim(T(x.nodeclaim));
  g.setCondition(T(x.condition));
  g.setStatus(x.status);
  g.setReason(T(x.reason));
  g.setProviderId(T(x.provider_id));
  g.setNodeName(T(x.node_name));
  Put(g.initLabels(x.labels.size()), x.labels);
  g.setImageId(T(x.image_id));
  Put(g.initCapacity(), x.capacity);
  Put(g.initAllocatable(), x.allocatable);
}

RecordKubeEvent GetKubeEvent(s::Command::RecordKubeEvent::Reader g) {
  return {{S(g.getApiVersion()), S(g.getKind()), S(g.getNamespace()), S(g.getName())},
          S(g.getType()),
          S(g.getReason()),
          S(g.getMessage())};
}

PatchPodDeletionCost GetDeletionCost(s::Command::PatchPodDeletionCost::Reader g) {
  PatchPodDeletionCost patch{S(g.getNamespace()), S(g.getName()), S(g.getUid()), {}};
  if (auto cost = GetOpt<std::int64_t>(g.getCost())) {
    if (*cost < INT32_MIN || *cost > INT32_MAX) throw CodecError("deletion cost out of range");
    patch.cost = static_cast<std::int32_t>(*cost);
  }
  return patch;
}

}  // namespace

void Put(s::Command::Builder b, const Command& c) {
  b.setId(c.id.value);
  b.setCauseSeq(c.cause.value);
  std::visit([&](const auto& alternative) { PutAlt(b, alternative); }, c.body);
}

// The commands the Kubernetes API carries out.
std::optional<Command> GetKubeCommand(s::Command::Reader r, Command& c) {
  switch (r.which()) {
    case s::Command::CREATE_NODE_CLAIM:
      c.body = CreateNodeClaim{Get(r.getCreateNodeClaim())};
      return c;
    case s::Command::DELETE_NODE_CLAIM:
      c.body = DeleteNodeClaim{S(r.getDeleteNodeClaim())};
      return c;
    case s::Command::PATCH_NODE: {
      auto g = r.getPatchNode();
      c.body =
          PatchNode{S(g.getNodeName()), GetLabels(g.getAddLabels()), GetTexts(g.getRemoveTaints()),
                    GetList<Taint>(g.getAddTaints()), S(g.getOwnerNodeClaim())};
      return c;
    }
    case s::Command::EVICT_POD: {
      auto g = r.getEvictPod();
      c.body = EvictPod{S(g.getNamespace()), S(g.getName()), S(g.getNodeClaim())};
      return c;
    }
    case s::Command::DELETE_POD: {
      auto g = r.getDeletePod();
      c.body = DeletePod{S(g.getNamespace()), S(g.getName()), S(g.getNodeClaim())};
      return c;
    }
    case s::Command::REMOVE_FINALIZER: {
      auto g = r.getRemoveFinalizer();
      c.body = RemoveFinalizer{S(g.getNodeClaim()), S(g.getNodeName())};
      return c;
    }
    case s::Command::PATCH_NODE_POOL_STATUS: {
      auto g = r.getPatchNodePoolStatus();
      c.body = PatchNodePoolStatus{S(g.getNodePool()), Get(g.getStatus())};
      return c;
    }
    case s::Command::PATCH_NODE_OVERLAY_STATUS: {
      auto g = r.getPatchNodeOverlayStatus();
      c.body = PatchNodeOverlayStatus{S(g.getNodeOverlay()), Get(g.getStatus())};
      return c;
    }
    case s::Command::PATCH_POD_DELETION_COST:
      c.body = GetDeletionCost(r.getPatchPodDeletionCost());
      return c;
    case s::Command::PATCH_NODE_CLASS_STATUS: {
      auto g = r.getPatchNodeClassStatus();
      c.body = PatchNodeClassStatus{S(g.getNodeClass()), Get(g.getResolution())};
      return c;
    }
    case s::Command::SET_NODE_CLASS_FINALIZER: {
      auto g = r.getSetNodeClassFinalizer();
      c.body = SetNodeClassFinalizer{S(g.getNodeClass()), g.getPresent()};
      return c;
    }
    case s::Command::RECORD_KUBE_EVENT:
      c.body = GetKubeEvent(r.getRecordKubeEvent());
      return c;
    case s::Command::PATCH_NODE_CLAIM_STATUS: {
      auto g = r.getPatchNodeClaimStatus();
      PatchNodeClaimStatus patch =
          ClaimCondition(S(g.getNodeClaim()), S(g.getCondition()), g.getStatus(), S(g.getReason()),
                         S(g.getProviderId()), S(g.getNodeName()));
      patch.labels = GetLabels(g.getLabels());
      patch.image_id = S(g.getImageId());
      patch.capacity = Get(g.getCapacity());
      patch.allocatable = Get(g.getAllocatable());
      c.body = std::move(patch);
      return c;
    }

    default:
      return std::nullopt;
  }
}

// The commands the cloud carries out.
Command GetCloudCommand(s::Command::Reader r, Command& c) {
  switch (r.which()) {
    case s::Command::LAUNCH_INSTANCE: {
      auto g = r.getLaunchInstance();
      c.body = LaunchInstance{S(g.getNodeClaim()),    S(g.getNodePool()),
                              S(g.getNodeClass()),    S(g.getClientToken()),
                              S(g.getCapacityType()), GetList<LaunchOverride>(g.getOverrides()),
                              GetLabels(g.getTags()), S(g.getAllocationStrategy()),
                              Get(g.getNode())};
      return c;
    }
    case s::Command::TERMINATE_INSTANCE: {
      auto g = r.getTerminateInstance();
      c.body = TerminateInstance{S(g.getInstanceId()), S(g.getNodeClaim())};
      return c;
    }
    case s::Command::DELETE_QUEUE_MESSAGE:
      c.body = DeleteQueueMessage{S(r.getDeleteQueueMessage())};
      return c;
    case s::Command::TAG_INSTANCE: {
      auto g = r.getTagInstance();
      c.body = TagInstance{S(g.getInstanceId()), S(g.getNodeClaim()), GetLabels(g.getTags())};
      return c;
    }
    case s::Command::ENSURE_INSTANCE_PROFILE: {
      auto g = r.getEnsureInstanceProfile();
      c.body = EnsureInstanceProfile{S(g.getNodeClass()), S(g.getRole()), S(g.getClusterName())};
      return c;
    }
    case s::Command::DELETE_NODE_CLASS_RESOURCES: {
      auto g = r.getDeleteNodeClassResources();
      c.body = DeleteNodeClassResources{S(g.getNodeClass()), S(g.getClusterName()),
                                        g.getInstanceProfile()};
      return c;
    }
    default:
      break;
  }
  throw CodecError("unknown command kind " + std::to_string(static_cast<unsigned>(r.which())));
}

Command Get(s::Command::Reader r) {
  Command c{CommandId{r.getId()}, tenon::Seq{r.getCauseSeq()}, {}};
  if (auto done = GetKubeCommand(r, c)) return *done;
  return GetCloudCommand(r, c);
}

}  // namespace tenon::log::parts

namespace tenon::log {

std::string CommandKind(const Command& command) {
  constexpr const char* kNames[] = {"CreateNodeClaim",
                                    "DeleteNodeClaim",
                                    "LaunchInstance",
                                    "PatchNode",
                                    "EvictPod",
                                    "DeletePod",
                                    "TerminateInstance",
                                    "RemoveFinalizer",
                                    "PatchNodePoolStatus",
                                    "PatchNodeClaimStatus",
                                    "DeleteQueueMessage",
                                    "TagInstance",
                                    "PatchNodeClassStatus",
                                    "SetNodeClassFinalizer",
                                    "EnsureInstanceProfile",
                                    "DeleteNodeClassResources",
                                    "RecordKubeEvent",
                                    "PatchNodeOverlayStatus",
                                    "PatchPodDeletionCost"};
  static_assert(std::size(kNames) == std::variant_size_v<CommandBody>);
  return kNames[command.body.index()];
}

}  // namespace tenon::log
