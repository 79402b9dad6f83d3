#include "adapters/kube/capture.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace tenon::kube {
namespace {

using nlohmann::json;

// What is listed, in the order cluster.yaml holds it: what a workload needs comes before it.
// `run_reads`: `tenon run` lists it too, so its RBAC allows it and a refusal is an error; the
// others (workloads and classes) are skipped with a note when they cannot be listed.
struct Listed {
  const char* path;
  const char* kind;
  const char* api_version;
  bool run_reads;
};
constexpr std::array<Listed, 17> kListed{{
    {"/apis/karpenter.k8s.aws/v1/ec2nodeclasses", "EC2NodeClass", "karpenter.k8s.aws/v1", true},
    {"/apis/karpenter.sh/v1/nodepools", "NodePool", "karpenter.sh/v1", true},
    {"/apis/karpenter.sh/v1/nodeclaims", "NodeClaim", "karpenter.sh/v1", true},
    {"/api/v1/nodes", "Node", "v1", true},
    {"/apis/storage.k8s.io/v1/storageclasses", "StorageClass", "storage.k8s.io/v1", true},
    {"/apis/storage.k8s.io/v1/csinodes", "CSINode", "storage.k8s.io/v1", true},
    {"/api/v1/persistentvolumes", "PersistentVolume", "v1", true},
    {"/api/v1/persistentvolumeclaims", "PersistentVolumeClaim", "v1", true},
    {"/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClass", "scheduling.k8s.io/v1", false},
    {"/apis/node.k8s.io/v1/runtimeclasses", "RuntimeClass", "node.k8s.io/v1", false},
    {"/apis/policy/v1/poddisruptionbudgets", "PodDisruptionBudget", "policy/v1", true},
    {"/apis/apps/v1/deployments", "Deployment", "apps/v1", false},
    {"/apis/apps/v1/replicasets", "ReplicaSet", "apps/v1", false},
    {"/apis/apps/v1/statefulsets", "StatefulSet", "apps/v1", false},
    {"/apis/apps/v1/daemonsets", "DaemonSet", "apps/v1", true},
    {"/apis/batch/v1/jobs", "Job", "batch/v1", false},
    {"/api/v1/pods", "Pod", "v1", true},
}};

constexpr int kListAttemptsMax = 3;  // A list whose continue token expired starts over.
constexpr long kGone = 410;
constexpr long kForbidden = 403;
constexpr long kNotFound = 404;

// Every item of one list, page by page. An empty result with `refused` set: the API answered
// 403 or 404 (`refused` holds its answer).
std::vector<json> ListAll(Client& client, const Listed& what, int page_size, std::string& refused) {
  for (int attempt = 1;; ++attempt) {
    std::vector<json> items;
    std::string token;
    bool expired = false;
    do {
      std::string path = std::string(what.path) + "?limit=" + std::to_string(page_size);
      if (!token.empty()) path += "&continue=" + QueryEscape(token);
      const Response response = client.Request("GET", path);
      if (response.status == kForbidden || response.status == kNotFound) {
        refused = std::to_string(response.status) + " " + Describe(response);
        return {};
      }
      if (response.status == kGone && !token.empty() && attempt < kListAttemptsMax) {
        expired = true;
        break;
      }
      if (!response.ok()) {
        throw CaptureError("list " + std::string(what.path) + ": " +
                           (response.status == 0
                                ? response.transport_error
                                : std::to_string(response.status) + " " + Describe(response)));
      }
      json page;
      try {
        page = json::parse(response.body);
      } catch (const json::exception& e) {
        throw CaptureError("list " + std::string(what.path) + ": not JSON: " + e.what());
      }
      if (!page.contains("items") || !page["items"].is_array()) {
        throw CaptureError("list " + std::string(what.path) + ": no items in the answer");
      }
      for (auto& item : page["items"]) items.push_back(std::move(item));
      token = page.value(json::json_pointer("/metadata/continue"), std::string());
    } while (!token.empty());
    if (!expired) return items;
  }
}

// A pod that finished holds no room and no controller will bring it back.
bool Finished(const json& pod) {
  const std::string phase = pod.value(json::json_pointer("/status/phase"), std::string());
  return phase == "Succeeded" || phase == "Failed";
}

bool NeedsQuotes(const std::string& s) {
  static const std::set<std::string> kReadAsOther{
      "true", "false", "yes", "no", "on", "off", "y",    "n",     "null", "~",
      "True", "False", "Yes", "No", "On", "Off", "TRUE", "FALSE", "NULL", "Null"};
  if (s.empty() || kReadAsOther.contains(s)) return true;
  // Numbers, dates and anything else that starts like one: quoting a string is never wrong.
  return std::string_view("0123456789+-.").find(s.front()) != std::string_view::npos;
}

// Any nlohmann JSON flavour: objects keep the order the type keeps (sorted, or as inserted).
template <class Json>
void Emit(YAML::Emitter& out, const Json& j) {
  switch (j.type()) {
    case Json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [key, value] : j.items()) {
        out << YAML::Key;
        if (NeedsQuotes(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
        Emit(out, value);
      }
      out << YAML::EndMap;
      break;
    case Json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& value : j) Emit(out, value);
      out << YAML::EndSeq;
      break;
    case Json::value_t::string: {
      const auto& s = j.template get_ref<const std::string&>();
      if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
      out << s;
      break;
    }
    case Json::value_t::boolean:
      out << j.template get<bool>();
      break;
    case Json::value_t::number_integer:
      out << j.template get<std::int64_t>();
      break;
    case Json::value_t::number_unsigned:
      out << j.template get<std::uint64_t>();
      break;
    case Json::value_t::number_float:
      out << j.template get<double>();
      break;
    default:
      out << YAML::Null;
      break;
  }
}

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw CaptureError("cannot write " + path.string());
}

}  // namespace

json Cleaned(json item, const std::string& kind, const std::string& api_version) {
  json object = json::object();
  object["apiVersion"] = api_version;
  object["kind"] = kind;
  for (auto& [key, value] : item.items()) {
    if (key != "apiVersion" && key != "kind") object[key] = std::move(value);
  }
  if (object.contains("metadata") && object["metadata"].is_object()) {
    json& meta = object["metadata"];
    for (const char* key : {"managedFields", "resourceVersion", "generation", "selfLink"}) {
      meta.erase(key);
    }
    if (meta.contains("annotations") && meta["annotations"].is_object()) {
      meta["annotations"].erase("kubectl.kubernetes.io/last-applied-configuration");
      if (meta["annotations"].empty()) meta.erase("annotations");
    }
  }
  return object;
}

namespace {
template <class Json>
std::string YamlOf(const Json& object) {
  YAML::Emitter out;
  Emit(out, object);
  return std::string(out.c_str()) + "\n";
}
}  // namespace

std::string ToYaml(const json& object) {
  return YamlOf(object);
}
std::string ToYaml(const nlohmann::ordered_json& object) {
  return YamlOf(object);
}

namespace {

namespace fs = std::filesystem;

// The folder must be new or empty, and the catalog to copy in a file.
void CheckPaths(const CaptureOptions& options) {
  std::error_code ec;
  if (fs::exists(options.folder, ec) &&
      (!fs::is_directory(options.folder, ec) || !fs::is_empty(options.folder, ec))) {
    throw CaptureError(options.folder.string() + " exists and is not an empty folder");
  }
  if (!fs::is_regular_file(options.catalog, ec)) {
    throw CaptureError("catalog " + options.catalog.string() + " is not a file");
  }
}

// cluster.yaml: every object listed, kind by kind; what is left out is said in `report`.
std::string ListCluster(Client& client, const CaptureOptions& options, CaptureReport& report) {
  std::set<std::string> nodes;  // Listed before the pods.
  std::size_t on_later_nodes = 0;
  std::string cluster = "# The cluster's objects as `tenon capture` listed them from " +
                        client.config().server + " at " + options.start + ".\n";
  for (const Listed& what : kListed) {
    std::string refused;
    std::vector<json> items = ListAll(client, what, options.page_size, refused);
    if (!refused.empty()) {
      if (what.run_reads) {
        throw CaptureError(
            "list " + std::string(what.path) + ": " + refused +
            " (tenon capture lists what tenon run reads; its ClusterRole allows it)");
      }
      report.skipped.push_back(std::string(what.kind) + ": " + refused);
      continue;
    }
    for (auto& item : items) {
      const std::string kind = what.kind;
      if (kind == "Node") nodes.insert(item.value(json::json_pointer("/metadata/name"), ""));
      if (kind == "Pod" && Finished(item)) continue;
      // A pod bound to a node that joined after the nodes were listed: the scenario could not
      // place it on a Node it does not hold.
      const std::string node = item.value(json::json_pointer("/spec/nodeName"), "");
      if (kind == "Pod" && !node.empty() && !nodes.contains(node)) {
        ++on_later_nodes;
        continue;
      }
      cluster += "---\n" + ToYaml(Cleaned(std::move(item), what.kind, what.api_version));
      ++report.objects[what.kind];
    }
  }
  if (on_later_nodes > 0) {
    report.skipped.push_back(std::to_string(on_later_nodes) +
                             " pods on nodes that joined while the cluster was listed");
  }
  return cluster;
}

std::string ScenarioText(Client& client, const CaptureOptions& options) {
  const nlohmann::ordered_json scenario = {{"kind", "Scenario"},
                                           {"name", options.name},
                                           {"start", options.start},
                                           {"duration", options.duration},
                                           {"catalog", "catalog/instance-types.json"}};
  return "# A scenario of the cluster at " + client.config().server + " as it was at " +
         options.start +
         ".\n"
         "# `tenon simulate FOLDER` runs it; change a NodePool in cluster.yaml, or add a timeline\n"
         "# here, to see what the change would do first.\n" +
         ToYaml(scenario);
}

// Written beside the target and renamed into place: a failed capture leaves nothing.
void WriteFolder(const CaptureOptions& options, const std::string& scenario_text,
                 const std::string& cluster) {
  std::error_code ec;
  const fs::path target = fs::absolute(options.folder);
  const fs::path staging = target.parent_path() / ("." + target.filename().string() + ".capture-" +
                                                   std::to_string(::getpid()));
  fs::remove_all(staging, ec);
  try {
    fs::create_directories(staging);
    WriteFile(staging / "scenario.yaml", scenario_text);
    WriteFile(staging / "cluster.yaml", cluster);
    // In a folder of its own: `tenon simulate FOLDER` reads every JSON file beside scenario.yaml
    // as Kubernetes objects.
    fs::create_directories(staging / "catalog");
    fs::copy_file(options.catalog, staging / "catalog" / "instance-types.json");
    if (fs::exists(target)) fs::remove(target);  // An empty folder (CheckPaths).
    fs::rename(staging, target);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(staging, ec);
    throw CaptureError(std::string("cannot write the scenario: ") + e.what());
  } catch (const CaptureError&) {
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace

CaptureReport Capture(Client& client, const CaptureOptions& options) {
  CheckPaths(options);
  CaptureReport report;
  const std::string cluster = ListCluster(client, options, report);
  WriteFolder(options, ScenarioText(client, options), cluster);
  return report;
}

}  // namespace tenon::kube
