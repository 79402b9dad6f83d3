// The decoder reads an object's JSON straight into the domain types with the same per-kind
// parsers that read YAML manifests: an object read either way is the same value, every field
// the parsers know is read (whatever its key is called), and an error names the object and the
// field.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <string>
#include <variant>
#include <vector>

#include "adapters/kube/decode.h"
#include "adapters/kube/objects.h"

namespace tenon::kube {
namespace {

std::vector<Event> DecodeJson(const char* plural, const std::string& key, const std::string& json) {
  return Decode({&ResourceNamed(plural), Change::Type::kUpsert, key, json});
}

// The one event decoded, of type E; a failure (naming why an object was rejected) otherwise.
template <class E>
E Only(const std::vector<Event>& events) {
  EXPECT_EQ(events.size(), 1u);
  if (const E* event = std::get_if<E>(&events.at(0))) return *event;
  const auto* rejected = std::get_if<InputRejected>(&events.at(0));
  ADD_FAILURE() << (rejected ? rejected->reason : "another event");
  return E{};
}

// A pod that uses every field the parser reads. JSON is YAML too, so yaml-cpp reads the same
// text the decoder reads.
const std::string kPod = R"({"apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1",
    "creationTimestamp": "2026-01-01T00:00:10Z",
    "labels": {"app": "web", "env": "prod", "image": "v2"},
    "annotations": {"controller.kubernetes.io/pod-deletion-cost": "-5",
      "karpenter.sh/do-not-disrupt": "30m", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
    "ownerReferences": [{"kind": "ConfigMap", "name": "c"},
      {"kind": "ReplicaSet", "name": "web-abc", "controller": true}],
    "managedFields": [{"manager": "kubectl"}]},
  "spec": {"nodeName": "node-a", "priorityClassName": "high", "priority": 1000,
    "terminationGracePeriodSeconds": 45,
    "nodeSelector": {"kubernetes.io/os": "linux", "env": "prod"},
    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"},
      {"key": "t", "value": "v", "effect": ""}],
    "affinity": {
      "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 7,
          "preference": {"matchExpressions": [{"key": "arch", "operator": "NotIn",
            "values": ["arm64"], "minValues": 1}]}}]},
      "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone",
          "labelSelector": {"matchLabels": {"app": "web"}}, "namespaces": ["shop"],
          "matchLabelKeys": ["pod-template-hash"]}],
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3,
          "podAffinityTerm": {"topologyKey": "host", "namespaceSelector": {}}}]}},
    "topologySpreadConstraints": [{"maxSkew": 2, "topologyKey": "zone",
      "whenUnsatisfiable": "DoNotSchedule", "minDomains": 3, "nodeTaintsPolicy": "Honor",
      "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}],
    "containers": [{"name": "app", "image": "web:1", "env": [{"name": "A", "value": "1"}],
      "resources": {"requests": {"cpu": "500m", "memory": "512Mi", "nvidia.com/gpu": "1"}},
      "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP", "hostIP": "0.0.0.0"}]}],
    "initContainers": [{"name": "proxy", "restartPolicy": "Always",
      "resources": {"requests": {"cpu": "100m"}}}],
    "overhead": {"memory": "64Mi"},
    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-1"}}]},
  "status": {"phase": "Running", "nominatedNodeName": "node-b",
    "conditions": [{"type": "PodScheduled", "status": "True"}]}})";

TEST(KubeDecodeJson, APodReadsAsItsYamlReads) {
  const Pod from_json = Only<PodUpserted>(DecodeJson("pods", "shop/web-1", kPod)).pod;
  EXPECT_EQ(from_json, ParsePod(YAML::Load(kPod)));
  EXPECT_EQ(from_json.ns, "shop");
  EXPECT_EQ(from_json.owner_kind, "ReplicaSet");
  EXPECT_EQ(from_json.priority, 1000);
  EXPECT_EQ(from_json.deletion_cost, -5);
  EXPECT_EQ(from_json.constraints->node_affinity_preferred.at(0).weight, 7);
  EXPECT_EQ(from_json.constraints->host_ports.at(0).port, 8080);
  EXPECT_EQ(from_json.constraints->volume_claims, std::vector<std::string>{"data-web-1"});
  // Labels and selectors keep every key, even ones named like container fields.
  EXPECT_EQ(from_json.labels->at("env"), "prod");
  EXPECT_EQ(from_json.labels->at("image"), "v2");
  EXPECT_EQ(from_json.constraints->node_selector.at("env"), "prod");
}

TEST(KubeDecodeJson, EveryKindReadsAsItsYamlReads) {
  const std::string node = R"({"metadata": {"name": "n1", "labels": {"zone": "a"},
      "annotations": {"karpenter.sh/do-not-disrupt": "true"}},
    "spec": {"providerID": "aws:///a/i-1", "taints": [{"key": "k", "effect": "NoExecute"}]},
    "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"},
      "volumesAttached": [{"name": "vol-1"}], "conditions": [{"type": "Ready", "status": "False"}]}})";
  EXPECT_EQ(Only<NodeUpserted>(DecodeJson("nodes", "n1", node)).node, ParseNode(YAML::Load(node)));

  const std::string pool = R"({"metadata": {"name": "default"}, "spec": {"weight": 10,
    "template": {"metadata": {"labels": {"team": "a"}}, "spec": {
      "nodeClassRef": {"name": "default"}, "expireAfter": "720h",
      "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}],
      "taints": [{"key": "a", "value": "b", "effect": "NoSchedule"}],
      "startupTaints": [{"key": "c", "effect": "NoSchedule"}]}},
    "limits": {"cpu": "1000", "memory": "1000Gi", "nodes": "5"},
    "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s",
      "budgets": [{"nodes": "10%", "reasons": ["Empty"]},
        {"nodes": "0", "schedule": "0 9 * * 1-5", "duration": "8h"}]}}})";
  EXPECT_EQ(Only<NodePoolUpserted>(DecodeJson("nodepools", "default", pool)).nodepool,
            ParseNodePool(YAML::Load(pool)));

  const std::string nodeclass = R"({"metadata": {"name": "default",
      "finalizers": ["karpenter.k8s.aws/termination"]},
    "spec": {"amiSelectorTerms": [{"alias": "al2023@latest"}], "role": "r",
      "kubelet": {"maxPods": 50}, "tags": {"env": "prod"}},
    "status": {"amis": [{"id": "ami-1", "requirements": [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}],
      "subnets": [{"id": "s-1", "zone": "a"}], "securityGroups": [{"id": "sg-1"}],
      "conditions": [{"type": "Ready", "status": "True"}]}})";
  const NodeClass parsed_class =
      Only<NodeClassUpserted>(DecodeJson("ec2nodeclasses", "default", nodeclass)).nodeclass;
  EXPECT_EQ(parsed_class, ParseNodeClass(YAML::Load(nodeclass), true));
  EXPECT_EQ(parsed_class.tags.at("env"), "prod");

  const std::string ds = R"({"metadata": {"name": "agent", "namespace": "kube-system"},
    "spec": {"template": {"spec": {"containers": [{"resources": {"requests": {"cpu": "50m"}}}],
      "tolerations": [{"operator": "Exists"}]}}}})";
  EXPECT_EQ(Only<DaemonSetUpserted>(DecodeJson("daemonsets", "kube-system/agent", ds)).daemonset,
            ParseDaemonSet(YAML::Load(ds)));

  const std::string pdb = R"({"metadata": {"name": "web", "namespace": "shop"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}}, "status": {"disruptionsAllowed": 1}})";
  EXPECT_EQ(
      Only<PodDisruptionBudgetUpserted>(DecodeJson("poddisruptionbudgets", "shop/web", pdb)).pdb,
      ParsePodDisruptionBudget(YAML::Load(pdb)));

  const std::string pv = R"({"metadata": {"name": "pv-1"}, "spec": {"csi": {"driver": "ebs"},
    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
      {"key": "zone", "operator": "In", "values": ["a"]}]}]}}}})";
  EXPECT_EQ(Only<PersistentVolumeUpserted>(DecodeJson("persistentvolumes", "pv-1", pv)).volume,
            ParsePersistentVolume(YAML::Load(pv)));

  const std::string sc = R"({"metadata": {"name": "gp3"}, "provisioner": "ebs",
    "volumeBindingMode": "WaitForFirstConsumer",
    "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]})";
  EXPECT_EQ(Only<StorageClassUpserted>(DecodeJson("storageclasses", "gp3", sc)).storage_class,
            ParseStorageClass(YAML::Load(sc)));

  const std::string csi = R"({"metadata": {"name": "n1"},
    "spec": {"drivers": [{"name": "ebs", "allocatable": {"count": 25}}]}})";
  EXPECT_EQ(Only<CsiNodeUpserted>(DecodeJson("csinodes", "n1", csi)).csi_node,
            ParseCsiNode(YAML::Load(csi)));
}

// An error names the object and the field; a lookup into a value of the wrong shape is worded
// as for YAML and names the object by its key.
TEST(KubeDecodeJson, ErrorsNameTheObjectAndTheField) {
  auto reason = [](const char* plural, const std::string& json) {
    return Only<InputRejected>(DecodeJson(plural, "shop/x", json)).reason;
  };
  const std::string weight = reason(
      "nodepools",
      R"({"metadata": {"name": "x"}, "spec": {"weight": "heavy", "template": {"spec": {}}}})");
  EXPECT_NE(weight.find("NodePool x: spec.weight: not a 32-bit integer"), std::string::npos)
      << weight;
  const std::string cpu = reason("pods", R"({"metadata": {"name": "x"}, "spec": {"containers":
    [{"resources": {"requests": {"cpu": "lots"}}}]}})");
  EXPECT_EQ(cpu, "Pod x: requests.cpu: invalid cpu quantity 'lots'");
  const std::string tolerations =
      reason("pods", R"({"metadata": {"name": "x"}, "spec": {"tolerations": {"key": "k"}}})");
  EXPECT_EQ(tolerations, "Pod x: spec.tolerations must be a list");
  const std::string shape = reason("pods", R"({"metadata": "x"})");
  EXPECT_EQ(shape, "shop/x: operator[] call on a scalar (key: \"name\")");
  const std::string missing = reason("daemonsets", R"({"metadata": {"name": "x"}})");
  EXPECT_EQ(missing, "DaemonSet x: invalid node; first invalid key: \"spec\"");
}

// A static NodePool (spec.replicas) is read with Karpenter's rules for one: a watch event that
// breaks them is rejected with the rule's words, and kept as input rejected.
TEST(KubeDecodeJson, StaticNodePoolsFollowKarpentersRules) {
  const std::string head = R"({"metadata": {"name": "s"}, "spec": {"template": {"spec":
    {"nodeClassRef": {"name": "default"}}}, "replicas": 3)";
  const NodePool pool =
      Only<NodePoolUpserted>(DecodeJson("nodepools", "s", head + R"(, "limits": {"nodes": "5"}}})"))
          .nodepool;
  EXPECT_EQ(pool.replicas, 3);
  EXPECT_EQ(pool.limits.nodes, 5);
  auto reason = [&](const std::string& rest) {
    return Only<InputRejected>(DecodeJson("nodepools", "s", head + rest)).reason;
  };
  EXPECT_EQ(reason(R"(, "weight": 10}})"),
            "NodePool s: 'weight' is not supported on static NodePools");
  EXPECT_EQ(reason(R"(, "limits": {"cpu": "10"}}})"),
            "NodePool s: only 'limits.nodes' is supported on static NodePools");
  const std::string negative =
      Only<InputRejected>(
          DecodeJson("nodepools", "s", R"({"metadata": {"name": "s"}, "spec": {"template": {"spec":
    {"nodeClassRef": {"name": "default"}}}, "replicas": -1}})"))
          .reason;
  EXPECT_EQ(negative, "NodePool s: spec.replicas must be 0 or more");
}

// The same mistakes in YAML give the same messages, with the line where yaml-cpp knows it.
TEST(KubeDecodeJson, YamlErrorsReadTheSame) {
  auto message = [](auto parse, const std::string& yaml) {
    try {
      parse(YAML::Load(yaml));
    } catch (const ObjectError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([](const YAML::Node& n) { return ParseNodePool(n); },
                    "metadata: {name: x}\nspec:\n  weight: heavy\n"),
            "NodePool x: line 3: spec.weight: not a 32-bit integer");
  EXPECT_EQ(message([](const YAML::Node& n) { return ParsePod(n); },
                    "metadata: {name: x}\nspec: {tolerations: {key: k}}\n"),
            "Pod x: spec.tolerations must be a list");
}

}  // namespace
}  // namespace tenon::kube
