#include "adapters/sim/manifests.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "adapters/kube/objects.h"
#include "adapters/sim/kube_scheduler.h"
#include "adapters/sim/schema.h"
#include "reducers/core.h"

namespace tenon::sim {
namespace {

// The priority classes every cluster has (scheduling.k8s.io, built in).
constexpr std::int32_t kSystemClusterCritical = 2'000'000'000;
constexpr std::int32_t kSystemNodeCritical = 2'000'001'000;
constexpr std::int64_t kReplicasMax = 1'000'000;
constexpr const char* kRunForAnnotation = "sim.tenon.io/run-for";
constexpr const char* kDefaultClassAnnotation = "storageclass.kubernetes.io/is-default-class";

std::string Text(const YAML::Node& node) {
  return node ? node.as<std::string>() : std::string();
}

std::string Meta(const YAML::Node& object, const char* field) {
  const auto& meta = object["metadata"];
  return meta && meta[field] ? meta[field].as<std::string>() : std::string();
}

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

std::size_t Distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

const std::set<std::string>& WorkloadKinds() {
  static const std::set<std::string> kinds{"Deployment", "ReplicaSet", "StatefulSet"};
  return kinds;
}

}  // namespace

std::string CheckedName(const YAML::Node& node, const std::string& field, std::size_t max) {
  const std::string value = node.as<std::string>();
  const bool valid =
      !value.empty() && value.size() <= max &&
      value.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") == std::string::npos &&
      value.front() != '-' && value.back() != '-';
  if (!valid) {
    throw ScenarioError("line " + std::to_string(node.Mark().line + 1) + ": " + field + ": '" +
                        value.substr(0, 64) + (value.size() > 64 ? "...'" : "'") +
                        " is not a Kubernetes name (lower-case letters, digits, '-' and '.', " +
                        "at most " + std::to_string(max) + " characters)");
  }
  return value;
}

bool IgnoredKind(const std::string& kind) {
  static const std::set<std::string> kinds{"Namespace",
                                           "Service",
                                           "ConfigMap",
                                           "Secret",
                                           "ServiceAccount",
                                           "Endpoints",
                                           "EndpointSlice",
                                           "Ingress",
                                           "IngressClass",
                                           "HorizontalPodAutoscaler",
                                           "Role",
                                           "RoleBinding",
                                           "ClusterRole",
                                           "ClusterRoleBinding",
                                           "NetworkPolicy",
                                           "LimitRange",
                                           "ResourceQuota",
                                           "Event",
                                           "Lease",
                                           "ControllerRevision",
                                           "CustomResourceDefinition",
                                           "VolumeAttachment",
                                           "CSIDriver",
                                           "ValidatingWebhookConfiguration",
                                           "MutatingWebhookConfiguration",
                                           "APIService"};
  return kinds.contains(kind);
}

void UnknownField(const YAML::Node& key, const std::string& path,
                  const std::vector<std::string>& known) {
  const std::string name = key.IsScalar() ? key.Scalar() : std::string();
  std::string best;
  std::size_t best_distance = 0;
  for (const std::string& k : known) {
    const std::size_t d = Distance(name, k);
    if (best.empty() || d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  std::string message =
      "line " + std::to_string(key.Mark().line + 1) + ": " + path + ": unknown field";
  if (!best.empty() && best_distance <= std::max<std::size_t>(2, name.size() / 3)) {
    message += " (did you mean '" + best + "'?)";
  }
  throw ScenarioError(message);
}

void CheckKeys(const YAML::Node& node, std::initializer_list<const char*> known,
               const std::string& path) {
  if (!node || !node.IsMap()) return;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) continue;
    UnknownField(kv.first, (path.empty() ? "" : path + ".") + key,
                 std::vector<std::string>(known.begin(), known.end()));
  }
}

void Manifests::Add(const YAML::Node& object, const std::string& where, Nanos at) {
  if (!object.IsMap()) throw ScenarioError(where + ": a Kubernetes object must be a map");
  if (Text(object["kind"]) == "List") {
    for (const auto& item : object["items"]) {
      Add(item, where.substr(0, where.rfind(':') + 1) + std::to_string(item.Mark().line + 1), at);
    }
    return;
  }
  // Fields and names are checked as the API server checks them, before anything refers to them.
  const auto& meta = object["metadata"];
  try {
    CheckFields(object);
    if (meta && meta["name"]) CheckedName(meta["name"], "metadata.name", kNameCharsMax);
    if (meta && meta["namespace"]) {
      CheckedName(meta["namespace"], "metadata.namespace", kNamespaceCharsMax);
    }
  } catch (const ScenarioError& e) {
    // The error names its own line; the file is `where`'s.
    const std::string name = meta && meta["name"] && meta["name"].IsScalar()
                                 ? " " + meta["name"].Scalar()
                                 : std::string();
    throw ScenarioError(where.substr(0, where.rfind(':')) + ": " + Text(object["kind"]) + name +
                        ": " + e.what());
  }
  docs_.push_back({object, where, at});
}

namespace {

// RFC 7386 on YAML: `patch` merged into a copy of `target`.
YAML::Node MergePatch(const YAML::Node& target, const YAML::Node& patch) {
  if (!patch.IsMap()) return YAML::Clone(patch);
  YAML::Node out = target.IsMap() ? YAML::Clone(target) : YAML::Node(YAML::NodeType::Map);
  for (const auto& entry : patch) {
    const std::string key = entry.first.Scalar();
    if (entry.second.IsNull()) {
      out.remove(key);
      continue;
    }
    const YAML::Node& current = static_cast<const YAML::Node&>(out)[key];
    out[key] = MergePatch(current ? current : YAML::Node(), entry.second);
  }
  return out;
}

}  // namespace

bool Manifests::Patch(const std::string& kind, const std::string& ns, const std::string& name,
                      const YAML::Node& merge, const std::string& where, Nanos at) {
  const Doc* base = nullptr;
  for (const Doc& d : docs_) {
    if (Text(d.object["kind"]) != kind || Meta(d.object, "name") != name || d.at > at) continue;
    const std::string have = Meta(d.object, "namespace");
    const bool same_ns =
        ns.empty() || ns == "default" ? have.empty() || have == "default" : have == ns;
    if (!same_ns) continue;
    if (base == nullptr || d.at >= base->at) base = &d;
  }
  if (base == nullptr) return false;
  if (!merge.IsMap()) throw ScenarioError(where + ": a merge patch must be a map");
  Add(MergePatch(base->object, merge), where, at);
  return true;
}

bool Manifests::HasWorkload(const std::string& key) const {
  return std::any_of(docs_.begin(), docs_.end(), [&](const Doc& d) {
    const std::string kind = Text(d.object["kind"]);
    std::string ns = Meta(d.object, "namespace");
    if (ns.empty()) ns = "default";
    return WorkloadKinds().contains(kind) && kind + "/" + ns + "/" + Meta(d.object, "name") == key;
  });
}

namespace {

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

}  // namespace

void Manifests::Resolve(Scenario& s) {
  Admission admission;
  // A dump of a cluster (kubectl get -o yaml, tenon capture) holds a Deployment, its ReplicaSets
  // and their pods. A pod made by a workload of the scenario is adopted when it runs on a Node of
  // the scenario: it starts where it ran and counts among the workload's replicas. A DaemonSet's
  // pod on such a Node stays too. The rest (pending pods, a Job's pods, the ReplicaSets) are left
  // out: the workload's controller makes them anew.
  std::map<std::string, std::string> controller_of;  // "Kind/ns/name" -> its controller's.
  for (const Doc& d : docs_) {
    if (d.at.value != 0) continue;
    const std::string ns = NamespaceOf(d.object);
    auto [owner_kind, owner] = ControllerOf(d.object);
    controller_of[Text(d.object["kind"]) + "/" + ns + "/" + Meta(d.object, "name")] =
        owner_kind.empty() ? "" : owner_kind + "/" + ns + "/" + owner;
  }
  // The workload that made the object `key` ("Kind/ns/name"), through its ReplicaSet: the
  // topmost Deployment, ReplicaSet or StatefulSet of its controllers present here, or "".
  const auto workload_of = [&](const std::string& key) {
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
  };
  const auto made_by_a_controller = [&](const Doc& d) {
    const std::string kind = Text(d.object["kind"]);
    if (kind != "Pod" && kind != "ReplicaSet" && kind != "Job") return false;
    if (d.at.value != 0) return false;
    const std::string key = kind + "/" + NamespaceOf(d.object) + "/" + Meta(d.object, "name");
    auto up = controller_of.find(key);
    return up != controller_of.end() && controller_of.contains(up->second);
  };
  std::set<std::string> kept;  // Pods kept from a dump: dropped if their Node is not here.
  std::map<std::string, std::string> defined;  // "Kind/namespace/name" -> where.
  std::string default_storage_class;
  // What every pod's admission and every claim needs first, in any document order.
  for (const Doc& d : docs_) {
    const std::string kind = Text(d.object["kind"]);
    const std::string name = Meta(d.object, "name");
    if (kind == "PriorityClass") {
      if (!d.object["value"])
        throw ScenarioError(d.where + ": PriorityClass " + name + ": value: required");
      auto value = d.object["value"].as<std::int32_t>();
      admission.priorities[name] = value;
      if (d.object["globalDefault"] && d.object["globalDefault"].as<bool>()) {
        admission.global_default = {name, value};
      }
    } else if (kind == "RuntimeClass") {
      admission.runtime_classes[name] = d.object;
    } else if (kind == "StorageClass") {
      const auto& meta = d.object["metadata"];
      if (meta && meta["annotations"] &&
          Text(meta["annotations"][kDefaultClassAnnotation]) == "true") {
        default_storage_class = name;
      }
    }
  }
  for (const Doc& d : docs_) {
    const YAML::Node& o = d.object;
    const std::string kind = Text(o["kind"]);
    const std::string name = Meta(o, "name");
    std::string ns = Meta(o, "namespace");
    if (ns.empty()) ns = "default";
    const std::string what = d.where + ": " + (kind.empty() ? "object" : kind) + " " +
                             (name.empty() ? "" : ns + "/" + name);
    try {
      if (kind.empty()) throw ScenarioError("kind: required");
      if (IgnoredKind(kind)) continue;
      std::string adopted_by;  // A Pod's workload, when it is kept as the workload's replica.
      if (made_by_a_controller(d)) {
        if (kind != "Pod") continue;
        const std::string pod_key = "Pod/" + ns + "/" + name;
        adopted_by = workload_of(pod_key);
        const std::string owner = controller_of.at(pod_key);
        const bool daemon = owner.starts_with("DaemonSet/");
        const std::string phase = Text(o["status"]["phase"]);
        const bool runs = !Text(o["spec"]["nodeName"]).empty() && phase != "Succeeded" &&
                          phase != "Failed" && !o["metadata"]["deletionTimestamp"];
        const std::string prefix = adopted_by.substr(adopted_by.rfind('/') + 1) + "-";
        if (!runs || (!daemon && (adopted_by.empty() || !name.starts_with(prefix)))) continue;
        kept.insert(PodKey(ns, name));
      }
      if (name.empty()) throw ScenarioError("metadata.name: required");
      const std::string key = kind + "/" + ns + "/" + name;
      if (d.at.value == 0) {
        auto [it, fresh] = defined.try_emplace(key, d.where);
        if (!fresh) throw ScenarioError("defined twice (also at " + it->second + ")");
      }
      if (kind == "NodePool") {
        NodePool pool = kube::ParseNodePool(o);
        if (d.at.value == 0) {
          s.nodepools.push_back(std::move(pool));
        } else {
          Action apply;
          apply.at = d.at;
          apply.kind = Action::Kind::kApplyNodePool;
          apply.nodepool = std::move(pool);
          s.actions.push_back(std::move(apply));
        }
      } else if (kind == "EC2NodeClass") {
        if (d.at.value != 0) throw ScenarioError("the timeline cannot apply an EC2NodeClass yet");
        s.nodeclasses.push_back(kube::ParseNodeClass(o));
      } else if (WorkloadKinds().contains(kind)) {
        const std::string template_key =
            d.at.value == 0 ? key : key + "@" + std::to_string(d.at.value);
        Pod pod = kube::ParsePod(admission.Admit(TemplatePodObject(o, ns)));
        if (o["spec"]["selector"] &&
            !LabelsMatch(kube::ParseSelector(o["spec"]["selector"]), *pod.labels)) {
          throw ScenarioError("spec.selector: does not select spec.template.metadata.labels");
        }
        WorkloadStep step;
        step.at = d.at;
        step.ns = ns;
        step.name = name;
        step.replicas = Count(o["spec"], "replicas", 1);
        step.requests = pod.requests;
        step.template_key = template_key;
        step.stateful = kind == "StatefulSet";
        for (const auto& vct : o["spec"]["volumeClaimTemplates"]) {
          ClaimTemplate claim{Meta(vct, "name"), Text(vct["spec"]["storageClassName"])};
          if (claim.name.empty())
            throw ScenarioError("spec.volumeClaimTemplates: metadata.name: required");
          if (claim.storage_class.empty()) claim.storage_class = default_storage_class;
          step.claim_templates.push_back(std::move(claim));
        }
        s.templates[template_key] = std::move(pod);
        s.workloads.push_back(std::move(step));
      } else if (kind == "Job") {
        const std::string template_key =
            d.at.value == 0 ? key : key + "@" + std::to_string(d.at.value);
        Pod pod = kube::ParsePod(admission.Admit(TemplatePodObject(o, ns)));
        Job job;
        job.at = d.at;
        job.ns = ns;
        job.name = name;
        const std::int64_t parallelism = Count(o["spec"], "parallelism", 1);
        job.pods = Count(o["spec"], "completions", parallelism);
        job.parallelism = parallelism;
        if (job.pods < 1) throw ScenarioError("spec.completions: must be at least 1");
        if (const auto& notes = o["metadata"]["annotations"]; notes && notes[kRunForAnnotation]) {
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
      } else if (kind == "DaemonSet") {
        if (d.at.value != 0) throw ScenarioError("the timeline cannot apply a DaemonSet yet");
        Pod pod = kube::ParsePod(admission.Admit(TemplatePodObject(o, ns)));
        DaemonSetSpec ds;
        ds.ns = ns;
        ds.name = name;
        ds.requests = pod.requests;
        ds.node_selector = pod.constraints->node_selector;
        ds.tolerations = pod.constraints->tolerations;
        ds.template_key = key;
        s.templates[key] = std::move(pod);
        s.daemonsets.push_back(std::move(ds));
      } else if (kind == "Pod") {
        YAML::Node object = YAML::Clone(o);
        object["metadata"]["namespace"] = ns;
        Pod pod = kube::ParsePod(admission.Admit(object));
        pod.created = s.start + d.at;
        pod.uid = "uid-" + key;
        if (!pod.node_name.empty()) pod.phase = PodPhase::kRunning;
        if (!adopted_by.empty()) s.adopted[PodKey(ns, name)] = adopted_by;
        s.pods.push_back(std::move(pod));
      } else if (kind == "Node") {
        if (d.at.value != 0) throw ScenarioError("the timeline cannot apply a Node yet");
        Node node = kube::ParseNode(o);
        if (node.allocatable == Resources{}) {
          throw ScenarioError("status.allocatable: required for a Node the scenario starts with");
        }
        node.created = s.start;
        s.nodes.push_back(std::move(node));
      } else if (kind == "NodeClaim") {
        if (d.at.value != 0) throw ScenarioError("the timeline cannot apply a NodeClaim");
        NodeClaim claim = kube::ParseNodeClaim(o);
        if (claim.phase == ClaimPhase::kPending || claim.node_name.empty()) {
          continue;  // Not running yet: the controller's own launch would make it anew.
        }
        s.nodeclaims.push_back(std::move(claim));
      } else if (kind == "PodDisruptionBudget") {
        if (d.at.value != 0)
          throw ScenarioError("the timeline cannot apply a PodDisruptionBudget yet");
        Budget budget;
        budget.ns = ns;
        budget.name = name;
        budget.selector = kube::ParsePodDisruptionBudget(o).selector;
        const auto& spec = o["spec"];
        if (!spec) throw ScenarioError("spec: required");
        BudgetValue(spec["minAvailable"], "minAvailable", budget.min_available, budget.percent);
        bool max_percent = false;
        BudgetValue(spec["maxUnavailable"], "maxUnavailable", budget.max_unavailable, max_percent);
        if (budget.min_available.has_value() == budget.max_unavailable.has_value()) {
          throw ScenarioError("spec: exactly one of minAvailable, maxUnavailable");
        }
        budget.percent = budget.percent || max_percent;
        s.budgets.push_back(std::move(budget));
      } else if (kind == "PersistentVolumeClaim") {
        auto claim = kube::ParsePersistentVolumeClaim(o);
        claim.ns = ns;
        if (claim.storage_class.empty() && claim.volume_name.empty()) {
          claim.storage_class = default_storage_class;
        }
        s.claims.push_back(std::move(claim));
      } else if (kind == "PersistentVolume") {
        s.volumes.push_back(kube::ParsePersistentVolume(o));
      } else if (kind == "StorageClass") {
        s.storage_classes.push_back(kube::ParseStorageClass(o));
      } else if (kind == "CSINode") {
        s.csi_nodes.push_back(kube::ParseCsiNode(o));
      } else if (kind == "PriorityClass" || kind == "RuntimeClass") {
        continue;  // Read above.
      } else {
        throw ScenarioError(
            "kind: not a kind a scenario takes (Deployment, ReplicaSet, "
            "StatefulSet, Job, DaemonSet, Pod, PodDisruptionBudget, "
            "PriorityClass, RuntimeClass, PersistentVolumeClaim, "
            "PersistentVolume, StorageClass, CSINode, Node, NodeClaim, "
            "NodePool, EC2NodeClass)");
      }
    } catch (const ScenarioError& e) {
      throw ScenarioError(what + ": " + e.what());
    } catch (const kube::ObjectError& e) {
      throw ScenarioError(what + ": " + e.what());
    } catch (const YAML::Exception& e) {
      throw ScenarioError(what + ": " + e.what());
    }
  }
  // References the API server would leave dangling are errors here: a simulation of them
  // would only show a pool that never launches.
  for (const auto& pool : s.nodepools) {
    if (std::none_of(s.nodeclasses.begin(), s.nodeclasses.end(),
                     [&](const NodeClass& c) { return c.name == pool.nodeclass; })) {
      throw ScenarioError("NodePool " + pool.name + ": spec.template.spec.nodeClassRef: no " +
                          "EC2NodeClass '" + pool.nodeclass + "' in the scenario");
    }
  }
  const auto has_node = [&](const std::string& name) {
    return std::any_of(s.nodes.begin(), s.nodes.end(),
                       [&](const Node& n) { return n.name == name; });
  };
  std::erase_if(s.pods, [&](const Pod& pod) {
    const std::string key = PodKey(pod.ns, pod.name);
    if (!kept.contains(key) || has_node(pod.node_name.str())) return false;
    s.adopted.erase(key);
    return true;
  });
  for (const auto& claim : s.nodeclaims) {
    const std::string where = "NodeClaim " + claim.name + ": ";
    if (std::none_of(s.nodepools.begin(), s.nodepools.end(),
                     [&](const NodePool& p) { return p.name == claim.nodepool; })) {
      throw ScenarioError(where + "metadata.labels." + label::kNodePool + ": no NodePool '" +
                          claim.nodepool + "' in the scenario");
    }
    if (!has_node(claim.node_name)) {
      throw ScenarioError(where + "status.nodeName: no Node '" + claim.node_name +
                          "' in the scenario");
    }
  }
  for (const auto& pod : s.pods) {
    if (!pod.node_name.empty() && !has_node(pod.node_name.str())) {
      throw ScenarioError("Pod " + pod.ns.str() + "/" + pod.name + ": spec.nodeName: no Node '" +
                          pod.node_name.str() + "' in the scenario");
    }
  }
  std::stable_sort(s.pods.begin(), s.pods.end(),
                   [](const Pod& a, const Pod& b) { return a.created < b.created; });
}

}  // namespace tenon::sim
