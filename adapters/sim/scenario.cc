// Scenario YAML -> Scenario. NodePools and EC2NodeClasses are parsed exactly as the controller
// parses them from the API server (adapters/kube/objects.h), so a user's YAML works unchanged.
#include "adapters/sim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>

#include "adapters/kube/objects.h"
#include "adapters/sim/manifests.h"
#include "model/timestamp.h"

namespace tenon::sim {
namespace {

constexpr std::size_t kWorkloadStepsMax = 100'000;
constexpr std::uintmax_t kScenarioBytesMax = 16 << 20;  // Read whole before anything is written.
constexpr std::int64_t kReplicasMax = 1'000'000;
constexpr std::int64_t kStormMax = 10'000;

Instant ParseStart(const std::string& text) {
  if (const std::optional<Instant> at = ParseRfc3339(text)) return *at;
  throw ScenarioError(
      "start must be an RFC 3339 time such as 2026-01-01T00:00:00Z, in the years 1678 to 2261; "
      "got '" +
      text + "'");
}

// A map of label names to values: a nodeSelector, a pod template's labels.
Labels ParseLabelMap(const YAML::Node& node) {
  Labels labels;
  for (const auto& kv : node) labels[kv.first.as<std::string>()] = kv.second.as<std::string>();
  return labels;
}

// What a pod template asks of a node: requests (cpu, memory, gpu: NVIDIA GPUs), nodeSelector
// and tolerations. Shared by deployments, jobs and DaemonSets.
void ParsePodShape(const YAML::Node& w, Resources& requests, Labels& node_selector,
                   std::vector<Toleration>& tolerations) {
  if (w["cpu"]) requests.cpu = kube::ParseCpu(w["cpu"].as<std::string>());
  if (w["memory"]) requests.memory = kube::ParseMemory(w["memory"].as<std::string>());
  if (w["gpu"]) requests.extended[resource::kNvidiaGpu] = w["gpu"].as<std::int64_t>();
  if (w["nodeSelector"]) node_selector = ParseLabelMap(w["nodeSelector"]);
  if (w["tolerations"]) {
    for (const auto& t : w["tolerations"]) tolerations.push_back(kube::ParseToleration(t));
  }
}

std::string RequiredName(const YAML::Node& w, const char* what) {
  if (!w["name"]) throw ScenarioError(std::string(what) + " without a name");
  return CheckedName(w["name"], std::string(what) + ".name", kNameCharsMax);
}

// The namespace of a workload, a job, a DaemonSet or a budget: `ns` unless the node names one.
void Namespace(const YAML::Node& w, const char* what, std::string& ns) {
  if (w["namespace"]) {
    ns = CheckedName(w["namespace"], std::string(what) + ".namespace", kNamespaceCharsMax);
  }
}

Duration At(const YAML::Node& w) {
  return w["at"] ? kube::ParseDuration(w["at"].as<std::string>()) : Duration{0};
}

WorkloadStep ParseWorkload(const YAML::Node& w) {
  WorkloadStep step;
  step.name = RequiredName(w, "workload");
  Namespace(w, "workload", step.ns);
  step.at = At(w);
  step.replicas = w["replicas"].as<std::int64_t>();
  if (step.replicas < 0 || step.replicas > kReplicasMax) {
    throw ScenarioError("workload " + step.name + ": replicas out of range");
  }
  ParsePodShape(w, step.requests, step.node_selector, step.tolerations);
  if (w["zoneSpread"]) {
    step.zone_spread_max_skew = w["zoneSpread"].as<std::int32_t>();
    if (step.zone_spread_max_skew < 1) throw ScenarioError("zoneSpread (maxSkew) must be >= 1");
  }
  if (w["doNotDisrupt"]) {
    // true, or the annotation's duration form ("30m").
    std::string value = w["doNotDisrupt"].as<std::string>();
    if (value == "true" || value == "false") {
      step.do_not_disrupt = value == "true";
    } else {
      if (const Duration lasts = kube::ParseDuration(value); lasts.value > 0) {
        step.do_not_disrupt_for = lasts;
      }
      step.do_not_disrupt = step.do_not_disrupt_for.has_value();
    }
  }
  if (w["terminationGracePeriod"]) {
    step.termination_grace = kube::ParseDuration(w["terminationGracePeriod"].as<std::string>());
  }
  if (w["priorityClassName"]) step.priority_class = w["priorityClassName"].as<std::string>();
  if (w["priority"]) step.priority = w["priority"].as<std::int32_t>();
  if (w["labels"]) step.labels = ParseLabelMap(w["labels"]);
  return step;
}

Job ParseJob(const YAML::Node& j) {
  Job job;
  job.name = RequiredName(j, "job");
  Namespace(j, "job", job.ns);
  job.at = At(j);
  job.pods = j["pods"] ? j["pods"].as<std::int64_t>() : 1;
  if (job.pods < 1 || job.pods > kReplicasMax) throw ScenarioError("job " + job.name + ": pods");
  if (j["runFor"]) job.run_for = kube::ParseDuration(j["runFor"].as<std::string>());
  if (job.run_for.value <= 0) throw ScenarioError("job " + job.name + ": runFor must be > 0");
  ParsePodShape(j, job.requests, job.node_selector, job.tolerations);
  return job;
}

DaemonSetSpec ParseDaemonSet(const YAML::Node& d) {
  DaemonSetSpec ds;
  ds.name = RequiredName(d, "daemonSet");
  Namespace(d, "daemonSet", ds.ns);
  ParsePodShape(d, ds.requests, ds.node_selector, ds.tolerations);
  return ds;
}

Budget ParseBudget(const YAML::Node& b) {
  Budget budget;
  if (!b["name"] || !b["app"] == !b["selector"]) {
    throw ScenarioError("budget needs a name and an app or a selector");
  }
  budget.name = CheckedName(b["name"], "budget.name", kNameCharsMax);
  if (b["app"]) {
    budget.selector.match_labels["app"] = b["app"].as<std::string>();
  } else {
    budget.selector = kube::ParseSelector(b["selector"]);
  }
  Namespace(b, "budget", budget.ns);
  if (b["minAvailable"]) budget.min_available = b["minAvailable"].as<std::int64_t>();
  if (b["maxUnavailable"]) budget.max_unavailable = b["maxUnavailable"].as<std::int64_t>();
  if (budget.min_available.has_value() == budget.max_unavailable.has_value()) {
    throw ScenarioError("budget " + budget.name + ": exactly one of minAvailable, maxUnavailable");
  }
  return budget;
}

Action ParseAction(const YAML::Node& a) {
  Action action;
  action.at = a["at"] ? kube::ParseDuration(a["at"].as<std::string>()) : Duration{0};
  std::string kind = a["do"] ? a["do"].as<std::string>() : "";
  if (kind == "deleteNodeClaim") {
    action.kind = Action::Kind::kDeleteNodeClaim;
  } else if (kind == "terminateInstance") {
    action.kind = Action::Kind::kTerminateInstance;
  } else if (kind == "strayInstance") {
    action.kind = Action::Kind::kStrayInstance;
    if (!a["instanceType"] || !a["zone"]) {
      throw ScenarioError("strayInstance needs instanceType and zone");
    }
    action.instance_type = a["instanceType"].as<std::string>();
    action.zone = a["zone"].as<std::string>();
  } else if (kind == "spotInterruption") {
    action.kind = Action::Kind::kSpotInterruption;
  } else if (kind == "rebalanceRecommendation") {
    action.kind = Action::Kind::kRebalanceRecommendation;
  } else if (kind == "scheduledChange") {
    action.kind = Action::Kind::kScheduledChange;
  } else if (kind == "instanceStopping") {
    action.kind = Action::Kind::kInstanceStopping;
  } else if (kind == "malformedMessage") {
    action.kind = Action::Kind::kMalformedMessage;
  } else if (kind == "protectNode") {
    action.kind = Action::Kind::kProtectNode;
  } else if (kind == "releaseAmi") {
    action.kind = Action::Kind::kReleaseAmi;
  } else if (kind == "spotInterruptionStorm") {
    action.kind = Action::Kind::kSpotInterruptionStorm;
    action.count = a["count"] ? a["count"].as<std::int64_t>() : 1;
    if (action.count < 1 || action.count > kStormMax) {
      throw ScenarioError("spotInterruptionStorm: count must be 1.." + std::to_string(kStormMax));
    }
  } else if (kind == "priceChange") {
    action.kind = Action::Kind::kPriceChange;
    if (!a["instanceType"] || !a["capacityType"] || !a["factor"]) {
      throw ScenarioError("priceChange needs instanceType, capacityType and factor");
    }
    action.instance_type = a["instanceType"].as<std::string>();
    action.capacity_type = a["capacityType"].as<std::string>();
    if (a["zone"]) action.zone = a["zone"].as<std::string>();
    action.price_permille = std::llround(a["factor"].as<double>() * 1000);
    if (action.price_permille <= 0) throw ScenarioError("priceChange: factor must be > 0");
  } else if (kind == "nodeCondition") {
    action.kind = Action::Kind::kNodeCondition;
    action.condition = a["condition"] ? a["condition"].as<std::string>() : "";
    const std::size_t eq = action.condition.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == action.condition.size()) {
      throw ScenarioError("nodeCondition needs condition: Type=Status (e.g. Ready=False)");
    }
    action.count = a["count"] ? a["count"].as<std::int64_t>() : 1;
    if (action.count < 1 || action.count > kStormMax) {
      throw ScenarioError("nodeCondition: count must be 1.." + std::to_string(kStormMax));
    }
    if (a["nodePool"]) action.in_pool = a["nodePool"].as<std::string>();
  } else if (kind == "labelNodePool") {
    action.kind = Action::Kind::kLabelNodePool;
    action.label = a["label"] ? a["label"].as<std::string>() : "";
    if (action.label.find('=') == std::string::npos) {
      throw ScenarioError("labelNodePool needs label: key=value");
    }
  } else {
    throw ScenarioError("action: unknown 'do: " + kind +
                        "' (deleteNodeClaim, terminateInstance, strayInstance, spotInterruption, "
                        "rebalanceRecommendation, scheduledChange, instanceStopping, "
                        "malformedMessage, protectNode, labelNodePool, releaseAmi, "
                        "spotInterruptionStorm, priceChange, nodeCondition)");
  }
  return action;
}

void ParseCloud(const YAML::Node& c, CloudModel& cloud) {
  if (!c) return;
  if (c["registrationDelay"]) {
    cloud.registration_delay = kube::ParseDuration(c["registrationDelay"].as<std::string>());
  }
  if (c["readyDelay"]) cloud.ready_delay = kube::ParseDuration(c["readyDelay"].as<std::string>());
  if (c["launchLatency"]) {
    cloud.launch_latency = kube::ParseDuration(c["launchLatency"].as<std::string>());
  }
  // Either "type/zone/capacity-type" (dry for the whole run) or {offering, from, until}.
  for (const auto& o : c["insufficientCapacity"]) {
    if (o.IsScalar()) {
      cloud.insufficient_capacity.insert(o.as<std::string>());
      continue;
    }
    if (!o["offering"]) throw ScenarioError("insufficientCapacity entry without offering");
    CapacityWindow window{o["offering"].as<std::string>(), Duration{0}, Duration{0}};
    if (o["from"]) window.from = kube::ParseDuration(o["from"].as<std::string>());
    if (o["until"]) window.until = kube::ParseDuration(o["until"].as<std::string>());
    cloud.capacity_windows.push_back(window);
  }
  if (c["neverRegister"]) {
    for (const auto& t : c["neverRegister"]) cloud.never_register.insert(t.as<std::string>());
  }
  if (c["listInterval"]) {
    cloud.list_interval = kube::ParseDuration(c["listInterval"].as<std::string>());
    if (cloud.list_interval.value <= 0) throw ScenarioError("cloud.listInterval must be > 0");
  }
}

// A timeline entry: `scale` (a workload to a replica count), `apply` (a Kubernetes object at
// that time), `patch` (a merge patch of an object applied before), `delete` (a workload: its
// pods go), `cordon` or `uncordon` (a Node), or `do` (one of the actions above).
void ParseTimelineEntry(const YAML::Node& e, std::size_t index, Scenario& s, Manifests& manifests,
                        const std::string& file, std::vector<WorkloadStep>& steps) {
  const std::string path = "timeline[" + std::to_string(index) + "]";
  CheckKeys(e,
            {"at", "scale", "apply", "patch", "delete", "cordon", "uncordon", "do", "instanceType",
             "zone", "capacityType", "factor", "count", "label", "condition", "nodePool"},
            path);
  int verbs = 0;
  for (const char* verb : {"scale", "apply", "patch", "delete", "cordon", "uncordon", "do"}) {
    verbs += e[verb] ? 1 : 0;
  }
  if (verbs != 1) {
    throw ScenarioError("line " + std::to_string(e.Mark().line + 1) + ": " + path +
                        ": exactly one of scale, apply, patch, delete, cordon, uncordon, do");
  }
  const Duration at = At(e);
  if (e["patch"]) {
    const YAML::Node& ref = e["patch"];
    CheckKeys(ref, {"kind", "namespace", "name", "merge"}, path + ".patch");
    if (!ref["kind"]) throw ScenarioError(path + ".patch.kind: required");
    if (!ref["merge"]) throw ScenarioError(path + ".patch.merge: required");
    const std::string kind = ref["kind"].as<std::string>();
    const std::string name = RequiredName(ref, (path + ".patch").c_str());
    const std::string ns = ref["namespace"] ? ref["namespace"].as<std::string>() : "";
    const std::string where = file + ":" + std::to_string(ref.Mark().line + 1);
    if (!manifests.Patch(kind, ns, name, ref["merge"], where, at)) {
      throw ScenarioError("line " + std::to_string(ref.Mark().line + 1) + ": " + path +
                          ".patch: no " + kind + " " + (ns.empty() ? "" : ns + "/") + name +
                          " in the scenario by then");
    }
    return;
  }
  if (e["cordon"] || e["uncordon"]) {
    const std::string verb = e["cordon"] ? "cordon" : "uncordon";
    const YAML::Node& ref = e[verb];
    CheckKeys(ref, {"kind", "name"}, path + "." + verb);
    if (ref["kind"] && ref["kind"].as<std::string>() != "Node") {
      throw ScenarioError(path + "." + verb + ".kind: only a Node is cordoned");
    }
    Action action;
    action.at = at;
    action.kind = e["cordon"] ? Action::Kind::kCordonNode : Action::Kind::kUncordonNode;
    action.node = RequiredName(ref, (path + "." + verb).c_str());
    s.actions.push_back(std::move(action));
    return;
  }
  if (e["do"]) {
    s.actions.push_back(ParseAction(e));
    return;
  }
  if (e["apply"]) {
    manifests.Add(e["apply"], file + ":" + std::to_string(e["apply"].Mark().line + 1), at);
    return;
  }
  const YAML::Node& ref = e["scale"] ? e["scale"] : e["delete"];
  const std::string verb = e["scale"] ? "scale" : "delete";
  CheckKeys(ref, {"kind", "namespace", "name", "replicas"}, path + "." + verb);
  WorkloadStep step;
  step.at = at;
  step.name = RequiredName(ref, (path + "." + verb).c_str());
  Namespace(ref, (path + "." + verb).c_str(), step.ns);
  const std::string kind = ref["kind"] ? ref["kind"].as<std::string>() : "Deployment";
  const std::string key = kind + "/" + step.ns + "/" + step.name;
  if (!manifests.HasWorkload(key)) {
    throw ScenarioError("line " + std::to_string(ref.Mark().line + 1) + ": " + path + "." + verb +
                        ": no " + kind + " " + step.ns + "/" + step.name + " in the scenario");
  }
  if (verb == "scale") {
    if (!ref["replicas"]) throw ScenarioError(path + ".scale.replicas: required");
    step.replicas = ref["replicas"].as<std::int64_t>();
    if (step.replicas < 0 || step.replicas > kReplicasMax) {
      throw ScenarioError(path + ".scale.replicas: out of range");
    }
  }
  steps.push_back(std::move(step));  // A delete scales to none: its pods go.
}

// Controller settings a scenario may change: Karpenter's feature gate and tenon's own
// consolidation threshold (both off by default).
void ParseSettings(const YAML::Node& node, Settings& settings) {
  if (!node) return;
  if (node["featureGates"]) {
    std::string gates = node["featureGates"].as<std::string>();
    settings.spot_to_spot_consolidation =
        gates.find("SpotToSpotConsolidation=true") != std::string::npos;
    settings.static_capacity = gates.find("StaticCapacity=true") != std::string::npos;
    settings.node_overlay = gates.find("NodeOverlay=true") != std::string::npos;
    settings.node_repair = gates.find("NodeRepair=true") != std::string::npos;
    settings.pod_deletion_cost = gates.find("PodDeletionCostManagement=true") != std::string::npos;
  }
  if (node["softExpiration"]) settings.soft_expiration = node["softExpiration"].as<bool>();
  if (node["consolidationMinSavingsPerHour"]) {
    double usd = node["consolidationMinSavingsPerHour"].as<double>();
    if (usd < 0) throw ScenarioError("settings.consolidationMinSavingsPerHour must be >= 0");
    settings.consolidation_min_savings = MicroUsdPerHour{static_cast<std::int64_t>(usd * 1e6)};
  }
  if (node["consolidationMinSavingsPercent"]) {
    auto percent = node["consolidationMinSavingsPercent"].as<std::int32_t>();
    if (percent < 0 || percent > 100) {
      throw ScenarioError("settings.consolidationMinSavingsPercent must be 0..100");
    }
    settings.consolidation_min_savings_percent = percent;
  }
}

// The scenario document's own keys (besides apiVersion and kind).
void CheckScenarioKeys(const YAML::Node& doc) {
  CheckKeys(doc,
            {"apiVersion", "kind", "name", "seed", "start", "duration", "tick", "clusterName",
             "catalog", "cloud", "settings", "objects", "timeline", "workloads", "jobs",
             "daemonSets", "budgets", "actions"},
            "");
  CheckKeys(doc["cloud"],
            {"registrationDelay", "readyDelay", "launchLatency", "insufficientCapacity",
             "neverRegister", "listInterval"},
            "cloud");
  CheckKeys(doc["settings"],
            {"featureGates", "softExpiration", "consolidationMinSavingsPerHour",
             "consolidationMinSavingsPercent"},
            "settings");
  for (const auto& w : doc["workloads"]) {
    CheckKeys(w,
              {"name", "namespace", "at", "replicas", "cpu", "memory", "gpu", "nodeSelector",
               "tolerations", "zoneSpread", "doNotDisrupt", "terminationGracePeriod",
               "priorityClassName", "priority", "labels"},
              "workloads[]");
  }
  for (const auto& j : doc["jobs"]) {
    CheckKeys(j,
              {"name", "namespace", "at", "pods", "runFor", "cpu", "memory", "gpu", "nodeSelector",
               "tolerations"},
              "jobs[]");
  }
  for (const auto& d : doc["daemonSets"]) {
    CheckKeys(d, {"name", "namespace", "cpu", "memory", "gpu", "nodeSelector", "tolerations"},
              "daemonSets[]");
  }
  for (const auto& b : doc["budgets"]) {
    CheckKeys(b, {"name", "namespace", "app", "selector", "minAvailable", "maxUnavailable"},
              "budgets[]");
  }
  for (const auto& a : doc["actions"]) {
    CheckKeys(a,
              {"at", "do", "instanceType", "zone", "capacityType", "factor", "count", "label",
               "condition", "nodePool"},
              "actions[]");
  }
}

Scenario Parse(const YAML::Node& doc,
               const std::vector<std::pair<YAML::Node, std::string>>& objects,
               const std::filesystem::path& folder, const std::string& file) {
  CheckScenarioKeys(doc);
  Scenario s;
  s.name = doc["name"] ? doc["name"].as<std::string>() : "scenario";
  if (doc["seed"]) s.seed = doc["seed"].as<std::uint64_t>();
  s.start = ParseStart(doc["start"] ? doc["start"].as<std::string>() : "2026-01-01T00:00:00Z");
  if (doc["duration"]) s.duration = kube::ParseDuration(doc["duration"].as<std::string>());
  if (doc["tick"]) s.tick = kube::ParseDuration(doc["tick"].as<std::string>());
  if (s.tick.value <= 0 || s.duration.value <= 0)
    throw ScenarioError("tick and duration must be > 0");
  if (doc["clusterName"]) s.settings.cluster_name = doc["clusterName"].as<std::string>();
  ParseSettings(doc["settings"], s.settings);
  if (!doc["catalog"]) throw ScenarioError("catalog: a path to a catalog file is required");
  auto catalog = std::filesystem::path(doc["catalog"].as<std::string>());
  s.catalog = LoadCatalogJson(catalog.is_absolute() ? catalog : folder / catalog, s.seed);
  Manifests manifests;
  for (const auto& o : doc["objects"])
    manifests.Add(o, file + ":" + std::to_string(o.Mark().line + 1));
  for (const auto& [object, where] : objects) manifests.Add(object, where);
  std::size_t index = 0;
  std::vector<WorkloadStep> steps;
  for (const auto& e : doc["timeline"]) ParseTimelineEntry(e, index++, s, manifests, file, steps);
  manifests.Resolve(s);
  for (const Action& a : s.actions) {
    const bool cordon =
        a.kind == Action::Kind::kCordonNode || a.kind == Action::Kind::kUncordonNode;
    if (cordon && std::none_of(s.nodes.begin(), s.nodes.end(),
                               [&](const Node& n) { return n.name == a.node; })) {
      throw ScenarioError("timeline: cordon " + a.node +
                          ": no Node of that name in the scenario (only the Nodes it starts " +
                          "with have names known in advance)");
    }
  }
  for (auto& step : steps) s.workloads.push_back(std::move(step));
  if (s.nodepools.empty()) throw ScenarioError("objects: at least one NodePool is required");
  for (const auto& w : doc["workloads"]) {
    if (s.workloads.size() >= kWorkloadStepsMax) throw ScenarioError("too many workload steps");
    s.workloads.push_back(ParseWorkload(w));
  }
  std::stable_sort(s.workloads.begin(), s.workloads.end(), [](const auto& a, const auto& b) {
    return a.at != b.at ? a.at < b.at : a.name < b.name;
  });
  for (const auto& j : doc["jobs"]) s.jobs.push_back(ParseJob(j));
  std::stable_sort(s.jobs.begin(), s.jobs.end(), [](const auto& a, const auto& b) {
    return a.at != b.at ? a.at < b.at : a.name < b.name;
  });
  for (const auto& d : doc["daemonSets"]) s.daemonsets.push_back(ParseDaemonSet(d));
  for (const auto& b : doc["budgets"]) s.budgets.push_back(ParseBudget(b));
  for (const auto& a : doc["actions"]) s.actions.push_back(ParseAction(a));
  std::stable_sort(s.actions.begin(), s.actions.end(),
                   [](const auto& a, const auto& b) { return a.at < b.at; });
  ParseCloud(doc["cloud"], s.cloud);
  return s;
}

}  // namespace

Scenario WithConfigurationOf(const Scenario& base, const Scenario& config) {
  Scenario out = base;
  out.name = config.name;
  out.nodepools = config.nodepools;
  out.nodeclasses = config.nodeclasses;
  out.overlays = config.overlays;
  out.settings = config.settings;
  return out;
}

namespace {

// The documents of one file: the scenario document (kind Scenario, or no kind) and the objects,
// each with where it starts.
void SplitDocuments(const std::string& yaml, const std::string& file,
                    std::optional<std::pair<YAML::Node, std::string>>& scenario,
                    std::vector<std::pair<YAML::Node, std::string>>& objects) {
  for (const auto& doc : kube::LoadDocuments(yaml)) {
    if (doc.IsNull()) continue;  // An empty document (a trailing ---).
    const std::string where = file + ":" + std::to_string(doc.Mark().line + 1);
    if (!doc.IsMap()) throw ScenarioError(where + ": a document must be a map");
    const std::string kind = doc["kind"] ? doc["kind"].as<std::string>() : "";
    if (!kind.empty() && kind != "Scenario") {
      objects.emplace_back(doc, where);
      continue;
    }
    if (scenario) {
      throw ScenarioError(where + ": a second Scenario document (the first is at " +
                          scenario->second + ")");
    }
    scenario.emplace(doc, where);
  }
}

Scenario ParseDocuments(const std::vector<std::pair<std::string, std::string>>& files,
                        const std::filesystem::path& folder) {
  std::optional<std::pair<YAML::Node, std::string>> scenario;
  std::vector<std::pair<YAML::Node, std::string>> objects;
  std::size_t bytes = 0;
  for (const auto& [file, yaml] : files) {
    bytes += yaml.size();
    if (bytes > kScenarioBytesMax) {
      throw ScenarioError("larger than " + std::to_string(kScenarioBytesMax >> 20) +
                          " MiB, the most a scenario may be");
    }
    try {
      SplitDocuments(yaml, file, scenario, objects);
    } catch (const YAML::Exception& e) {
      throw ScenarioError((file.empty() ? "" : file + ": ") + e.what());
    }
  }
  if (!scenario) {
    throw ScenarioError(
        "no Scenario document (the simulation's name, start, duration, catalog "
        "and timeline: a document of kind Scenario)");
  }
  const std::string file = files.size() == 1
                               ? files.front().first
                               : scenario->second.substr(0, scenario->second.rfind(':'));
  try {
    return Parse(scenario->first, objects, folder, file);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(e.what());
  } catch (const kube::ObjectError& e) {
    throw ScenarioError(e.what());
  }
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError(path.string() + ": cannot read it");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

Scenario ParseScenario(const std::string& yaml, const std::filesystem::path& folder) {
  if (yaml.size() > kScenarioBytesMax) {
    throw ScenarioError("larger than " + std::to_string(kScenarioBytesMax >> 20) +
                        " MiB, the most a scenario may be");
  }
  return ParseDocuments({{"", yaml}}, folder);
}

Scenario LoadScenario(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    // As kubectl apply -f DIR: the folder's .yaml, .yml and .json files, in name order.
    std::vector<std::filesystem::path> names;
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      const auto ext = entry.path().extension();
      if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
        names.push_back(entry.path());
      }
    }
    std::sort(names.begin(), names.end());
    if (names.empty()) throw ScenarioError(path.string() + ": no .yaml, .yml or .json file in it");
    std::vector<std::pair<std::string, std::string>> files;
    std::uintmax_t bytes = 0;
    for (const auto& name : names) {
      bytes += std::filesystem::file_size(name, ec);
      if (bytes > kScenarioBytesMax) {
        throw ScenarioError(path.string() + " is larger than " +
                            std::to_string(kScenarioBytesMax >> 20) +
                            " MiB, the most a scenario may be");
      }
      files.emplace_back(name.string(), ReadFile(name));
    }
    return ParseDocuments(files, path);
  }
  RequireFile(path, "");
  if (std::filesystem::file_size(path, ec) > kScenarioBytesMax) {
    throw ScenarioError(path.string() + " is larger than " +
                        std::to_string(kScenarioBytesMax >> 20) +
                        " MiB, the most a scenario may be");
  }
  const std::string yaml = ReadFile(path);
  try {
    return ParseDocuments({{path.string(), yaml}}, path.parent_path());
  } catch (const ScenarioError& e) {
    const std::string message = e.what();
    // Errors found in the scenario document name a line; objects name file and line already.
    if (message.rfind(path.string(), 0) == 0) throw;
    throw ScenarioError(path.string() + ": " + message);
  }
}

}  // namespace tenon::sim
