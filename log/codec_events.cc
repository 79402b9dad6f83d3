// The codec of the Event union: each alternative to its struct and back.
#include "log/codec_parts.h"

namespace tenon::log::parts {

namespace {

void PutAlt(s::Event::Builder b, const Tick& e) {
  b.initTick().setNowNs(e.now.value);
}
void PutAlt(s::Event::Builder b, const ControllerStarted& e) {
  auto g = b.initControllerStarted();
  g.setVersion(T(e.version));
  g.setSeed(e.seed);
  Put(g.initSettings(), e.settings);
}
void PutAlt(s::Event::Builder b, const CatalogRefreshed& e) {
  PutList(b.initCatalogRefreshed(e.instance_types.size()), e.instance_types);
}
void PutAlt(s::Event::Builder b, const NodePoolUpserted& e) {
  Put(b.initNodePoolUpserted(), e.nodepool);
}
void PutAlt(s::Event::Builder b, const NodeOverlayUpserted& e) {
  Put(b.initNodeOverlayUpserted(), e.overlay);
}
void PutAlt(s::Event::Builder b, const NodeOverlayDeleted& e) {
  b.setNodeOverlayDeleted(T(e.name));
}
void PutAlt(s::Event::Builder b, const NodePoolDeleted& e) {
  b.setNodePoolDeleted(T(e.name));
}
void PutAlt(s::Event::Builder b, const NodeClassUpserted& e) {
  Put(b.initNodeClassUpserted(), e.nodeclass);
}
void PutAlt(s::Event::Builder b, const NodeClassDeleted& e) {
  b.setNodeClassDeleted(T(e.name));
}
void PutAlt(s::Event::Builder b, const PodUpserted& e) {
  Put(b.initPodUpserted(), e.pod);
}
void PutAlt(s::Event::Builder b, const PodDeleted& e) {
  auto g = b.initPodDeleted();
  g.setNamespace(T(e.ns));
  g.setName(T(e.name));
}
void PutAlt(s::Event::Builder b, const NodeUpserted& e) {
  Put(b.initNodeUpserted(), e.node);
}
void PutAlt(s::Event::Builder b, const NodeDeleted& e) {
  b.setNodeDeleted(T(e.name));
}
void PutAlt(s::Event::Builder b, const FleetLaunched& e) {
  auto g = b.initFleetLaunched();
  g.setCommand(e.command.value);
  g.setNodeClaim(T(e.nodeclaim));
  g.setInstanceId(T(e.instance_id));
  g.setProviderId(T(e.provider_id));
  g.setInstanceType(T(e.instance_type));
  g.setZone(T(e.zone));
  g.setCapacityType(T(e.capacity_type));
  g.setPriceMicroUsdHour(e.price.value);
  PutList(g.initErrors(e.errors.size()), e.errors);
  g.setImageId(T(e.image_id));
  g.setSubnetId(T(e.subnet_id));
  PutTexts(g.initSecurityGroups(e.security_groups.size()), e.security_groups);
  g.setRequest(T(e.request));
}
void PutAlt(s::Event::Builder b, const FleetFailed& e) {
  auto g = b.initFleetFailed();
  g.setCommand(e.command.value);
  g.setNodeClaim(T(e.nodeclaim));
  PutList(g.initErrors(e.errors.size()), e.errors);
  g.setRequest(T(e.request));
}
void PutAlt(s::Event::Builder b, const CommandSucceeded& e) {
  b.setCommandSucceeded(e.command.value);
}
void PutAlt(s::Event::Builder b, const CommandFailed& e) {
  auto g = b.initCommandFailed();
  g.setCommand(e.command.value);
  g.setCode(static_cast<s::ErrorCode>(e.code));
  g.setMessage(T(e.message));
}
void PutAlt(s::Event::Builder b, const InputRejected& e) {
  auto g = b.initInputRejected();
  g.setSource(T(e.source));
  g.setReason(T(e.reason));
  g.setPayload(kj::arrayPtr(reinterpret_cast<const kj::byte*>(e.payload.data()), e.payload.size()));
  g.setMessageId(T(e.message_id));
}
void PutAlt(s::Event::Builder b, const DaemonSetUpserted& e) {
  Put(b.initDaemonSetUpserted(), e.daemonset);
}
void PutAlt(s::Event::Builder b, const DaemonSetDeleted& e) {
  auto g = b.initDaemonSetDeleted();
  g.setNamespace(T(e.ns));
  g.setName(T(e.name));
}
void PutAlt(s::Event::Builder b, const PersistentVolumeClaimUpserted& e) {
  Put(b.initPersistentVolumeClaimUpserted(), e.claim);
}
void PutAlt(s::Event::Builder b, const PersistentVolumeClaimDeleted& e) {
  auto g = b.initPersistentVolumeClaimDeleted();
  g.setNamespace(T(e.ns));
  g.setName(T(e.name));
}
void PutAlt(s::Event::Builder b, const PersistentVolumeUpserted& e) {
  Put(b.initPersistentVolumeUpserted(), e.volume);
}
void PutAlt(s::Event::Builder b, const PersistentVolumeDeleted& e) {
  b.setPersistentVolumeDeleted(T(e.name));
}
void PutAlt(s::Event::Builder b, const StorageClassUpserted& e) {
  Put(b.initStorageClassUpserted(), e.storage_class);
}
void PutAlt(s::Event::Builder b, const StorageClassDeleted& e) {
  b.setStorageClassDeleted(T(e.name));
}
void PutAlt(s::Event::Builder b, const CsiNodeUpserted& e) {
  Put(b.initCsiNodeUpserted(), e.csi_node);
}
void PutAlt(s::Event::Builder b, const CsiNodeDeleted& e) {
  b.setCsiNodeDeleted(T(e.name));
}
void PutAlt(s::Event::Builder b, const NodeClaimDeletionRequested& e) {
  b.setNodeClaimDeletionRequested(T(e.name));
}
void PutAlt(s::Event::Builder b, const PodDisruptionBudgetUpserted& e) {
  Put(b.initPodDisruptionBudgetUpserted(), e.pdb);
}
void PutAlt(s::Event::Builder b, const PodDisruptionBudgetDeleted& e) {
  auto g = b.initPodDisruptionBudgetDeleted();
  g.setNamespace(T(e.ns));
  g.setName(T(e.name));
}
void PutAlt(s::Event::Builder b, const WatchesStarted&) {
  b.setWatchesSynced(false);
}
void PutAlt(s::Event::Builder b, const WatchesSynced&) {
  b.setWatchesSynced(true);
}
void PutAlt(s::Event::Builder b, const NodeClaimObserved& e) {
  Put(b.initNodeClaimObserved(), e.claim);
}
void PutAlt(s::Event::Builder b, const NodeClassResolved& e) {
  auto g = b.initNodeClassResolved();
  g.setNodeClass(T(e.nodeclass));
  Put(g.initResolution(), e.resolution);
}
void PutAlt(s::Event::Builder b, const InterruptionReceived& e) {
  auto g = b.initInterruptionReceived();
  g.setMessageId(T(e.message_id));
  g.setKind(static_cast<std::uint8_t>(e.kind));
  g.setInstanceId(T(e.instance_id));
  g.setDetail(T(e.detail));
}
void PutAlt(s::Event::Builder b, const InstancesListed& e) {
  auto list = b.initInstancesListed(e.instances.size());
  for (unsigned k = 0; k < e.instances.size(); ++k) {
    list[k].setId(T(e.instances[k].id));
    list[k].setNodeClaim(T(e.instances[k].nodeclaim));
    list[k].setLaunchedNs(e.instances[k].launched.value);
    list[k].setState(T(e.instances[k].state));
  }
}

}  // namespace

void Put(s::Event::Builder b, const Event& event) {
  std::visit([&](const auto& alternative) { PutAlt(b, alternative); }, event);
}

// The events the cluster's watches produce: objects upserted and deleted.
std::optional<Event> GetClusterEvent(s::Event::Reader r) {
  switch (r.which()) {
    case s::Event::NODE_POOL_UPSERTED:
      return NodePoolUpserted{Get(r.getNodePoolUpserted())};
    case s::Event::NODE_POOL_DELETED:
      return NodePoolDeleted{S(r.getNodePoolDeleted())};
    case s::Event::NODE_OVERLAY_UPSERTED:
      return NodeOverlayUpserted{Get(r.getNodeOverlayUpserted())};
    case s::Event::NODE_OVERLAY_DELETED:
      return NodeOverlayDeleted{S(r.getNodeOverlayDeleted())};
    case s::Event::NODE_CLASS_UPSERTED:
      return NodeClassUpserted{Get(r.getNodeClassUpserted())};
    case s::Event::NODE_CLASS_DELETED:
      return NodeClassDeleted{S(r.getNodeClassDeleted())};
    case s::Event::POD_UPSERTED:
      return PodUpserted{Get(r.getPodUpserted())};
    case s::Event::POD_DELETED:
      return PodDeleted{S(r.getPodDeleted().getNamespace()), S(r.getPodDeleted().getName())};
    case s::Event::NODE_UPSERTED:
      return NodeUpserted{Get(r.getNodeUpserted())};
    case s::Event::NODE_DELETED:
      return NodeDeleted{S(r.getNodeDeleted())};
    case s::Event::DAEMON_SET_UPSERTED:
      return DaemonSetUpserted{Get(r.getDaemonSetUpserted())};
    case s::Event::DAEMON_SET_DELETED:
      return DaemonSetDeleted{S(r.getDaemonSetDeleted().getNamespace()),
                              S(r.getDaemonSetDeleted().getName())};
    case s::Event::PERSISTENT_VOLUME_CLAIM_UPSERTED:
      return PersistentVolumeClaimUpserted{Get(r.getPersistentVolumeClaimUpserted())};
    case s::Event::PERSISTENT_VOLUME_CLAIM_DELETED:
      return PersistentVolumeClaimDeleted{S(r.getPersistentVolumeClaimDeleted().getNamespace()),
                                          S(r.getPersistentVolumeClaimDeleted().getName())};
    case s::Event::PERSISTENT_VOLUME_UPSERTED:
      return PersistentVolumeUpserted{Get(r.getPersistentVolumeUpserted())};
    case s::Event::PERSISTENT_VOLUME_DELETED:
      return PersistentVolumeDeleted{S(r.getPersistentVolumeDeleted())};
    case s::Event::STORAGE_CLASS_UPSERTED:
      return StorageClassUpserted{Get(r.getStorageClassUpserted())};
    case s::Event::STORAGE_CLASS_DELETED:
      return StorageClassDeleted{S(r.getStorageClassDeleted())};
    case s::Event::CSI_NODE_UPSERTED:
      return CsiNodeUpserted{Get(r.getCsiNodeUpserted())};
    case s::Event::CSI_NODE_DELETED:
      return CsiNodeDeleted{S(r.getCsiNodeDeleted())};
    case s::Event::NODE_CLAIM_DELETION_REQUESTED:
      return NodeClaimDeletionRequested{S(r.getNodeClaimDeletionRequested())};
    case s::Event::POD_DISRUPTION_BUDGET_UPSERTED:
      return PodDisruptionBudgetUpserted{Get(r.getPodDisruptionBudgetUpserted())};
    case s::Event::POD_DISRUPTION_BUDGET_DELETED: {
      auto g = r.getPodDisruptionBudgetDeleted();
      return PodDisruptionBudgetDeleted{S(g.getNamespace()), S(g.getName())};
    }
    case s::Event::NODE_CLAIM_OBSERVED:
      return NodeClaimObserved{Get(r.getNodeClaimObserved())};
    default:
      return std::nullopt;
  }
}

// The others: the clock, the controller's start, the cloud's answers, commands' results.
Event GetControllerEvent(s::Event::Reader r) {
  switch (r.which()) {
    case s::Event::TICK:
      return Tick{Instant{r.getTick().getNowNs()}};
    case s::Event::CONTROLLER_STARTED: {
      auto g = r.getControllerStarted();
      return ControllerStarted{S(g.getVersion()), g.getSeed(), Get(g.getSettings())};
    }
    case s::Event::CATALOG_REFRESHED:
      return CatalogRefreshed{GetList<InstanceType>(r.getCatalogRefreshed())};
    case s::Event::FLEET_LAUNCHED: {
      auto g = r.getFleetLaunched();
      return FleetLaunched{CommandId{g.getCommand()},
                           S(g.getNodeClaim()),
                           S(g.getInstanceId()),
                           S(g.getProviderId()),
                           S(g.getInstanceType()),
                           S(g.getZone()),
                           S(g.getCapacityType()),
                           MicroUsdPerHour{g.getPriceMicroUsdHour()},
                           GetList<FleetError>(g.getErrors()),
                           S(g.getImageId()),
                           S(g.getSubnetId()),
                           GetTexts(g.getSecurityGroups()),
                           S(g.getRequest())};
    }
    case s::Event::FLEET_FAILED: {
      auto g = r.getFleetFailed();
      return FleetFailed{CommandId{g.getCommand()}, S(g.getNodeClaim()),
                         GetList<FleetError>(g.getErrors()), S(g.getRequest())};
    }
    case s::Event::COMMAND_SUCCEEDED:
      return CommandSucceeded{CommandId{r.getCommandSucceeded()}};
    case s::Event::COMMAND_FAILED: {
      auto g = r.getCommandFailed();
      return CommandFailed{CommandId{g.getCommand()}, GetCode(g.getCode()), S(g.getMessage())};
    }
    case s::Event::INPUT_REJECTED: {
      auto g = r.getInputRejected();
      auto payload = g.getPayload();
      return InputRejected{
          S(g.getSource()), S(g.getReason()),
          std::string(reinterpret_cast<const char*>(payload.begin()), payload.size()),
          S(g.getMessageId())};
    }
    case s::Event::WATCHES_SYNCED:
      if (!r.getWatchesSynced()) return WatchesStarted{};
      return WatchesSynced{};
    case s::Event::NODE_CLASS_RESOLVED: {
      auto g = r.getNodeClassResolved();
      return NodeClassResolved{S(g.getNodeClass()), Get(g.getResolution())};
    }
    case s::Event::INTERRUPTION_RECEIVED: {
      auto g = r.getInterruptionReceived();
      return InterruptionReceived{
          S(g.getMessageId()), CheckedEnum<InterruptionKind>(g.getKind(), 3, "interruption kind"),
          S(g.getInstanceId()), S(g.getDetail())};
    }
    case s::Event::INSTANCES_LISTED: {
      InstancesListed listed;
      for (auto i : r.getInstancesListed()) {
        listed.instances.push_back(
            {S(i.getId()), S(i.getNodeClaim()), Instant{i.getLaunchedNs()}, S(i.getState())});
      }
      return listed;
    }
    default:
      break;
  }
  throw CodecError("unknown event kind " + std::to_string(static_cast<unsigned>(r.which())));
}

Event Get(s::Event::Reader r) {
  if (auto event = GetClusterEvent(r)) return *event;
  return GetControllerEvent(r);
}

}  // namespace tenon::log::parts

namespace tenon::log {

std::string EventKind(const Event& event) {
  constexpr const char* kNames[] = {"Tick",
                                    "ControllerStarted",
                                    "CatalogRefreshed",
                                    "NodePoolUpserted",
                                    "NodePoolDeleted",
                                    "NodeClassUpserted",
                                    "NodeClassDeleted",
                                    "PodUpserted",
                                    "PodDeleted",
                                    "NodeUpserted",
                                    "NodeDeleted",
                                    "FleetLaunched",
                                    "FleetFailed",
                                    "CommandSucceeded",
                                    "CommandFailed",
                                    "InputRejected",
                                    "DaemonSetUpserted",
                                    "DaemonSetDeleted",
                                    "PersistentVolumeClaimUpserted",
                                    "PersistentVolumeClaimDeleted",
                                    "PersistentVolumeUpserted",
                                    "PersistentVolumeDeleted",
                                    "StorageClassUpserted",
                                    "StorageClassDeleted",
                                    "CsiNodeUpserted",
                                    "CsiNodeDeleted",
                                    "NodeClaimDeletionRequested",
                                    "InstancesListed",
                                    "InterruptionReceived",
                                    "PodDisruptionBudgetUpserted",
                                    "PodDisruptionBudgetDeleted",
                                    "WatchesStarted",
                                    "WatchesSynced",
                                    "NodeClaimObserved",
                                    "NodeClassResolved",
                                    "NodeOverlayUpserted",
                                    "NodeOverlayDeleted"};
  static_assert(std::size(kNames) == std::variant_size_v<Event>);
  return kNames[event.index()];
}

}  // namespace tenon::log
