// Pods and what holds pods: v1 Pods, the pod template of an apps/v1 DaemonSet, and the
// policy/v1 PodDisruptionBudgets that guard them.
#include "adapters/kube/objects.h"

#include "adapters/kube/objects_parts.h"
#include "model/pod_rules.h"

#include <charconv>
#include <optional>

namespace tenon::kube {

using namespace parts;

namespace {

constexpr std::int64_t kGraceSecondsMax = 10LL * 365 * 24 * 3600;  // Ten years.

template <class V>
PodAffinityTerm ParseAffinityTerm(const V& value, std::int32_t weight) {
  PodAffinityTerm term;
  term.weight = weight;
  term.selector = ParseSelector(value["labelSelector"]);
  term.namespaces = Texts(value["namespaces"], "namespaces");
  if (const V ns = value["namespaceSelector"]) {
    if (ns.size() > 0) throw ObjectError("namespaceSelector with labels is not supported yet");
    term.all_namespaces = true;
  }
  if (!value["topologyKey"]) throw ObjectError("pod affinity term needs topologyKey");
  term.topology_key = Str(value["topologyKey"], "topologyKey");
  term.match_label_keys = Texts(value["matchLabelKeys"], "matchLabelKeys");
  return term;
}

constexpr const char* kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
constexpr const char* kPreferred = "preferredDuringSchedulingIgnoredDuringExecution";

// podAffinity or podAntiAffinity: its required terms and its weighted preferred ones.
template <class V>
void ParsePodAffinity(const V& value, std::vector<PodAffinityTerm>& required,
                      std::vector<PodAffinityTerm>& preferred) {
  if (!value) return;
  for (const V t : List(value[kRequired], kRequired)) required.push_back(ParseAffinityTerm(t, 0));
  for (const V p : List(value[kPreferred], kPreferred)) {
    preferred.push_back(
        ParseAffinityTerm(p["podAffinityTerm"], Int<std::int32_t>(p["weight"], "weight")));
  }
}

template <class V>
void ParseAffinity(const V& affinity, PodConstraints& constraints) {
  if (!affinity) return;
  if (const V na = affinity["nodeAffinity"]) {
    if (const V req = na[kRequired]) {
      constraints.node_affinity_required = ParseTerms(req["nodeSelectorTerms"]);
    }
    for (const V p : List(na[kPreferred], kPreferred)) {
      constraints.node_affinity_preferred.push_back(
          ParseTerm(p["preference"], Int<std::int32_t>(p["weight"], "weight")));
    }
  }
  ParsePodAffinity(affinity["podAffinity"], constraints.pod_affinity_required,
                   constraints.pod_affinity_preferred);
  ParsePodAffinity(affinity["podAntiAffinity"], constraints.pod_anti_affinity_required,
                   constraints.pod_anti_affinity_preferred);
}

template <class V>
TopologySpreadConstraint ParseSpread(const V& value) {
  TopologySpreadConstraint c;
  if (value["maxSkew"]) c.max_skew = Int<std::int32_t>(value["maxSkew"], "maxSkew");
  if (!value["topologyKey"]) throw ObjectError("topologySpreadConstraint needs topologyKey");
  c.topology_key = Str(value["topologyKey"], "topologyKey");
  if (value["whenUnsatisfiable"]) {
    std::string when = Str(value["whenUnsatisfiable"], "whenUnsatisfiable");
    if (when != "DoNotSchedule" && when != "ScheduleAnyway") {
      throw ObjectError("unknown whenUnsatisfiable '" + when + "'");
    }
    c.do_not_schedule = when == "DoNotSchedule";
  }
  c.selector = ParseSelector(value["labelSelector"]);
  if (value["minDomains"]) c.min_domains = Int<std::int32_t>(value["minDomains"], "minDomains");
  if (value["nodeAffinityPolicy"]) {
    c.node_affinity_honor = Str(value["nodeAffinityPolicy"], "nodeAffinityPolicy") == "Honor";
  }
  if (value["nodeTaintsPolicy"]) {
    c.node_taints_honor = Str(value["nodeTaintsPolicy"], "nodeTaintsPolicy") == "Honor";
  }
  c.match_label_keys = Texts(value["matchLabelKeys"], "matchLabelKeys");
  return c;
}

template <class V>
std::vector<ContainerRequests> ParseContainers(const V& list, bool init,
                                               PodConstraints& constraints) {
  std::vector<ContainerRequests> out;
  for (const V c : List(list, init ? "spec.initContainers" : "spec.containers")) {
    ContainerRequests cr;
    if (c["resources"]) cr.requests = ParseResourceList(c["resources"]["requests"], "requests");
    cr.sidecar = init && c["restartPolicy"] && Str(c["restartPolicy"], "restartPolicy") == "Always";
    out.push_back(cr);
    for (const V p : List(c["ports"], "ports")) {
      if (!p["hostPort"]) continue;
      HostPort hp;
      hp.port = Int<std::int32_t>(p["hostPort"], "hostPort");
      if (p["protocol"]) hp.protocol = Str(p["protocol"], "protocol");
      if (p["hostIP"]) hp.host_ip = Str(p["hostIP"], "hostIP");
      constraints.host_ports.push_back(hp);
    }
  }
  return out;
}

// The owner that controls the pod (controller: true), else the first listed.
template <class V>
std::string OwnerKind(const V& meta) {
  const V owners = meta["ownerReferences"];
  if (!owners || !owners.IsSequence() || owners.size() == 0) return "";
  std::optional<V> chosen;
  for (const V owner : owners.Elements()) {
    if (!chosen) chosen = owner;
    const V controller = owner["controller"];
    if (controller && Str(controller, "metadata.ownerReferences.controller") == "true") {
      chosen = owner;
      break;
    }
  }
  const V kind = (*chosen)["kind"];
  return kind ? Str(kind, "metadata.ownerReferences.kind") : "";
}

constexpr const char* kPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost";
constexpr const char* kDisruptionCost = "karpenter.sh/disruption-cost";

// An int32 annotation; anything else is the object's error (Kubernetes accepts an int32 for
// pod-deletion-cost).
template <class V>
std::optional<std::int32_t> Int32Annotation(const V& notes, const char* key) {
  if (!notes || !notes[key]) return std::nullopt;
  const std::string field = "metadata.annotations." + std::string(key);
  const std::string text = Str(notes[key], field);
  try {
    std::size_t used = 0;
    long long cost = std::stoll(text, &used);
    if (used != text.size() || cost < INT32_MIN || cost > INT32_MAX) throw std::out_of_range(text);
    return static_cast<std::int32_t>(cost);
  } catch (const std::exception&) {
    throw ObjectError(field + ": not a 32-bit integer: " + text);
  }
}

template <class V>
void ParseDeletionCost(const V& notes, Pod& pod) {
  pod.deletion_cost = Int32Annotation(notes, kPodDeletionCost).value_or(0);
  pod.disruption_cost = Int32Annotation(notes, kDisruptionCost);
}

template <class V>
void ParseDoNotDisrupt(const V& notes, Pod& pod) {
  if (!notes || !notes[label::kDoNotDisrupt]) return;
  std::string value =
      Str(notes[label::kDoNotDisrupt], "metadata.annotations.karpenter.sh/do-not-disrupt");
  // "true", or the duration form ("30m"): protected for that long after creation.
  if (value == "true") {
    pod.do_not_disrupt = true;
  } else if (!value.empty() && value != "false") {
    try {
      if (const Duration lasts = ParseDuration(value); lasts.value > 0) {
        pod.do_not_disrupt_for = lasts;
      }
    } catch (const ObjectError& e) {
      throw ObjectError("metadata.annotations.karpenter.sh/do-not-disrupt: " +
                        std::string(e.what()));
    }
    pod.do_not_disrupt = pod.do_not_disrupt_for.has_value();
  }
}

// Without metadata (a DaemonSet's template may have none) the pod has only its defaults.
template <class V>
void ParsePodMetadata(const V& meta, Pod& pod) {
  if (!meta || meta.IsNull()) {
    pod.uid = pod.ns + "/" + pod.name;
    return;
  }
  if (meta["namespace"]) pod.ns = Str(meta["namespace"], "metadata.namespace");
  pod.uid = meta["uid"] ? Str(meta["uid"], "metadata.uid") : pod.ns + "/" + pod.name;
  pod.labels = ParseLabels(meta["labels"], "metadata.labels");
  pod.owner_kind = OwnerKind(meta);
  pod.created = Created(meta);
  pod.deletion = Timestamp(meta, "deletionTimestamp");
  ParseDeletionCost(meta["annotations"], pod);
  ParseDoNotDisrupt(meta["annotations"], pod);
}

template <class V>
Duration ParseGracePeriod(const V& grace) {
  std::string text = Str(grace, "spec.terminationGracePeriodSeconds");
  std::int64_t seconds = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds < 0 ||
      seconds > kGraceSecondsMax) {
    throw ObjectError("spec.terminationGracePeriodSeconds: invalid '" + text + "'");
  }
  return Duration{seconds * kSecond.value};
}

// The node the pod is bound to, and its rank among pods.
template <class V>
void ParseBindingAndPriority(const V& spec, Pod& pod) {
  if (spec["nodeName"]) pod.node_name = Str(spec["nodeName"], "spec.nodeName");
  if (spec["priorityClassName"]) {
    pod.priority_class = Str(spec["priorityClassName"], "spec.priorityClassName");
  }
  if (spec["priority"]) pod.priority = Int<std::int32_t>(spec["priority"], "spec.priority");
}

// Where the pod may run, all but what its containers (host ports) and volumes add.
template <class V>
PodConstraints ParsePlacement(const V& spec) {
  PodConstraints constraints;
  constraints.node_selector = ParseLabels(spec["nodeSelector"], "spec.nodeSelector");
  constraints.tolerations = Each<Toleration>(spec["tolerations"], "spec.tolerations",
                                             [](const V& t) { return ParseToleration(t); });
  ParseAffinity(spec["affinity"], constraints);
  constraints.topology_spread = Each<TopologySpreadConstraint>(
      spec["topologySpreadConstraints"], "spec.topologySpreadConstraints",
      [](const V& c) { return ParseSpread(c); });
  return constraints;
}

template <class V>
std::vector<std::string> ParseVolumeClaims(const V& volumes) {
  std::vector<std::string> claims;
  for (const V v : List(volumes, "spec.volumes")) {
    if (v["persistentVolumeClaim"]) {
      claims.push_back(Str(v["persistentVolumeClaim"]["claimName"], "claimName"));
    }
  }
  return claims;
}

template <class V>
void ParsePodStatus(const V& status, Pod& pod) {
  // A pod with no status yet is pending and, once the scheduler has looked, unschedulable;
  // manifests written by hand (scenarios, tests) rely on that default.
  pod.unschedulable = pod.node_name.empty();
  if (!status) return;
  if (status["phase"]) pod.phase = PodPhaseFrom(Str(status["phase"], "status.phase"));
  if (status["nominatedNodeName"]) {
    pod.nominated_node = Str(status["nominatedNodeName"], "status.nominatedNodeName");
  }
  if (status["conditions"]) {
    pod.unschedulable = false;
    for (const V c : List(status["conditions"], "status.conditions")) {
      if (c["type"] && Str(c["type"], "type") == "PodScheduled" && c["status"] &&
          Str(c["status"], "status") == "False" && c["reason"] &&
          Str(c["reason"], "reason") == "Unschedulable") {
        pod.unschedulable = true;
      }
    }
  }
}

// Parses a v1 Pod (or a DaemonSet's pod template); errors carry the field, the caller adds the
// pod's name.
template <class V>
Pod ParsePodInner(const V& object, Pod pod) {
  ParsePodMetadata(object["metadata"], pod);
  const V spec = object["spec"];
  if (!spec) throw ObjectError("no spec");
  ParseBindingAndPriority(spec, pod);
  if (const V grace = spec["terminationGracePeriodSeconds"]) {
    pod.termination_grace = ParseGracePeriod(grace);
  }
  PodConstraints constraints = ParsePlacement(spec);
  auto containers = ParseContainers(spec["containers"], false, constraints);
  auto init = ParseContainers(spec["initContainers"], true, constraints);
  pod.requests = PodRequests(containers, init, ParseResourceList(spec["overhead"], "overhead"));
  constraints.volume_claims = ParseVolumeClaims(spec["volumes"]);
  pod.constraints = std::move(constraints);
  ParsePodStatus(object["status"], pod);
  return pod;
}

template <class V>
Pod ParsePodFrom(const V& object) {
  Pod pod;
  pod.name = Name(object, "Pod");
  pod.ns = "default";
  return Named("Pod " + pod.name, [&] { return ParsePodInner(object, pod); });
}

template <class V>
DaemonSet ParseDaemonSetFrom(const V& object) {
  DaemonSet ds;
  ds.name = Name(object, "DaemonSet");
  ds.ns = object["metadata"]["namespace"] ? Str(object["metadata"]["namespace"], "namespace")
                                          : "default";
  return Named("DaemonSet " + ds.name, [&] {
    const V tmpl = object["spec"]["template"];
    if (!tmpl) throw ObjectError("no spec.template");
    Pod pod;
    pod.name = ds.name;
    pod.ns = ds.ns;
    ds.pod = ParsePodInner(tmpl, pod);
    ds.pod.owner_kind = "DaemonSet";
    ds.pod.unschedulable = false;
    return ds;
  });
}

template <class V>
PodDisruptionBudget ParsePodDisruptionBudgetFrom(const V& object) {
  return ParseNamed<PodDisruptionBudget>(
      object, "PodDisruptionBudget", [&](PodDisruptionBudget& pdb) {
        const V meta = object["metadata"];
        if (meta["namespace"]) pdb.ns = Str(meta["namespace"], "metadata.namespace");
        if (pdb.ns.empty()) pdb.ns = "default";
        if (object["spec"] && object["spec"]["selector"]) {
          pdb.selector = ParseSelector(object["spec"]["selector"]);
        }
        // Without a status (not yet reconciled by the disruption controller) nothing is allowed.
        if (const V status = object["status"]; status && status["disruptionsAllowed"]) {
          pdb.disruptions_allowed =
              Int<std::int32_t>(status["disruptionsAllowed"], "status.disruptionsAllowed");
        }
      });
}

}  // namespace

Pod ParsePod(const YAML::Node& object) {
  return ParsePodFrom(YamlValue(object));
}

Pod ParsePod(const JsonValue& object) {
  return ParsePodFrom(object);
}

DaemonSet ParseDaemonSet(const YAML::Node& object) {
  return ParseDaemonSetFrom(YamlValue(object));
}

DaemonSet ParseDaemonSet(const JsonValue& object) {
  return ParseDaemonSetFrom(object);
}

PodDisruptionBudget ParsePodDisruptionBudget(const YAML::Node& object) {
  return ParsePodDisruptionBudgetFrom(YamlValue(object));
}

PodDisruptionBudget ParsePodDisruptionBudget(const JsonValue& object) {
  return ParsePodDisruptionBudgetFrom(object);
}

}  // namespace tenon::kube
