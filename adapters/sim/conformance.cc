#include "adapters/sim/conformance.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "adapters/kube/objects.h"
#include "adapters/sim/kube_scheduler.h"
#include "adapters/sim/manifests.h"
#include "adapters/sim/simulator.h"

namespace tenon::sim {
namespace {

constexpr const char* kDefaultDuration = "5m";

// The catalogs a case names by word, relative to the repository's tests/conformance folder.
std::string CatalogPath(const std::string& name) {
  if (name == "small" || name == "gpu") return "../../examples/catalogs/" + name + ".json";
  return name;
}

YAML::Node DefaultNodeClass() {
  return YAML::Load(R"(
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-conformance
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: conformance}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: conformance}}]
)");
}

YAML::Node DefaultNodePool() {
  return YAML::Load(R"(
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
)");
}

// The scenario a case stands for, as YAML documents: the Scenario document, then the objects.
std::string ScenarioText(const YAML::Node& c) {
  YAML::Node scenario;
  scenario["kind"] = "Scenario";
  scenario["name"] = c["name"].as<std::string>();
  scenario["duration"] = c["duration"] ? c["duration"].as<std::string>() : kDefaultDuration;
  scenario["catalog"] = CatalogPath(c["catalog"] ? c["catalog"].as<std::string>() : "small");
  for (const char* key : {"settings", "cloud", "timeline", "seed"}) {
    if (c[key]) scenario[key] = c[key];
  }
  bool has_class = false, has_pool = false;
  for (const auto& o : c["objects"]) {
    const std::string kind = o["kind"] ? o["kind"].as<std::string>() : "";
    has_class = has_class || kind == "EC2NodeClass";
    has_pool = has_pool || kind == "NodePool";
  }
  YAML::Emitter out;
  out << scenario;
  auto document = [&](const YAML::Node& node) { out << YAML::BeginDoc << node; };
  if (!has_class) document(DefaultNodeClass());
  if (!has_pool) document(DefaultNodePool());
  for (const auto& o : c["objects"]) document(o);
  return out.c_str();
}

std::string PodKeyOf(const std::string& ref) {
  return ref.find('/') == std::string::npos ? "default/" + ref : ref;
}

// "*": present with any value; "!": absent; anything else: that value.
bool LabelHolds(const Node& node, const std::string& key, const std::string& want) {
  auto value = node.labels.Lookup(key);
  if (want == "!") return !value;
  if (want == "*") return value.has_value();
  return value && *value == want;
}

std::string Describe(const Node& node, const YAML::Node& labels) {
  std::string text = "node " + node.name + " has";
  for (const auto& kv : labels) {
    auto value = node.labels.Lookup(kv.first.as<std::string>());
    text += " " + kv.first.as<std::string>() + "=" + (value ? std::string(*value) : "<none>");
  }
  return text;
}

// A case's expectations checked one kind at a time against the world the run left, gathering
// what did not hold in the order the kinds are listed here.
struct Expectations {
  const YAML::Node& expect;
  const World& world;
  std::vector<std::string> failures;

  void Fail(const std::string& what) { failures.push_back(what); }

  const Pod* PodOf(const std::string& ref) const {
    auto it = world.pods().find(PodKeyOf(ref));
    return it == world.pods().end() ? nullptr : &it->second;
  }

  // The node the pod is bound to; null when it is pending or does not exist.
  const Node* NodeOf(const std::string& ref) const {
    const Pod* p = PodOf(ref);
    if (p == nullptr || p->node_name.empty()) return nullptr;
    auto it = world.nodes().find(p->node_name.str());
    return it == world.nodes().end() ? nullptr : &it->second;
  }

  void Counts() {
    const WorldSummary summary = world.Summary();
    const auto count = [&](const char* key, std::size_t have) {
      if (!expect[key]) return;
      auto want = expect[key].as<std::size_t>();
      if (want != have) {
        Fail(std::string(key) + ": expected " + std::to_string(want) + ", got " +
             std::to_string(have));
      }
    };
    count("bound", summary.pods_bound);
    count("pending", summary.pods_pending);
    count("nodes", summary.nodes);
    count("instances", summary.instances);
    count("launches", summary.launch_calls);
  }

  void PodsBound() {
    for (const auto& ref : expect["podsBound"]) {
      const std::string name = ref.as<std::string>();
      if (NodeOf(name) == nullptr)
        Fail("podsBound: " + name + (PodOf(name) ? " is pending" : " does not exist"));
    }
  }

  void PodsPending() {
    for (const auto& ref : expect["podsPending"]) {
      const std::string name = ref.as<std::string>();
      const Pod* p = PodOf(name);
      if (p == nullptr) {
        Fail("podsPending: " + name + " does not exist");
      } else if (!p->node_name.empty()) {
        Fail("podsPending: " + name + " is bound to " + p->node_name.str());
      }
    }
  }

  // Every launched instance's node carries the labels.
  void NodeLabels() {
    const auto& labels = expect["nodeLabels"];
    if (!labels) return;
    for (const auto& [id, instance] : world.instances()) {
      auto node = world.nodes().find(instance.node_name);
      if (node == world.nodes().end()) continue;
      for (const auto& kv : labels) {
        if (!LabelHolds(node->second, kv.first.as<std::string>(), kv.second.as<std::string>())) {
          Fail("nodeLabels: " + Describe(node->second, labels));
          break;
        }
      }
    }
  }

  void InstanceTypes() {
    const auto& types = expect["instanceTypes"];
    if (!types) return;
    std::set<std::string> allowed;
    for (const auto& t : types) allowed.insert(t.as<std::string>());
    for (const auto& [id, instance] : world.instances()) {
      if (!allowed.contains(instance.instance_type)) {
        Fail("instanceTypes: instance " + id + " is " + instance.instance_type);
      }
    }
  }

  // Each NodeOverlay named has the status given: "True" (ValidationSucceeded), or the reason it
  // is not (Conflict, RuntimeValidation).
  void Overlays() {
    for (const auto& kv : expect["overlays"]) {
      const std::string name = kv.first.as<std::string>();
      const std::string want = kv.second.as<std::string>();
      auto it = world.overlay_status().find(name);
      const std::string have = it == world.overlay_status().end() ? "<no status>"
                               : it->second.valid                 ? "True"
                                                                  : it->second.reason;
      if (have != want) Fail("overlays: " + name + " is " + have + ", expected " + want);
    }
  }

  // Every instance of the type named was launched at that price (dollars an hour, as the
  // offering's price the controller sent with the launch).
  void Prices() {
    for (const auto& kv : expect["prices"]) {
      const std::string type = kv.first.as<std::string>();
      const auto want = static_cast<std::int64_t>(std::llround(kv.second.as<double>() * 1e6));
      bool seen = false;
      for (const auto& [id, instance] : world.instances()) {
        if (instance.instance_type != type) continue;
        seen = true;
        if (instance.price.value != want) {
          Fail("prices: instance " + id + " (" + type + ") at " + DollarsText(instance.price) +
               ", expected " + DollarsText(MicroUsdPerHour{want}));
        }
      }
      if (!seen) Fail("prices: no instance of " + type);
    }
  }

  // Each pod named is bound to a node carrying its labels.
  void PodNodes() {
    for (const auto& kv : expect["podNode"]) {
      const std::string name = kv.first.as<std::string>();
      const Node* node = NodeOf(name);
      if (node == nullptr) {
        Fail("podNode: " + name + " is not bound");
        continue;
      }
      for (const auto& label : kv.second) {
        if (!LabelHolds(*node, label.first.as<std::string>(), label.second.as<std::string>())) {
          Fail("podNode: " + name + " is on " + Describe(*node, kv.second));
          break;
        }
      }
    }
  }

  void SameNode() {
    for (const auto& group : expect["sameNode"]) {
      std::set<std::string> nodes;
      for (const auto& ref : group) {
        const Node* node = NodeOf(ref.as<std::string>());
        nodes.insert(node == nullptr ? "<pending>" : node->name);
      }
      if (nodes.size() != 1 || nodes.contains("<pending>")) {
        std::string text = "sameNode: the group is on";
        for (const auto& n : nodes) text += " " + n;
        Fail(text);
      }
    }
  }

  void DistinctNodes() {
    for (const auto& group : expect["distinctNodes"]) {
      std::map<std::string, std::string> seen;  // Node -> the first pod on it.
      for (const auto& ref : group) {
        const std::string name = ref.as<std::string>();
        const Node* node = NodeOf(name);
        if (node == nullptr) {
          Fail("distinctNodes: " + name + " is not bound");
          continue;
        }
        auto [it, fresh] = seen.try_emplace(node->name, name);
        if (!fresh)
          Fail("distinctNodes: " + name + " shares " + node->name + " with " + it->second);
      }
    }
  }

  // How many bound pods the selector picks in each domain of the node label `key`.
  std::map<std::string, std::int64_t> PodsPerDomain(const LabelSelector& selector,
                                                    const std::string& key) const {
    std::map<std::string, std::int64_t> counts;
    for (const auto& [k, p] : world.pods()) {
      if (p.node_name.empty() || !LabelsMatch(selector, *p.labels)) continue;
      auto node = world.nodes().find(p.node_name.str());
      if (node == world.nodes().end()) continue;
      auto value = node->second.labels.Lookup(key);
      if (value) ++counts[std::string(*value)];
    }
    return counts;
  }

  void Spread(const YAML::Node& spread) {
    LabelSelector selector;
    for (const auto& kv : spread["selector"]) {
      selector.match_labels[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
    const std::string key = spread["key"].as<std::string>();
    const std::map<std::string, std::int64_t> counts = PodsPerDomain(selector, key);
    std::string seen;
    std::int64_t most = 0, least = counts.empty() ? 0 : INT64_MAX;
    for (const auto& [value, n] : counts) {
      seen += " " + value + "=" + std::to_string(n);
      most = std::max(most, n);
      least = std::min(least, n);
    }
    if (spread["maxSkew"] && most - least > spread["maxSkew"].as<std::int64_t>()) {
      Fail("spread over " + key + ": skew " + std::to_string(most - least) + " (" + seen + " )");
    }
    if (spread["domains"] && counts.size() != spread["domains"].as<std::size_t>()) {
      Fail("spread over " + key + ": " + std::to_string(counts.size()) + " domains used (" + seen +
           " ), expected " + spread["domains"].as<std::string>());
    }
  }
};

// Checks each expectation against the world; returns what did not hold.
std::vector<std::string> Check(const YAML::Node& expect, const World& world) {
  Expectations e{expect, world, {}};
  e.Counts();
  e.PodsBound();
  e.PodsPending();
  e.NodeLabels();
  e.InstanceTypes();
  e.Overlays();
  e.Prices();
  e.PodNodes();
  e.SameNode();
  e.DistinctNodes();
  for (const auto& spread : expect["spread"]) e.Spread(spread);
  return std::move(e.failures);
}

CaseResult RunCase(const YAML::Node& c, const std::filesystem::path& file) {
  CaseResult result;
  result.file = file.string();
  result.name = c["name"] ? c["name"].as<std::string>()
                          : "(unnamed, line " + std::to_string(c.Mark().line + 1) + ")";
  result.source = c["source"] ? c["source"].as<std::string>() : "";
  result.deviation = c["deviation"] ? c["deviation"].as<std::string>() : "";
  try {
    CheckKeys(c,
              {"kind", "name", "source", "deviation", "duration", "catalog", "settings", "cloud",
               "timeline", "seed", "objects", "expect"},
              "");
    CheckKeys(c["expect"],
              {"bound", "pending", "podsBound", "podsPending", "nodes", "instances", "launches",
               "nodeLabels", "instanceTypes", "podNode", "sameNode", "distinctNodes", "spread",
               "overlays", "prices"},
              "expect");
    if (!c["name"] || !c["source"] || !c["expect"]) {
      throw ScenarioError("a case needs name, source and expect");
    }
    const Scenario scenario = ParseScenario(ScenarioText(c), file.parent_path());
    // The log goes to a folder of its own, removed with the case.
    char pattern[] = "/tmp/tenon-conformance-XXXXXX";
    if (mkdtemp(pattern) == nullptr) throw ScenarioError("cannot make a temporary folder");
    const std::filesystem::path dir(pattern);
    SimulateOptions options;
    options.log_dir = dir / "log";
    options.appends = runtime::Appends::kPipelinedAhead;
    options.on_end = [&](const World& world) { result.failures = Check(c["expect"], world); };
    try {
      Simulate(scenario, options);
    } catch (...) {
      std::filesystem::remove_all(dir);
      throw;
    }
    std::filesystem::remove_all(dir);
  } catch (const std::exception& e) {
    result.failures = {std::string("error: ") + e.what()};
  }
  result.passed = result.failures.empty();
  return result;
}

void RunFile(const std::filesystem::path& file, std::vector<CaseResult>& results) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ScenarioError(file.string() + ": cannot read it");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<YAML::Node> cases;
  try {
    cases = kube::LoadDocuments(text);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(file.string() + ": " + e.what());
  }
  std::set<std::string> names;
  for (const auto& c : cases) {
    if (c.IsNull()) continue;
    if (!c.IsMap() || !c["kind"] || c["kind"].as<std::string>() != "ConformanceCase") {
      throw ScenarioError(file.string() + ":" + std::to_string(c.Mark().line + 1) +
                          ": not a document of kind ConformanceCase");
    }
    CaseResult result = RunCase(c, file);
    if (!names.insert(result.name).second) {
      result.passed = false;
      result.failures.push_back("error: a second case named " + result.name + " in the file");
    }
    results.push_back(std::move(result));
  }
}

}  // namespace

std::vector<CaseResult> RunConformance(const std::filesystem::path& path) {
  std::vector<CaseResult> results;
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    RequireFile(path, "");
    RunFile(path, results);
    return results;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) RunFile(file, results);
  return results;
}

int PrintConformance(const std::vector<CaseResult>& results, int pass_percent_min) {
  std::size_t passed = 0, known = 0, unexplained = 0;
  for (const auto& r : results) {
    const std::string where = std::filesystem::path(r.file).filename().string() + " " + r.name;
    if (r.passed) {
      ++passed;
      std::printf("pass       %s\n", where.c_str());
      if (!r.deviation.empty()) std::printf("           (listed as a deviation, but it passes)\n");
      continue;
    }
    if (!r.deviation.empty()) {
      ++known;
      std::printf("known      %s: %s\n", where.c_str(), r.deviation.c_str());
    } else {
      ++unexplained;
      std::printf("DEVIATION  %s\n", where.c_str());
    }
    for (const auto& f : r.failures) std::printf("           %s\n", f.c_str());
    std::printf("           from %s\n", r.source.c_str());
  }
  const std::size_t total = results.size();
  const std::size_t percent = total == 0 ? 0 : passed * 100 / total;
  std::printf("%zu cases: %zu pass (%zu%%), %zu known deviations, %zu unexplained\n", total, passed,
              percent, known, unexplained);
  return unexplained > 0 || percent < static_cast<std::size_t>(pass_percent_min) ? 1 : 0;
}

}  // namespace tenon::sim
