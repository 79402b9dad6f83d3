// Consolidation's Simulation answers exactly what a fresh scheduling pass without the same
// NodeClaims answers, whatever it was asked before: its undo journal leaves nothing behind.
#include <gtest/gtest.h>

#include <algorithm>

#include "bench/workload.h"
#include "reducers/internal.h"
#include "tests/reducers/fixtures.h"

namespace tenon::testing {
namespace {

std::vector<std::string> Claims(const State& state) {
  std::vector<std::string> names;
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) names.push_back(name);
  return names;
}

ScheduleResult Fresh(const State& state, Simulation& sim, const std::vector<std::string>& claims) {
  std::vector<const Pod*> pods;
  for (const auto& name : claims) {
    const auto& mine = sim.PodsOf(state.lifecycle.nodeclaims.at(name));
    pods.insert(pods.end(), mine.begin(), mine.end());
  }
  return Schedule(state, pods, std::set<std::string>(claims.begin(), claims.end()));
}

// The disruption pass's and the trials' name lookups: every name added is found with its own
// value, and a name not added (even one sharing a prefix) is not.
TEST(NameIndex, FindsEachNameAndNothingElse) {
  std::vector<std::string> names;
  for (int i = 0; i < 2000; ++i) names.push_back("ip-10-0-" + std::to_string(i) + ".ec2.internal");
  core::NameIndex<int> index;
  for (int i = 0; i < 2000; ++i) index.Add(names[i], i);
  index.Seal();
  for (int i = 0; i < 2000; ++i) {
    const int* found = index.Find(names[i]);
    ASSERT_NE(found, nullptr) << names[i];
    EXPECT_EQ(*found, i);
  }
  EXPECT_EQ(index.Find("ip-10-0-1.ec2.interna"), nullptr);
  EXPECT_EQ(index.Find("ip-10-0-2000.ec2.internal"), nullptr);
  EXPECT_EQ(index.Find(""), nullptr);
}

// A node tainted for a disruption that waits on its replacements is no place for a pod, and
// neither is its NodeClaim: the claim of a node left out must not come back as an empty bin of
// its own (it did, with the node's whole allocatable as room).
TEST(Schedule, CapacityBeingReplacedTakesNoPods) {
  State state = bench::MakeCluster(SmallCatalog(), "m5.xlarge", 400, 12, "100%");
  const NodeClaim& candidate = state.lifecycle.nodeclaims.at("claim-0");
  ReplacementWait wait;
  wait.method = DisruptionMethod::kSingleNodeConsolidation;
  wait.candidates = {candidate.name};
  wait.started = state.now;
  state.disruption.replacing.push_back(wait);
  // As large as an empty m5.xlarge holds: no node with pods on it has the room.
  Pod big = PendingPod("big", candidate.allocatable.cpu.value - 100, 1024);
  ScheduleResult result = Schedule(state, {&big});
  ASSERT_EQ(result.pods.size(), 1u);
  EXPECT_NE(result.pods[0].target, candidate.name);
  EXPECT_NE(result.pods[0].target, candidate.node_name);
  EXPECT_EQ(result.pods[0].target, "#0") << result.pods[0].reason;
  state.disruption.replacing.clear();
  EXPECT_EQ(Schedule(state, {&big}).pods[0].target, "#0");  // Nothing else makes room for it.
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

// Pending pods are part of every consolidation trial. The trials place them with the base run's
// hints (Pass::BaseRun), and without the outcomes nobody reads, yet each trial answers exactly
// what a fresh pass over the candidate's pods and the pending pods answers.
TEST(Simulation, PendingPodsPlacedAsAFreshPassPlacesThem) {
  State state = bench::MakeCluster(SmallCatalog(), "m5.xlarge", 1200, 5, "100%");
  // Pods whose placement reads other nodes' pods are left out, or no hint would be used.
  std::vector<std::string> tied;
  for (const auto& [key, pod] : state.cluster.pods) {
    const PodConstraints& c = *pod.constraints;
    if (!c.pod_affinity_required.empty() || !c.pod_anti_affinity_required.empty() ||
        !c.pod_affinity_preferred.empty() || !c.pod_anti_affinity_preferred.empty() ||
        !c.topology_spread.empty()) {
      tied.push_back(key);
    }
  }
  for (const auto& key : tied) state.cluster.pods.Erase(state.cluster.pods.find(key));
  ASSERT_GT(state.cluster.pods.size(), 100u);
  // Sizes that fit some nodes' room and not others', and two that fit none.
  std::vector<Pod> pending;
  for (int i = 0; i < 60; ++i) {
    pending.push_back(
        PendingPod("pending-" + std::to_string(i), 100 + (i * 137) % 1400, 128 + (i * 211) % 2048));
  }
  pending.push_back(PendingPod("pending-big-0", 3000, 20000));
  pending.push_back(PendingPod("pending-big-1", 3000, 20000));
  for (const Pod& pod : pending) state.cluster.pods.Upsert(PodKey(pod.ns, pod.name), pod);
  std::vector<const Pod*> waiting;
  for (const auto& [key, pod] : state.cluster.pods.Provisionable()) waiting.push_back(pod);
  ASSERT_EQ(waiting.size(), pending.size());

  state.checks.simulation = true;  // Every hinted trial is also run without its hints.
  Simulation sim(state);
  std::size_t pending_onto_new = 0;
  for (const std::string& name : Claims(state)) {
    const NodeClaim& claim = state.lifecycle.nodeclaims.at(name);
    const std::vector<const Pod*>& moving = sim.PodsOf(claim);
    std::vector<const Pod*> pods = waiting;
    pods.insert(pods.end(), moving.begin(), moving.end());
    const ScheduleResult fresh = Schedule(state, pods, {name});
    ASSERT_EQ(sim.Without({name}), fresh) << name;
    // Quiet: the claims and counts are the same; only the moving pods' outcomes are listed.
    const Node* node = &state.cluster.nodes.at(claim.node_name);
    const ScheduleResult quiet = sim.Without({{&claim, node, moving}}, true, false);
    EXPECT_EQ(quiet.claims, fresh.claims) << name;
    EXPECT_EQ(quiet.existing_placements, fresh.existing_placements) << name;
    std::vector<PodOutcome> moving_outcomes;
    for (const PodOutcome& outcome : fresh.pods) {
      if (!state.cluster.pods.Provisionable().contains(outcome.pod)) {
        moving_outcomes.push_back(outcome);
      } else {
        pending_onto_new += !outcome.target.empty() && outcome.target.front() == '#';
      }
    }
    EXPECT_EQ(quiet.pods, moving_outcomes) << name;
  }
  EXPECT_GT(pending_onto_new, 0u);  // The trials planned new capacity for pending pods too.
}

// Consolidation reads a trial's answer up to the first moving pod that fits nowhere or lands on
// a node not initialized yet. A trial asked to stop there (until_blocked) lists the moving
// pods' outcomes up to that pod exactly as the full trial does, and the full trial's first
// blocked pod is that one.
TEST(Simulation, TrialStoppedOnceBlockedNamesTheFullTrialsFirstBlockedPod) {
  State state = bench::MakeCluster(SmallCatalog(), "m5.xlarge", 1200, 5, "100%");
  std::size_t marked = 0;
  for (auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (++marked % 3 == 0) claim.phase = ClaimPhase::kRegistered;  // Its node not Ready yet.
  }
  std::vector<Pod> pending;
  for (int i = 0; i < 40; ++i) {
    pending.push_back(PendingPod("pending-" + std::to_string(i), 200 + (i * 137) % 1200, 256));
  }
  for (const Pod& pod : pending) state.cluster.pods.Upsert(PodKey(pod.ns, pod.name), pod);
  Simulation sim(state);
  std::size_t cut = 0;
  std::size_t whole = 0;
  for (const std::string& name : Claims(state)) {
    const NodeClaim& claim = state.lifecycle.nodeclaims.at(name);
    const Node* node = &state.cluster.nodes.at(claim.node_name);
    const std::vector<const Pod*>& moving = sim.PodsOf(claim);
    if (moving.empty()) continue;
    const ScheduleResult full = sim.Without({{&claim, node, moving}}, true, false);
    const ScheduleResult stopped = sim.Without({{&claim, node, moving}}, true, false, true);
    auto first_blocked = std::find_if(full.pods.begin(), full.pods.end(), [&](const auto& o) {
      return o.target.empty() || UninitializedTarget(state, o.target);
    });
    if (!stopped.cut_short) {
      ++whole;
      EXPECT_EQ(stopped, full) << name;
      continue;
    }
    ++cut;
    EXPECT_TRUE(stopped.claims.empty()) << name;
    ASSERT_FALSE(stopped.pods.empty()) << name;
    ASSERT_LE(stopped.pods.size(), full.pods.size()) << name;
    EXPECT_TRUE(std::equal(stopped.pods.begin(), stopped.pods.end(), full.pods.begin())) << name;
    ASSERT_NE(first_blocked, full.pods.end()) << name;
    EXPECT_EQ(*first_blocked, stopped.pods.back()) << name;
    EXPECT_TRUE(UninitializedTarget(state, stopped.pods.back().target)) << name;
  }
  EXPECT_GT(cut, 10u);
  EXPECT_GT(whole, 10u);
}

// A NodeOverlay's price change, as Karpenter's AdjustedPrice: an absolute price replaces the
// cloud's, an amount is added, a percent scales it (rounded to the micro-dollar), and the result
// is never below zero.
TEST(NodeOverlayPrice, SetAddPercentAndClamp) {
  using K = PriceChange::Kind;
  const MicroUsdPerHour base{96'000};
  EXPECT_EQ(core::AdjustedPrice(base, {K::kSet, 5'000'000}), MicroUsdPerHour{5'000'000});
  EXPECT_EQ(core::AdjustedPrice(base, {K::kAdd, 10'000}), MicroUsdPerHour{106'000});
  EXPECT_EQ(core::AdjustedPrice(base, {K::kPercent, 100'000'000}), MicroUsdPerHour{105'600});
  EXPECT_EQ(core::AdjustedPrice(base, {K::kPercent, -50'000'000}), MicroUsdPerHour{91'200});
  EXPECT_EQ(core::AdjustedPrice(base, {K::kPercent, 0}), base);
  EXPECT_EQ(core::AdjustedPrice(base, {K::kPercent, -1'000'000'000}), MicroUsdPerHour{0});
  EXPECT_EQ(core::AdjustedPrice(MicroUsdPerHour{250'000}, {K::kAdd, -500'000}), MicroUsdPerHour{0});
  EXPECT_EQ(core::AdjustedPrice(MicroUsdPerHour{3}, {K::kPercent, 500'000'000}),
            MicroUsdPerHour{5});  // 4.5 rounds half away from zero.
}

}  // namespace
}  // namespace tenon::testing
