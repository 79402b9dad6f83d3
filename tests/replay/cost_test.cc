// tenon cost on the PDB scenario, checked by hand: between 00:02:45 and 00:03:45 two m5.xlarge
// nodes ($0.192/h each) run, one with a's three pods and one with b's (1200m, 512Mi each), so
// the minute costs 2 x 0.192 / 60 = $0.0064, a and b each get
// 0.0032 x (3600m / allocatable cpu + 1536Mi / allocatable memory) / 2 and the rest is idle.
#include "tests/replay/incident.h"

namespace tenon::testing {
namespace {

TEST(Cost, SplitsByRequestsWithIdleApart) {
  auto run = RunKept(PdbScenario());
  auto log = run->Open();
  replay::CostQuery query{"app", Minutes(2) + Duration{45 * kSecond.value},
                          Minutes(3) + Duration{45 * kSecond.value}};
  auto report = replay::Cost(*log, query);
  EXPECT_NEAR(report.total_usd, 0.0064, 1e-9);
  EXPECT_NEAR(report.node_hours, 2.0 / 60, 1e-9);

  // The nodes' allocatable, as the core derived it (the split is what is under test).
  State state = replay::FoldTo(*log, replay::SeqAtTime(*log, Minutes(3)), true);
  ASSERT_EQ(state.lifecycle.nodeclaims.size(), 2u);
  const Resources alloc = state.lifecycle.nodeclaims.begin()->second.allocatable;
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    EXPECT_EQ(claim.instance_type, "m5.xlarge");
    EXPECT_EQ(claim.allocatable, alloc);
  }
  const double share = (3600.0 / static_cast<double>(alloc.cpu.value) +
                        3.0 * 512 * 1024 * 1024 / static_cast<double>(alloc.memory.value)) /
                       2;
  ASSERT_EQ(report.usd_by_group.size(), 2u);
  EXPECT_NEAR(report.usd_by_group.at("a"), 0.0032 * share, 1e-9);
  EXPECT_NEAR(report.usd_by_group.at("b"), 0.0032 * share, 1e-9);
  EXPECT_NEAR(report.idle_usd, 0.0064 * (1 - share), 1e-9);

  // By namespace: everything is in default; groups and idle add up to the total.
  auto by_ns = replay::Cost(*log, {"", query.since, query.until});
  ASSERT_EQ(by_ns.usd_by_group.size(), 1u);
  EXPECT_NEAR(by_ns.usd_by_group.at("default") + by_ns.idle_usd, by_ns.total_usd, 1e-12);

  // The command line prints the same split.
  auto cli =
      Tenon("cost " + run->log().string() + " --by label=app --since 00:02:45 --until 00:03:45");
  EXPECT_EQ(cli.exit_code, 0);
  EXPECT_NE(cli.out.find("total                                  0.006400  100.0%"),
            std::string::npos)
      << cli.out;
}

// Over the whole run, the parts add up to the total and the total is each NodeClaim's price
// for as long as it was launched.
TEST(Cost, WholeRunAddsUp) {
  auto run = RunKept(ReplaceScenario());
  auto log = run->Open();
  auto report = replay::Cost(*log, {});
  double parts = report.idle_usd;
  for (const auto& [group, usd] : report.usd_by_group) parts += usd;
  EXPECT_NEAR(parts, report.total_usd, 1e-9);
  // Independently: Launched and Finalized times from the lifecycle decisions.
  std::map<std::string, Instant> launched;
  std::map<std::string, MicroUsdPerHour> price;
  double expected = 0;
  State end = replay::FoldTo(*log, Seq{0}, true);
  log->ScanDecisions(1, [&](const log::DecisionRecord& r) {
    Decision d = log::DecodeDecision(r.payload);
    const auto* l = std::get_if<LifecycleDecision>(&d.body);
    if (l == nullptr) return true;
    if (l->transition == Transition::kLaunched) launched[l->nodeclaim] = d.at;
    if (l->transition == Transition::kInstanceTerminated && launched.contains(l->nodeclaim)) {
      const double hours = static_cast<double>(d.at.value - launched[l->nodeclaim].value) / 3.6e12;
      // The price of a claim gone from the state: m5.xlarge in this scenario.
      expected += 0.192 * hours;
      launched.erase(l->nodeclaim);
    }
    return true;
  });
  for (const auto& [claim, at] : launched) {
    const double hours = static_cast<double>(end.now.value - at.value) / 3.6e12;
    expected += static_cast<double>(end.lifecycle.nodeclaims.at(claim).price.value) / 1e6 * hours;
  }
  EXPECT_NEAR(report.total_usd, expected, 0.0001);
  EXPECT_GT(report.usd_by_group.at("default"), 0);
}

}  // namespace
}  // namespace tenon::testing
