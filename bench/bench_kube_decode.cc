// Decoding what the informers receive: realistic pods (~4 KB of JSON each, with managedFields,
// a kubectl last-applied annotation, env, volumes and container statuses) into core events.
// Figures beside three baselines from the same run: simdjson's tree copied into a YAML::Node
// (less the keys no parser reads) and parsed from there, as the decoder did before it read
// JSON directly; yaml-cpp reading the whole object; and simdjson's parse alone (the floor).
//
//   bench_kube_decode [--quick]
#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "adapters/kube/decode.h"
#include "adapters/kube/objects.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string PodJson(int i) {
  json env = json::array();
  for (int e = 0; e < 12; ++e) {
    env.push_back(
        {{"name", "SETTING_" + std::to_string(e)}, {"value", "value-" + std::to_string(e * i)}});
  }
  json managed = json::array();
  for (const char* manager : {"kube-controller-manager", "kubelet", "kubectl-client-side-apply"}) {
    managed.push_back(
        {{"manager", manager},
         {"operation", "Update"},
         {"apiVersion", "v1"},
         {"time", "2026-11-23T09:00:00Z"},
         {"fieldsType", "FieldsV1"},
         {"fieldsV1",
          {{"f:metadata", {{"f:labels", {{"f:app", json::object()}}}}},
           {"f:spec", {{"f:containers", {{"k:{\"name\":\"app\"}", json::object()}}}}},
           {"f:status", {{"f:conditions", json::object()}, {"f:phase", json::object()}}}}}});
  }
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "web-" + std::to_string(i)},
        {"namespace", "shop"},
        {"uid", "5f0c1d2e-0000-4000-8000-" + std::to_string(100000000000 + i)},
        {"resourceVersion", std::to_string(1000 + i)},
        {"labels", {{"app", "web"}, {"pod-template-hash", "7d9f8c6b5"}, {"team", "checkout"}}},
        {"annotations",
         {{"kubectl.kubernetes.io/last-applied-configuration", std::string(900, 'x')},
          {"prometheus.io/scrape", "true"}}},
        {"ownerReferences",
         {{{"apiVersion", "apps/v1"},
           {"kind", "ReplicaSet"},
           {"name", "web-7d9f8c6b5"},
           {"uid", "aaaa"},
           {"controller", true}}}},
        {"managedFields", managed}}},
      {"spec",
       {{"containers",
         {{{"name", "app"},
           {"image", "registry.example/shop/web:1.42.0"},
           {"env", env},
           {"ports", {{{"containerPort", 8080}, {"protocol", "TCP"}}}},
           {"resources",
            {{"requests", {{"cpu", "500m"}, {"memory", "512Mi"}}},
             {"limits", {{"memory", "1Gi"}}}}},
           {"volumeMounts", {{{"name", "config"}, {"mountPath", "/etc/web"}}}}}}},
        {"volumes", {{{"name", "config"}, {"configMap", {{"name", "web-config"}}}}}},
        {"nodeSelector", {{"kubernetes.io/os", "linux"}}},
        {"tolerations",
         {{{"key", "node.kubernetes.io/not-ready"},
           {"operator", "Exists"},
           {"effect", "NoExecute"},
           {"tolerationSeconds", 300}}}},
        {"topologySpreadConstraints",
         {{{"maxSkew", 1},
           {"topologyKey", "topology.kubernetes.io/zone"},
           {"whenUnsatisfiable", "ScheduleAnyway"},
           {"labelSelector", {{"matchLabels", {{"app", "web"}}}}}}}},
        {"nodeName", "ip-10-0-" + std::to_string(i % 250) + "-1.ec2.internal"}}},
      {"status",
       {{"phase", "Running"},
        {"conditions",
         {{{"type", "PodScheduled"},
           {"status", "True"},
           {"lastTransitionTime", "2026-11-23T09:00:00Z"}},
          {{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "2026-11-23T09:00:05Z"}}}},
        {"containerStatuses",
         {{{"name", "app"},
           {"ready", true},
           {"restartCount", 0},
           {"image", "registry.example/shop/web:1.42.0"},
           {"imageID", "registry.example/shop/web@sha256:" + std::string(64, 'a')},
           {"containerID", "containerd://" + std::string(64, 'b')},
           {"state", {{"running", {{"startedAt", "2026-11-23T09:00:03Z"}}}}}}}}}}};
  return pod.dump();
}

// The decoder as it was: simdjson's tree as a YAML tree without the keys no parser reads.
constexpr std::string_view kUnread[] = {"managedFields",
                                        "kubectl.kubernetes.io/last-applied-configuration",
                                        "env",
                                        "envFrom",
                                        "volumeMounts",
                                        "volumeDevices",
                                        "image",
                                        "imagePullPolicy",
                                        "command",
                                        "args",
                                        "livenessProbe",
                                        "readinessProbe",
                                        "startupProbe",
                                        "lifecycle",
                                        "securityContext",
                                        "workingDir",
                                        "terminationMessagePath",
                                        "terminationMessagePolicy",
                                        "containerStatuses",
                                        "initContainerStatuses",
                                        "ephemeralContainerStatuses",
                                        "images",
                                        "nodeInfo",
                                        "daemonEndpoints"};

YAML::Node ToYaml(simdjson::dom::element element) {
  using simdjson::dom::element_type;
  switch (element.type()) {
    case element_type::OBJECT: {
      YAML::Node node(YAML::NodeType::Map);
      for (auto [k, v] : simdjson::dom::object(element)) {
        if (std::find(std::begin(kUnread), std::end(kUnread), k) != std::end(kUnread)) continue;
        node[std::string(k)] = ToYaml(v);
      }
      return node;
    }
    case element_type::ARRAY: {
      YAML::Node node(YAML::NodeType::Sequence);
      for (auto v : simdjson::dom::array(element)) node.push_back(ToYaml(v));
      return node;
    }
    case element_type::STRING:
      return YAML::Node(std::string(std::string_view(element)));
    case element_type::NULL_VALUE:
      return YAML::Node(YAML::NodeType::Null);
    default:
      return YAML::Node(simdjson::minify(element));
  }
}

template <class Fn>
double Seconds(Fn fn) {
  const auto start = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int n = quick ? 500 : 20000;
  std::vector<std::string> pods;
  std::size_t bytes = 0;
  for (int i = 0; i < n; ++i) {
    pods.push_back(PodJson(i));
    bytes += pods.back().size();
  }
  const auto& resource = tenon::kube::ResourceNamed("pods");
  std::size_t decoded = 0;
  const double tenon_s = Seconds([&] {
    for (int i = 0; i < n; ++i) {
      auto events = tenon::kube::Decode({&resource, tenon::kube::Change::Type::kUpsert,
                                         "shop/web-" + std::to_string(i), pods[i]});
      decoded += std::holds_alternative<tenon::PodUpserted>(events.at(0));
    }
  });
  std::size_t before_ok = 0;
  const double before_s = Seconds([&] {
    for (const auto& text : pods) {
      simdjson::dom::parser parser;  // One per object, as Decode had it.
      simdjson::dom::element root;
      if (parser.parse(text).get(root) != simdjson::SUCCESS) continue;
      before_ok += !tenon::kube::ParsePod(ToYaml(root)).name.empty();
    }
  });
  std::size_t baseline_ok = 0;
  const double yaml_s = Seconds([&] {
    for (const auto& text : pods) {
      baseline_ok += !tenon::kube::ParsePod(YAML::Load(text)).name.empty();
    }
  });
  simdjson::dom::parser parser;
  std::size_t parsed = 0;
  const double simd_s = Seconds([&] {
    for (const auto& text : pods) {
      simdjson::dom::element root;
      parsed += parser.parse(text).get(root) == simdjson::SUCCESS;
    }
  });
  if (decoded != static_cast<std::size_t>(n) || before_ok != decoded || baseline_ok != decoded ||
      parsed != decoded) {
    std::fprintf(stderr,
                 "bench_kube_decode: decoded %zu, before %zu, baseline %zu, parsed %zu of %d\n",
                 decoded, before_ok, baseline_ok, parsed, n);
    return 1;
  }
  const double mb = static_cast<double>(bytes) / 1e6;
  std::printf("pods: %d, %.1f MB of JSON (%.1f KB each)\n", n, mb, mb * 1000 / n);
  auto row = [&](const char* what, double seconds, bool relative) {
    std::printf("%-44s %9.0f pods/s  %6.1f us/pod  %7.1f ms/10k pods  %6.1f MB/s", what,
                n / seconds, seconds * 1e6 / n, seconds * 1e3 * 10000 / n, mb / seconds);
    if (relative) std::printf("  (%.1fx the time)", seconds / tenon_s);
    std::printf("\n");
  };
  row("tenon Decode (simdjson into the domain types)", tenon_s, false);
  row("before: simdjson -> YAML::Node -> parsers", before_s, true);
  row("baseline: yaml-cpp reads the whole object", yaml_s, true);
  row("floor: simdjson parse only", simd_s, true);
  return 0;
}
