// What the files of the scenario's manifests share (manifests.h declares the Manifests they
// implement).
#pragma once

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>

namespace tenon::sim {

// The node's text; empty when it is absent.
std::string Text(const YAML::Node& node);

// The object's metadata field `field` as text; empty when it is absent.
std::string Meta(const YAML::Node& object, const char* field);

// The kinds a scenario takes as workloads: Deployment, ReplicaSet and StatefulSet.
const std::set<std::string>& WorkloadKinds();

}  // namespace tenon::sim
