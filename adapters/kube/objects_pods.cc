// Pods and what holds pods: v1 Pods, the pod template of an apps/v1 DaemonSet, and the
// policy/v1 PodDisruptionBudgets that guard them.
#include "adapters/kube/objects.h"

#include "adapters/kube/objects_parts.h"
#include "model/pod_rules.h"

#include <charconv>

namespace tenon::kube {

using namespace parts;

namespace {

constexpr std::int64_t kGraceSecondsMax = 10LL * 365 * 24 * 3600;  // Ten years.

PodAffinityTerm ParseAffinityTerm(const YAML::Node& node, std::int32_t weight) {
  PodAffinityTerm term;
  term.weight = weight;
  term.selector = ParseSelector(node["labelSelector"]);
  term.namespaces = Texts(node["namespaces"], "namespaces");
  if (const auto& ns = node["namespaceSelector"]) {
    if (ns.size() > 0) throw ObjectError("namespaceSelector with labels is not supported yet");
    term.all_namespaces = true;
  }
  if (!node["topologyKey"]) throw ObjectError("pod affinity term needs topologyKey");
  term.topology_key = Str(node["topologyKey"], "topologyKey");
  term.match_label_keys = Texts(node["matchLabelKeys"], "matchLabelKeys");
  return term;
}

void ParseAffinity(const YAML::Node& affinity, PodConstraints& constraints) {
  if (!affinity) return;
  if (const auto& na = affinity["nodeAffinity"]) {
    if (const auto& req = na["requiredDuringSchedulingIgnoredDuringExecution"]) {
      constraints.node_affinity_required = ParseTerms(req["nodeSelectorTerms"]);
    }
    if (const auto& pref = na["preferredDuringSchedulingIgnoredDuringExecution"]) {
      for (const auto& p : pref) {
        constraints.node_affinity_preferred.push_back(
            ParseTerm(p["preference"], p["weight"].as<std::int32_t>()));
      }
    }
  }
  auto terms = [](const YAML::Node& node, std::vector<PodAffinityTerm>& required,
                  std::vector<PodAffinityTerm>& preferred) {
    if (!node) return;
    if (const auto& req = node["requiredDuringSchedulingIgnoredDuringExecution"]) {
      for (const auto& t : req) required.push_back(ParseAffinityTerm(t, 0));
    }
    if (const auto& pref = node["preferredDuringSchedulingIgnoredDuringExecution"]) {
      for (const auto& p : pref) {
        preferred.push_back(
            ParseAffinityTerm(p["podAffinityTerm"], p["weight"].as<std::int32_t>()));
      }
    }
  };
  terms(affinity["podAffinity"], constraints.pod_affinity_required,
        constraints.pod_affinity_preferred);
  terms(affinity["podAntiAffinity"], constraints.pod_anti_affinity_required,
        constraints.pod_anti_affinity_preferred);
}

TopologySpreadConstraint ParseSpread(const YAML::Node& node) {
  TopologySpreadConstraint c;
  if (node["maxSkew"]) c.max_skew = node["maxSkew"].as<std::int32_t>();
  if (!node["topologyKey"]) throw ObjectError("topologySpreadConstraint needs topologyKey");
  c.topology_key = Str(node["topologyKey"], "topologyKey");
  if (node["whenUnsatisfiable"]) {
    std::string when = Str(node["whenUnsatisfiable"], "whenUnsatisfiable");
    if (when != "DoNotSchedule" && when != "ScheduleAnyway") {
      throw ObjectError("unknown whenUnsatisfiable '" + when + "'");
    }
    c.do_not_schedule = when == "DoNotSchedule";
  }
  c.selector = ParseSelector(node["labelSelector"]);
  if (node["minDomains"]) c.min_domains = node["minDomains"].as<std::int32_t>();
  if (node["nodeAffinityPolicy"]) {
    c.node_affinity_honor = Str(node["nodeAffinityPolicy"], "nodeAffinityPolicy") == "Honor";
  }
  if (node["nodeTaintsPolicy"]) {
    c.node_taints_honor = Str(node["nodeTaintsPolicy"], "nodeTaintsPolicy") == "Honor";
  }
  c.match_label_keys = Texts(node["matchLabelKeys"], "matchLabelKeys");
  return c;
}

std::vector<ContainerRequests> ParseContainers(const YAML::Node& list, bool init,
                                               PodConstraints& constraints) {
  std::vector<ContainerRequests> out;
  if (!list) return out;
  for (const auto& c : list) {
    ContainerRequests cr;
    if (c["resources"]) cr.requests = ParseResourceList(c["resources"]["requests"], "requests");
    cr.sidecar = init && c["restartPolicy"] && Str(c["restartPolicy"], "restartPolicy") == "Always";
    out.push_back(cr);
    if (!c["ports"]) continue;
    for (const auto& p : c["ports"]) {
      if (!p["hostPort"]) continue;
      HostPort hp;
      hp.port = p["hostPort"].as<std::int32_t>();
      if (p["protocol"]) hp.protocol = Str(p["protocol"], "protocol");
      if (p["hostIP"]) hp.host_ip = Str(p["hostIP"], "hostIP");
      constraints.host_ports.push_back(hp);
    }
  }
  return out;
}

// The owner that controls the pod (controller: true), else the first listed.
std::string OwnerKind(const YAML::Node& meta) {
  const auto& owners = meta["ownerReferences"];
  if (!owners || !owners.IsSequence() || owners.size() == 0) return "";
  std::size_t chosen = 0;
  for (std::size_t i = 0; i < owners.size(); ++i) {
    const auto& controller = owners[i]["controller"];
    if (controller && controller.as<std::string>() == "true") {
      chosen = i;
      break;
    }
  }
  const auto& kind = owners[chosen]["kind"];
  return kind ? Str(kind, "metadata.ownerReferences.kind") : "";
}

constexpr const char* kPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost";

void ParseDeletionCost(const YAML::Node& notes, Pod& pod) {
  if (!notes || !notes[kPodDeletionCost]) return;
  // Kubernetes accepts an int32; anything else is the object's error.
  std::string text =
      Str(notes[kPodDeletionCost], "metadata.annotations." + std::string(kPodDeletionCost));
  try {
    std::size_t used = 0;
    long long cost = std::stoll(text, &used);
    if (used != text.size() || cost < INT32_MIN || cost > INT32_MAX) throw std::out_of_range(text);
    pod.deletion_cost = static_cast<std::int32_t>(cost);
  } catch (const std::exception&) {
    throw ObjectError("metadata.annotations." + std::string(kPodDeletionCost) +
                      ": not a 32-bit integer: " + text);
  }
}

void ParseDoNotDisrupt(const YAML::Node& notes, Pod& pod) {
  if (!notes || !notes[label::kDoNotDisrupt]) return;
  std::string value =
      Str(notes[label::kDoNotDisrupt], "metadata.annotations.karpenter.sh/do-not-disrupt");
  // "true", or the duration form ("30m"): protected for that long after creation.
  if (value == "true") {
    pod.do_not_disrupt = true;
  } else if (!value.empty() && value != "false") {
    try {
      pod.do_not_disrupt_for = ParseDuration(value);
    } catch (const ObjectError& e) {
      throw ObjectError("metadata.annotations.karpenter.sh/do-not-disrupt: " +
                        std::string(e.what()));
    }
    pod.do_not_disrupt = pod.do_not_disrupt_for.value > 0;
  }
}

void ParsePodMetadata(const YAML::Node& meta, Pod& pod) {
  if (meta["namespace"]) pod.ns = Str(meta["namespace"], "metadata.namespace");
  pod.uid = meta["uid"] ? Str(meta["uid"], "metadata.uid") : pod.ns + "/" + pod.name;
  pod.labels = ParseLabels(meta["labels"], "metadata.labels");
  pod.owner_kind = OwnerKind(meta);
  pod.created = Created(meta);
  pod.deletion = Timestamp(meta, "deletionTimestamp");
  ParseDeletionCost(meta["annotations"], pod);
  ParseDoNotDisrupt(meta["annotations"], pod);
}

Nanos ParseGracePeriod(const YAML::Node& grace) {
  std::string text = Str(grace, "spec.terminationGracePeriodSeconds");
  std::int64_t seconds = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || seconds < 0 ||
      seconds > kGraceSecondsMax) {
    throw ObjectError("spec.terminationGracePeriodSeconds: invalid '" + text + "'");
  }
  return Nanos{seconds * kSecond.value};
}

// The node the pod is bound to, and its rank among pods.
void ParseBindingAndPriority(const YAML::Node& spec, Pod& pod) {
  if (spec["nodeName"]) pod.node_name = Str(spec["nodeName"], "spec.nodeName");
  if (spec["priorityClassName"]) {
    pod.priority_class = Str(spec["priorityClassName"], "spec.priorityClassName");
  }
  if (spec["priority"]) {
    try {
      pod.priority = spec["priority"].as<std::int32_t>();
    } catch (const YAML::Exception&) {
      throw ObjectError("spec.priority: not a 32-bit integer");
    }
  }
}

// Where the pod may run, all but what its containers (host ports) and volumes add.
PodConstraints ParsePlacement(const YAML::Node& spec) {
  PodConstraints constraints;
  constraints.node_selector = ParseLabels(spec["nodeSelector"], "spec.nodeSelector");
  if (spec["tolerations"]) {
    for (const auto& t : spec["tolerations"]) {
      constraints.tolerations.push_back(ParseToleration(t));
    }
  }
  ParseAffinity(spec["affinity"], constraints);
  if (spec["topologySpreadConstraints"]) {
    for (const auto& c : spec["topologySpreadConstraints"]) {
      constraints.topology_spread.push_back(ParseSpread(c));
    }
  }
  return constraints;
}

std::vector<std::string> ParseVolumeClaims(const YAML::Node& volumes) {
  std::vector<std::string> claims;
  if (!volumes) return claims;
  for (const auto& v : volumes) {
    if (v["persistentVolumeClaim"]) {
      claims.push_back(Str(v["persistentVolumeClaim"]["claimName"], "claimName"));
    }
  }
  return claims;
}

void ParsePodStatus(const YAML::Node& status, Pod& pod) {
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
    for (const auto& c : status["conditions"]) {
      if (c["type"] && Str(c["type"], "type") == "PodScheduled" && c["status"] &&
          Str(c["status"], "status") == "False" && c["reason"] &&
          Str(c["reason"], "reason") == "Unschedulable") {
        pod.unschedulable = true;
      }
    }
  }
}

// Parses a v1 Pod; errors carry the field, the caller adds the pod's name.
Pod ParsePodInner(const YAML::Node& object, Pod pod) {
  ParsePodMetadata(object["metadata"], pod);
  const auto& spec = object["spec"];
  if (!spec) throw ObjectError("no spec");
  ParseBindingAndPriority(spec, pod);
  if (const auto& grace = spec["terminationGracePeriodSeconds"]; grace) {
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

}  // namespace

Pod ParsePod(const YAML::Node& object) {
  Pod pod;
  pod.name = Name(object, "Pod");
  pod.ns = "default";
  return Named("Pod " + pod.name, [&] { return ParsePodInner(object, pod); });
}

DaemonSet ParseDaemonSet(const YAML::Node& object) {
  DaemonSet ds;
  ds.name = Name(object, "DaemonSet");
  ds.ns = object["metadata"]["namespace"] ? Str(object["metadata"]["namespace"], "namespace")
                                          : "default";
  return Named("DaemonSet " + ds.name, [&] {
    const auto& tmpl = object["spec"]["template"];
    if (!tmpl) throw ObjectError("no spec.template");
    YAML::Node pod_object = YAML::Clone(tmpl);
    pod_object["metadata"]["name"] = ds.name;
    Pod pod;
    pod.name = ds.name;
    pod.ns = ds.ns;
    ds.pod = ParsePodInner(pod_object, pod);
    ds.pod.owner_kind = "DaemonSet";
    ds.pod.unschedulable = false;
    return ds;
  });
}

PodDisruptionBudget ParsePodDisruptionBudget(const YAML::Node& object) {
  return ParseNamed<PodDisruptionBudget>(
      object, "PodDisruptionBudget", [&](PodDisruptionBudget& pdb) {
        const auto& meta = object["metadata"];
        if (meta["namespace"]) pdb.ns = Str(meta["namespace"], "metadata.namespace");
        if (pdb.ns.empty()) pdb.ns = "default";
        if (object["spec"] && object["spec"]["selector"]) {
          pdb.selector = ParseSelector(object["spec"]["selector"]);
        }
        // Without a status (not yet reconciled by the disruption controller) nothing is allowed.
        if (const auto& status = object["status"]; status && status["disruptionsAllowed"]) {
          pdb.disruptions_allowed = status["disruptionsAllowed"].as<std::int32_t>();
        }
      });
}

}  // namespace tenon::kube
