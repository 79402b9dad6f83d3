// Karpenter's custom resources and Kubernetes objects, and Kubernetes quantities, parsed into the
// domain model from a YAML node (the scenario loader, examples, what-if) or from a JSON value as
// simdjson parsed it (the kube adapter's decoder). One template per kind reads both (values.h).
// Errors are ObjectError with a message that names the object and the field.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "model/model.h"

namespace tenon::kube {

class JsonValue;  // adapters/kube/values.h

class ObjectError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "500m" -> 500, "2" -> 2000, "1.5" -> 1500.
Millicores ParseCpu(std::string_view quantity);
// "1Gi", "512Mi", "1G", "1000", "1.5Gi" -> bytes.
Bytes ParseMemory(std::string_view quantity);
// A plain decimal ("0.25", "12") times `multiplier`, rounded up to a whole number.
std::int64_t ParseScaledDecimal(std::string_view text, std::int64_t multiplier,
                                std::string_view what);
// Go durations: "720h", "1h30m", "10s", "500ms".
Duration ParseDuration(std::string_view duration);
// A Go duration, or "Never" (nullopt): a NodePool's expireAfter, consolidateAfter and
// terminationGracePeriod.
std::optional<Duration> ParseDurationOrNever(std::string_view duration);
// RFC 3339: "2026-01-01T00:00:00Z", "2026-01-01T02:00:00.5+02:00".
Instant ParseTimestamp(std::string_view timestamp);

// Every document of a YAML stream, as YAML::LoadAll reads them. yaml-cpp 0.7 loops forever on a
// stream where a document would start at a token no node can start with (a stray "," at the top
// level, as in "[1, 2],"); that is a YAML::ParserException at the token here.
std::vector<YAML::Node> LoadDocuments(const std::string& text);

NodePool ParseNodePool(const YAML::Node& object);  // karpenter.sh/v1 NodePool
// karpenter.sh/v1alpha1 NodeOverlay. What the API server's schema refuses is an error; what
// Karpenter's controller refuses at run time (a requirement on a restricted label, capacity of
// cpu, memory, ephemeral-storage or pods) is kept in NodeOverlay::invalid.
NodeOverlay ParseNodeOverlay(const YAML::Node& object);
// karpenter.k8s.aws/v1 EC2NodeClass. Ready follows status.conditions[Ready]; without that
// condition it is ready unless `needs_ready_condition` (objects read from a cluster, where the
// NodeClass controller has not resolved it yet).
NodeClass ParseNodeClass(const YAML::Node& object, bool needs_ready_condition = false);
Toleration ParseToleration(const YAML::Node& node);
LabelSelector ParseSelector(const YAML::Node& node);  // matchLabels and matchExpressions

// Kubernetes objects the scheduler reads. A Pod without status counts as unschedulable and
// pending (what a hand-written manifest means); one with conditions follows PodScheduled.
Pod ParsePod(const YAML::Node& object);              // v1 Pod
Node ParseNode(const YAML::Node& object);            // v1 Node
NodeClaim ParseNodeClaim(const YAML::Node& object);  // karpenter.sh/v1 NodeClaim, as observed
DaemonSet ParseDaemonSet(const YAML::Node& object);  // apps/v1
PersistentVolumeClaim ParsePersistentVolumeClaim(const YAML::Node& object);  // v1
PersistentVolume ParsePersistentVolume(const YAML::Node& object);            // v1
StorageClass ParseStorageClass(const YAML::Node& object);                    // storage.k8s.io/v1
CsiNode ParseCsiNode(const YAML::Node& object);                              // storage.k8s.io/v1
PodDisruptionBudget ParsePodDisruptionBudget(const YAML::Node& object);      // policy/v1
Taint ParseTaint(const YAML::Node& node);

// The same, from the JSON of an object read from the API server.
NodePool ParseNodePool(const JsonValue& object);
NodeOverlay ParseNodeOverlay(const JsonValue& object);
NodeClass ParseNodeClass(const JsonValue& object, bool needs_ready_condition = false);
Pod ParsePod(const JsonValue& object);
Node ParseNode(const JsonValue& object);
NodeClaim ParseNodeClaim(const JsonValue& object);
DaemonSet ParseDaemonSet(const JsonValue& object);
PersistentVolumeClaim ParsePersistentVolumeClaim(const JsonValue& object);
PersistentVolume ParsePersistentVolume(const JsonValue& object);
StorageClass ParseStorageClass(const JsonValue& object);
CsiNode ParseCsiNode(const JsonValue& object);
PodDisruptionBudget ParsePodDisruptionBudget(const JsonValue& object);

// The API's spelling of the model's enums: "NoSchedule", "In", ...
const char* EffectName(TaintEffect effect);
const char* OperatorName(RequirementOp op);

}  // namespace tenon::kube
