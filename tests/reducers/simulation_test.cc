// Consolidation's Simulation answers exactly what a fresh scheduling pass without the same
// NodeClaims answers, whatever it was asked before: its undo journal leaves nothing behind.
#include <gtest/gtest.h>

#include <algorithm>

#include "bench/workload.h"
#include "tests/reducers/fixtures.h"

namespace tenon::testing {
namespace {

std::vector<std::string> Claims(const State& state) {
  std::vector<std::string> names;
  for (const auto& [name, claim] : state.nodeclaims) names.push_back(name);
  return names;
}

ScheduleResult Fresh(const State& state, Simulation& sim, const std::vector<std::string>& claims) {
  std::vector<const Pod*> pods;
  for (const auto& name : claims) {
    const auto& mine = sim.PodsOf(state.nodeclaims.at(name));
    pods.insert(pods.end(), mine.begin(), mine.end());
  }
  return Schedule(state, pods, std::set<std::string>(claims.begin(), claims.end()));
}

TEST(Simulation, MatchesAFreshPassForEveryCandidateInAnyOrder) {
  State state = bench::MakeCluster(SmallCatalog(), "m5.xlarge", 400, 12, "100%");
  std::vector<std::string> claims = Claims(state);
  ASSERT_GT(claims.size(), 40u);
  Simulation sim(state);
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& name : claims) {
      ScheduleResult expected = Fresh(state, sim, {name});
      ASSERT_EQ(sim.Without({name}), expected) << name << " pass " << pass;
    }
    std::reverse(claims.begin(), claims.end());
  }
}

TEST(Simulation, MatchesAFreshPassForGroups) {
  State state = bench::MakeCluster(SmallCatalog(), "m5.xlarge", 400, 3, "100%");
  std::vector<std::string> claims = Claims(state);
  Simulation sim(state);
  std::size_t needs_new = 0;
  for (std::size_t n : {2u, 5u, 17u, 40u}) {
    std::vector<std::string> group(claims.begin(), claims.begin() + n);
    ScheduleResult result = sim.Without(group);
    EXPECT_EQ(result, Fresh(state, sim, group)) << n;
    needs_new += result.claims.empty() ? 0 : 1;
    std::vector<std::string> tail(claims.end() - n, claims.end());
    EXPECT_EQ(sim.Without(tail), Fresh(state, sim, tail)) << n;
  }
  // Small groups fit on the rest of the cluster, the largest needs new nodes: both paths ran.
  EXPECT_GT(needs_new, 0u);
  EXPECT_LT(needs_new, 4u);
  // Asking again after all that gives the first answer again.
  std::vector<std::string> first = {claims.front()};
  EXPECT_EQ(sim.Without(first), Fresh(state, sim, first));
}

}  // namespace
}  // namespace tenon::testing
