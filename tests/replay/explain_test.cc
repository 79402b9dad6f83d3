// tenon explain on logs of simulated scenarios: the ICE'd offering appears in a pod's chain with
// how long it is kept out, every line cites a record of the log in order, --at cuts the chain,
// and a node's chain names the PDB that kept it.
#include "tests/replay/incident.h"

namespace tenon::testing {
namespace {

std::string Text(const std::vector<replay::ExplainLine>& lines) {
  return replay::ExplainText(lines);
}

// The first pod bound in the ICE scenario: pending, batch, NodePool and first choice, the
// offering without capacity (kept out 3 minutes), launch, registration, binding.
TEST(Explain, PodChainShowsTheIcedOffering) {
  auto run = RunKept(IceScenario());
  const Outcome& o = run->outcome;
  const LifecycleDecision* launched = o.First(Transition::kLaunched);
  ASSERT_NE(launched, nullptr);
  std::string pod;
  for (const auto& [key, p] : o.pods) {
    if (pod.empty() && !p.node_name.empty()) pod = key;
  }
  ASSERT_FALSE(pod.empty());
  auto log = run->Open();
  auto lines = replay::Explain(*log, replay::Subject::kPod, pod, std::nullopt);
  const std::string text = Text(lines);
  auto has = [&](const std::string& s) { return text.find(s) != std::string::npos; };
  EXPECT_TRUE(has("pod " + pod + " pending")) << text;
  EXPECT_TRUE(has("NodePool default planned NodeClaim")) << text;
  EXPECT_TRUE(has("first choice m5.large in us-east-1a (on-demand) at $0.0960/h")) << text;
  // The first launch started at 00:00:0x; its ICE keeps the offering out for 3 minutes.
  EXPECT_TRUE(has("offering m5.large/us-east-1a/on-demand had no capacity")) << text;
  EXPECT_TRUE(has("kept out of launches until 00:03:")) << text;
  EXPECT_TRUE(has(" Launched: m5.large in us-east-1")) << text;
  EXPECT_TRUE(has(" Registered: ")) << text;
  EXPECT_TRUE(has("pod " + pod + " bound to node ")) << text;

  // Every line cites a record of the log, in log order, and the order of the story holds.
  ASSERT_GE(lines.size(), 6u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_TRUE(log->Read(lines[i].seq).has_value()) << lines[i].text;
    EXPECT_TRUE(i == 0 || lines[i - 1].seq <= lines[i].seq);
  }
  EXPECT_LT(text.find("pending"), text.find("had no capacity"));
  EXPECT_LT(text.find("had no capacity"), text.find(" Launched: "));
  EXPECT_LT(text.find(" Registered: "), text.find(" bound to node "));

  // Through --at, nothing later than that time.
  const Instant cut = lines[2].at;
  auto early = replay::Explain(*log, replay::Subject::kPod, pod, cut);
  ASSERT_FALSE(early.empty());
  EXPECT_LT(early.size(), lines.size());
  for (const auto& line : early) EXPECT_LE(line.at, cut);

  // The command line prints the same chain with "(seq N)" on each line.
  auto cli = Tenon("explain " + run->log().string() + " pod " + pod);
  EXPECT_EQ(cli.exit_code, 0);
  EXPECT_EQ(cli.out, text);
  EXPECT_NE(cli.out.find("(seq "), std::string::npos);
}

// A node's chain: its NodeClaim's creation and steps, and the PDB that kept it.
TEST(Explain, NodeChainNamesThePdb) {
  auto run = RunKept(PdbScenario());
  const Outcome& o = run->outcome;
  std::string blocked;
  for (const auto& [at, d] : o.disruptions) {
    for (const auto& c : d.candidates) {
      if (c.outcome.find("PDB a-pdb allows 0") != std::string::npos) blocked = c.nodeclaim;
    }
  }
  ASSERT_FALSE(blocked.empty()) << Outcomes(o);
  auto log = run->Open();
  const std::string text =
      Text(replay::Explain(*log, replay::Subject::kNode, NodeOf(o, blocked), std::nullopt));
  EXPECT_NE(text.find("planned NodeClaim " + blocked), std::string::npos) << text;
  EXPECT_NE(text.find("NodeClaim " + blocked + " Initialized"), std::string::npos) << text;
  EXPECT_NE(text.find("SingleNodeConsolidation did not disrupt " + blocked + ": pod default/a-"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("PDB a-pdb allows 0 disruptions"), std::string::npos) << text;
  // The claim's chain is part of its node's, which adds the node's own events.
  const std::string claim_text =
      Text(replay::Explain(*log, replay::Subject::kNodeClaim, blocked, std::nullopt));
  std::size_t start = 0;
  for (std::size_t end; (end = claim_text.find('\n', start)) != std::string::npos;
       start = end + 1) {
    EXPECT_NE(text.find(claim_text.substr(start, end - start)), std::string::npos)
        << claim_text.substr(start, end - start);
  }
  EXPECT_NE(text.find("node " + NodeOf(o, blocked) + " appeared"), std::string::npos) << text;
  EXPECT_TRUE(replay::Explain(*log, replay::Subject::kNode, "no-such-node", std::nullopt).empty());
}

// A node pods were placed on after it came up: its chain names the batch that placed them,
// and its deletion.
TEST(Explain, NodeChainShowsPodsPlacedOnIt) {
  auto run = RunKept(Scenario(R"(
duration: 12m
workloads:
  - {name: a, replicas: 1, cpu: 500m, memory: 256Mi}
  - {at: 3m, name: a, replicas: 2}
  - {at: 6m, name: a, replicas: 0}
)"));
  const Outcome& o = run->outcome;
  const LifecycleDecision* registered = o.First(Transition::kRegistered);
  ASSERT_NE(registered, nullptr);
  const std::string node = registered->node_name;
  auto log = run->Open();
  const std::string text = Text(replay::Explain(*log, replay::Subject::kNode, node, std::nullopt));
  EXPECT_NE(text.find("node " + node + " appeared"), std::string::npos) << text;
  EXPECT_NE(text.find("1 placed on node " + node + " (default/a-"), std::string::npos) << text;
  EXPECT_NE(text.find("NodeClaim " + registered->nodeclaim + " Registered"), std::string::npos)
      << text;
  EXPECT_NE(text.find("node " + node + " deleted"), std::string::npos) << text;
}

}  // namespace
}  // namespace tenon::testing
