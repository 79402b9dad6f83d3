// The simulated cluster's kube-scheduler filters. Written for the world from Kubernetes'
// documented semantics and never with the core's matching code: when the controller plans a pod
// onto a node this scheduler will not bind it to, the simulation shows a pod left pending
// instead of agreeing with itself.
//
// What it checks, as kube-scheduler's filter plugins do: the node is Ready; NoSchedule and
// NoExecute taints are tolerated; nodeSelector and required node affinity (every operator,
// ORed terms); room (requests and one pod); host ports; required inter-pod affinity and
// anti-affinity (namespaces, namespaceSelector {}, matchLabelKeys, and the anti-affinity of
// pods already running); topologySpreadConstraints with whenUnsatisfiable DoNotSchedule on any
// key (minDomains, matchLabelKeys, nodeAffinityPolicy, nodeTaintsPolicy); volumes (a bound
// volume's node affinity, an unbound claim's StorageClass allowedTopologies). Preferences
// (preferred affinity, ScheduleAnyway spreads) steer scoring only and are not modelled: the
// first node that passes, in name order, gets the pod.
#pragma once

#include <map>
#include <set>
#include <string>

#include "model/model.h"

namespace tenon::sim {

// The pods bound to one node (by namespace/name) and what they request, one pod each.
struct PodsOnNode {
  std::set<std::string> pods;
  Resources requested;
  friend bool operator==(const PodsOnNode&, const PodsOnNode&) = default;
};

// What the filters read of the cluster, all keyed as the world keeps them.
struct ClusterView {
  const std::map<std::string, Node>& nodes;
  const std::map<std::string, Pod>& pods;                      // By namespace/name.
  const std::map<std::string, PodsOnNode>& on_node;            // By node name.
  const std::map<std::string, PersistentVolumeClaim>& claims;  // By namespace/name.
  const std::map<std::string, PersistentVolume>& volumes;      // By name.
  const std::map<std::string, StorageClass>& storage_classes;  // By name.
  // Whether any bound pod has required anti-affinity (only then can a plain pod be refused by
  // its neighbours, and only then are they all walked).
  bool any_refuses = false;
};

// Whether `tolerations` tolerate `taint` (an empty key with Exists tolerates every taint).
bool TaintTolerated(const std::vector<Toleration>& tolerations, const Taint& taint);
// Whether every NoSchedule and NoExecute taint of `node` is tolerated by `pod`.
bool TaintsTolerated(const Pod& pod, const Node& node);
// Whether `node` satisfies `pod`'s nodeSelector and required node affinity.
bool NodeAffinityMatches(const Pod& pod, const Node& node);
// Whether `labels` satisfy `selector` (matchLabels and matchExpressions).
bool LabelsMatch(const LabelSelector& selector, const Labels& labels);

// Whether a pod's placement depends on other pods or volumes, not on room alone: it has host
// ports, inter-pod (anti-)affinity, DoNotSchedule spreads or claims.
bool DependsOnNeighbours(const Pod& pod);
// Whether `pod` has required anti-affinity terms (which refuse other pods near it).
bool RefusesNeighbours(const Pod& pod);

// Every filter: whether kube-scheduler would bind `pod` to `node`, with `free` the room left on
// it.
bool Accepts(const ClusterView& cluster, const Pod& pod, const Node& node, const Resources& free);

}  // namespace tenon::sim
