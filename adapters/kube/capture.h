// `tenon capture`: a live cluster written out as a scenario folder that `tenon simulate` runs.
// It lists, read-only and page by page, the objects the simulation reads (NodePools,
// EC2NodeClasses, NodeClaims, Nodes, Pods and their workloads, budgets, storage, priority and
// runtime classes) and writes them as Kubernetes YAML, so an operator can try a changed NodePool
// on their real workload before applying it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "adapters/kube/client.h"

namespace tenon::kube {

class CaptureError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CaptureOptions {
  std::filesystem::path folder;   // Created; must not exist yet (or be empty).
  std::filesystem::path catalog;  // Copied in (the scenario needs one).
  std::string name = "captured";  // The scenario's name.
  std::string start;              // RFC 3339: the scenario's start (the capture's time).
  std::string duration = "1h";    // How long `tenon simulate` runs it.
  int page_size = 500;            // Items per list request (limit).
};

struct CaptureReport {
  std::map<std::string, std::size_t> objects;  // Kind -> objects written.
  // Kinds the cluster does not serve or this identity may not list, with the API's answer:
  // the capture goes on without them (pods of a workload left out stay as plain pods).
  std::vector<std::string> skipped;
};

// Lists the cluster through `client` and writes `options.folder` (scenario.yaml, cluster.yaml,
// catalog/instance-types.json). It is written beside the target first and renamed into place, so a
// failed capture leaves nothing. Throws CaptureError naming the list and the API's answer when a
// kind `tenon run` itself reads cannot be listed.
CaptureReport Capture(Client& client, const CaptureOptions& options);

// An object as listed, made fit to apply: kind and apiVersion set (list items lack them), and
// what the API server alone writes (managedFields, resourceVersion, generation, selfLink)
// removed.
nlohmann::json Cleaned(nlohmann::json item, const std::string& kind,
                       const std::string& api_version);

// `object` as one YAML document: maps and lists in block style, strings quoted wherever plain
// YAML would read them as something else ("true", "1", "").
std::string ToYaml(const nlohmann::json& object);
std::string ToYaml(const nlohmann::ordered_json& object);  // Keys in the order given.

}  // namespace tenon::kube
