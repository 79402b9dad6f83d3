#include "adapters/kube/executor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "adapters/http/wall_clock.h"
#include "adapters/kube/events.h"
#include "adapters/kube/informer.h"
#include "adapters/kube/objects.h"
#include "model/timestamp.h"

namespace tenon::kube {
namespace {

using nlohmann::json;

constexpr long kConflict = 409;
constexpr long kNotFound = 404;
constexpr char kMergePatch[] = "application/merge-patch+json";

json ResourceList(const Resources& r) {
  json out = json::object();
  if (r.cpu.value > 0) out["cpu"] = CpuQuantity(r.cpu);
  if (r.memory.value > 0) out["memory"] = MemoryQuantity(r.memory);
  if (r.pods > 0) out["pods"] = std::to_string(r.pods);
  for (const auto& [name, value] : r.extended) {
    // Huge pages are bytes, written as memory is.
    out[name] =
        name.starts_with("hugepages-") ? MemoryQuantity(Bytes{value}) : std::to_string(value);
  }
  return out;
}

std::string Now() {
  return Rfc3339Text(WallClock());
}

// Conditions merged by type, as the API's list-map semantics have them; the transition time
// moves only when the status ("True", "False" or "Unknown") does.
json SetCondition(json conditions, const std::string& type, const std::string& value,
                  const std::string& reason, const std::string& message) {
  if (!conditions.is_array()) conditions = json::array();
  for (auto& c : conditions) {
    if (c.value("type", "") != type) continue;
    if (c.value("status", "") != value) c["lastTransitionTime"] = Now();
    c["status"] = value;
    c["reason"] = reason;
    c["message"] = message;
    return conditions;
  }
  conditions.push_back({{"type", type},
                        {"status", value},
                        {"reason", reason},
                        {"message", message},
                        {"lastTransitionTime", Now()}});
  return conditions;
}

json MergeCondition(json conditions, const std::string& type, bool status,
                    const std::string& reason, const std::string& message) {
  return SetCondition(std::move(conditions), type, status ? "True" : "False", reason, message);
}

// The root condition Ready over its dependents, as Karpenter's condition sets compute it:
// True when every dependent is True; False when one is False; Unknown while one is Unknown or
// not written yet. The message names the dependents that are not True.
json WithReady(json conditions, const std::vector<std::string>& dependents) {
  std::string unhealthy;
  bool any_false = false;
  for (const std::string& type : dependents) {
    std::string value = "Unknown";
    for (const auto& c : conditions) {
      if (c.value("type", "") == type) value = c.value("status", "Unknown");
    }
    if (value == "True") continue;
    any_false |= value == "False";
    unhealthy += (unhealthy.empty() ? "" : ", ") + type + "=" + value;
  }
  if (unhealthy.empty()) return SetCondition(std::move(conditions), "Ready", "True", "Ready", "");
  return SetCondition(std::move(conditions), "Ready", any_false ? "False" : "Unknown",
                      any_false ? "UnhealthyDependents" : "ReconcilingDependents", unhealthy);
}

// The words Karpenter's NodePool readiness controller gives each reason.
std::string NodeClassUnreadyMessage(const std::string& reason) {
  if (reason == "NodeClassNotFound") return "NodeClass not found on cluster";
  if (reason == "NodeClassTerminating") return "NodeClass is Terminating";
  if (reason == "NodeClassNotReady") return "NodeClass is not Ready";
  return "";
}

json WithoutFinalizer(const json& object, const std::string& finalizer) {
  json kept = json::array();
  for (const auto& f : object["metadata"].value("finalizers", json::array())) {
    if (f != finalizer) kept.push_back(f);
  }
  return kept;
}

// {"status": wanted}, or nothing when the status already says all of it.
std::optional<json> StatusPatch(const json& current, const json& wanted) {
  for (const auto& [k, v] : wanted.items()) {
    if (!current.contains(k) || current[k] != v) return json{{"status", wanted}};
  }
  return std::nullopt;
}

bool HasFinalizer(const json& object, const std::string& finalizer) {
  const auto finalizers = object["metadata"].value("finalizers", json::array());
  return std::find(finalizers.begin(), finalizers.end(), finalizer) != finalizers.end();
}

}  // namespace

json NodeClaimObject(const NodeClaim& claim) {
  json requirements = json::array();
  // As Karpenter labels a NodeClaim: its NodePool, and every requirement that allows exactly
  // one value (the template's labels among them).
  json labels = {{label::kNodePool, claim.nodepool}};
  for (const auto& r : *claim.requirements) {
    if (r.op == RequirementOp::kIn && r.values.size() == 1) labels[r.key] = r.values.front();
  }
  for (const auto& r : *claim.requirements) {
    json req = {{"key", r.key}, {"operator", OperatorName(r.op)}};
    if (!r.values.empty()) req["values"] = r.values;
    if (r.min_values > 0) req["minValues"] = r.min_values;
    requirements.push_back(req);
  }
  return {{"apiVersion", "karpenter.sh/v1"},
          {"kind", "NodeClaim"},
          {"metadata",
           {{"name", claim.name},
            {"labels", labels},
            {"annotations",
             {{"karpenter.sh/nodepool-hash", std::to_string(claim.nodepool_hash)},
              {"karpenter.k8s.aws/ec2nodeclass-hash", std::to_string(claim.nodeclass_hash)}}},
            {"finalizers", {label::kTerminationFinalizer}}}},
          {"spec",
           {{"nodeClassRef",
             {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", claim.nodeclass}}},
            {"requirements", requirements},
            {"resources", {{"requests", ResourceList(claim.requests)}}}}}};
}

ErrorCode MapStatus(const Response& response) {
  switch (response.status) {
    case 401:
    case 403:
      return ErrorCode::kUnauthorized;
    case 404:
      return ErrorCode::kNotFound;
    case 400:
    case 409:
    case 422:
      return ErrorCode::kInvalid;
    case 429:
      return ErrorCode::kThrottled;
    default:
      return ErrorCode::kTransient;  // 0 (no answer), 5xx.
  }
}

KubeExecutor::KubeExecutor(Client& client, ExecutorOptions options, std::function<bool()> may_act)
    : client_(client),
      options_(std::move(options)),
      may_act_(std::move(may_act)),
      events_(std::make_unique<EventCorrelator>()) {}

KubeExecutor::~KubeExecutor() = default;

bool KubeExecutor::Owns(const Command& command) {
  return std::holds_alternative<CreateNodeClaim>(command.body) ||
         std::holds_alternative<DeleteNodeClaim>(command.body) ||
         std::holds_alternative<PatchNode>(command.body) ||
         std::holds_alternative<EvictPod>(command.body) ||
         std::holds_alternative<DeletePod>(command.body) ||
         std::holds_alternative<RemoveFinalizer>(command.body) ||
         std::holds_alternative<PatchNodePoolStatus>(command.body) ||
         std::holds_alternative<PatchNodeClaimStatus>(command.body) ||
         std::holds_alternative<PatchNodeClassStatus>(command.body) ||
         std::holds_alternative<PatchNodeOverlayStatus>(command.body) ||
         std::holds_alternative<PatchPodDeletionCost>(command.body) ||
         std::holds_alternative<SetNodeClassFinalizer>(command.body) ||
         std::holds_alternative<RecordKubeEvent>(command.body);
}

void KubeExecutor::CheckLeader(const Command* command) const {
  if (may_act_ && !may_act_()) {
    throw LeadershipLost(command == nullptr ? std::string("leadership lost")
                                            : "leadership lost before command " +
                                                  std::to_string(command->id.value) + " ran");
  }
}

Response KubeExecutor::Send(const std::string& method, const std::string& path, const json& body,
                            const std::string& content_type) {
  CheckLeader(nullptr);
  Response response =
      client_.Request(method, path, body.is_null() ? "" : body.dump(), content_type);
  if (IsRefusedWrite(method, path, response.status)) {
    spdlog::warn("kube write refused: {} {}: {}", method, path, Describe(response));
    if (options_.on_write_failed) options_.on_write_failed();
  }
  return response;
}

std::vector<Event> KubeExecutor::Result(const Command& command, const Response& response,
                                        bool not_found_ok) {
  if (response.ok() || (not_found_ok && response.status == kNotFound)) {
    return {CommandSucceeded{command.id}};
  }
  return {CommandFailed{command.id, MapStatus(response), Describe(response)}};
}

Response KubeExecutor::Update(const std::string& path, const std::string& subresource,
                              const std::function<std::optional<json>(const json&)>& mutate) {
  Response response;
  for (int attempt = 0; attempt < options_.conflict_attempts_max; ++attempt) {
    CheckLeader(nullptr);
    response = client_.Request("GET", path);
    if (!response.ok()) return response;
    const json current = json::parse(response.body, nullptr, false);
    if (!current.is_object()) return Response{500, response.body, "the object is not JSON"};
    std::optional<json> patch = mutate(current);
    if (!patch) return response;  // Already as wanted.
    (*patch)["metadata"]["resourceVersion"] = current["metadata"].value("resourceVersion", "");
    response =
        Send("PATCH", path + (subresource.empty() ? "" : "/" + subresource), *patch, kMergePatch);
    if (response.status != kConflict) return response;
    ++conflicts_;
    spdlog::debug("409 on {}; reading it again", path);
  }
  return response;
}

std::vector<Event> KubeExecutor::Execute(const Command& command) {
  CheckLeader(&command);
  return std::visit(
      [&](const auto& body) -> std::vector<Event> {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, CreateNodeClaim>) {
          return CreateClaim(command, body);
        } else if constexpr (std::is_same_v<T, DeleteNodeClaim>) {
          // The finalizer holds the object until termination removes it.
          const auto path = ResourceNamed("nodeclaims").ObjectPath("", body.name);
          return Result(command, Send("DELETE", path, nullptr), true);
        } else if constexpr (std::is_same_v<T, PatchNode>) {
          return Patch(command, body);
        } else if constexpr (std::is_same_v<T, EvictPod>) {
          return Evict(command, body);
        } else if constexpr (std::is_same_v<T, DeletePod>) {
          const json options = {
              {"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"gracePeriodSeconds", 0}};
          const auto path = ResourceNamed("pods").ObjectPath(body.ns, body.name);
          auto response = Send("DELETE", path, options);
          if (response.status == kNotFound) {
            return {CommandFailed{command.id, ErrorCode::kNotFound, Describe(response)}};
          }
          return Result(command, response, false);
        } else if constexpr (std::is_same_v<T, RemoveFinalizer>) {
          return Finalize(command, body);
        } else if constexpr (std::is_same_v<T, PatchNodePoolStatus>) {
          return PoolStatus(command, body);
        } else if constexpr (std::is_same_v<T, PatchNodeClaimStatus>) {
          return ClaimStatus(command, body);
        } else if constexpr (std::is_same_v<T, PatchNodeClassStatus>) {
          return ClassStatus(command, body);
        } else if constexpr (std::is_same_v<T, PatchNodeOverlayStatus>) {
          return OverlayStatus(command, body);
        } else if constexpr (std::is_same_v<T, PatchPodDeletionCost>) {
          return PodDeletionCost(command, body);
        } else if constexpr (std::is_same_v<T, SetNodeClassFinalizer>) {
          return ClassFinalizer(command, body);
        } else if constexpr (std::is_same_v<T, RecordKubeEvent>) {
          // Best effort, as client-go's recorder: nothing comes back to the core.
          RecordEvent(body.object, body.type, body.reason, body.message);
          return {};
        } else {
          return {CommandFailed{command.id, ErrorCode::kInvalid,
                                "not a Kubernetes command (routed to the wrong executor)"}};
        }
      },
      command.body);
}

std::vector<Event> KubeExecutor::CreateClaim(const Command& command,
                                             const CreateNodeClaim& create) {
  // Owned by its NodePool, as Karpenter's NodeClaims are: deleting the NodePool has the garbage
  // collector delete its NodeClaims, and their finalizer terminates the instances.
  const auto pool =
      Send("GET", ResourceNamed("nodepools").ObjectPath("", create.claim.nodepool), nullptr);
  if (!pool.ok()) return Result(command, pool, false);
  json object = NodeClaimObject(create.claim);
  const json pool_object = json::parse(pool.body, nullptr, false);
  const std::string uid = pool_object.is_object() && pool_object.contains("metadata")
                              ? pool_object["metadata"].value("uid", "")
                              : "";
  if (!uid.empty()) {
    object["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "karpenter.sh/v1"},
                                                          {"kind", "NodePool"},
                                                          {"name", create.claim.nodepool},
                                                          {"uid", uid},
                                                          {"blockOwnerDeletion", true}}});
  }
  const auto& nodeclaims = ResourceNamed("nodeclaims");
  const auto response = Send("POST", nodeclaims.CollectionPath(), object);
  // The name is the idempotency key: a re-driven create finds its own object.
  if (response.status == kConflict) {
    const auto json_body = json::parse(response.body, nullptr, false);
    if (json_body.is_object() && json_body.value("reason", "") == "AlreadyExists") {
      return {CommandSucceeded{command.id}};
    }
  }
  return Result(command, response, false);
}

std::vector<Event> KubeExecutor::Patch(const Command& command, const PatchNode& patch) {
  // The owning NodeClaim's uid, for the Node's ownerReference: with it, the garbage collector
  // deletes a Node whose NodeClaim is gone, as for Karpenter's Nodes.
  std::string owner_uid;
  if (!patch.owner_nodeclaim.empty()) {
    const auto claim =
        Send("GET", ResourceNamed("nodeclaims").ObjectPath("", patch.owner_nodeclaim), nullptr);
    // A NodeClaim already gone leaves the Node unowned; its labels and taints still go on.
    if (!claim.ok() && claim.status != kNotFound) return Result(command, claim, false);
    const json object = json::parse(claim.body, nullptr, false);
    if (claim.ok() && object.is_object() && object.contains("metadata")) {
      owner_uid = object["metadata"].value("uid", "");
    }
  }
  const auto path = ResourceNamed("nodes").ObjectPath("", patch.node_name);
  const auto response = Update(path, "", [&](const json& node) -> std::optional<json> {
    json taints = json::array();
    bool changed = false;
    for (const auto& t : node["spec"].value("taints", json::array())) {
      const std::string key = t.value("key", "");
      if (std::find(patch.remove_taints.begin(), patch.remove_taints.end(), key) !=
          patch.remove_taints.end()) {
        changed = true;
        continue;
      }
      taints.push_back(t);
    }
    for (const auto& t : patch.add_taints) {
      json taint = {{"key", t.key}, {"effect", EffectName(t.effect)}};
      if (!t.value.empty()) taint["value"] = t.value;
      const bool present = std::any_of(taints.begin(), taints.end(), [&](const json& have) {
        return have.value("key", "") == t.key && have.value("effect", "") == EffectName(t.effect);
      });
      if (!present) {
        taints.push_back(taint);
        changed = true;
      }
    }
    json patch_body = json::object();
    const auto labels = node["metadata"].value("labels", json::object());
    for (const auto& [k, v] : patch.add_labels) {
      if (labels.value(k, std::string("\x01")) != v) patch_body["metadata"]["labels"][k] = v;
    }
    if (changed) patch_body["spec"]["taints"] = taints;
    if (!owner_uid.empty()) {
      const std::string finalizer = label::kTerminationFinalizer;
      if (!HasFinalizer(node, finalizer)) {
        json finalizers = node["metadata"].value("finalizers", json::array());
        finalizers.push_back(finalizer);
        patch_body["metadata"]["finalizers"] = finalizers;
      }
      json owners = node["metadata"].value("ownerReferences", json::array());
      const bool owned = std::any_of(owners.begin(), owners.end(), [&](const json& o) {
        return o.value("uid", "") == owner_uid;
      });
      if (!owned) {
        owners.push_back({{"apiVersion", "karpenter.sh/v1"},
                          {"kind", "NodeClaim"},
                          {"name", patch.owner_nodeclaim},
                          {"uid", owner_uid},
                          {"blockOwnerDeletion", true}});
        patch_body["metadata"]["ownerReferences"] = owners;
      }
    }
    if (patch_body.empty()) return std::nullopt;
    return patch_body;
  });
  if (response.status == kNotFound) {
    return {
        CommandFailed{command.id, ErrorCode::kNotFound, "node " + patch.node_name + " not found"}};
  }
  return Result(command, response, false);
}

std::vector<Event> KubeExecutor::Evict(const Command& command, const EvictPod& evict) {
  const json eviction = {{"apiVersion", "policy/v1"},
                         {"kind", "Eviction"},
                         {"metadata", {{"name", evict.name}, {"namespace", evict.ns}}}};
  const auto path = ResourceNamed("pods").ObjectPath(evict.ns, evict.name, "eviction");
  const auto response = Send("POST", path, eviction);
  // As Karpenter's eviction queue: a PodDisruptionBudget that allows no disruption now (429),
  // or a pod under more than one (the API server answers 500 "This pod has more than one
  // PodDisruptionBudget..."), is refused and tried again later; the pod gone (404), or another
  // pod by its name (409), is done.
  const bool several_pdbs =
      response.status == 500 &&
      response.body.find("more than one PodDisruptionBudget") != std::string::npos;
  if (response.status == 429 || several_pdbs) {
    return {CommandFailed{command.id, ErrorCode::kDisruptionBudget, Describe(response)}};
  }
  if (response.status == kConflict) {
    return {CommandFailed{command.id, ErrorCode::kNotFound, Describe(response)}};
  }
  return Result(command, response, false);
}

std::vector<Event> KubeExecutor::Finalize(const Command& command, const RemoveFinalizer& remove) {
  const std::string finalizer = label::kTerminationFinalizer;
  auto drop = [&](const json& object) -> std::optional<json> {
    if (!HasFinalizer(object, finalizer)) return std::nullopt;
    return json{{"metadata", {{"finalizers", WithoutFinalizer(object, finalizer)}}}};
  };
  if (!remove.node_name.empty()) {
    const auto node_path = ResourceNamed("nodes").ObjectPath("", remove.node_name);
    auto deleted = Send("DELETE", node_path, nullptr);
    if (!deleted.ok() && deleted.status != kNotFound) return Result(command, deleted, false);
    auto updated = Update(node_path, "", drop);
    if (!updated.ok() && updated.status != kNotFound) return Result(command, updated, false);
  }
  const auto claim_path = ResourceNamed("nodeclaims").ObjectPath("", remove.nodeclaim);
  return Result(command, Update(claim_path, "", drop), true);
}

std::vector<Event> KubeExecutor::ClassFinalizer(const Command& command,
                                                const SetNodeClassFinalizer& set) {
  const std::string finalizer = label::kNodeClassFinalizer;
  const auto path = ResourceNamed("ec2nodeclasses").ObjectPath("", set.nodeclass);
  const auto response = Update(path, "", [&](const json& object) -> std::optional<json> {
    if (HasFinalizer(object, finalizer) == set.present) return std::nullopt;
    // The API server takes no new finalizer on an object being deleted.
    if (set.present && !object["metadata"].value("deletionTimestamp", json()).is_null()) {
      return std::nullopt;
    }
    json list = WithoutFinalizer(object, finalizer);
    if (set.present) list.push_back(finalizer);
    return json{{"metadata", {{"finalizers", list}}}};
  });
  // Gone: a finalizer to remove is removed.
  return Result(command, response, !set.present);
}

std::vector<Event> KubeExecutor::ClaimStatus(const Command& command,
                                             const PatchNodeClaimStatus& patch) {
  const auto path = ResourceNamed("nodeclaims").ObjectPath("", patch.nodeclaim);
  if (!patch.labels.empty()) {
    // The launched instance's labels, beside the ones the NodeClaim was created with.
    const auto labelled = Update(path, "", [&](const json& claim) -> std::optional<json> {
      const json labels = claim["metadata"].value("labels", json::object());
      json add = json::object();
      for (const auto& [k, v] : patch.labels) {
        if (labels.value(k, std::string("\x01")) != v) add[k] = v;
      }
      if (add.empty()) return std::nullopt;
      return json{{"metadata", {{"labels", add}}}};
    });
    if (!labelled.ok()) return Result(command, labelled, false);
  }
  const auto response = Update(path, "status", [&](const json& claim) -> std::optional<json> {
    const json status = claim.value("status", json::object());
    json out = json::object();
    if (!patch.image_id.empty()) out["imageID"] = patch.image_id;
    if (patch.capacity != Resources{}) out["capacity"] = ResourceList(patch.capacity);
    if (patch.allocatable != Resources{}) out["allocatable"] = ResourceList(patch.allocatable);
    const ConditionText text = ConditionReason(patch.reason, patch.condition);
    // Ready is the root of Launched, Registered and Initialized, as on Karpenter's NodeClaims.
    out["conditions"] =
        WithReady(MergeCondition(status.value("conditions", json::array()), patch.condition,
                                 patch.status, text.reason, text.message),
                  {"Launched", "Registered", "Initialized"});
    if (!patch.provider_id.empty()) out["providerID"] = patch.provider_id;
    if (!patch.node_name.empty()) out["nodeName"] = patch.node_name;
    return StatusPatch(status, out);
  });
  return Result(command, response, false);
}

std::vector<Event> KubeExecutor::PoolStatus(const Command& command,
                                            const PatchNodePoolStatus& patch) {
  const auto path = ResourceNamed("nodepools").ObjectPath("", patch.nodepool);
  const auto response = Update(path, "status", [&](const json& pool) -> std::optional<json> {
    const json status = pool.value("status", json::object());
    json out = json::object();
    json resources = ResourceList(patch.status.resources);
    resources["nodes"] = std::to_string(patch.status.nodes);
    out["resources"] = resources;
    out["nodes"] = patch.status.nodes;
    json conditions = status.value("conditions", json::array());
    if (patch.status.registration_healthy) {
      const bool healthy = *patch.status.registration_healthy;
      conditions = MergeCondition(conditions, "NodeRegistrationHealthy", healthy,
                                  healthy ? "NodeRegistrationHealthy" : "Unhealthy", "");
    }
    if (patch.status.validated) {
      conditions =
          MergeCondition(conditions, "ValidationSucceeded", true, "ValidationSucceeded", "");
      const std::string& unready = patch.status.nodeclass_unready;
      conditions = MergeCondition(conditions, "NodeClassReady", unready.empty(),
                                  unready.empty() ? "NodeClassReady" : unready,
                                  NodeClassUnreadyMessage(unready));
      // Ready is the root of the two, as on Karpenter's NodePools.
      conditions = WithReady(std::move(conditions), {"ValidationSucceeded", "NodeClassReady"});
    }
    out["conditions"] = conditions;
    return StatusPatch(status, out);
  });
  return Result(command, response, false);
}

std::vector<Event> KubeExecutor::ClassStatus(const Command& command,
                                             const PatchNodeClassStatus& patch) {
  const NodeClassResolution& status = patch.resolution;
  const bool ready = status.reason.empty();
  const auto path = "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/" + patch.nodeclass;
  const auto response = Update(path, "status", [&](const json& nodeclass) -> std::optional<json> {
    const json current = nodeclass.value("status", json::object());
    json out = json::object();
    json amis = json::array();
    for (const auto& ami : status.amis) {
      json requirements = json::array();
      if (!ami.arch.empty()) {
        requirements.push_back({{"key", label::kArch}, {"operator", "In"}, {"values", {ami.arch}}});
      }
      json item = {{"id", ami.id}, {"requirements", requirements}};
      if (!ami.name.empty()) item["name"] = ami.name;
      amis.push_back(item);
    }
    json subnets = json::array();
    for (const auto& subnet : status.subnets) {
      json item = {{"id", subnet.id}, {"zone", subnet.zone}};
      if (!subnet.zone_id.empty()) item["zoneID"] = subnet.zone_id;
      subnets.push_back(item);
    }
    json groups = json::array();
    for (const auto& group : status.security_groups) {
      json item = {{"id", group.id}};
      if (!group.name.empty()) item["name"] = group.name;
      groups.push_back(item);
    }
    out["amis"] = amis;
    out["subnets"] = subnets;
    out["securityGroups"] = groups;
    if (!status.instance_profile.empty()) out["instanceProfile"] = status.instance_profile;
    ConditionText text{"Ready", status.message};
    if (!ready) {
      text = ConditionReason(status.reason.empty() ? "NotReady" : status.reason, "NotReady");
      const std::string separator = text.message.empty() || status.message.empty() ? "" : ": ";
      text.message += separator + status.message;
    }
    out["conditions"] = MergeCondition(current.value("conditions", json::array()), "Ready", ready,
                                       text.reason, text.message);
    return StatusPatch(current, out);
  });
  return Result(command, response, false);
}

// ValidationSucceeded, and Ready as its root, as Karpenter's node overlay controller writes them.
std::vector<Event> KubeExecutor::OverlayStatus(const Command& command,
                                               const PatchNodeOverlayStatus& patch) {
  const auto path = ResourceNamed("nodeoverlays").ObjectPath("", patch.overlay);
  const auto response = Update(path, "status", [&](const json& overlay) -> std::optional<json> {
    const json current = overlay.value("status", json::object());
    const NodeOverlayStatus& s = patch.status;
    json out = json::object();
    out["conditions"] =
        WithReady(MergeCondition(current.value("conditions", json::array()), "ValidationSucceeded",
                                 s.valid, s.valid ? "ValidationSucceeded" : s.reason, s.message),
                  {"ValidationSucceeded"});
    return StatusPatch(current, out);
  });
  return Result(command, response, false);
}

// controller.kubernetes.io/pod-deletion-cost set or removed by a merge patch, on the pod of the
// UID the value was computed for; a pod already as wanted is not written.
std::vector<Event> KubeExecutor::PodDeletionCost(const Command& command,
                                                 const PatchPodDeletionCost& patch) {
  constexpr const char* kKey = "controller.kubernetes.io/pod-deletion-cost";
  const auto path = ResourceNamed("pods").ObjectPath(patch.ns, patch.name);
  bool replaced = false;
  const auto response = Update(path, "", [&](const json& pod) -> std::optional<json> {
    const json meta = pod.value("metadata", json::object());
    if (!patch.uid.empty() && meta.value("uid", "") != patch.uid) {
      replaced = true;
      return std::nullopt;
    }
    const json notes = meta.value("annotations", json::object());
    const auto have = notes.find(kKey);
    const std::string want = patch.cost ? std::to_string(*patch.cost) : "";
    if (!patch.cost && have == notes.end()) return std::nullopt;
    if (patch.cost && have != notes.end() && have->is_string() &&
        have->get<std::string>() == want) {
      return std::nullopt;
    }
    json out = json::object();
    out["metadata"]["annotations"][kKey] = patch.cost ? json(want) : json(nullptr);
    return out;
  });
  if (replaced || response.status == kNotFound) {
    return {CommandFailed{command.id, ErrorCode::kNotFound,
                          "pod " + patch.ns + "/" + patch.name + " is gone or was replaced"}};
  }
  return Result(command, response, false);
}

bool KubeExecutor::RecordEvent(const ObjectRef& object, const std::string& type,
                               const std::string& reason, const std::string& message) {
  const Instant now = WallClock();
  EventCorrelator::Write write;
  {
    std::lock_guard lock(events_mu_);
    write = events_->Correlate(options_.component, {object, type, reason, message}, now);
  }
  if (write.skip) return true;
  const std::string ns = object.ns.empty() ? options_.events_namespace : object.ns;
  const std::string events = "/api/v1/namespaces/" + ns + "/events";
  if (write.count > 1) {
    // The Event written before: its count and last timestamp, and the message (a combined
    // Event's changes). Gone (expired) answers 404: it is created again below.
    CheckLeader(nullptr);
    const json patch = {{"count", write.count},
                        {"lastTimestamp", Rfc3339Text(now)},
                        {"message", write.event.message}};
    const Response response =
        client_.Request("PATCH", events + "/" + write.name, patch.dump(), kMergePatch);
    if (response.ok()) return true;
    if (response.status != kNotFound) {
      if (IsRefusedWrite("PATCH", events, response.status) && options_.on_write_failed) {
        options_.on_write_failed();
      }
      spdlog::warn("event {} on {}: {}", reason, object.name, Describe(response));
      return false;
    }
  }
  json involved = {
      {"apiVersion", object.api_version}, {"kind", object.kind}, {"name", object.name}};
  if (!object.ns.empty()) involved["namespace"] = object.ns;
  const json event = {{"apiVersion", "v1"},
                      {"kind", "Event"},
                      {"metadata", {{"name", write.name}, {"namespace", ns}}},
                      {"involvedObject", involved},
                      {"reason", reason},
                      {"message", write.event.message},
                      {"type", type},
                      {"source", {{"component", options_.component}}},
                      {"reportingComponent", options_.component},
                      {"firstTimestamp", Rfc3339Text(write.first)},
                      {"lastTimestamp", Rfc3339Text(now)},
                      {"count", write.count}};
  const auto response = Send("POST", events, event);
  if (!response.ok()) spdlog::warn("event {} on {}: {}", reason, object.name, Describe(response));
  return response.ok();
}

}  // namespace tenon::kube
