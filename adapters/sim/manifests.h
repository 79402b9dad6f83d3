// Kubernetes objects in a scenario, read as `kubectl apply -f` takes them: the workloads
// (Deployments, ReplicaSets, StatefulSets, Jobs, DaemonSets, bare Pods), the objects their
// scheduling reads (PodDisruptionBudgets, PriorityClasses, RuntimeClasses, PersistentVolumeClaims,
// PersistentVolumes, StorageClasses, CSINodes), the existing Nodes, and the NodePools and
// EC2NodeClasses. Pod templates become pods as the API server would admit them: priority from
// their PriorityClass (or the global default), RuntimeClass overhead and scheduling added, and
// every constraint of the PodSpec kept (the controller's own decoder reads them, as `tenon run`
// does).
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "adapters/sim/scenario.h"

namespace tenon::sim {

class Manifests {
 public:
  // Queues one document (a `kind: List` adds its items); `where` ("file:line") prefixes its
  // errors. Objects applied by the timeline come with the time they are applied at.
  void Add(const YAML::Node& object, const std::string& where, Duration at = Duration{0});
  // Turns every queued object into the scenario's parts. ScenarioError names the object's file,
  // line, kind and name, and the field.
  void Resolve(Scenario& scenario);
  // Whether a workload (Deployment, ReplicaSet or StatefulSet) "Kind/namespace/name" is queued.
  bool HasWorkload(const std::string& key) const;
  // Queues the object `kind` `ns`/`name` as it is at `at` (the one last applied at or before
  // then) with `merge` applied as a JSON merge patch, as `kubectl patch --type merge` applies
  // it: maps merge key by key, null removes a field, anything else replaces. `ns` empty: the
  // default namespace, or none for a cluster-scoped kind. False when no such object is queued.
  bool Patch(const std::string& kind, const std::string& ns, const std::string& name,
             const YAML::Node& merge, const std::string& where, Duration at);

 private:
  struct Doc {
    YAML::Node object;
    std::string where;
    Duration at{0};
  };
  std::vector<Doc> docs_;
};

// Kinds a cluster dump holds that do not change where pods go (Services, ConfigMaps, RBAC, ...):
// accepted and left out of the simulation.
bool IgnoredKind(const std::string& kind);

// Kubernetes' limits on a name: a DNS subdomain (253 characters) for an object's name, a DNS
// label (63) for a namespace; lower-case letters, digits, '-' and '.' only.
constexpr std::size_t kNameCharsMax = 253;
constexpr std::size_t kNamespaceCharsMax = 63;
// The text of `node` if it is such a name; else ScenarioError naming its line and `field`.
std::string CheckedName(const YAML::Node& node, const std::string& field, std::size_t max);

// Throws ScenarioError "line N: PATH: unknown field (did you mean 'X'?)" for the map key `key`
// at `path`, X the nearest of `known` when one is near enough to be a typo of it.
[[noreturn]] void UnknownField(const YAML::Node& key, const std::string& path,
                               const std::vector<std::string>& known);

// Throws ScenarioError naming `path`, the line and the nearest known key ("did you mean") when
// map `node` holds a key not in `known`.
void CheckKeys(const YAML::Node& node, std::initializer_list<const char*> known,
               const std::string& path);

}  // namespace tenon::sim
