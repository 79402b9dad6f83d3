// The golden scenario table: each case in tests/scheduling/golden/*.yaml is a small cluster
// (NodePools, pods, existing nodes, DaemonSets, volumes) written as Kubernetes YAML, folded
// through the real core against the us-east-1 catalog, and checked against its `expect`.
// A second pass runs every case again in reverse order with its inputs reversed and requires
// byte-identical decision records.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "adapters/kube/objects.h"
#include "adapters/sim/scenario.h"
#include "log/codec.h"
#include "reducers/core.h"

namespace tenon::testing {
namespace {

namespace fs = std::filesystem;

constexpr Instant kT0{1'767'225'600'000'000'000};
constexpr std::size_t kGoldenCasesMin = 60;

const std::vector<InstanceType>& Catalog() {
  static const auto* types =
      new std::vector<InstanceType>(sim::LoadCatalogJson(fs::path(TENON_CATALOG), 42));
  return *types;
}

struct Case {
  std::string file;
  YAML::Node node;
  std::string name() const { return node["name"].as<std::string>(); }
};

std::vector<Case> LoadCases() {
  std::vector<Case> cases;
  std::vector<fs::path> files;
  for (const auto& e :
       fs::directory_iterator(fs::path(TENON_SOURCE_DIR) / "tests/scheduling/golden")) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    YAML::Node doc = YAML::LoadFile(f.string());
    for (const auto& c : doc["cases"]) cases.push_back({f.filename().string(), c});
  }
  return cases;
}

// `replicas: N` on a pod manifest expands into N pods named <name>-0 .. <name>-(N-1).
std::vector<Pod> PodsOf(const YAML::Node& list) {
  std::vector<Pod> pods;
  if (!list) return pods;
  for (const auto& item : list) {
    int replicas = item["replicas"] ? item["replicas"].as<int>() : 0;
    Pod base = kube::ParsePod(item);
    if (replicas == 0) {
      pods.push_back(base);
      continue;
    }
    for (int i = 0; i < replicas; ++i) {
      Pod p = base;
      p.name = base.name + "-" + std::to_string(i);
      p.uid = p.ns + "/" + p.name;
      pods.push_back(p);
    }
  }
  return pods;
}

YAML::Node DefaultPool() {
  return YAML::Load(
      "{metadata: {name: default}, spec: {template: {spec: {nodeClassRef: {name: default}}}}}");
}

std::vector<Event> Inputs(const YAML::Node& c, bool reverse) {
  Settings settings;
  if (const auto& s = c["settings"]) {
    settings.ignore_preferences =
        s["ignorePreferences"].IsDefined() && s["ignorePreferences"].as<bool>();
    settings.min_values_best_effort =
        s["minValuesBestEffort"].IsDefined() && s["minValuesBestEffort"].as<bool>();
  }
  std::vector<Event> head = {Tick{kT0}, ControllerStarted{"golden", 7, settings},
                             CatalogRefreshed{Catalog()}};
  std::vector<Event> body;
  if (c["nodeclasses"]) {
    for (const auto& n : c["nodeclasses"])
      body.push_back(NodeClassUpserted{kube::ParseNodeClass(n)});
  } else {
    body.push_back(NodeClassUpserted{
        NodeClass{"default", "AL2023", "role", true, {}, {}, {}, {}, {}, false, {}, {}, "", {}}});
  }
  if (c["nodepools"]) {
    for (const auto& n : c["nodepools"]) body.push_back(NodePoolUpserted{kube::ParseNodePool(n)});
  } else {
    body.push_back(NodePoolUpserted{kube::ParseNodePool(DefaultPool())});
  }
  for (const auto& n : c["daemonsets"]) body.push_back(DaemonSetUpserted{kube::ParseDaemonSet(n)});
  for (const auto& n : c["storageClasses"]) {
    body.push_back(StorageClassUpserted{kube::ParseStorageClass(n)});
  }
  for (const auto& n : c["pvs"])
    body.push_back(PersistentVolumeUpserted{kube::ParsePersistentVolume(n)});
  for (const auto& n : c["pvcs"]) {
    body.push_back(PersistentVolumeClaimUpserted{kube::ParsePersistentVolumeClaim(n)});
  }
  for (const auto& n : c["csiNodes"]) body.push_back(CsiNodeUpserted{kube::ParseCsiNode(n)});
  for (const auto& n : c["nodes"]) body.push_back(NodeUpserted{kube::ParseNode(n)});
  for (const auto& p : PodsOf(c["pods"])) body.push_back(PodUpserted{p});
  if (reverse) std::reverse(body.begin(), body.end());
  head.insert(head.end(), body.begin(), body.end());
  head.push_back(Tick{Instant{kT0.value + 2 * kSecond.value}});
  return head;
}

struct Run {
  ProvisioningDecision decision;
  std::string bytes;  // The encoded decision, for the determinism check.
  std::map<std::string, LaunchInstance> launches;  // by nodeclaim
  std::map<std::string, const PodOutcome*> pods;   // by pod name
  std::map<std::string, const ClaimPlan*> claims;  // by nodeclaim
  State state;
};

std::unique_ptr<Run> Execute(const YAML::Node& c, bool reverse) {
  auto run = std::make_unique<Run>();
  Seq seq{0};
  Decision last;
  bool decided = false;
  for (const auto& e : Inputs(c, reverse)) {
    seq = Seq{seq.value + 1};
    Output out = Step(run->state, seq, e);
    for (const auto& cmd : out.commands) {
      if (const auto* l = std::get_if<LaunchInstance>(&cmd.body)) run->launches[l->nodeclaim] = *l;
    }
    for (const auto& d : out.decisions) {
      last = d;
      decided = true;
    }
  }
  if (decided) {
    run->decision = std::get<ProvisioningDecision>(last.body);
    run->bytes = log::EncodeDecision(last);
  }
  for (const auto& p : run->decision.pods) {
    run->pods[p.pod.substr(p.pod.find('/') + 1)] = &p;
  }
  for (const auto& cl : run->decision.new_claims) run->claims[cl.nodeclaim] = &cl;
  return run;
}

std::string Where(const Run& run, const std::string& pod) {
  auto it = run.pods.find(pod);
  if (it == run.pods.end()) return "(not in decision)";
  const PodOutcome& o = *it->second;
  if (o.target.empty()) return "pending";
  if (auto c = run.claims.find(o.target); c != run.claims.end()) return c->second->nodepool;
  return "node:" + o.target;
}

std::string Target(const Run& run, const std::string& pod) {
  auto it = run.pods.find(pod);
  return it == run.pods.end() ? "" : it->second->target;
}

// The single zone a pod's node will be in, if it is decided.
std::string ZoneOf(const Run& run, const std::string& pod) {
  std::string target = Target(run, pod);
  if (auto l = run.launches.find(target); l != run.launches.end()) {
    std::set<std::string> zones;
    for (const auto& o : l->second.overrides) zones.insert(o.zone);
    return zones.size() == 1 ? *zones.begin() : "(" + std::to_string(zones.size()) + " zones)";
  }
  if (auto n = run.state.cluster.nodes.find(target); n != run.state.cluster.nodes.end()) {
    auto z = n->second.labels.find(label::kZone);
    return z == n->second.labels.end() ? "" : z->second;
  }
  return "";
}

std::vector<std::string> Strings(const YAML::Node& n) {
  std::vector<std::string> out;
  for (const auto& v : n) out.push_back(v.as<std::string>());
  return out;
}

void Check(const Case& k, const Run& run) {
  const YAML::Node& e = k.node["expect"];
  SCOPED_TRACE(k.file + ": " + k.name());
  ASSERT_TRUE(e) << "case has no expect";
  std::string all;
  for (const auto& p : run.decision.pods) {
    all += "\n  " + p.pod + " -> " + (p.target.empty() ? "pending: " + p.reason : p.target);
    for (const auto& r : p.relaxed) all += " [relaxed " + r + "]";
  }
  if (e["claims"]) {
    EXPECT_EQ(run.decision.new_claims.size(), e["claims"].as<std::size_t>()) << all;
  }
  for (const auto& kv : e["placed"]) {
    EXPECT_EQ(Where(run, kv.first.as<std::string>()), kv.second.as<std::string>())
        << kv.first.as<std::string>() << all;
  }
  for (const auto& pod : e["pending"]) {
    EXPECT_EQ(Where(run, pod.as<std::string>()), "pending") << pod.as<std::string>() << all;
  }
  for (const auto& group : e["sameNode"]) {
    auto pods = Strings(group);
    for (const auto& p : pods) EXPECT_EQ(Target(run, p), Target(run, pods[0])) << p << all;
  }
  for (const auto& group : e["distinctNodes"]) {
    std::set<std::string> targets;
    auto pods = Strings(group);
    for (const auto& p : pods) targets.insert(Target(run, p));
    EXPECT_EQ(targets.size(), pods.size()) << all;
  }
  for (const auto& kv : e["zone"]) {
    EXPECT_EQ(ZoneOf(run, kv.first.as<std::string>()), kv.second.as<std::string>())
        << kv.first.as<std::string>() << all;
  }
  if (const auto& counts = e["zoneCounts"]) {
    std::map<std::string, int> got;
    for (const auto& [name, outcome] : run.pods) {
      if (!outcome->target.empty()) got[ZoneOf(run, name)]++;
    }
    std::map<std::string, int> want;
    for (const auto& kv : counts) want[kv.first.as<std::string>()] = kv.second.as<int>();
    EXPECT_EQ(got, want) << all;
  }
  for (const auto& kv : e["reason"]) {
    auto it = run.pods.find(kv.first.as<std::string>());
    ASSERT_NE(it, run.pods.end()) << kv.first.as<std::string>();
    EXPECT_NE(it->second->reason.find(kv.second.as<std::string>()), std::string::npos)
        << it->second->reason;
  }
  for (const auto& kv : e["relaxed"]) {
    auto it = run.pods.find(kv.first.as<std::string>());
    ASSERT_NE(it, run.pods.end());
    std::string joined;
    for (const auto& r : it->second->relaxed) joined += r + "; ";
    EXPECT_NE(joined.find(kv.second.as<std::string>()), std::string::npos) << joined;
  }
  auto launch_of = [&](const std::string& pod) -> const LaunchInstance* {
    auto l = run.launches.find(Target(run, pod));
    return l == run.launches.end() ? nullptr : &l->second;
  };
  for (const auto& kv : e["capacityType"]) {
    const auto* l = launch_of(kv.first.as<std::string>());
    ASSERT_NE(l, nullptr) << kv.first.as<std::string>() << all;
    EXPECT_EQ(l->capacity_type, kv.second.as<std::string>());
    EXPECT_EQ(l->allocation_strategy,
              l->capacity_type == kCapacitySpot ? kAllocationSpot : kAllocationOnDemand);
  }
  for (const auto& kv : e["cheapestType"]) {
    const auto* l = launch_of(kv.first.as<std::string>());
    ASSERT_NE(l, nullptr) << kv.first.as<std::string>() << all;
    ASSERT_FALSE(l->overrides.empty());
    EXPECT_EQ(l->overrides.front().instance_type, kv.second.as<std::string>());
  }
  // typesMatch: every candidate type of the pod's claim starts with one of the prefixes.
  for (const auto& kv : e["typesMatch"]) {
    const auto* l = launch_of(kv.first.as<std::string>());
    ASSERT_NE(l, nullptr) << kv.first.as<std::string>() << all;
    auto prefixes = Strings(kv.second);
    for (const auto& o : l->overrides) {
      bool ok = std::any_of(prefixes.begin(), prefixes.end(),
                            [&](const std::string& p) { return o.instance_type.rfind(p, 0) == 0; });
      EXPECT_TRUE(ok) << o.instance_type;
    }
  }
  for (const auto& kv : e["typesExclude"]) {
    const auto* l = launch_of(kv.first.as<std::string>());
    ASSERT_NE(l, nullptr) << kv.first.as<std::string>() << all;
    for (const auto& o : l->overrides) {
      for (const auto& bad : Strings(kv.second)) {
        EXPECT_EQ(o.instance_type.find(bad), std::string::npos) << o.instance_type;
      }
    }
  }
  for (const auto& kv : e["typeCount"]) {
    const auto* l = launch_of(kv.first.as<std::string>());
    ASSERT_NE(l, nullptr) << kv.first.as<std::string>() << all;
    std::set<std::string> types;
    for (const auto& o : l->overrides) types.insert(o.instance_type);
    EXPECT_EQ(types.size(), kv.second.as<std::size_t>());
  }
  for (const auto& kv : e["minDistinct"]) {  // {pod: {key-prefix-count}} via instance family
    const auto* l = launch_of(kv.first.as<std::string>());
    ASSERT_NE(l, nullptr);
    std::set<std::string> families;
    for (const auto& o : l->overrides)
      families.insert(o.instance_type.substr(0, o.instance_type.find('.')));
    EXPECT_GE(families.size(), kv.second.as<std::size_t>());
  }
}

// Every case in the table meets its expectations.
TEST(Golden, EveryCaseMeetsItsExpectations) {
  auto cases = LoadCases();
  EXPECT_GE(cases.size(), kGoldenCasesMin);
  std::set<std::string> names;
  for (const auto& k : cases) {
    EXPECT_TRUE(names.insert(k.name()).second) << "duplicate case name " << k.name();
    auto run = Execute(k.node, false);
    Check(k, *run);
  }
}

// The same inputs give byte-identical decisions, whatever order the cases run in and whatever
// order the objects arrive in.
TEST(Golden, DecisionsAreByteIdenticalAcrossOrders) {
  auto cases = LoadCases();
  std::vector<std::string> forward;
  for (const auto& k : cases) forward.push_back(Execute(k.node, false)->bytes);
  for (std::size_t i = cases.size(); i-- > 0;) {
    EXPECT_EQ(Execute(cases[i].node, true)->bytes, forward[i]) << cases[i].name();
  }
}

}  // namespace
}  // namespace tenon::testing
