// karpenter.k8s.aws/v1 EC2NodeClasses: the spec a launch uses, and the status its controller
// resolved (AMIs, subnets, security groups) that drift is measured against.
#include "adapters/kube/objects.h"

#include "adapters/kube/objects_parts.h"

#include <optional>
#include <set>

namespace tenon::kube {

using namespace parts;

namespace {

void ParseNodeClassMetadata(const YAML::Node& meta, NodeClass& nodeclass) {
  if (meta && meta["deletionTimestamp"]) {
    nodeclass.terminating = !meta["deletionTimestamp"].IsNull();
  }
  if (meta && meta["finalizers"] && meta["finalizers"].IsSequence()) {
    for (const auto& f : meta["finalizers"]) {
      if (f.IsScalar() && f.Scalar() == label::kNodeClassFinalizer) nodeclass.finalizer = true;
    }
  }
}

// The AMI family, the node role, the kubelet's pod limits, the user data and the tags.
void ParseNodeClassSpec(const YAML::Node& spec, NodeClass& nodeclass) {
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
  if (nodeclass.role.empty()) {
    throw ObjectError("EC2NodeClass " + nodeclass.name +
                      ": spec.role or spec.instanceProfile is required");
  }
  if (const auto& kubelet = spec["kubelet"]) {
    if (kubelet["maxPods"]) nodeclass.max_pods = kubelet["maxPods"].as<std::int32_t>();
    if (kubelet["podsPerCore"]) nodeclass.pods_per_core = kubelet["podsPerCore"].as<std::int32_t>();
  }
  if (spec["userData"]) nodeclass.user_data = Str(spec["userData"], "userData");
  if (const auto& tags = spec["tags"]; tags && tags.IsMap()) {
    for (const auto& tag : tags) {
      nodeclass.tags[tag.first.as<std::string>()] =
          Str(tag.second, "tags." + tag.first.as<std::string>());
    }
  }
}

// Where it can launch: its subnets' zones, and the architectures its AMIs' requirements name
// (an AMI without an arch requirement serves any).
void ParseLaunchDomains(const YAML::Node& status, NodeClass& nodeclass) {
  std::set<std::string> zones;
  for (const auto& subnet : status["subnets"]) {
    if (subnet["zone"]) zones.insert(Str(subnet["zone"], "status.subnets[].zone"));
  }
  std::set<std::string> archs;
  bool any_arch = false;
  for (const auto& ami : status["amis"]) {
    bool named = false;
    for (const auto& r : ami["requirements"]) {
      const Requirement req = ParseRequirement(r);
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
void ParseNodeClassStatus(const YAML::Node& status, NodeClass& nodeclass) {
  auto ids = [&](const char* field, std::vector<std::string>& out) {
    for (const auto& item : status[field]) {
      if (item["id"]) out.push_back(Str(item["id"], std::string("status.") + field + "[].id"));
    }
  };
  ids("amis", nodeclass.amis);
  ids("subnets", nodeclass.subnets);
  ids("securityGroups", nodeclass.security_groups);
  ParseLaunchDomains(status, nodeclass);
}

// The Ready condition its controller writes, if it wrote one.
std::optional<bool> ReadyCondition(const YAML::Node& status) {
  std::optional<bool> ready;
  if (!status || !status["conditions"]) return ready;
  for (const auto& c : status["conditions"]) {
    if (c["type"] && Str(c["type"], "type") == "Ready" && c["status"]) {
      ready = Str(c["status"], "status.conditions[Ready].status") == "True";
    }
  }
  return ready;
}

}  // namespace

NodeClass ParseNodeClass(const YAML::Node& object, bool needs_ready_condition) {
  NodeClass nodeclass;
  nodeclass.name = Name(object, "EC2NodeClass");
  ParseNodeClassMetadata(object["metadata"], nodeclass);
  const auto& spec = object["spec"];
  if (!spec) throw ObjectError("EC2NodeClass " + nodeclass.name + " has no spec");
  ParseNodeClassSpec(spec, nodeclass);
  if (const auto& status = object["status"]) ParseNodeClassStatus(status, nodeclass);
  // Without a Ready condition, ready only where no controller runs (scenario files, examples).
  if (const std::optional<bool> ready = ReadyCondition(object["status"])) {
    nodeclass.ready = *ready;
  } else if (needs_ready_condition) {
    nodeclass.ready = false;
  }
  return nodeclass;
}

}  // namespace tenon::kube
