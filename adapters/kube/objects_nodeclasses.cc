// karpenter.k8s.aws/v1 EC2NodeClasses: the spec a launch uses, and the status its controller
// resolved (AMIs, subnets, security groups) that drift is measured against.
#include "adapters/kube/objects.h"

#include "adapters/kube/objects_parts.h"

#include <optional>
#include <set>

namespace tenon::kube {

using namespace parts;

namespace {

template <class V>
void ParseNodeClassMetadata(const V& meta, NodeClass& nodeclass) {
  if (meta && meta["deletionTimestamp"]) {
    nodeclass.terminating = !meta["deletionTimestamp"].IsNull();
  }
  if (meta && meta["finalizers"] && meta["finalizers"].IsSequence()) {
    for (const V f : meta["finalizers"].Elements()) {
      if (f.IsScalar() && f.Text() == label::kNodeClassFinalizer) nodeclass.finalizer = true;
    }
  }
}

// The AMI family, the node role, the kubelet's pod limits, the user data and the tags.
template <class V>
void ParseNodeClassSpec(const V& spec, NodeClass& nodeclass) {
  if (spec["amiFamily"]) nodeclass.ami_family = Str(spec["amiFamily"], "amiFamily");
  if (spec["amiSelectorTerms"] && spec["amiSelectorTerms"][0] &&
      spec["amiSelectorTerms"][0]["alias"]) {
    auto alias = Str(spec["amiSelectorTerms"][0]["alias"], "amiSelectorTerms.alias");
    if (nodeclass.ami_family.empty()) nodeclass.ami_family = alias.substr(0, alias.find('@'));
  }
  if (spec["role"]) nodeclass.role = Str(spec["role"], "role");
  if (spec["instanceProfile"] && nodeclass.role.empty()) {
    nodeclass.role = Str(spec["instanceProfile"], "instanceProfile");
  }
  if (nodeclass.role.empty()) throw ObjectError("spec.role or spec.instanceProfile is required");
  if (const V kubelet = spec["kubelet"]) {
    if (kubelet["maxPods"]) {
      nodeclass.max_pods = Int<std::int32_t>(kubelet["maxPods"], "spec.kubelet.maxPods");
    }
    if (kubelet["podsPerCore"]) {
      nodeclass.pods_per_core =
          Int<std::int32_t>(kubelet["podsPerCore"], "spec.kubelet.podsPerCore");
    }
  }
  if (spec["userData"]) nodeclass.user_data = Str(spec["userData"], "userData");
  for (const auto& [key, tag] : spec["tags"].Entries()) {
    const std::string name(key);
    nodeclass.tags[name] = Str(tag, "tags." + name);
  }
}

// Where it can launch: its subnets' zones, and the architectures its AMIs' requirements name
// (an AMI without an arch requirement serves any).
template <class V>
void ParseLaunchDomains(const V& status, NodeClass& nodeclass) {
  std::set<std::string> zones;
  for (const V subnet : List(status["subnets"], "status.subnets")) {
    if (subnet["zone"]) zones.insert(Str(subnet["zone"], "status.subnets[].zone"));
  }
  std::set<std::string> archs;
  bool any_arch = false;
  for (const V ami : List(status["amis"], "status.amis")) {
    bool named = false;
    for (const Requirement& req : ParseRequirements(ami["requirements"], "requirements")) {
      if (req.key != label::kArch || req.op != RequirementOp::kIn) continue;
      archs.insert(req.values.begin(), req.values.end());
      named = true;
    }
    any_arch = any_arch || !named;
  }
  nodeclass.zones.assign(zones.begin(), zones.end());
  if (!any_arch) nodeclass.archs.assign(archs.begin(), archs.end());
}

// Status, as the EC2NodeClass controller resolved the selector terms: the ids drift compares
// a NodeClaim's instance against.
template <class V>
void ParseNodeClassStatus(const V& status, NodeClass& nodeclass) {
  auto ids = [&](const char* field, std::vector<std::string>& out) {
    const std::string path = std::string("status.") + field;
    for (const V item : List(status[field], path)) {
      if (item["id"]) out.push_back(Str(item["id"], path + "[].id"));
    }
  };
  ids("amis", nodeclass.amis);
  ids("subnets", nodeclass.subnets);
  ids("securityGroups", nodeclass.security_groups);
  ParseLaunchDomains(status, nodeclass);
}

// The Ready condition its controller writes, if it wrote one.
template <class V>
std::optional<bool> ReadyCondition(const V& status) {
  std::optional<bool> ready;
  if (!status || !status["conditions"]) return ready;
  for (const V c : List(status["conditions"], "status.conditions")) {
    if (c["type"] && Str(c["type"], "type") == "Ready" && c["status"]) {
      ready = Str(c["status"], "status.conditions[Ready].status") == "True";
    }
  }
  return ready;
}

template <class V>
NodeClass ParseNodeClassFrom(const V& object, bool needs_ready_condition) {
  NodeClass nodeclass;
  nodeclass.name = Name(object, "EC2NodeClass");
  const V spec = object["spec"];
  if (!spec) throw ObjectError("EC2NodeClass " + nodeclass.name + " has no spec");
  return Named("EC2NodeClass " + nodeclass.name, [&] {
    ParseNodeClassMetadata(object["metadata"], nodeclass);
    ParseNodeClassSpec(spec, nodeclass);
    if (const V status = object["status"]) ParseNodeClassStatus(status, nodeclass);
    // Without a Ready condition, ready only where no controller runs (scenario files, examples).
    if (const std::optional<bool> ready = ReadyCondition(object["status"])) {
      nodeclass.ready = *ready;
    } else if (needs_ready_condition) {
      nodeclass.ready = false;
    }
    return nodeclass;
  });
}

}  // namespace

NodeClass ParseNodeClass(const YAML::Node& object, bool needs_ready_condition) {
  return ParseNodeClassFrom(YamlValue(object), needs_ready_condition);
}

NodeClass ParseNodeClass(const JsonValue& object, bool needs_ready_condition) {
  return ParseNodeClassFrom(object, needs_ready_condition);
}

}  // namespace tenon::kube
