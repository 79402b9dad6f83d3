// Every scenario in examples/scenarios runs to the end and its report says what the scenario's
// comment promises: these are facts read from the report, the world and the log, not exit codes.
#include <gtest/gtest.h>

#include <set>

#include "adapters/sim/simulator.h"
#include "log/codec.h"
#include "replay/replay.h"
#include "tests/integration/helpers.h"

namespace tenon::testing {
namespace {

const std::filesystem::path kExamples =
    std::filesystem::path(TENON_SOURCE_DIR) / "examples/scenarios";

struct ExampleRun {
  sim::Report report;
  std::vector<FleetLaunched> launches;  // In log order.
  std::vector<LifecycleDecision> history;
  replay::Verdict verdict = replay::Verdict::kDiverged;
  std::string verify_detail;
};

ExampleRun RunExample(const std::string& name) {
  TempDir dir;
  // An example is a file, or a folder of them.
  const auto folder = kExamples / name;
  auto scenario = sim::LoadScenario(
      std::filesystem::is_directory(folder) ? folder : kExamples / (name + ".yaml"));
  sim::ReportBuilder builder(scenario.name, scenario.start, kMinute);
  sim::SimulateOptions options;
  options.log_dir = dir.path() / "log";
  options.report = &builder;
  sim::Simulate(scenario, options);
  ExampleRun run;
  run.report = builder.report();
  log::OpenOptions open;
  open.read_only = true;
  open.create_if_missing = false;
  auto log = log::EventLog::Open(options.log_dir, open);
  log->Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    auto entry = log::DecodeEntry(r.payload);
    if (const auto* e = std::get_if<Event>(&entry)) {
      if (const auto* l = std::get_if<FleetLaunched>(e)) run.launches.push_back(*l);
    }
    return true;
  });
  log->ScanDecisions(1, [&](const log::DecisionRecord& r) {
    Decision d = log::DecodeDecision(r.payload);
    if (const auto* l = std::get_if<LifecycleDecision>(&d.body)) run.history.push_back(*l);
    return true;
  });
  auto verify = replay::Verify(*log);
  run.verdict = verify.verdict;
  run.verify_detail = verify.detail;
  return run;
}

std::size_t Count(const std::map<std::string, std::size_t>& counts, const std::string& key) {
  auto it = counts.find(key);
  return it == counts.end() ? 0 : it->second;
}

std::size_t PeakNodes(const sim::Report& r) {
  std::size_t peak = 0;
  for (const auto& s : r.samples) peak = std::max(peak, s.nodes);
  return peak;
}

// The web tier spreads over all three zones, serves every pod, and shrinks after the peak.
TEST(ScenarioExamples, WebTierSpreadsOverZonesAndShrinks) {
  ExampleRun run = RunExample("web-tier");
  std::set<std::string> zones;
  for (const auto& l : run.launches) zones.insert(l.zone);
  EXPECT_EQ(zones.size(), 3u);
  EXPECT_EQ(run.report.pods_still_pending, 0u);
  EXPECT_GT(run.report.pending.size(), 30u);
  EXPECT_LT(run.report.last.nodes, PeakNodes(run.report));
  EXPECT_GT(Count(run.report.removed, "Underutilized") + Count(run.report.removed, "Empty"), 0u);
  EXPECT_GT(run.report.cost_micro_usd, 0);
  EXPECT_EQ(run.verdict, replay::Verdict::kIdentical) << run.verify_detail;
}

// The batch jobs run on spot, finish, and emptiness removes their nodes; the dry m5.8xlarge spot
// pools are answered with InsufficientInstanceCapacity and never launched in.
TEST(ScenarioExamples, NightlyBatchRunsOnSpotAndLeaves) {
  ExampleRun run = RunExample("nightly-batch");
  std::size_t spot = 0;
  for (const auto& l : run.launches) {
    spot += l.capacity_type == kCapacitySpot ? 1 : 0;
    // Both jobs start within the dry window (the first 30 minutes).
    bool dry = l.instance_type == "m5.8xlarge" && l.capacity_type == kCapacitySpot &&
               (l.zone == "us-east-1c" || l.zone == "us-east-1b");
    EXPECT_FALSE(dry) << l.nodeclaim << " launched in a pool out of capacity";
  }
  EXPECT_GT(spot, 0u);
  EXPECT_GT(run.report.capacity_errors, 0u);
  EXPECT_GE(Count(run.report.removed, "Empty"), spot);
  EXPECT_EQ(run.report.pods_still_pending, 0u);
  EXPECT_EQ(run.report.last.pods_bound, 3u);  // Only the api service is left.
  EXPECT_EQ(run.verdict, replay::Verdict::kIdentical) << run.verify_detail;
}

// GPU pods land on NVIDIA types only, the cheapest that fit (g4dn), and the GPU nodes go once
// the job ends and inference scales down.
TEST(ScenarioExamples, GpuPoolUsesCheapestGpuTypes) {
  ExampleRun run = RunExample("gpu-pool");
  std::size_t gpu = 0;
  for (const auto& l : run.launches) {
    if (l.instance_type.rfind("g", 0) != 0) continue;
    ++gpu;
    EXPECT_EQ(l.instance_type.rfind("g4dn.", 0), 0u) << l.instance_type;
  }
  EXPECT_GE(gpu, 3u);
  EXPECT_EQ(run.report.pods_still_pending, 0u);
  EXPECT_LT(run.report.last.cost, run.report.cost_peak);
  EXPECT_EQ(run.verdict, replay::Verdict::kIdentical) << run.verify_detail;
}

// The scale-down consolidates within a two-node budget (candidates blocked over budget are
// counted) and never evicts the do-not-disrupt ledger pods.
TEST(ScenarioExamples, ConsolidationScaleDownKeepsBudgetAndProtectedPods) {
  ExampleRun run = RunExample("consolidation-scale-down");
  const sim::BudgetUse& web = run.report.budgets.at("web");
  EXPECT_EQ(web.allowed_max, 2);
  EXPECT_GT(web.disrupted, 3u);
  EXPECT_GT(web.blocked_by_budget, 0u);
  for (const auto& h : run.history) {
    if (h.transition == Transition::kEvicted) {
      EXPECT_EQ(h.reason.find("ledger"), std::string::npos) << h.reason;
    }
  }
  EXPECT_LE(run.report.last.nodes * 2, PeakNodes(run.report));
  EXPECT_EQ(run.report.pods_still_pending, 0u);
  EXPECT_EQ(run.verdict, replay::Verdict::kIdentical) << run.verify_detail;
}

// The storm interrupts four spot nodes; their pods are served again, not from the c5.xlarge spot
// pools while those are dry.
TEST(ScenarioExamples, SpotStormReplacesInterruptedNodes) {
  ExampleRun run = RunExample("spot-storm");
  EXPECT_EQ(Count(run.report.removed, "SpotInterruption"), 4u);
  EXPECT_EQ(Count(run.report.decisions, "Interruption executed"), 4u);
  EXPECT_GT(run.report.capacity_errors, 0u);
  EXPECT_EQ(run.report.pods_still_pending, 0u);
  EXPECT_EQ(run.report.last.pods_bound, 12u);
  EXPECT_EQ(run.verdict, replay::Verdict::kIdentical) << run.verify_detail;
}

// `tenon simulate` prints the report, and `--compare` the differences of two configurations.
// A cluster's own dump: every one of its 200 pods is served (the hostname and zone spreads, the
// cache's anti-affinity and the database's zonal volumes included), and the NodePool change at
// 30m drifts the general nodes, which are replaced.
TEST(ScenarioExamples, ClusterDumpServesEveryPodAndDriftsOnTheChange) {
  ExampleRun run = RunExample("cluster-dump");
  EXPECT_EQ(run.report.pods_still_pending, 0u);
  EXPECT_GE(run.report.pending.size(), 200u);
  EXPECT_GT(Count(run.report.removed, "Drifted"), 20u)
      << "the general nodes did not drift to arm64 after the NodePool change";
  EXPECT_EQ(run.verdict, replay::Verdict::kIdentical) << run.verify_detail;
}

TEST(ScenarioExamples, CommandPrintsReportAndComparison) {
  TempDir dir;
  Child child({TENON_BINARY, "simulate", (kExamples / "web-tier.yaml").string(), "--log",
               (dir.path() / "log").string(), "--compare",
               (kExamples / "consolidation-scale-down.yaml").string()});
  std::string line, text;
  while (child.ReadLine(line)) text += line + "\n";
  ASSERT_EQ(child.Wait(), 0) << text;
  for (const char* expected :
       {"report: web-tier", "report: consolidation-scale-down", "pod pending time",
        "nodes launched:", "budgets:", "compare: A = web-tier, B = consolidation-scale-down",
        "cost over the run"}) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << " missing from\n" << text;
  }
}

}  // namespace
}  // namespace tenon::testing
