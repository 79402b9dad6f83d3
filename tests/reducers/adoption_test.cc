// NodeClaim adoption: a claim the core did not create (Karpenter's, before a migration, or
// tenon's own after its log was lost) is taken over with its instance and node, managed and
// terminated like the core's own; its instance is never garbage-collected as a stranger.
#include <gtest/gtest.h>

#include "tests/reducers/fixtures.h"

namespace tenon::testing {
namespace {

// A NodeClaim as Karpenter leaves it: launched, registered and initialized on c5.large.
NodeClaim KarpenterClaim() {
  NodeClaim claim;
  claim.name = "default-x7k2p";
  claim.nodepool = "default";
  claim.nodeclass = "default";
  claim.requirements =
      std::vector<Requirement>{{label::kCapacityType, RequirementOp::kIn, {kCapacityOnDemand}, 0}};
  claim.phase = ClaimPhase::kInitialized;
  claim.provider_id = "aws:///us-east-1b/i-0karpenter";
  claim.instance_id = "i-0karpenter";
  claim.instance_type = "c5.large";
  claim.zone = "us-east-1b";
  claim.capacity_type = kCapacityOnDemand;
  claim.node_name = "ip-10-0-1-7";
  claim.created = kT0 - Duration{3600 * kSecond.value};
  return claim;
}

Node KarpenterNode() {
  Node node;
  node.name = "ip-10-0-1-7";
  node.provider_id = "aws:///us-east-1b/i-0karpenter";
  node.ready = true;
  node.created = kT0 - Duration{3500 * kSecond.value};
  return node;
}

const LifecycleDecision* TransitionOf(const Output& out, Transition transition) {
  for (const auto& d : out.decisions) {
    const auto* l = std::get_if<LifecycleDecision>(&d.body);
    if (l != nullptr && l->transition == transition) return l;
  }
  return nullptr;
}

// The claim is adopted with its node, priced from the catalog, and a second sighting (every
// status update comes back through the watch) changes nothing.
TEST(Adoption, AdoptsAKarpenterClaimWithItsNode) {
  Folder f;
  f.Start({Pool("default")});
  f.Fold(NodeUpserted{KarpenterNode()});
  Output out = f.Fold(NodeClaimObserved{KarpenterClaim()});
  const auto* adopted = TransitionOf(out, Transition::kAdopted);
  ASSERT_NE(adopted, nullptr);
  EXPECT_NE(adopted->reason.find("i-0karpenter"), std::string::npos) << adopted->reason;
  const NodeClaim& claim = f.state.lifecycle.nodeclaims.at("default-x7k2p");
  EXPECT_EQ(claim.phase, ClaimPhase::kInitialized);
  EXPECT_EQ(claim.node_name, "ip-10-0-1-7");
  EXPECT_EQ(claim.price, MicroUsdPerHour{85'000});
  EXPECT_EQ(claim.launched, KarpenterClaim().created);
  EXPECT_GT(claim.allocatable.cpu.value, 0);
  State before = f.state;
  Output again = f.Fold(NodeClaimObserved{KarpenterClaim()});
  EXPECT_TRUE(again.commands.empty());
  EXPECT_TRUE(again.decisions.empty());
  before.last_seq = f.state.last_seq;
  before.cluster_generation = f.state.cluster_generation;  // Every input counts as a change.
  EXPECT_EQ(f.state, before);
}

// The node may come after its claim: it registers the adopted claim as it would the core's own.
TEST(Adoption, NodeArrivingLaterRegistersTheClaim) {
  Folder f;
  f.Start({Pool("default")});
  f.Fold(NodeClaimObserved{KarpenterClaim()});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at("default-x7k2p").phase, ClaimPhase::kLaunched);
  f.Fold(NodeUpserted{KarpenterNode()});
  EXPECT_EQ(f.state.lifecycle.nodeclaims.at("default-x7k2p").phase, ClaimPhase::kInitialized);
}

// Garbage collection leaves the adopted claim's instance alone, and before the informers have
// synced it terminates no untracked instance at all: its claim may be about to be adopted.
TEST(Adoption, GarbageCollectionWaitsForTheClusterAndSparesAdoptedInstances) {
  Folder f;
  f.Start({Pool("default")});
  f.Fold(WatchesStarted{});
  const Instant now = kT0 + kMinute;
  f.Fold(Tick{now});
  const InstancesListed listing{{{"i-0karpenter", "default-x7k2p", kT0 - kMinute, "running"}}};
  Output early = f.Fold(listing);
  EXPECT_TRUE(CommandsOf<TerminateInstance>(early).empty()) << "terminated before the sync";
  f.Fold(NodeUpserted{KarpenterNode()});
  f.Fold(NodeClaimObserved{KarpenterClaim()});
  f.Fold(WatchesSynced{});
  Output late = f.Fold(listing);
  EXPECT_TRUE(CommandsOf<TerminateInstance>(late).empty()) << "the adopted instance was collected";
  // An instance nobody claims is still collected once the cluster has been read.
  Output stray = f.Fold(InstancesListed{{{"i-0stray", "gone-claim", kT0 - kMinute, "running"}}});
  ASSERT_EQ(CommandsOf<TerminateInstance>(stray).size(), 1u);
  EXPECT_EQ(CommandsOf<TerminateInstance>(stray)[0]->instance_id, "i-0stray");
}

// Deleting an adopted claim drains it and terminates the instance Karpenter launched.
TEST(Adoption, DeletingAnAdoptedClaimTerminatesItsInstance) {
  Folder f;
  f.Start({Pool("default")});
  f.Fold(NodeUpserted{KarpenterNode()});
  f.Fold(NodeClaimObserved{KarpenterClaim()});
  f.Fold(NodeClaimDeletionRequested{"default-x7k2p"});
  std::vector<const TerminateInstance*> terminated;
  Output all;
  for (int s = 1; s <= 30 && terminated.empty(); ++s) {
    Output out = f.Fold(Tick{kT0 + Duration{s * kSecond.value}});
    for (const auto& c : out.commands) {
      f.Fold(CommandSucceeded{c.id});
      if (const auto* t = std::get_if<TerminateInstance>(&c.body)) terminated.push_back(t);
    }
    all.commands.insert(all.commands.end(), out.commands.begin(), out.commands.end());
  }
  const auto terminations = CommandsOf<TerminateInstance>(all);
  ASSERT_EQ(terminations.size(), 1u);
  EXPECT_EQ(terminations[0]->instance_id, "i-0karpenter");
  EXPECT_EQ(terminations[0]->nodeclaim, "default-x7k2p");
}

// A claim that finished under the core is not adopted again from a late watch event; a
// claim that another controller never launched is adopted only to be deleted.
TEST(Adoption, FinishedClaimsStayGoneAndUnlaunchedOnesAreDeleted) {
  Folder f;
  f.Start({Pool("default")});
  f.Fold(NodeUpserted{KarpenterNode()});
  f.Fold(NodeClaimObserved{KarpenterClaim()});
  f.Fold(NodeClaimDeletionRequested{"default-x7k2p"});
  for (int s = 1; s <= 60 && f.state.lifecycle.nodeclaims.contains("default-x7k2p"); ++s) {
    Output out = f.Fold(Tick{kT0 + Duration{s * kSecond.value}});
    for (const auto& c : out.commands) f.Fold(CommandSucceeded{c.id});
  }
  ASSERT_FALSE(f.state.lifecycle.nodeclaims.contains("default-x7k2p"))
      << "termination did not finish";
  Output late = f.Fold(NodeClaimObserved{KarpenterClaim()});
  EXPECT_EQ(TransitionOf(late, Transition::kAdopted), nullptr);
  EXPECT_FALSE(f.state.lifecycle.nodeclaims.contains("default-x7k2p"));

  NodeClaim unlaunched = KarpenterClaim();
  unlaunched.name = "default-pend1";
  unlaunched.phase = ClaimPhase::kPending;
  unlaunched.provider_id = unlaunched.instance_id = unlaunched.node_name = "";
  Output out = f.Fold(NodeClaimObserved{unlaunched});
  ASSERT_NE(TransitionOf(out, Transition::kAdopted), nullptr);
  EXPECT_TRUE(f.state.lifecycle.nodeclaims.at("default-pend1").deleting);
}

}  // namespace
}  // namespace tenon::testing
