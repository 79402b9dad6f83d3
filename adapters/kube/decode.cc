#include "adapters/kube/decode.h"

#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "adapters/kube/objects.h"

namespace tenon::kube {
namespace {

// Keys no object parser reads, at any depth: the bulk of a real pod or node object. Dropping
// them before the parsers see the object is most of the decoding time saved.
constexpr std::string_view kUnread[] = {"managedFields",
                                        "kubectl.kubernetes.io/last-applied-configuration",
                                        "env",
                                        "envFrom",
                                        "volumeMounts",
                                        "volumeDevices",
                                        "image",
                                        "imagePullPolicy",
                                        "command",
                                        "args",
                                        "livenessProbe",
                                        "readinessProbe",
                                        "startupProbe",
                                        "lifecycle",
                                        "securityContext",
                                        "workingDir",
                                        "terminationMessagePath",
                                        "terminationMessagePolicy",
                                        "containerStatuses",
                                        "initContainerStatuses",
                                        "ephemeralContainerStatuses",
                                        "images",
                                        "nodeInfo",
                                        "daemonEndpoints"};

bool Unread(std::string_view key) {
  for (std::string_view k : kUnread) {
    if (k == key) return true;
  }
  return false;
}

// The simdjson tree as the YAML tree the parsers read, without what no parser looks at.
YAML::Node ToYaml(simdjson::dom::element element, std::string_view key = {}) {
  using simdjson::dom::element_type;
  switch (element.type()) {
    case element_type::OBJECT: {
      YAML::Node node(YAML::NodeType::Map);
      for (auto [k, v] : simdjson::dom::object(element)) {
        if (Unread(k)) continue;
        node[std::string(k)] = ToYaml(v, k);
      }
      return node;
    }
    case element_type::ARRAY: {
      YAML::Node node(YAML::NodeType::Sequence);
      for (auto v : simdjson::dom::array(element)) node.push_back(ToYaml(v));
      return node;
    }
    case element_type::STRING:
      return YAML::Node(std::string(std::string_view(element)));
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE:
    case element_type::BOOL:
      // Scalars as the JSON text (yaml-cpp would format numbers through a stringstream).
      return YAML::Node(simdjson::minify(element));
    case element_type::NULL_VALUE:
      return YAML::Node(YAML::NodeType::Null);
  }
  (void)key;
  return YAML::Node();
}

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
  if (plural == "ec2nodeclasses") return NodeClassDeleted{name};
  if (plural == "daemonsets") return DaemonSetDeleted{ns, name};
  if (plural == "poddisruptionbudgets") return PodDisruptionBudgetDeleted{ns, name};
  if (plural == "persistentvolumeclaims") return PersistentVolumeClaimDeleted{ns, name};
  if (plural == "persistentvolumes") return PersistentVolumeDeleted{name};
  if (plural == "storageclasses") return StorageClassDeleted{name};
  return CsiNodeDeleted{name};
}

std::vector<Event> Upserted(const std::string& plural, const YAML::Node& object) {
  if (plural == "pods") return {PodUpserted{ParsePod(object)}};
  if (plural == "nodes") return {NodeUpserted{ParseNode(object)}};
  if (plural == "nodepools") return {NodePoolUpserted{ParseNodePool(object)}};
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
    const auto& metadata = object["metadata"];
    if (metadata["deletionTimestamp"] && !metadata["deletionTimestamp"].IsNull()) {
      events.push_back(NodeClaimDeletionRequested{metadata["name"].as<std::string>()});
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
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(change.object).get(root); error != simdjson::SUCCESS) {
    return {InputRejected{source, std::string("not JSON: ") + simdjson::error_message(error),
                          change.object, ""}};
  }
  if (change.key.empty())
    return {InputRejected{source, "object without metadata.name", change.object, ""}};
  try {
    return Upserted(plural, ToYaml(root));
  } catch (const ObjectError& e) {
    return {InputRejected{source, e.what(), change.object, ""}};
  } catch (const YAML::Exception& e) {
    return {InputRejected{source, change.key + ": " + e.what(), change.object, ""}};
  }
}

}  // namespace tenon::kube
