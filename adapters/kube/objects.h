// Karpenter's custom resources and Kubernetes quantities, parsed from YAML or JSON (yaml-cpp
// reads both) into the domain model. Used by the scenario loader and the kube adapter.
// Errors are ObjectError with a message that names the object and the field.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "reducers/model.h"

namespace tenon::kube {

class ObjectError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "500m" -> 500, "2" -> 2000, "1.5" -> 1500.
Millicores ParseCpu(std::string_view quantity);
// "1Gi", "512Mi", "1G", "1000", "1.5Gi" -> bytes.
Bytes ParseMemory(std::string_view quantity);
// Go durations: "720h", "1h30m", "10s", "500ms"; "Never" -> a negative duration.
Nanos ParseDuration(std::string_view duration);

NodePool ParseNodePool(const YAML::Node& object);    // karpenter.sh/v1 NodePool
NodeClass ParseNodeClass(const YAML::Node& object);  // karpenter.k8s.aws/v1 EC2NodeClass
Toleration ParseToleration(const YAML::Node& node);
Taint ParseTaint(const YAML::Node& node);

}  // namespace tenon::kube
