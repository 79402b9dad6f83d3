// The what-if (`tenon replay LOG --with FILE`): the recorded inputs of a simulated scenario re-run
// under another configuration, checked against what the scenario is known to do.
#include <gtest/gtest.h>

#include <fstream>

#include "log/codec.h"
#include "replay/replay.h"
#include "tests/replay/incident.h"
#include "whatif/whatif.h"

namespace tenon::testing {
namespace {

// The default NodePool of incident.h's scenarios, written as a user writes it, with `extra`
// requirements lines or `disruption` lines.
std::string Pool(const std::string& types, const std::string& disruption = "") {
  return R"(apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - )" +
         types + R"(
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
)" + disruption;
}
const std::string kRecordedTypes =
    "{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}";

struct WhatIfRun {
  whatif::WhatIfResult result;
  std::filesystem::path log;
};

// Runs the what-if of `run`'s log under `config` (YAML; empty: the recorded configuration).
WhatIfRun RunWhatIf(const KeptRun& run, const std::string& config) {
  WhatIfRun out;
  whatif::WhatIfOptions options;
  if (!config.empty()) {
    options.config = run.dir.path() / "config.yaml";
    std::ofstream(options.config) << config;
  }
  out.log = run.dir.path() / ("what-if-" + std::to_string(std::hash<std::string>{}(config)));
  options.log_dir = out.log;
  out.result = whatif::WhatIf(*run.Open(), options);
  return out;
}

// Consolidation decisions that did something (proposed, executed, replacing...): a pass that
// found every candidate blocked is recorded as "blocked" and acts on nothing.
std::size_t Consolidations(const sim::Report& r) {
  std::size_t n = 0;
  for (const auto& [kind, count] : r.decisions) {
    const bool blocked = kind.size() > 8 && kind.compare(kind.size() - 8, 8, " blocked") == 0;
    if (kind.find("Consolidation") != std::string::npos && !blocked) n += count;
  }
  return n;
}

std::unique_ptr<log::EventLog> OpenLog(const std::filesystem::path& dir) {
  log::OpenOptions open;
  open.read_only = true;
  open.create_if_missing = false;
  return log::EventLog::Open(dir, open);
}

// Every instance type the log's launches got.
std::set<std::string> LaunchedTypes(const std::filesystem::path& dir) {
  auto log = OpenLog(dir);
  std::set<std::string> types;
  log->Scan(Seq{1}, Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    if (const auto* e = std::get_if<Event>(&entry)) {
      if (const auto* l = std::get_if<FleetLaunched>(e)) types.insert(l->instance_type);
    }
    return true;
  });
  return types;
}

std::uint64_t FinalHash(const std::filesystem::path& dir) {
  return StateHash(replay::FoldTo(*OpenLog(dir), Seq{0}, true));
}

void ExpectSameFigures(const sim::Report& a, const sim::Report& b) {
  EXPECT_EQ(a.cost_micro_usd, b.cost_micro_usd);
  EXPECT_DOUBLE_EQ(a.node_hours, b.node_hours);
  EXPECT_EQ(a.nodes_launched, b.nodes_launched);
  EXPECT_EQ(a.removed, b.removed);
  EXPECT_EQ(a.decisions, b.decisions);
  EXPECT_EQ(a.capacity_errors, b.capacity_errors);
  EXPECT_EQ(a.pending, b.pending);
}

// With the recorded configuration the what-if is the recorded run again: the same figures and
// the same final state, PDB, interruptions, price changes and ICE windows included.
TEST(WhatIf, SameConfigurationReproducesTheRecording) {
  auto run = RunKept(PdbScenario());
  auto same = RunWhatIf(*run, "");
  EXPECT_TRUE(same.result.notes.empty()) << same.result.notes.front();
  ASSERT_EQ(same.result.scenario.budgets.size(), 1u);
  EXPECT_EQ(same.result.scenario.budgets[0].min_available, 1);  // a-pdb, inferred.
  ExpectSameFigures(same.result.recorded, same.result.what_if);
  EXPECT_GT(same.result.recorded.cost_micro_usd, 0);
  EXPECT_EQ(same.result.coverage.from_catalog, 0u);
  EXPECT_EQ(FinalHash(run->log()), FinalHash(same.log));
}

// A PDB selecting on a label other than app (matchExpressions on tier) is carried over with its
// selector: the recorded run kept the node it protects, and the what-if with the recorded
// configuration does the same and ends in the recorded state.
TEST(WhatIf, PdbSelectorOtherThanAppIsCarriedOver) {
  auto run = RunKept(Scenario(R"(
duration: 9m
workloads:
  - {name: a, replicas: 3, cpu: 1200m, memory: 512Mi, labels: {tier: web}}
  - {at: 2m, name: b, replicas: 3, cpu: 1200m, memory: 512Mi}
  - {at: 4m, name: a, replicas: 1}
  - {at: 4m, name: b, replicas: 1}
budgets:
  - name: web-pdb
    selector:
      matchExpressions: [{key: tier, operator: In, values: [web]}]
    minAvailable: 1
)"));
  bool blocked = false;
  for (const auto& [at, d] : run->outcome.disruptions) {
    for (const auto& c : d.candidates) {
      blocked = blocked || c.outcome.find("PDB web-pdb allows 0") != std::string::npos;
    }
  }
  ASSERT_TRUE(blocked) << Outcomes(run->outcome);
  auto same = RunWhatIf(*run, "");
  EXPECT_TRUE(same.result.notes.empty()) << same.result.notes.front();
  ASSERT_EQ(same.result.scenario.budgets.size(), 1u);
  const sim::Budget& pdb = same.result.scenario.budgets[0];
  EXPECT_EQ(pdb.name, "web-pdb");
  EXPECT_TRUE(pdb.selector.match_labels.empty());
  ASSERT_EQ(pdb.selector.match_expressions.size(), 1u);
  EXPECT_EQ(pdb.selector.match_expressions[0].key, "tier");
  EXPECT_EQ(pdb.selector.match_expressions[0].values, std::vector<std::string>{"web"});
  EXPECT_EQ(pdb.min_available, 1);
  ExpectSameFigures(same.result.recorded, same.result.what_if);
  EXPECT_EQ(FinalHash(run->log()), FinalHash(same.log));
}

// What was done by hand during the recorded run -- a NodeClaim deleted, an instance terminated
// behind the controller's back, a label added to the NodePool (which drifts its nodes) -- is
// carried over at its time: the what-if with the recorded configuration does the same and ends
// in the recorded state. With a configuration file, the file's NodePool stands and a note says
// the edit was not applied.
TEST(WhatIf, ByHandActionsAndNodePoolEditsAreCarriedOver) {
  auto run = RunKept(Scenario(R"(
duration: 12m
workloads:
  - {name: a, replicas: 6, cpu: 1200m, memory: 512Mi}
actions:
  - {at: 3m, do: deleteNodeClaim}
  - {at: 5m, do: terminateInstance}
  - {at: 7m, do: labelNodePool, label: team=web}
)"));
  auto same = RunWhatIf(*run, "");
  EXPECT_TRUE(same.result.notes.empty()) << same.result.notes.front();
  EXPECT_EQ(same.result.by_hand, 2u);
  EXPECT_EQ(same.result.by_hand_unmatched, 0u);
  EXPECT_EQ(same.result.nodepool_edits, 1u);
  EXPECT_GT(same.result.recorded.removed.size(), 0u);
  ExpectSameFigures(same.result.recorded, same.result.what_if);
  EXPECT_EQ(FinalHash(run->log()), FinalHash(same.log));

  auto file = RunWhatIf(*run, Pool(kRecordedTypes));
  EXPECT_EQ(file.result.nodepool_edits, 0u);
  EXPECT_EQ(file.result.by_hand, 2u);
  ASSERT_EQ(file.result.notes.size(), 1u);
  EXPECT_NE(file.result.notes[0].find("1 NodePool edits recorded during the run: not applied"),
            std::string::npos)
      << file.result.notes[0];
}

TEST(WhatIf, SpotStormExampleReproducesItsInterruptionsAndPrices) {
  KeptRun run;
  sim::SimulateOptions options;
  options.log_dir = run.log();
  sim::Simulate(sim::LoadScenario(std::filesystem::path(TENON_SOURCE_DIR) /
                                  "examples/scenarios/spot-storm.yaml"),
                options);
  auto same = RunWhatIf(run, "");
  EXPECT_EQ(same.result.interruptions, 4u);
  EXPECT_EQ(same.result.interruptions_unmatched, 0u);
  EXPECT_GT(same.result.coverage.ice_honoured, 0u);
  EXPECT_EQ(same.result.recorded.removed.at("SpotInterruption"), 4u);
  ExpectSameFigures(same.result.recorded, same.result.what_if);
  EXPECT_EQ(FinalHash(run.log()), FinalHash(same.log));
}

// Without consolidation the node the scale-down left half-empty stays: more node-hours, more
// cost, and no consolidation acting on anything (nor recording a pass: it is off).
TEST(WhatIf, ConsolidationDisabledCostsMore) {
  auto run = RunKept(PdbScenario());
  auto off = RunWhatIf(*run, Pool(kRecordedTypes, "  disruption:\n    consolidateAfter: Never\n"));
  const sim::Report& recorded = off.result.recorded;
  const sim::Report& what_if = off.result.what_if;
  EXPECT_GT(Consolidations(recorded), 0u);
  EXPECT_EQ(Consolidations(what_if), 0u);
  EXPECT_EQ(what_if.removed.count("Underutilized"), 0u);
  EXPECT_GT(what_if.node_hours, recorded.node_hours);
  EXPECT_GT(what_if.cost_micro_usd, recorded.cost_micro_usd);
  EXPECT_EQ(what_if.pods_still_pending, 0u);
  // The recording moved one pod (b's, evicted and bound again); the what-if binds each once.
  EXPECT_EQ(what_if.pending.size() + 1, recorded.pending.size());
}

// A day recorded under WhenEmptyOrUnderutilized, asked again under Balanced: the marginal
// replace the recording made (a node left with most of the pool's pods, replaced a size
// smaller) is held back on its score, and the what-if's log says so.
TEST(WhatIf, BalancedHoldsBackTheRecordingsMarginalReplace) {
  auto run = RunKept(MarginalReplaceScenario(""));
  const std::string budgets = "    budgets: [{nodes: \"100%\"}]\n";
  auto balanced = RunWhatIf(
      *run, Pool(kRecordedTypes, "  disruption:\n    consolidationPolicy: Balanced\n" + budgets));
  const sim::Report& recorded = balanced.result.recorded;
  const sim::Report& what_if = balanced.result.what_if;
  EXPECT_GT(Consolidations(recorded), 0u);
  EXPECT_GT(recorded.removed.count("Underutilized"), 0u);
  EXPECT_EQ(Consolidations(what_if), 0u);
  EXPECT_EQ(what_if.removed.count("Underutilized"), 0u);
  EXPECT_GT(what_if.cost_micro_usd, recorded.cost_micro_usd);
  EXPECT_EQ(what_if.pods_still_pending, 0u);
  const std::string audit = replay::AuditText(replay::Audit(*OpenLog(balanced.log), {}), {});
  EXPECT_NE(audit.find("NodePool default (Balanced): score 0.33 < threshold 0.50"),
            std::string::npos)
      << audit;
}

// Restricted to c5 (cheaper than m5 at the same size), the what-if asks for offerings the
// recording never asked about: each is said to come from the catalog, and is launched.
TEST(WhatIf, AnotherFamilyIsAnsweredFromTheCatalog) {
  auto run = RunKept(IceScenario());
  auto c5 =
      RunWhatIf(*run, Pool("{key: karpenter.k8s.aws/instance-family, operator: In, values: [c5]}"));
  const whatif::Coverage& coverage = c5.result.coverage;
  EXPECT_EQ(coverage.recorded, 0u);
  EXPECT_GT(coverage.from_catalog, 0u);
  for (const auto& [offering, n] : coverage.uncovered) EXPECT_EQ(offering.rfind("c5.", 0), 0u);
  for (const auto& type : LaunchedTypes(c5.log)) EXPECT_EQ(type.rfind("c5.", 0), 0u) << type;
  EXPECT_LT(c5.result.what_if.cost_micro_usd, c5.result.recorded.cost_micro_usd);
  const std::string text = whatif::WhatIfText(c5.result);
  EXPECT_NE(text.find("not in the recording, answered from the catalog"), std::string::npos);
  // The recorded ICE on m5.large in us-east-1a is honoured when the same offering is asked.
  auto same = RunWhatIf(*run, Pool(kRecordedTypes));
  EXPECT_GT(same.result.recorded.capacity_errors, 0u);
  EXPECT_EQ(same.result.coverage.ice_honoured, same.result.recorded.capacity_errors);
  ExpectSameFigures(same.result.recorded, same.result.what_if);
}

// A lower limit: the pool stops at one node, so pods stay pending that the recording ran.
TEST(WhatIf, LowerLimitLeavesPodsPending) {
  auto run = RunKept(PdbScenario());
  auto limited = RunWhatIf(*run, Pool(kRecordedTypes) + "  limits: {cpu: \"4\"}\n");
  EXPECT_EQ(limited.result.recorded.pods_still_pending, 0u);
  EXPECT_LT(limited.result.what_if.nodes_launched, limited.result.recorded.nodes_launched);
  EXPECT_LT(limited.result.what_if.pending.size(), limited.result.recorded.pending.size());
}

TEST(WhatIf, BadConfigurationNamesTheFileAndTheProblem) {
  auto run = RunKept(ReplaceScenario());
  auto message = [&](const std::string& yaml) {
    try {
      RunWhatIf(*run, yaml);
    } catch (const sim::ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("kind: NodePool\nmetadata: {name: x\n").find("config.yaml: yaml-cpp"),
            std::string::npos);
  EXPECT_NE(message(Pool(kRecordedTypes) + "  weight: 500\n").find("weight must be within"),
            std::string::npos);
  EXPECT_NE(message("kind: Deployment\n").find("config.yaml: a document of kind 'Deployment'"),
            std::string::npos);
  std::string dangling = Pool(kRecordedTypes);
  dangling.replace(dangling.rfind("name: default}"), 14, "name: nope}");
  EXPECT_NE(message(dangling).find("names EC2NodeClass 'nope'"), std::string::npos);
  // The command line says the same and exits non-zero.
  std::ofstream(run->dir.path() / "bad.yaml") << "kind: NodePool\nmetadata: {name: x\n";
  auto result =
      Tenon("replay " + run->log().string() + " --with " + (run->dir.path() / "bad.yaml").string());
  EXPECT_NE(result.exit_code, 0);
}

}  // namespace
}  // namespace tenon::testing
