#include "adapters/kube/decode.h"

#include <simdjson.h>

#include <string>

#include "adapters/kube/objects.h"
#include "adapters/kube/values.h"

namespace tenon::kube {
namespace {

std::pair<std::string, std::string> SplitKey(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

Event Deleted(const std::string& plural, const std::string& key) {
  auto [ns, name] = SplitKey(key);
  if (plural == "pods") return PodDeleted{ns, name};
  if (plural == "nodes") return NodeDeleted{name};
  if (plural == "nodepools") return NodePoolDeleted{name};
  if (plural == "nodeoverlays") return NodeOverlayDeleted{name};
  if (plural == "ec2nodeclasses") return NodeClassDeleted{name};
  if (plural == "daemonsets") return DaemonSetDeleted{ns, name};
  if (plural == "poddisruptionbudgets") return PodDisruptionBudgetDeleted{ns, name};
  if (plural == "persistentvolumeclaims") return PersistentVolumeClaimDeleted{ns, name};
  if (plural == "persistentvolumes") return PersistentVolumeDeleted{name};
  if (plural == "storageclasses") return StorageClassDeleted{name};
  return CsiNodeDeleted{name};
}

std::vector<Event> Upserted(const std::string& plural, const JsonValue& object) {
  if (plural == "pods") return {PodUpserted{ParsePod(object)}};
  if (plural == "nodes") return {NodeUpserted{ParseNode(object)}};
  if (plural == "nodepools") return {NodePoolUpserted{ParseNodePool(object)}};
  if (plural == "nodeoverlays") return {NodeOverlayUpserted{ParseNodeOverlay(object)}};
  if (plural == "ec2nodeclasses") return {NodeClassUpserted{ParseNodeClass(object, true)}};
  if (plural == "daemonsets") return {DaemonSetUpserted{ParseDaemonSet(object)}};
  if (plural == "poddisruptionbudgets") {
    return {PodDisruptionBudgetUpserted{ParsePodDisruptionBudget(object)}};
  }
  if (plural == "persistentvolumeclaims") {
    return {PersistentVolumeClaimUpserted{ParsePersistentVolumeClaim(object)}};
  }
  if (plural == "persistentvolumes") {
    return {PersistentVolumeUpserted{ParsePersistentVolume(object)}};
  }
  if (plural == "storageclasses") return {StorageClassUpserted{ParseStorageClass(object)}};
  if (plural == "csinodes") return {CsiNodeUpserted{ParseCsiNode(object)}};
  // NodeClaims: the core adopts one it does not know, and learns that one is being deleted.
  if (plural == "nodeclaims") {
    std::vector<Event> events{NodeClaimObserved{ParseNodeClaim(object)}};
    const JsonValue metadata = object["metadata"];
    if (metadata["deletionTimestamp"] && !metadata["deletionTimestamp"].IsNull()) {
      events.push_back(NodeClaimDeletionRequested{metadata["name"].Text().value_or("")});
    }
    return events;
  }
  throw ObjectError("no decoder for " + plural);
}

}  // namespace

std::vector<Event> Decode(const Change& change) {
  const std::string& plural = change.resource->plural;
  const std::string source = "kube/" + change.resource->Name();
  if (change.type == Change::Type::kDelete) {
    if (plural == "nodeclaims") return {};
    return {Deleted(plural, change.key)};
  }
  // One parser a thread, kept: its buffers are sized once, not for every object.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(change.object).get(root); error != simdjson::SUCCESS) {
    return {InputRejected{source, std::string("not JSON: ") + simdjson::error_message(error),
                          change.object, ""}};
  }
  if (change.key.empty())
    return {InputRejected{source, "object without metadata.name", change.object, ""}};
  try {
    return Upserted(plural, JsonValue(root));
  } catch (const ShapeError& e) {
    return {InputRejected{source, change.key + ": " + e.what(), change.object, ""}};
  } catch (const ObjectError& e) {
    return {InputRejected{source, e.what(), change.object, ""}};
  }
}

}  // namespace tenon::kube
