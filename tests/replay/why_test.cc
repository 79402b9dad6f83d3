// tenon why on the bundled demo and on the PDB scenario: each moment's change is found with its
// causes, checked on the JSON document (codes and names, not English).
#include <nlohmann/json.hpp>
#include <sstream>

#include "adapters/sim/simulator.h"
#include "replay/why.h"
#include "tests/replay/incident.h"

namespace tenon::testing {
namespace {

using nlohmann::json;

// The quick-start scenario, simulated once into a log kept for the tests.
const KeptRun& Demo() {
  static const KeptRun* run = [] {
    auto* r = new KeptRun;
    auto scenario =
        sim::LoadScenario(std::filesystem::path(TENON_SOURCE_DIR) / "examples/scenarios/demo.yaml");
    sim::SimulateOptions options;
    options.log_dir = r->log();
    sim::Simulate(scenario, options);
    return r;
  }();
  return *run;
}

json WhyAt(const log::EventLog& log, const std::string& at, Duration window) {
  auto when = replay::ParseTime(at, replay::FirstEventTime(log));
  EXPECT_TRUE(when.has_value()) << at;
  return json::parse(replay::WhyJson(replay::Why(log, *when, window)));
}

std::vector<json> OfKind(const json& doc, const std::string& kind) {
  std::vector<json> out;
  for (const auto& c : doc["changes"]) {
    if (c["kind"] == kind) out.push_back(c);
  }
  return out;
}

// The one change of `kind` in `doc`; null, and a failure, when there is not exactly one.
json OnlyChange(const json& doc, const std::string& kind) {
  const auto found = OfKind(doc, kind);
  EXPECT_EQ(found.size(), 1u) << doc.dump(2);
  return found.size() == 1 ? found[0] : json();
}

// 02:04: the web Deployment scaled out; one batch of web pods, the weightier NodePool, one
// on-demand launch with no capacity trouble.
TEST(Why, DemoScaleUpNamesTheBatchThePoolAndTheLaunch) {
  auto log = Demo().Open();
  const json doc = WhyAt(*log, "02:04:00", Duration{2 * kMinute.value});
  const json up = OnlyChange(doc, "scale-up");
  ASSERT_FALSE(up.is_null());
  EXPECT_GT(up["batch"]["pods"].get<int>(), 0);
  ASSERT_EQ(up["batch"]["workloads"].size(), 1u);
  EXPECT_EQ(up["batch"]["workloads"][0]["name"], "web");
  EXPECT_EQ(up["nodepools"][0]["name"], "general");  // Weight 10 before batch's 0.
  EXPECT_EQ(up["nodepools"][0]["weight"], 10);
  ASSERT_EQ(up["launches"].size(), 1u);
  const json& launch = up["launches"][0];
  EXPECT_TRUE(launch["launched"].get<bool>());
  EXPECT_EQ(launch["nodepool"], "general");
  EXPECT_EQ(launch["capacity_type"], "on-demand");
  EXPECT_TRUE(launch["unavailable"].empty());
  EXPECT_FALSE(launch["offered"].empty());
  EXPECT_GT(doc["after"]["nodes"].get<int>(), doc["before"]["nodes"].get<int>());
  EXPECT_GT(launch["seq"].get<int>(), up["seq"].get<int>());  // The fleet answered after.
}

// 02:06: the crunch batch on spot; the first choice's pool is dry, the fleet falls over to the
// next offering and says which one failed.
TEST(Why, DemoIceFallbackNamesTheDryOffering) {
  auto log = Demo().Open();
  const json doc = WhyAt(*log, "02:06:00", Duration{1 * kMinute.value});
  const json up = OnlyChange(doc, "scale-up");
  ASSERT_FALSE(up.is_null());
  EXPECT_EQ(up["batch"]["workloads"][0]["name"], "crunch");
  ASSERT_EQ(up["launches"].size(), 1u);
  const json& launch = up["launches"][0];
  EXPECT_TRUE(launch["launched"].get<bool>());
  EXPECT_EQ(launch["nodepool"], "batch");
  EXPECT_EQ(launch["capacity_type"], "spot");
  ASSERT_EQ(launch["unavailable"].size(), 1u);
  const std::string dry = launch["unavailable"][0];
  EXPECT_EQ(dry.rfind("m5.8xlarge/us-east-1c/spot: ", 0), 0u) << dry;
  EXPECT_NE(launch["zone"], "us-east-1c");
  // The dry offering was among those the request offered.
  bool offered = false;
  for (const auto& o : launch["offered"]) {
    offered = offered || (o["instance_type"] == "m5.8xlarge" && o["zone"] == "us-east-1c");
  }
  EXPECT_TRUE(offered) << launch.dump(2);
}

// 02:05:20: single-node consolidation replaces the first node; the replacement is named and
// the pods' destinations are counted per place, the replacement by its name.
TEST(Why, DemoConsolidationNamesTheReplacementAndWherePodsGo) {
  auto log = Demo().Open();
  const json doc = WhyAt(*log, "02:05:20", Duration{1 * kMinute.value});
  const json down = OnlyChange(doc, "scale-down");
  ASSERT_FALSE(down.is_null());
  EXPECT_EQ(down["method"], "SingleNodeConsolidation");
  EXPECT_EQ(down["phase"], "replacing");
  ASSERT_EQ(down["nodeclaims"].size(), 1u);
  ASSERT_EQ(down["replacements"].size(), 1u);
  const std::string replacement = down["replacements"][0];
  EXPECT_EQ(replacement.rfind("general-", 0), 0u);
  int pods = 0;
  bool to_replacement = false;
  for (const auto& d : down["moved"]) {
    pods += d["pods"].get<int>();
    EXPECT_NE(d["nodeclaim"].get<std::string>().rfind('#', 0), 0u) << d.dump();
    to_replacement = to_replacement || (d["nodeclaim"] == replacement && d["node"] == "");
  }
  EXPECT_GT(pods, 0);
  EXPECT_TRUE(to_replacement) << down.dump(2);
  EXPECT_GT(down["saving"].get<int>(), 0);
  ASSERT_EQ(down["budgets"].size(), 1u);
  EXPECT_EQ(down["budgets"][0]["reason"], "Underutilized");
  ASSERT_EQ(down["launches"].size(), 1u);
  EXPECT_EQ(down["launches"][0]["nodeclaim"], replacement);
  // The candidates come from the proposal 15 s before; the evictions after.
  EXPECT_GT(down["proposed_seq"].get<int>(), 0);
  EXPECT_LT(down["proposed_seq"].get<int>(), down["seq"].get<int>());
  const std::string text = replay::WhyText(replay::Why(
      *log, *replay::ParseTime("02:05:20", replay::FirstEventTime(*log)), Duration{kMinute}));
  EXPECT_EQ(text.find("#0"), std::string::npos) << text;
}

// 02:14:20: the crunch Deployment is gone and its spot node, empty, goes by emptiness.
TEST(Why, DemoEmptinessTakesTheEmptyNode) {
  auto log = Demo().Open();
  const json doc = WhyAt(*log, "02:14:20", Duration{1 * kMinute.value});
  const json down = OnlyChange(doc, "scale-down");
  ASSERT_FALSE(down.is_null());
  EXPECT_EQ(down["method"], "Emptiness");
  EXPECT_EQ(down["phase"], "executed");
  EXPECT_EQ(down["cause"], "Empty");
  EXPECT_TRUE(down["replacements"].empty());
  EXPECT_TRUE(down["moved"].empty());
  EXPECT_LT(doc["after"]["cost"].get<std::int64_t>(), doc["before"]["cost"].get<std::int64_t>());
}

// A quiet moment: nothing launched or went.
TEST(Why, AQuietMomentHasNoChange) {
  auto log = Demo().Open();
  const json doc = WhyAt(*log, "02:10:30", Duration{1 * kMinute.value});
  EXPECT_TRUE(doc["changes"].empty()) << doc.dump(2);
  EXPECT_EQ(doc["before"]["nodes"], doc["after"]["nodes"]);
}

// The PDB scenario: the node whose last pod a PDB protects stays; the other is consolidated,
// and its candidates say which was blocked by what.
TEST(Why, PdbScenarioTellsTheBlockedCandidateAndTheOneThatWent) {
  auto run = RunKept(PdbScenario());
  const Outcome& o = run->outcome;
  std::optional<Instant> executed;
  for (const auto& [at, d] : o.disruptions) {
    if (d.method == DisruptionMethod::kSingleNodeConsolidation &&
        d.phase == DisruptionPhase::kExecuted && !executed) {
      executed = at;
    }
  }
  ASSERT_TRUE(executed.has_value());
  auto log = run->Open();
  const json doc =
      json::parse(replay::WhyJson(replay::Why(*log, *executed, Duration{kMinute.value})));
  const json down = OnlyChange(doc, "scale-down");
  ASSERT_FALSE(down.is_null());
  EXPECT_EQ(down["method"], "SingleNodeConsolidation");
  bool pdb = false, selected = false;
  for (const auto& c : down["candidates"]) {
    pdb = pdb || (c["cause"] == "PodDisruptionBudget" &&
                  c["subject"].get<std::string>().rfind("default/a-", 0) == 0);
    selected = selected || c["nodeclaim"] == down["nodeclaims"][0];
  }
  EXPECT_TRUE(pdb) << down.dump(2);
  EXPECT_TRUE(selected) << down.dump(2);
  EXPECT_EQ(doc["after"]["nodes"].get<int>(), doc["before"]["nodes"].get<int>() - 1);
}

// The moment of the first decision of `method` in `phase`, from the run's disruptions.
std::optional<Instant> FirstAt(const Outcome& o, DisruptionMethod method, DisruptionPhase phase) {
  for (const auto& [at, d] : o.disruptions) {
    if (d.method == method && d.phase == phase) return at;
  }
  return std::nullopt;
}

// A NodePool's template changed: drift replaces a node, and its candidate says what drifted.
TEST(Why, DriftSaysWhatDrifted) {
  auto run = RunKept(TemplateDriftScenario());
  const auto at = FirstAt(run->outcome, DisruptionMethod::kDrift, DisruptionPhase::kReplacing);
  ASSERT_TRUE(at.has_value());
  auto log = run->Open();
  const json doc = json::parse(replay::WhyJson(replay::Why(*log, *at, Duration{kMinute.value})));
  const json down = OnlyChange(doc, "scale-down");
  ASSERT_FALSE(down.is_null());
  EXPECT_EQ(down["method"], "Drift");
  EXPECT_EQ(down["replacements"].size(), 1u);
  bool field = false;
  for (const auto& c : down["candidates"]) {
    field = field || c["outcome"].get<std::string>().find("template changed") != std::string::npos;
  }
  EXPECT_TRUE(field) << down.dump(2);
}

// A spot interruption warning: the node is taken, and the change says the message's kind.
TEST(Why, InterruptionSaysTheMessage) {
  auto run = RunKept(Scenario(R"(
duration: 5m
workloads:
  - {name: web, replicas: 2, cpu: 500m, memory: 512Mi}
actions:
  - {at: 2m, do: spotInterruption}
)"));
  const auto at =
      FirstAt(run->outcome, DisruptionMethod::kInterruption, DisruptionPhase::kExecuted);
  ASSERT_TRUE(at.has_value());
  auto log = run->Open();
  const json doc = json::parse(replay::WhyJson(replay::Why(*log, *at, Duration{kMinute.value})));
  const json taken = OnlyChange(doc, "interruption");
  ASSERT_FALSE(taken.is_null());
  EXPECT_EQ(taken["method"], "Interruption");
  EXPECT_EQ(taken["cause"], "SpotInterruption") << taken.dump(2);
}

// A window that opens before the log's first tick folds from nothing: the first batch's
// launch at 02:00:01 is found, from an empty cluster.
TEST(Why, AWindowFromBeforeTheFirstTick) {
  auto log = Demo().Open();
  const json doc = WhyAt(*log, "02:00:01", Duration{10 * kSecond.value});
  EXPECT_EQ(doc["before"]["nodes"], 0) << doc.dump(2);
  const json up = OnlyChange(doc, "scale-up");
  ASSERT_FALSE(up.is_null());
  EXPECT_EQ(up["batch"]["pods"], 12);
  EXPECT_EQ(doc["after"]["nodes"], 1);
}

// A Balanced NodePool holds back a marginal replace: why names the node held back with its
// score and the score's two parts, and audit shows the same on the candidate.
TEST(Why, BalancedScoreHoldsBackAMarginalReplace) {
  auto run = RunKept(MarginalReplaceScenario("Balanced"));
  std::optional<Instant> held;
  for (const auto& [at, d] : run->outcome.disruptions) {
    for (const auto& c : d.candidates) {
      if (c.cause == Cause::kBalancedScore && !held) held = at;
    }
  }
  ASSERT_TRUE(held.has_value()) << Outcomes(run->outcome);
  auto log = run->Open();
  const auto report = replay::Why(*log, *held, Duration{kMinute.value});
  const json doc = json::parse(replay::WhyJson(report));
  EXPECT_TRUE(doc["changes"].empty()) << doc.dump(2);
  ASSERT_EQ(doc["held"].size(), 1u) << doc.dump(2);
  const std::string outcome = doc["held"][0]["outcome"];
  EXPECT_NE(outcome.find("NodePool default (Balanced): score 0.33 < threshold 0.50 (k: 2, "
                         "savings 25.0% of the NodePool's cost, disruption 75.0% of its "
                         "disruption cost)"),
            std::string::npos)
      << outcome;
  EXPECT_NE(doc["answer"].get<std::string>().find("held back 1 node of Balanced NodePools"),
            std::string::npos)
      << doc["answer"];
  const std::string text = replay::WhyText(report);
  EXPECT_NE(text.find("held back by a Balanced score"), std::string::npos) << text;
  EXPECT_NE(text.find("score 0.33 < threshold 0.50"), std::string::npos) << text;

  const std::string audit = replay::AuditText(replay::Audit(*log, {}), {});
  EXPECT_NE(audit.find("(default): NodePool default (Balanced): score 0.33 < threshold 0.50"),
            std::string::npos)
      << audit;
}

// The command: --json is one document, and the text starts with the answer.
TEST(Why, CommandPrintsTheAnswerAndJson) {
  const std::string log = Demo().log().string();
  CommandResult text = Tenon("why " + log + " --at 02:06:00 --window 1m");
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_EQ(text.out.rfind("Between 02:05:30 and 02:06:30 the cluster went from ", 0), 0u)
      << text.out;
  EXPECT_NE(text.out.find("(seq "), std::string::npos);
  CommandResult j = Tenon("why " + log + " --at 02:06:00 --window 1m --json");
  ASSERT_EQ(j.exit_code, 0);
  EXPECT_EQ(json::parse(j.out)["window"]["from"], "2026-01-01T02:05:30Z");
  CommandResult bad = Tenon("why " + log + " --at 02:06:00 --window soon");
  EXPECT_NE(bad.exit_code, 0);
}

// Lines of `text` that hold more than one list of pod moves, or a move to "#k".
std::vector<std::string> UnreadableLines(const std::string& text) {
  std::vector<std::string> bad;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::size_t lists = 0;
    for (auto at = line.find("move: "); at != std::string::npos; at = line.find("move: ", at + 1)) {
      ++lists;
    }
    const bool arrows = line.find(" -> ") != std::string::npos;
    if (lists > 1 || arrows || line.find("#0") != std::string::npos) bad.push_back(line);
  }
  return bad;
}

// audit and explain on the demo: every pod-move list is counted by destination, once a line,
// and the replacement is named, never "#0"; --verbose gives each pod's move, named too.
TEST(Readable, AuditAndExplainGroupMovesAndNameReplacements) {
  auto log = Demo().Open();
  const auto all = replay::Audit(*log, {});
  const std::string audit = replay::AuditText(all, {});
  EXPECT_TRUE(UnreadableLines(audit).empty()) << UnreadableLines(audit).front();
  EXPECT_NE(audit.find("13 pods move: 9 to node "), std::string::npos) << audit;
  EXPECT_NE(audit.find(", 4 to general-pr77x (new)"), std::string::npos) << audit;
  EXPECT_NE(audit.find("budget general Underutilized: budget #1 (nodes 10% of 2): 1 allowed, 0 "
                       "disrupting"),
            std::string::npos)
      << audit;
  EXPECT_NE(audit.find("at the replacements' first choice"), std::string::npos) << audit;
  EXPECT_NE(audit.find("whatever type it launches as"), std::string::npos) << audit;

  auto verbose = all;
  verbose.verbose = true;
  const std::string full = replay::AuditText(verbose, {});
  EXPECT_NE(full.find("default/web-7 -> general-pr77x (new)"), std::string::npos) << full;
  EXPECT_EQ(full.find("#0"), std::string::npos);

  const auto lines = replay::Explain(*log, replay::Subject::kNodeClaim, "general-5fcr4", {});
  const std::string explain = replay::ExplainText(lines);
  EXPECT_TRUE(UnreadableLines(explain).empty()) << UnreadableLines(explain).front();
  EXPECT_NE(explain.find("4 to general-pr77x (new)"), std::string::npos) << explain;
}

}  // namespace
}  // namespace tenon::testing
