// Scenarios made of Kubernetes objects: what `tenon simulate` reads from a user's manifests,
// and the errors it gives for what the API server would refuse.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "adapters/sim/scenario.h"
#include "adapters/sim/simulator.h"
#include "tests/support/scenario_objects.h"
#include "tests/support/temp_dir.h"

namespace tenon::testing {
namespace {

const std::string kHead = R"(kind: Scenario
name: t
catalog: )" TENON_SOURCE_DIR R"(/examples/catalogs/small.json
)";

const std::string kPool = kDefaultPoolAndClass;

sim::Scenario Parse(const std::string& text) {
  return sim::ParseScenario(text, "/");
}

std::string ErrorOf(const std::string& text) {
  try {
    Parse(text);
  } catch (const sim::ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Manifests, ADeploymentsTemplateKeepsEveryConstraint) {
  const auto s = Parse(kHead + kPool + R"(---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: 250m}}
scheduling:
  nodeSelector: {sandbox: "yes"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, tier: front}}
    spec:
      priorityClassName: high
      runtimeClassName: kata
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["2"]}]
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {matchLabels: {app: web}}
              topologyKey: kubernetes.io/hostname
      topologySpreadConstraints:
        - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule,
           labelSelector: {matchLabels: {app: web}}, minDomains: 3}
      initContainers:
        - {name: init, image: x, resources: {requests: {cpu: "2"}}}
      containers:
        - name: web
          image: x
          ports: [{containerPort: 80, hostPort: 8080}]
          resources: {limits: {cpu: "1", memory: 1Gi}}
)");
  ASSERT_EQ(s.workloads.size(), 1u);
  const sim::WorkloadStep& step = s.workloads[0];
  EXPECT_EQ(step.ns, "shop");
  EXPECT_EQ(step.replicas, 3);
  const Pod& pod = s.templates.at(step.template_key);
  // Limits stand in for requests; the init container's 2 CPUs are the peak; overhead added.
  EXPECT_EQ(pod.requests.cpu, Millicores{2250});
  EXPECT_EQ(pod.requests.memory, Bytes{1024 * kMebibyte.value});
  EXPECT_EQ(pod.priority, 1000);
  EXPECT_EQ(pod.constraints->node_selector.at("sandbox"), "yes");
  EXPECT_EQ(pod.constraints->node_affinity_required.size(), 1u);
  EXPECT_EQ(pod.constraints->pod_anti_affinity_required.size(), 1u);
  ASSERT_EQ(pod.constraints->topology_spread.size(), 1u);
  EXPECT_EQ(pod.constraints->topology_spread[0].min_domains, 3);
  EXPECT_EQ(pod.constraints->host_ports.size(), 1u);
  EXPECT_EQ(pod.labels->at("tier"), "front");
}

TEST(Manifests, WorkloadsOfEveryKindAndAListAsKubectlWritesIt) {
  const auto s = Parse(kHead + R"(timeline:
  - {at: 5m, scale: {kind: StatefulSet, name: db, replicas: 5}}
  - {at: 9m, delete: {name: web}}
)" + kPool + R"(---
apiVersion: v1
kind: List
items:
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: c, image: x}]}
  - apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: db}
    spec:
      replicas: 2
      selector: {matchLabels: {app: db}}
      template:
        metadata: {labels: {app: db}}
        spec: {containers: [{name: c, image: x}]}
      volumeClaimTemplates:
        - metadata: {name: data}
          spec: {accessModes: [ReadWriteOnce]}
  - apiVersion: storage.k8s.io/v1
    kind: StorageClass
    metadata:
      name: gp3
      annotations: {storageclass.kubernetes.io/is-default-class: "true"}
    provisioner: ebs.csi.aws.com
    volumeBindingMode: WaitForFirstConsumer
  - apiVersion: batch/v1
    kind: Job
    metadata: {name: batch, annotations: {sim.tenon.io/run-for: 7m}}
    spec:
      completions: 6
      parallelism: 2
      template: {spec: {restartPolicy: Never, containers: [{name: c, image: x}]}}
  - apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: agent, namespace: kube-system}
    spec:
      selector: {matchLabels: {app: agent}}
      template:
        metadata: {labels: {app: agent}}
        spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]}
  - apiVersion: policy/v1
    kind: PodDisruptionBudget
    metadata: {name: web}
    spec: {maxUnavailable: "25%", selector: {matchLabels: {app: web}}}
  - apiVersion: v1
    kind: Service
    metadata: {name: web}
    spec: {ports: [{port: 80}]}
)");
  ASSERT_EQ(s.workloads.size(), 4u);  // db, web (by name), then the two timeline entries.
  EXPECT_EQ(s.workloads[0].name, "db");
  EXPECT_TRUE(s.workloads[0].stateful);
  EXPECT_FALSE(s.workloads[1].stateful);
  ASSERT_EQ(s.workloads[0].claim_templates.size(), 1u);
  EXPECT_EQ(s.workloads[0].claim_templates[0].storage_class, "gp3");  // The default class.
  EXPECT_EQ(s.workloads[2].at, Duration{5 * kMinute.value});
  EXPECT_EQ(s.workloads[2].replicas, 5);
  EXPECT_EQ(s.workloads[3].replicas, 0);  // Deleted: its pods go.
  ASSERT_EQ(s.jobs.size(), 1u);
  EXPECT_EQ(s.jobs[0].pods, 6);
  EXPECT_EQ(s.jobs[0].parallelism, 2);
  EXPECT_EQ(s.jobs[0].run_for, Duration{7 * kMinute.value});
  ASSERT_EQ(s.daemonsets.size(), 1u);
  EXPECT_EQ(s.daemonsets[0].requests.cpu, Millicores{100});
  ASSERT_EQ(s.budgets.size(), 1u);
  EXPECT_TRUE(s.budgets[0].percent);
  EXPECT_EQ(s.budgets[0].max_unavailable, 25);
  EXPECT_EQ(s.storage_classes.size(), 1u);
}

TEST(Manifests, AFolderIsReadAsKubectlApplyReadsIt) {
  const auto dir = std::filesystem::temp_directory_path() / "tenon-manifests-folder";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "00-scenario.yaml") << kHead;
  std::ofstream(dir / "10-pools.yaml") << kPool;
  std::ofstream(dir / "20-pod.json")
      << R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
             "spec": {"containers": [{"name": "c", "image": "x"}]}})";
  std::ofstream(dir / "README.md") << "not read";
  const auto s = sim::LoadScenario(dir);
  EXPECT_EQ(s.nodepools.size(), 1u);
  ASSERT_EQ(s.pods.size(), 1u);
  EXPECT_EQ(s.pods[0].name, "p");
  std::filesystem::remove_all(dir);
}

TEST(Manifests, WhatTheApiServerWouldRefuseIsAnErrorNamingItsPlace) {
  EXPECT_NE(ErrorOf(kHead + "durration: 5m\n" + kPool)
                .find("line 4: durration: unknown field (did you mean 'duration'?)"),
            std::string::npos);
  const std::string pod = R"(---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: x}]}
)";
  EXPECT_NE(ErrorOf(kHead + kPool + pod + pod).find("defined twice"), std::string::npos);
  EXPECT_NE(ErrorOf(kHead + kPool + R"(---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {priorityClassName: gold, containers: [{name: c, image: x}]}
)")
                .find("Pod default/p: spec.priorityClassName: no PriorityClass 'gold'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kHead + kPool + R"(---
apiVersion: v1
kind: Pod
metadata: {name: P_1}
spec: {containers: [{name: c, image: x}]}
)")
                .find("not a Kubernetes name"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kHead + kPool + R"(---
apiVersion: apps/v1
kind: CronJob
metadata: {name: c}
)")
                .find("CronJob default/c: kind: not a kind a scenario takes"),
            std::string::npos);
  std::string pool = kPool;
  pool.replace(pool.rfind("name: default"), 13, "name: missing");
  EXPECT_NE(ErrorOf(kHead + pool).find("no EC2NodeClass 'missing'"), std::string::npos);
  EXPECT_NE(ErrorOf(kHead + "timeline:\n  - {at: 1m, scale: {name: nope, replicas: 1}}\n" + kPool)
                .find("timeline[0].scale: no Deployment default/nope in the scenario"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kHead + "timeline:\n  - {at: 1m, scael: {name: nope}}\n" + kPool)
                .find("did you mean 'scale'?"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kHead + kPool + R"(---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: x}]}
)")
                .find("spec.selector: does not select"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kHead + "timeline:\n  - {at: 1m, cordon: {name: ghost}}\n" + kPool)
                .find("timeline: cordon ghost: no Node of that name in the scenario"),
            std::string::npos);
  EXPECT_NE(ErrorOf(kHead + "---\n" + kHead).find("a second Scenario document"), std::string::npos);
  EXPECT_NE(ErrorOf(kPool).find("no Scenario document"), std::string::npos);
}

// kubectl cordon in the timeline: the node lifecycle controller's unschedulable taint goes on
// the Node, so a pod that would fit there waits for capacity the controller launches, and
// uncordon takes the taint off again. The first pod must not be disrupted, or consolidation
// would move it onto the uncordoned node.
TEST(Manifests, ACordonedNodeTakesNoNewPods) {
  const std::string node = R"(---
apiVersion: v1
kind: Node
metadata:
  name: static-1
  labels: {kubernetes.io/hostname: static-1, topology.kubernetes.io/zone: us-east-1a}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "50"}
  conditions: [{type: Ready, status: "True"}]
)";
  const std::string timeline = R"(duration: 6m
timeline:
  - {at: 30s, cordon: {kind: Node, name: static-1}}
  - at: 1m
    apply: {apiVersion: v1, kind: Pod,
            metadata: {name: while-cordoned, annotations: {karpenter.sh/do-not-disrupt: "true"}},
            spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]}}
  - {at: 3m, uncordon: {name: static-1}}
  - at: 4m
    apply: {apiVersion: v1, kind: Pod, metadata: {name: after},
            spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "3"}}}]}}
)";
  const sim::Scenario scenario = Parse(kHead + timeline + kPool + node);
  TempDir dir;
  sim::SimulateOptions options;
  options.log_dir = dir.path() / "log";
  std::map<std::string, std::string> node_of;
  bool tainted = true;
  options.on_end = [&](const sim::World& world) {
    for (const auto& [key, pod] : world.pods()) node_of[pod.name] = pod.node_name.str();
    const auto& taints = world.nodes().at("static-1").taints;
    tainted = std::any_of(taints.begin(), taints.end(), [](const Taint& t) {
      return t.key == "node.kubernetes.io/unschedulable";
    });
  };
  sim::Simulate(scenario, options);
  EXPECT_FALSE(node_of["while-cordoned"].empty());
  EXPECT_NE(node_of["while-cordoned"], "static-1");
  EXPECT_EQ(node_of["after"], "static-1");
  EXPECT_FALSE(tainted);
}

// kubectl patch --type merge in the timeline: the object as applied before, with the patch
// merged in. Here one patch removes (null) a NodePool requirement no instance type meets, and
// another raises a Deployment's replicas, so every pod is bound once they apply. A patch of an
// object the scenario does not have by then is an error.
TEST(Manifests, AMergePatchChangesAnAppliedObject) {
  // The default pool (its spec is the constant's last lines), with a requirement appended.
  const std::string objects = kPool +
                              "      requirements:\n"
                              "        - {key: node.kubernetes.io/instance-type, operator: In, "
                              "values: [x9.nothing]}\n" +
                              R"(---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]
)";
  const std::string timeline = R"(duration: 4m
timeline:
  - at: 1m
    patch:
      kind: NodePool
      name: default
      merge: {spec: {template: {spec: {requirements: null}}}}
  - {at: 1m, patch: {kind: Deployment, namespace: shop, name: web, merge: {spec: {replicas: 3}}}}
)";
  const sim::Scenario scenario = Parse(kHead + timeline + objects);
  TempDir dir;
  sim::SimulateOptions options;
  options.log_dir = dir.path() / "log";
  std::size_t bound = 0, pods = 0;
  options.on_end = [&](const sim::World& world) {
    for (const auto& [key, pod] : world.pods()) {
      ++pods;
      if (!pod.node_name.str().empty()) ++bound;
    }
  };
  sim::Simulate(scenario, options);
  EXPECT_EQ(pods, 3u);
  EXPECT_EQ(bound, 3u);
  // Without the patches nothing is bound: the requirement is what kept the pod pending.
  const sim::Scenario unpatched = Parse(kHead + "duration: 4m\n" + objects);
  TempDir other;
  options.log_dir = other.path() / "log";
  bound = pods = 0;
  sim::Simulate(unpatched, options);
  EXPECT_EQ(pods, 1u);
  EXPECT_EQ(bound, 0u);
  EXPECT_NE(ErrorOf(kHead +
                    "timeline:\n  - {at: 1m, patch: {kind: Deployment, name: web, merge: "
                    "{spec: {replicas: 2}}}}\n" +
                    objects)
                .find("timeline[0].patch: no Deployment web in the scenario by then"),
            std::string::npos);
}

}  // namespace
}  // namespace tenon::testing
