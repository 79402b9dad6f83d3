// reference_facts: what the reference pages in docs/reference/ are generated from, read from the
// code itself and printed as one JSON document for scripts/gen-reference.
//
//   metrics    every metric family with a series after a short simulation (name, type, help and
//              label names), read back from the Prometheus registry. prometheus-cpp exports a
//              family only once it has a series and declares no label names up front, so the
//              scenario (metrics_scenario.yaml) is written to give every family at least one;
//              scripts/gen-reference fails when a family registered in adapters/metrics/ is
//              missing here.
//   run        the defaults of `tenon run`'s settings, from a default-constructed RunOptions,
//              each with its flag and its environment variable. Every variable ApplyEnvironment
//              reads is checked here: set to the documented default it leaves the setting
//              unchanged, and set to a sample value it changes this setting to that value.
//   aws        the same for the AWS SDK environment names read by AwsSettingsFromEnvironment
//              (the names it asks for are recorded, so per-service endpoint names are exact).
//   scenario   the defaults of a scenario's `settings:` block, from a default Settings, each
//              checked by loading a scenario that sets it.
//
// Usage: reference_facts SOURCE_DIR OUT.json. Exits 1, naming the setting, when a check fails.
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "adapters/aws/connection.h"
#include "adapters/controller/controller.h"
#include "adapters/metrics/metrics.h"
#include "adapters/sim/scenario.h"
#include "adapters/sim/simulator.h"

namespace tenon {
namespace {

using controller::RunOptions;
using nlohmann::json;

int g_failures = 0;

void Fail(const std::string& what) {
  std::fprintf(stderr, "reference_facts: %s\n", what.c_str());
  ++g_failures;
}

// Go's duration notation, as the flags and environment variables take it: the largest unit that
// divides the value exactly (168h, 5m, 15s, 250ms).
std::string DurationText(std::int64_t nanos) {
  struct Unit {
    std::int64_t nanos;
    const char* suffix;
  };
  static constexpr Unit kUnits[] = {
      {3'600'000'000'000, "h"}, {60'000'000'000, "m"}, {1'000'000'000, "s"}, {1'000'000, "ms"}};
  if (nanos == 0) return "0s";
  for (const Unit& u : kUnits) {
    if (nanos % u.nanos == 0) return std::to_string(nanos / u.nanos) + u.suffix;
  }
  return std::to_string(nanos) + "ns";
}

std::string Millis(std::chrono::milliseconds d) {
  return DurationText(d.count() * 1'000'000);
}

std::string Bool(bool b) {
  return b ? "true" : "false";
}

// Bytes in binary units when exact (8GiB), else a plain number.
std::string BytesText(std::uint64_t bytes) {
  static constexpr std::pair<std::uint64_t, const char*> kUnits[] = {
      {std::uint64_t{1} << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}};
  for (const auto& [unit, suffix] : kUnits) {
    if (bytes != 0 && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  }
  return std::to_string(bytes);
}

// 75 per mille -> "0.075", as VM_MEMORY_OVERHEAD_PERCENT is written.
std::string PermilleText(std::int32_t permille) {
  std::string frac = std::to_string(1000 + permille % 1000).substr(1);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return std::to_string(permille / 1000) + (frac.empty() ? "" : "." + frac);
}

std::string NumberText(double value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

// ---- `tenon run` ----

// One setting of `tenon run`: its flag and/or environment variable and how to read it back from
// RunOptions in the notation both take (none: the setting is not in RunOptions). `sample` is a
// valid non-default value for the variable.
struct RunSetting {
  std::string flag;
  std::string env;
  std::function<std::string(const RunOptions&)> read;
  std::string sample;
};

std::vector<RunSetting> RunSettings() {
  using O = const RunOptions&;
  return {
      {"--kubeconfig", "", [](O o) { return o.kubeconfig; }, ""},
      {"--context", "", [](O o) { return o.context; }, ""},
      {"--log-dir", "", [](O o) { return o.log_dir; }, ""},
      {"--dry-run", "", [](O o) { return Bool(o.dry_run); }, ""},
      {"--cloud-provider", "",
       [](O o) {
         return o.cloud_provider == controller::CloudProvider::kAws ? std::string("aws") : "none";
       },
       ""},
      {"--cluster-name", "CLUSTER_NAME", [](O o) { return o.settings.cluster_name; }, "prod-1"},
      {"", "CLUSTER_ENDPOINT", [](O o) { return o.cloud.cluster_endpoint; },
       "https://example.eks.amazonaws.com"},
      {"--interruption-queue", "INTERRUPTION_QUEUE", [](O o) { return o.cloud.interruption_queue; },
       "tenon-interruptions"},
      {"--price-file", "", [](O o) { return o.cloud.price_file; }, ""},
      {"--kubernetes-version", "", [](O o) { return o.cloud.kubernetes_version; }, ""},
      {"--catalog", "", [](O o) { return o.catalog_file; }, ""},
      {"--metrics-port", "METRICS_PORT", [](O o) { return std::to_string(o.metrics_port); },
       "9090"},
      {"--health-port", "HEALTH_PROBE_PORT", [](O o) { return std::to_string(o.health_port); },
       "9091"},
      {"--bind-address", "", [](O o) { return o.bind_address; }, ""},
      {"--log-level", "LOG_LEVEL", [](O o) { return o.log_level; }, "debug"},
      // Held by cmd/main.cc alone (not in RunOptions): its default comes from `--help`.
      {"--log-format", "", nullptr, ""},
      {"--retain", "", [](O o) { return DurationText(o.retain_age.value); }, ""},
      {"--retain-bytes", "", [](O o) { return BytesText(o.retain_bytes); }, ""},
      {"--catalog-every", "", [](O o) { return Millis(o.cloud.catalog_every); }, ""},
      {"--gc-every", "", [](O o) { return Millis(o.cloud.gc_every); }, ""},
      {"--nodeclass-every", "", [](O o) { return Millis(o.cloud.nodeclass_every); }, ""},
      {"--aws-command-deadline", "", [](O o) { return Millis(o.aws_lane.deadline); }, ""},
      {"--identity", "", [](O o) { return o.lease.identity; }, ""},
      // SYSTEM_NAMESPACE is read by cmd/main.cc itself, before the flags: no check here.
      {"--lease-namespace", "SYSTEM_NAMESPACE", [](O o) { return o.lease.ns; }, ""},
      {"--lease-name", "", [](O o) { return o.lease.name; }, ""},
      {"--lease-duration", "", [](O o) { return Millis(o.lease.lease_duration); }, ""},
      {"--renew-deadline", "", [](O o) { return Millis(o.lease.renew_deadline); }, ""},
      {"--retry-period", "", [](O o) { return Millis(o.lease.retry_period); }, ""},
      {"--tick", "", [](O o) { return Millis(o.tick); }, ""},
      {"--disable-leader-election", "DISABLE_LEADER_ELECTION",
       [](O o) { return Bool(!o.leader_election); }, "true"},
      {"", "BATCH_IDLE_DURATION", [](O o) { return DurationText(o.settings.batch_idle.value); },
       "3s"},
      {"", "BATCH_MAX_DURATION", [](O o) { return DurationText(o.settings.batch_max.value); },
       "30s"},
      {"", "FEATURE_GATES",
       [](O o) {
         return "SpotToSpotConsolidation=" + Bool(o.settings.spot_to_spot_consolidation) +
                ",StaticCapacity=" + Bool(o.settings.static_capacity) +
                ",NodeOverlay=" + Bool(o.settings.node_overlay) +
                ",NodeRepair=" + Bool(o.settings.node_repair) +
                ",PodDeletionCostManagement=" + Bool(o.settings.pod_deletion_cost);
       },
       "SpotToSpotConsolidation=true,StaticCapacity=true,NodeOverlay=true,NodeRepair=true,"
       "PodDeletionCostManagement=true"},
      {"", "PREFERENCE_POLICY",
       [](O o) { return std::string(o.settings.ignore_preferences ? "Ignore" : "Respect"); },
       "Ignore"},
      {"", "MIN_VALUES_POLICY",
       [](O o) { return std::string(o.settings.min_values_best_effort ? "BestEffort" : "Strict"); },
       "BestEffort"},
      {"", "VM_MEMORY_OVERHEAD_PERCENT",
       [](O o) { return PermilleText(o.settings.vm_memory_overhead_permille); }, "0.1"},
      {"", "RESERVED_ENIS", [](O o) { return std::to_string(o.settings.reserved_enis); }, "1"},
      {"", "KUBE_CLIENT_QPS", [](O o) { return NumberText(o.kube_qps); }, "50"},
      {"", "KUBE_CLIENT_BURST", [](O o) { return std::to_string(o.kube_burst); }, "60"},
  };
}

// `tenon run`'s environment: every variable ApplyEnvironment reads, with nothing else set.
RunOptions WithEnvironment(const std::vector<RunSetting>& all, const std::string& name,
                           const std::string& value) {
  for (const RunSetting& s : all) {
    if (!s.env.empty()) ::unsetenv(s.env.c_str());
  }
  RunOptions options;
  ::setenv(name.c_str(), value.c_str(), 1);
  try {
    controller::ApplyEnvironment(options);
  } catch (const std::exception& e) {
    Fail(name + "=" + value + " is refused: " + e.what());
  }
  ::unsetenv(name.c_str());
  return options;
}

json RunFacts() {
  json out = json::array();
  const std::vector<RunSetting> all = RunSettings();
  const RunOptions defaults;
  for (const RunSetting& s : all) {
    if (!s.read) {
      out.push_back({{"flag", s.flag}, {"env", s.env}, {"default", nullptr}});
      continue;
    }
    const std::string value = s.read(defaults);
    out.push_back({{"flag", s.flag}, {"env", s.env}, {"default", value}});
    if (s.env.empty() || s.sample.empty()) continue;
    // The documented default, given explicitly, changes nothing; the sample changes this setting.
    if (std::string got = s.read(WithEnvironment(all, s.env, value)); got != value) {
      Fail(s.env + "=" + value + " (the default) reads back as '" + got + "'");
    }
    if (std::string got = s.read(WithEnvironment(all, s.env, s.sample)); got != s.sample) {
      Fail(s.env + "=" + s.sample + " reads back as '" + got + "': not the setting it names");
    }
  }
  return out;
}

// ---- AWS ----

json AwsFacts() {
  std::vector<std::string> asked;  // In the order AwsSettingsFromEnvironment asks.
  std::map<std::string, std::string> env;
  const aws::EnvLookup lookup = [&](const std::string& name) -> std::optional<std::string> {
    if (std::find(asked.begin(), asked.end(), name) == asked.end()) asked.push_back(name);
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  const aws::AwsSettings defaults = aws::AwsSettingsFromEnvironment(lookup);
  json out = json::array();
  const std::vector<std::string> names = asked;
  for (const std::string& name : names) {
    std::string value;
    if (name == "AWS_REGION") value = defaults.region;
    out.push_back({{"env", name}, {"default", value}});
    // Set alone, each variable must change what its name says.
    env = {{name, "sample-value"}};
    const aws::AwsSettings got = aws::AwsSettingsFromEnvironment(lookup);
    bool ok = false;
    if (name == "AWS_REGION" || name == "AWS_DEFAULT_REGION") {
      ok = got.region == "sample-value";
    } else if (name == "AWS_ENDPOINT_URL") {
      ok = !got.endpoints.empty();
      for (const auto& [service, url] : got.endpoints) ok = ok && url == "sample-value";
    } else if (name.rfind("AWS_ENDPOINT_URL_", 0) == 0) {
      ok = got.endpoints.size() == 1 && got.endpoints.begin()->second == "sample-value";
    }
    if (!ok) Fail(name + ": does not set what its name says");
    env.clear();
  }
  return out;
}

// ---- The scenario's settings block ----

struct ScenarioSetting {
  std::string key;
  std::function<std::string(const Settings&)> read;
  std::string sample;
};

std::vector<ScenarioSetting> ScenarioSettings() {
  using S = const Settings&;
  return {
      {"featureGates",
       [](S s) {
         return "SpotToSpotConsolidation=" + Bool(s.spot_to_spot_consolidation) +
                ",StaticCapacity=" + Bool(s.static_capacity) +
                ",NodeOverlay=" + Bool(s.node_overlay) + ",NodeRepair=" + Bool(s.node_repair) +
                ",PodDeletionCostManagement=" + Bool(s.pod_deletion_cost);
       },
       "SpotToSpotConsolidation=true,StaticCapacity=true,NodeOverlay=true,NodeRepair=true,"
       "PodDeletionCostManagement=true"},
      {"softExpiration", [](S s) { return Bool(s.soft_expiration); }, "true"},
      {"consolidationMinSavingsPerHour",
       [](S s) { return NumberText(static_cast<double>(s.consolidation_min_savings.value) / 1e6); },
       "0.25"},
      {"consolidationMinSavingsPercent",
       [](S s) { return std::to_string(s.consolidation_min_savings_percent); }, "10"},
  };
}

// The least a scenario must hold besides its settings.
constexpr const char* kMinimalObjects = R"(objects:
  - apiVersion: karpenter.k8s.aws/v1
    kind: EC2NodeClass
    metadata: {name: default}
    spec:
      role: NodeRole
      amiSelectorTerms: [{alias: al2023@latest}]
      subnetSelectorTerms: [{tags: {env: test}}]
      securityGroupSelectorTerms: [{tags: {env: test}}]
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: default}
    spec:
      template:
        spec:
          nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
          requirements: []
)";

json ScenarioFacts(const std::filesystem::path& source) {
  json out = json::array();
  const Settings defaults;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("reference-facts-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  for (const ScenarioSetting& s : ScenarioSettings()) {
    out.push_back({{"key", s.key}, {"default", s.read(defaults)}});
    const auto file = dir / "settings.yaml";
    std::ofstream(file) << "name: settings\ncatalog: "
                        << (source / "examples/catalogs/small.json").string() << "\n"
                        << kMinimalObjects << "settings:\n  " << s.key << ": \"" << s.sample
                        << "\"\n";
    try {
      const sim::Scenario scenario = sim::LoadScenario(file);
      if (std::string got = s.read(scenario.settings); got != s.sample) {
        Fail("settings." + s.key + ": " + s.sample + " reads back as '" + got + "'");
      }
    } catch (const std::exception& e) {
      Fail("settings." + s.key + ": " + s.sample + " is refused: " + e.what());
    }
  }
  std::filesystem::remove_all(dir);
  return out;
}

// ---- Metrics ----

std::string TypeName(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Histogram:
      return "histogram";
    case prometheus::MetricType::Summary:
      return "summary";
    case prometheus::MetricType::Untyped:
      return "untyped";
  }
  return "untyped";
}

json MetricFacts(const std::filesystem::path& source) {
  auto registry = std::make_shared<prometheus::Registry>();
  metrics::Metrics metrics(registry);
  const auto dir = std::filesystem::temp_directory_path() /
                   ("reference-metrics-" + std::to_string(std::random_device{}()));
  sim::SimulateOptions options;
  options.log_dir = dir / "log";
  options.observer = &metrics;
  options.appends = runtime::Appends::kPipelinedAhead;
  options.on_state = [&](const State& state) { metrics.ObserveState(state); };
  sim::Simulate(sim::LoadScenario(source / "tests/docs/metrics_scenario.yaml"), options);
  std::filesystem::remove_all(dir);
  // What only `tenon run`'s loop sets: its command lanes and the interval between its ticks.
  metrics.ObserveLanes({runtime::LaneStatus{.name = "aws"}, runtime::LaneStatus{.name = "kube"}});
  metrics.ObserveTickInterval(std::chrono::seconds(1));

  std::map<std::string, json> families;  // By name: a stable order.
  for (const prometheus::MetricFamily& family : registry->Collect()) {
    std::set<std::string> labels;
    for (const prometheus::ClientMetric& metric : family.metric) {
      for (const prometheus::ClientMetric::Label& label : metric.label) labels.insert(label.name);
    }
    families[family.name] = {{"name", family.name},
                             {"type", TypeName(family.type)},
                             {"help", family.help},
                             {"labels", labels}};
  }
  json out = json::array();
  for (auto& [name, family] : families) out.push_back(std::move(family));
  return out;
}

}  // namespace
}  // namespace tenon

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: reference_facts SOURCE_DIR OUT.json\n");
    return 2;
  }
  const std::filesystem::path source = std::filesystem::absolute(argv[1]);
  nlohmann::json facts;
  facts["run"] = tenon::RunFacts();
  facts["aws"] = tenon::AwsFacts();
  facts["scenario"] = tenon::ScenarioFacts(source);
  facts["metrics"] = tenon::MetricFacts(source);
  std::ofstream(argv[2]) << facts.dump(2) << "\n";
  return tenon::g_failures == 0 ? 0 : 1;
}
