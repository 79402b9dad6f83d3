// The queued objects resolved into the scenario's parts: pods admitted as the API server admits
// them, workloads, jobs and DaemonSets with their templates, budgets, storage, existing Nodes and
// NodeClaims, the NodePools and EC2NodeClasses, and the pods of a cluster dump adopted by their
// workloads.
#include "adapters/sim/manifests.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "adapters/kube/objects.h"
#include "adapters/sim/kube_scheduler.h"
#include "adapters/sim/manifests_parts.h"
#include "reducers/core.h"

namespace tenon::sim {
namespace {

// The priority classes every cluster has (scheduling.k8s.io, built in).
constexpr std::int32_t kSystemClusterCritical = 2'000'000'000;
constexpr std::int32_t kSystemNodeCritical = 2'000'001'000;
constexpr std::int64_t kReplicasMax = 1'000'000;
constexpr const char* kRunForAnnotation = "sim.tenon.io/run-for";
constexpr const char* kDefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class";

// What the API server's admission adds to a pod: its priority and its RuntimeClass's overhead
// and scheduling constraints.
struct Admission {
  std::map<std::string, std::int32_t> priorities{
      {"system-cluster-critical", kSystemClusterCritical},
      {"system-node-critical", kSystemNodeCritical}};
  std::optional<std::pair<std::string, std::int32_t>> global_default;
  std::map<std::string, YAML::Node> runtime_classes;

  YAML::Node Admit(const YAML::Node& pod_object) const {
    YAML::Node pod = YAML::Clone(pod_object);
    YAML::Node spec = pod["spec"];
    if (!spec || !spec.IsMap()) throw ScenarioError("spec: a pod needs a spec");
    // A container's limit stands in for a request it does not give (the API server's defaulting).
    for (const char* list : {"containers", "initContainers"}) {
      for (auto c : spec[list]) {
        if (!c["resources"] || !c["resources"]["limits"]) continue;
        YAML::Node resources = c["resources"];
        for (const auto& limit : resources["limits"]) {
          const std::string name = limit.first.as<std::string>();
          if (!resources["requests"] || !resources["requests"][name]) {
            resources["requests"][name] = YAML::Clone(limit.second);
          }
        }
      }
    }
    if (spec["priorityClassName"]) {
      const std::string name = Text(spec["priorityClassName"]);
      auto it = priorities.find(name);
      if (it == priorities.end()) {
        throw ScenarioError("spec.priorityClassName: no PriorityClass '" + name + "'");
      }
      if (!spec["priority"]) spec["priority"] = it->second;
    } else if (global_default && !spec["priority"]) {
      spec["priorityClassName"] = global_default->first;
      spec["priority"] = global_default->second;
    }
    if (spec["runtimeClassName"]) {
      const std::string name = Text(spec["runtimeClassName"]);
      auto it = runtime_classes.find(name);
      if (it == runtime_classes.end()) {
        throw ScenarioError("spec.runtimeClassName: no RuntimeClass '" + name + "'");
      }
      const YAML::Node& rc = it->second;
      if (rc["overhead"] && rc["overhead"]["podFixed"]) {
        spec["overhead"] = YAML::Clone(rc["overhead"]["podFixed"]);
      }
      if (const auto& scheduling = rc["scheduling"]; scheduling) {
        for (const auto& kv : scheduling["nodeSelector"]) {
          const std::string key = kv.first.as<std::string>();
          if (spec["nodeSelector"] && spec["nodeSelector"][key] &&
              Text(spec["nodeSelector"][key]) != kv.second.as<std::string>()) {
            throw ScenarioError("spec.nodeSelector." + key + ": conflicts with RuntimeClass '" +
                                name + "'");
          }
          spec["nodeSelector"][key] = kv.second.as<std::string>();
        }
        for (const auto& t : scheduling["tolerations"])
          spec["tolerations"].push_back(YAML::Clone(t));
      }
    }
    return pod;
  }
};

// A workload's pod template as a pod object of its namespace.
YAML::Node TemplatePodObject(const YAML::Node& workload, const std::string& ns) {
  const YAML::Node& tmpl = workload["spec"] ? workload["spec"]["template"] : YAML::Node();
  if (!tmpl || !tmpl.IsMap()) throw ScenarioError("spec.template: required");
  YAML::Node pod;
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  YAML::Node meta =
      tmpl["metadata"] ? YAML::Clone(tmpl["metadata"]) : YAML::Node(YAML::NodeType::Map);
  meta["name"] = "template";
  meta["namespace"] = ns;
  pod["metadata"] = meta;
  pod["spec"] = YAML::Clone(tmpl["spec"]);
  return pod;
}

std::int64_t Count(const YAML::Node& spec, const char* field, std::int64_t fallback) {
  if (!spec || !spec[field]) return fallback;
  std::int64_t value = 0;
  try {
    value = spec[field].as<std::int64_t>();
  } catch (const YAML::Exception&) {
    throw ScenarioError(std::string("spec.") + field + ": not an integer");
  }
  if (value < 0 || value > kReplicasMax) {
    throw ScenarioError(std::string("spec.") + field + ": must be 0.." +
                        std::to_string(kReplicasMax));
  }
  return value;
}

// minAvailable / maxUnavailable: an integer or a percent ("50%").
void BudgetValue(const YAML::Node& node, const char* field, std::optional<std::int64_t>& value,
                 bool& percent) {
  if (!node) return;
  std::string text = node.as<std::string>();
  percent = !text.empty() && text.back() == '%';
  if (percent) text.pop_back();
  std::size_t used = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || *value < 0 || (percent && *value > 100)) {
    throw ScenarioError(std::string("spec.") + field + ": not a count or a percent: '" +
                        node.as<std::string>() + "'");
  }
}

constexpr int kOwnerDepthMax = 8;  // Pod -> ReplicaSet -> Deployment, and a little more.

std::string NamespaceOf(const YAML::Node& object) {
  std::string ns = Meta(object, "namespace");
  return ns.empty() ? "default" : ns;
}

// The kind and name of the object's controlling owner (metadata.ownerReferences with
// controller: true), or empty.
std::pair<std::string, std::string> ControllerOf(const YAML::Node& object) {
  const auto& meta = object["metadata"];
  if (!meta || !meta["ownerReferences"]) return {};
  for (const auto& ref : meta["ownerReferences"]) {
    if (ref["controller"] && ref["controller"].as<bool>())
      return {Text(ref["kind"]), Text(ref["name"])};
  }
  return {};
}

// One queued object as it is resolved: its document and the names it goes by.
struct Object {
  const YAML::Node& yaml;
  std::string kind;
  std::string ns;  // "default" when the object names none.
  std::string name;
  std::string key;         // "Kind/namespace/name".
  Duration at;             // When the timeline applies it; 0: from the start.
  std::string adopted_by;  // A Pod's workload, when it is kept as the workload's replica.
};

// The scenario's parts as the queued objects are resolved into them, with what resolving one
// object reads of the others.
//
// A dump of a cluster (kubectl get -o yaml, tenon capture) holds a Deployment, its ReplicaSets
// and their pods. A pod made by a workload of the scenario is adopted when it runs on a Node of
// the scenario: it starts where it ran and counts among the workload's replicas. A DaemonSet's
// pod on such a Node stays too. The rest (pending pods, a Job's pods, the ReplicaSets) are left
// out: the workload's controller makes them anew.
struct Resolver {
  explicit Resolver(Scenario& scenario) : s(scenario) {}

  Scenario& s;
  Admission admission;
  std::map<std::string, std::string> controller_of;  // "Kind/ns/name" -> its controller's.
  std::set<std::string> kept;  // Pods kept from a dump: dropped if their Node is not here.
  std::map<std::string, std::string> defined;  // "Kind/namespace/name" -> where.
  std::string default_storage_class;

  void NoteController(const YAML::Node& object, Duration at) {
    if (at.value != 0) return;
    const std::string ns = NamespaceOf(object);
    auto [owner_kind, owner] = ControllerOf(object);
    controller_of[Text(object["kind"]) + "/" + ns + "/" + Meta(object, "name")] =
        owner_kind.empty() ? "" : owner_kind + "/" + ns + "/" + owner;
  }

  // What every pod's admission and every claim needs first, in any document order.
  void NoteAdmission(const YAML::Node& object, const std::string& where) {
    const std::string kind = Text(object["kind"]);
    const std::string name = Meta(object, "name");
    if (kind == "PriorityClass") {
      if (!object["value"])
        throw ScenarioError(where + ": PriorityClass " + name + ": value: required");
      auto value = object["value"].as<std::int32_t>();
      admission.priorities[name] = value;
      if (object["globalDefault"] && object["globalDefault"].as<bool>()) {
        admission.global_default = {name, value};
      }
    } else if (kind == "RuntimeClass") {
      admission.runtime_classes[name] = object;
    } else if (kind == "StorageClass") {
      const auto& meta = object["metadata"];
      if (meta && meta["annotations"] &&
          Text(meta["annotations"][kDefaultClassAnnotation]) == "true") {
        default_storage_class = name;
      }
    }
  }

  // Turns one object into the scenario's parts; ScenarioError names its place, kind and name.
  void Add(const YAML::Node& yaml, const std::string& where, Duration at) {
    Object o{yaml, Text(yaml["kind"]), NamespaceOf(yaml), Meta(yaml, "name"), "", at, ""};
    o.key = o.kind + "/" + o.ns + "/" + o.name;
    const std::string what = where + ": " + (o.kind.empty() ? "object" : o.kind) + " " +
                             (o.name.empty() ? "" : o.ns + "/" + o.name);
    try {
      AddChecked(o, where);
    } catch (const ScenarioError& e) {
      throw ScenarioError(what + ": " + e.what());
    } catch (const kube::ObjectError& e) {
      throw ScenarioError(what + ": " + e.what());
    } catch (const YAML::Exception& e) {
      throw ScenarioError(what + ": " + e.what());
    }
  }

  void AddChecked(Object& o, const std::string& where) {
    if (o.kind.empty()) throw ScenarioError("kind: required");
    if (IgnoredKind(o.kind)) return;
    if (MadeByAController(o)) {
      std::optional<std::string> adopted = Adopted(o);
      if (!adopted) return;
      o.adopted_by = *adopted;
      kept.insert(PodKey(o.ns, o.name));
    }
    if (o.name.empty()) throw ScenarioError("metadata.name: required");
    if (o.at.value == 0) {
      auto [it, fresh] = defined.try_emplace(o.key, where);
      if (!fresh) throw ScenarioError("defined twice (also at " + it->second + ")");
    }
    AddOfKind(o);
  }

  bool MadeByAController(const Object& o) const {
    if (o.kind != "Pod" && o.kind != "ReplicaSet" && o.kind != "Job") return false;
    if (o.at.value != 0) return false;
    auto up = controller_of.find(o.key);
    return up != controller_of.end() && controller_of.contains(up->second);
  }

  // The workload that made the object `key` ("Kind/ns/name"), through its ReplicaSet: the
  // topmost Deployment, ReplicaSet or StatefulSet of its controllers present here, or "".
  std::string WorkloadOf(const std::string& key) const {
    std::string workload;
    std::string at = key;
    for (int depth = 0; depth < kOwnerDepthMax; ++depth) {
      auto up = controller_of.find(at);
      if (up == controller_of.end() || up->second.empty() || !controller_of.contains(up->second))
        break;
      at = up->second;
      if (WorkloadKinds().contains(at.substr(0, at.find('/')))) workload = at;
    }
    return workload;
  }

  // Of the objects a controller of the scenario made, the pods that run as its replicas (named
  // as its pods are) or as a DaemonSet's: their workload ("" for a DaemonSet's), or nothing for
  // an object left out.
  std::optional<std::string> Adopted(const Object& o) const {
    if (o.kind != "Pod") return std::nullopt;
    const std::string adopted_by = WorkloadOf(o.key);
    const std::string owner = controller_of.at(o.key);
    const bool daemon = owner.starts_with("DaemonSet/");
    const std::string phase = Text(o.yaml["status"]["phase"]);
    const bool runs = !Text(o.yaml["spec"]["nodeName"]).empty() && phase != "Succeeded" &&
                      phase != "Failed" && !o.yaml["metadata"]["deletionTimestamp"];
    const std::string prefix = adopted_by.substr(adopted_by.rfind('/') + 1) + "-";
    if (!runs || (!daemon && (adopted_by.empty() || !o.name.starts_with(prefix)))) {
      return std::nullopt;
    }
    return adopted_by;
  }

  void AddOfKind(const Object& o) {
    // Read before any object, for every pod's admission.
    if (o.kind == "PriorityClass" || o.kind == "RuntimeClass") return;
    static const std::map<std::string, void (Resolver::*)(const Object&), std::less<>> adders{
        {"NodePool", &Resolver::AddNodePool},
        {"EC2NodeClass", &Resolver::AddNodeClass},
        {"NodeOverlay", &Resolver::AddNodeOverlay},
        {"Deployment", &Resolver::AddWorkload},
        {"ReplicaSet", &Resolver::AddWorkload},
        {"StatefulSet", &Resolver::AddWorkload},
        {"Job", &Resolver::AddJob},
        {"DaemonSet", &Resolver::AddDaemonSet},
        {"Pod", &Resolver::AddPod},
        {"Node", &Resolver::AddNode},
        {"NodeClaim", &Resolver::AddNodeClaim},
        {"PodDisruptionBudget", &Resolver::AddBudget},
        {"PersistentVolumeClaim", &Resolver::AddClaim},
        {"PersistentVolume", &Resolver::AddVolume},
        {"StorageClass", &Resolver::AddStorageClass},
        {"CSINode", &Resolver::AddCsiNode},
    };
    const auto adder = adders.find(o.kind);
    if (adder == adders.end()) {
      throw ScenarioError(
          "kind: not a kind a scenario takes (Deployment, ReplicaSet, "
          "StatefulSet, Job, DaemonSet, Pod, PodDisruptionBudget, "
          "PriorityClass, RuntimeClass, PersistentVolumeClaim, "
          "PersistentVolume, StorageClass, CSINode, Node, NodeClaim, "
          "NodePool, EC2NodeClass, NodeOverlay)");
    }
    (this->*adder->second)(o);
  }

  void AddNodePool(const Object& o) {
    NodePool pool = kube::ParseNodePool(o.yaml);
    if (o.at.value == 0) {
      s.nodepools.push_back(std::move(pool));
      return;
    }
    Action apply;
    apply.at = o.at;
    apply.kind = Action::Kind::kApplyNodePool;
    apply.nodepool = std::move(pool);
    s.actions.push_back(std::move(apply));
  }

  void AddNodeOverlay(const Object& o) {
    if (o.at.value != 0) throw ScenarioError("the timeline cannot apply a NodeOverlay yet");
    s.overlays.push_back(kube::ParseNodeOverlay(o.yaml));
  }

  void AddNodeClass(const Object& o) {
    if (o.at.value != 0) throw ScenarioError("the timeline cannot apply an EC2NodeClass yet");
    s.nodeclasses.push_back(kube::ParseNodeClass(o.yaml));
  }

  // A template applied by the timeline is one of its own, beside the one it replaces.
  static std::string TemplateKey(const Object& o) {
    return o.at.value == 0 ? o.key : o.key + "@" + std::to_string(o.at.value);
  }

  Pod TemplatePod(const Object& o) const {
    return kube::ParsePod(admission.Admit(TemplatePodObject(o.yaml, o.ns)));
  }

  void AddWorkload(const Object& o) {
    const std::string template_key = TemplateKey(o);
    Pod pod = TemplatePod(o);
    const YAML::Node& spec = o.yaml["spec"];
    if (spec["selector"] && !LabelsMatch(kube::ParseSelector(spec["selector"]), *pod.labels)) {
      throw ScenarioError("spec.selector: does not select spec.template.metadata.labels");
    }
    WorkloadStep step;
    step.at = o.at;
    step.ns = o.ns;
    step.name = o.name;
    step.replicas = Count(spec, "replicas", 1);
    step.requests = pod.requests;
    step.template_key = template_key;
    step.stateful = o.kind == "StatefulSet";
    for (const auto& vct : spec["volumeClaimTemplates"]) {
      ClaimTemplate claim{Meta(vct, "name"), Text(vct["spec"]["storageClassName"])};
      if (claim.name.empty())
        throw ScenarioError("spec.volumeClaimTemplates: metadata.name: required");
      if (claim.storage_class.empty()) claim.storage_class = default_storage_class;
      step.claim_templates.push_back(std::move(claim));
    }
    s.templates[template_key] = std::move(pod);
    s.workloads.push_back(std::move(step));
  }

  void AddJob(const Object& o) {
    const std::string template_key = TemplateKey(o);
    Pod pod = TemplatePod(o);
    Job job;
    job.at = o.at;
    job.ns = o.ns;
    job.name = o.name;
    const std::int64_t parallelism = Count(o.yaml["spec"], "parallelism", 1);
    job.pods = Count(o.yaml["spec"], "completions", parallelism);
    job.parallelism = parallelism;
    if (job.pods < 1) throw ScenarioError("spec.completions: must be at least 1");
    if (const auto& notes = o.yaml["metadata"]["annotations"]; notes && notes[kRunForAnnotation]) {
      job.run_for = kube::ParseDuration(Text(notes[kRunForAnnotation]));
      if (job.run_for.value <= 0) {
        throw ScenarioError(std::string("metadata.annotations.") + kRunForAnnotation +
                            ": must be > 0");
      }
    }
    job.requests = pod.requests;
    job.template_key = template_key;
    s.templates[template_key] = std::move(pod);
    s.jobs.push_back(std::move(job));
  }

  void AddDaemonSet(const Object& o) {
    if (o.at.value != 0) throw ScenarioError("the timeline cannot apply a DaemonSet yet");
    Pod pod = TemplatePod(o);
    DaemonSetSpec ds;
    ds.ns = o.ns;
    ds.name = o.name;
    ds.requests = pod.requests;
    ds.node_selector = pod.constraints->node_selector;
    ds.tolerations = pod.constraints->tolerations;
    ds.template_key = o.key;
    s.templates[o.key] = std::move(pod);
    s.daemonsets.push_back(std::move(ds));
  }

  void AddPod(const Object& o) {
    YAML::Node object = YAML::Clone(o.yaml);
    object["metadata"]["namespace"] = o.ns;
    Pod pod = kube::ParsePod(admission.Admit(object));
    pod.created = s.start + o.at;
    pod.uid = "uid-" + o.key;
    if (!pod.node_name.empty()) pod.phase = PodPhase::kRunning;
    if (!o.adopted_by.empty()) s.adopted[PodKey(o.ns, o.name)] = o.adopted_by;
    s.pods.push_back(std::move(pod));
  }

  void AddNode(const Object& o) {
    if (o.at.value != 0) throw ScenarioError("the timeline cannot apply a Node yet");
    Node node = kube::ParseNode(o.yaml);
    if (node.allocatable == Resources{}) {
      throw ScenarioError("status.allocatable: required for a Node the scenario starts with");
    }
    node.created = s.start;
    s.nodes.push_back(std::move(node));
  }

  void AddNodeClaim(const Object& o) {
    if (o.at.value != 0) throw ScenarioError("the timeline cannot apply a NodeClaim");
    NodeClaim claim = kube::ParseNodeClaim(o.yaml);
    if (claim.phase == ClaimPhase::kPending || claim.node_name.empty()) {
      return;  // Not running yet: the controller's own launch would make it anew.
    }
    s.nodeclaims.push_back(std::move(claim));
  }

  void AddBudget(const Object& o) {
    if (o.at.value != 0) throw ScenarioError("the timeline cannot apply a PodDisruptionBudget yet");
    Budget budget;
    budget.ns = o.ns;
    budget.name = o.name;
    budget.selector = kube::ParsePodDisruptionBudget(o.yaml).selector;
    const auto& spec = o.yaml["spec"];
    if (!spec) throw ScenarioError("spec: required");
    BudgetValue(spec["minAvailable"], "minAvailable", budget.min_available, budget.percent);
    bool max_percent = false;
    BudgetValue(spec["maxUnavailable"], "maxUnavailable", budget.max_unavailable, max_percent);
    if (budget.min_available.has_value() == budget.max_unavailable.has_value()) {
      throw ScenarioError("spec: exactly one of minAvailable, maxUnavailable");
    }
    budget.percent = budget.percent || max_percent;
    s.budgets.push_back(std::move(budget));
  }

  void AddClaim(const Object& o) {
    auto claim = kube::ParsePersistentVolumeClaim(o.yaml);
    claim.ns = o.ns;
    if (claim.storage_class.empty() && claim.volume_name.empty()) {
      claim.storage_class = default_storage_class;
    }
    s.claims.push_back(std::move(claim));
  }

  void AddVolume(const Object& o) { s.volumes.push_back(kube::ParsePersistentVolume(o.yaml)); }

  void AddStorageClass(const Object& o) {
    s.storage_classes.push_back(kube::ParseStorageClass(o.yaml));
  }

  void AddCsiNode(const Object& o) { s.csi_nodes.push_back(kube::ParseCsiNode(o.yaml)); }

  bool HasNode(const std::string& name) const {
    return std::any_of(s.nodes.begin(), s.nodes.end(),
                       [&](const Node& n) { return n.name == name; });
  }

  // References the API server would leave dangling are errors here: a simulation of them
  // would only show a pool that never launches.
  void CheckNodeClassRefs() const {
    for (const auto& pool : s.nodepools) {
      if (std::none_of(s.nodeclasses.begin(), s.nodeclasses.end(),
                       [&](const NodeClass& c) { return c.name == pool.nodeclass; })) {
        throw ScenarioError("NodePool " + pool.name + ": spec.template.spec.nodeClassRef: no " +
                            "EC2NodeClass '" + pool.nodeclass + "' in the scenario");
      }
    }
  }

  void DropKeptPodsWithoutNode() {
    std::erase_if(s.pods, [&](const Pod& pod) {
      const std::string key = PodKey(pod.ns, pod.name);
      if (!kept.contains(key) || HasNode(pod.node_name.str())) return false;
      s.adopted.erase(key);
      return true;
    });
  }

  void CheckNodeRefs() const {
    for (const auto& claim : s.nodeclaims) {
      const std::string where = "NodeClaim " + claim.name + ": ";
      if (std::none_of(s.nodepools.begin(), s.nodepools.end(),
                       [&](const NodePool& p) { return p.name == claim.nodepool; })) {
        throw ScenarioError(where + "metadata.labels." + label::kNodePool + ": no NodePool '" +
                            claim.nodepool + "' in the scenario");
      }
      if (!HasNode(claim.node_name)) {
        throw ScenarioError(where + "status.nodeName: no Node '" + claim.node_name +
                            "' in the scenario");
      }
    }
    for (const auto& pod : s.pods) {
      if (!pod.node_name.empty() && !HasNode(pod.node_name.str())) {
        throw ScenarioError("Pod " + pod.ns.str() + "/" + pod.name + ": spec.nodeName: no Node '" +
                            pod.node_name.str() + "' in the scenario");
      }
    }
  }
};

}  // namespace

void Manifests::Resolve(Scenario& s) {
  Resolver resolver(s);
  for (const Doc& d : docs_) resolver.NoteController(d.object, d.at);
  for (const Doc& d : docs_) resolver.NoteAdmission(d.object, d.where);
  for (const Doc& d : docs_) resolver.Add(d.object, d.where, d.at);
  resolver.CheckNodeClassRefs();
  resolver.DropKeptPodsWithoutNode();
  resolver.CheckNodeRefs();
  std::stable_sort(s.pods.begin(), s.pods.end(),
                   [](const Pod& a, const Pod& b) { return a.created < b.created; });
}

}  // namespace tenon::sim
