// The codec round-trips every event, command, decision and a whole state exactly, encodes
// deterministically, and turns malformed bytes into CodecError instead of crashing.
#include <gtest/gtest.h>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <optional>
#include <random>

#include "log/codec.h"
#include "tenon.capnp.h"
#include "tests/reducers/fixtures.h"

namespace tenon::testing {
namespace {

NodeClaim ObservedClaim() {
  NodeClaim claim;
  claim.name = "default-x7k2p";
  claim.nodepool = "default";
  claim.phase = ClaimPhase::kRegistered;
  claim.provider_id = "aws:///us-east-1a/i-9";
  claim.instance_id = "i-9";
  claim.node_name = "ip-10-0-0-9";
  claim.created = kT0;
  return claim;
}

std::vector<std::string> EncodeSnapshotParts(const State& state) {
  std::vector<std::string> parts;
  log::EncodeSnapshot(state, [&](std::string_view part) { parts.emplace_back(part); });
  return parts;
}

Pod FullPod() {
  Pod pod = PendingPod("web-1", 500, 512);
  pod.labels = Labels{{"app", "web"}};
  PodConstraints& c = pod.constraints.Mutable();
  c.node_selector = {{label::kZone, "us-east-1a"}};
  pod.priority = -5;
  pod.deletion_cost = 42;
  pod.deletion = kT0 + Duration{30 * kSecond.value};
  pod.do_not_disrupt = true;
  pod.do_not_disrupt_for = Duration{300 * kSecond.value};
  c.tolerations = {{"gpu", false, "true", TaintEffect::kNoSchedule}, {"", true, "", std::nullopt}};
  pod.owner_kind = "ReplicaSet";
  pod.requests.extended = {{"nvidia.com/gpu", 1}};
  LabelSelector web{{{"app", "web"}}, {{"tier", RequirementOp::kNotIn, {"db"}, 0}}};
  c.node_affinity_required = {{{{label::kArch, RequirementOp::kIn, {"arm64"}, 0}}, 0},
                              {{{label::kArch, RequirementOp::kIn, {"amd64"}, 0}}, 0}};
  c.node_affinity_preferred = {{{{label::kZone, RequirementOp::kIn, {"us-east-1b"}, 0}}, 40}};
  c.pod_affinity_required = {{web, {"default", "other"}, false, label::kZone, {"rev"}, 0}};
  c.pod_affinity_preferred = {{web, {}, true, label::kHostname, {}, 7}};
  c.pod_anti_affinity_required = {{web, {}, false, label::kHostname, {}, 0}};
  c.pod_anti_affinity_preferred = {{web, {}, false, label::kZone, {}, 3}};
  c.topology_spread = {{2, label::kZone, false, web, 3, false, true, {"pod-template-hash"}}};
  c.volume_claims = {"data"};
  c.host_ports = {{8080, "UDP", "10.0.0.1"}};
  pod.nominated_node = "n7";
  return pod;
}

NodePool FullPool() {
  NodePool pool = Pool("gpu", 30, {{label::kInstanceCpu, RequirementOp::kGt, {"3"}, 2}});
  pool.labels = {{"team", "ml"}};
  pool.taints = {{"gpu", "true", TaintEffect::kNoSchedule}};
  pool.startup_taints = {{"cni", "", TaintEffect::kNoExecute}};
  pool.limits = {Millicores{100'000}, std::nullopt, 20, {{"nvidia.com/gpu", 8}}};
  pool.expire_after = std::nullopt;
  pool.termination_grace_period = Duration{120 * kSecond.value};
  pool.consolidation_policy = ConsolidationPolicy::kWhenEmpty;
  pool.consolidate_after = Duration{30 * kSecond.value};
  pool.budgets = {{"20%", "", Duration{0}, {}},
                  {"0", "0 9 * * mon-fri", Duration{8 * 3600 * kSecond.value}, {"Drifted"}}};
  return pool;
}

std::vector<InstanceType> CatalogWithGpu() {
  auto types = SmallCatalog();
  InstanceType gpu = Type("g5.xlarge", 4, 16, 1'006'000);
  gpu.gpu_count = 1;
  gpu.gpu_name = "A10G";
  gpu.gpu_manufacturer = "NVIDIA";
  gpu.gpu_memory = Bytes{24 * 1024 * kMebibyte.value};
  gpu.accelerator_count = 0;
  gpu.cpu_manufacturer = "AMD";
  gpu.hypervisor = "nitro";
  gpu.local_nvme_gib = 250;
  types.push_back(gpu);
  // A test catalog's type: labels, extended resources and allocatable of its own.
  InstanceType fake = Type("fake.large", 4, 16, 200'000);
  fake.labels = {{"size", "large"}, {"special", "true"}};
  fake.extended = {{"example.com/fpga", 2}};
  fake.allocatable = Resources{
      Millicores{3'500}, Bytes{12 * 1024 * kMebibyte.value}, 40, {{"example.com/fpga", 2}}};
  types.push_back(fake);
  return types;
}

// A resolution with every field set.
NodeClassResolution Resolution() {
  NodeClassResolution r;
  r.amis = {{"ami-1", "al2023-1", "amd64", "2026-11-01T00:00:00.000Z"},
            {"ami-2", "al2023-1-arm", "arm64", "2026-11-01T00:00:00.000Z"}};
  r.subnets = {{"subnet-a", "us-east-1a", "use1-az1", 4000}};
  r.security_groups = {{"sg-1", "nodes"}};
  r.instance_profile = "cluster_default";
  r.reason = "InstanceProfileNotFound";
  r.message = "instance profile for role r: AccessDenied";
  return r;
}

std::vector<Event> EveryEvent() {
  Node node;
  node.name = "n1";
  node.provider_id = "aws:///us-east-1a/i-1";
  node.labels = {{"a", "b"}};
  node.taints = {{"t", "v", TaintEffect::kNoExecute}};
  node.ready = true;
  node.allocatable = {Millicores{1930}, Bytes{7'000'000'000}, 29, {{"x/y", 2}}};
  node.created = kT0;
  node.volumes_attached = {"vol-1"};
  node.do_not_disrupt = true;
  node.deleting = true;
  return {
      Tick{kT0},
      ControllerStarted{"v1", 99,
                        [] {
                          Settings s;
                          s.cluster_name = "prod";
                          s.batch_idle = Duration{2};
                          s.batch_max = Duration{3};
                          s.vm_memory_overhead_permille = 80;
                          s.ignore_preferences = s.min_values_best_effort = true;
                          s.reserved_enis = 2;
                          s.cluster_endpoint = "https://api.example";
                          s.cluster_ca_bundle = "Y2E=";
                          return s;
                        }()},
      CatalogRefreshed{CatalogWithGpu()},
      NodePoolUpserted{FullPool()},
      NodePoolDeleted{"gpu"},
      NodeClassUpserted{NodeClass{"default",
                                  "AL2023",
                                  "role",
                                  false,
                                  58,
                                  10,
                                  {"ami-1"},
                                  {"subnet-a"},
                                  {"sg-1", "sg-2"},
                                  true,
                                  {"us-east-1a"},
                                  {"amd64", "arm64"},
                                  "echo hi",
                                  {{"team", "web"}}}},
      NodeClassDeleted{"default"},
      PodUpserted{FullPod()},
      PodDeleted{"default", "web-1"},
      NodeUpserted{node},
      NodeDeleted{"n1"},
      FleetLaunched{CommandId{4},
                    "c1",
                    "i-1",
                    "aws:///z/i-1",
                    "m5.large",
                    "z",
                    "spot",
                    MicroUsdPerHour{38'400},
                    {{"m5.large", "y", "spot", ErrorCode::kInsufficientCapacity, "ICE"}},
                    "ami-1",
                    "subnet-z",
                    {"sg-1"},
                    "Action=CreateFleet&ClientToken=c1"},
      FleetFailed{CommandId{5},
                  "c2",
                  {{"m5.large", "z", "spot", ErrorCode::kInsufficientCapacity, "ICE"}},
                  "Action=CreateFleet&ClientToken=c2"},
      CommandSucceeded{CommandId{6}},
      CommandFailed{CommandId{7}, ErrorCode::kThrottled, "slow down"},
      InputRejected{"interruption", "bad json", std::string("\0\xff{raw", 6), "message-1"},
      DaemonSetUpserted{DaemonSet{"kube-system", "aws-node", FullPod()}},
      DaemonSetDeleted{"kube-system", "aws-node"},
      PersistentVolumeClaimUpserted{PersistentVolumeClaim{"default", "data", "gp3", "pv-1"}},
      PersistentVolumeClaimDeleted{"default", "data"},
      PersistentVolumeUpserted{
          PersistentVolume{"pv-1",
                           "ebs.csi.aws.com",
                           {{{{label::kZone, RequirementOp::kIn, {"us-east-1a"}, 0}}, 0}}}},
      PersistentVolumeDeleted{"pv-1"},
      StorageClassUpserted{
          StorageClass{"gp3",
                       "ebs.csi.aws.com",
                       true,
                       {{{{label::kZone, RequirementOp::kIn, {"a", "b"}, 0}}, 0}}}},
      StorageClassDeleted{"gp3"},
      CsiNodeUpserted{CsiNode{"n1", {{"ebs.csi.aws.com", 25}}}},
      CsiNodeDeleted{"n1"},
      NodeClaimDeletionRequested{"c1"},
      InstancesListed{{{"i-1", "c1", kT0, "running"}, {"i-2", "", kT0, "terminated"}}},
      InterruptionReceived{"msg-1", InterruptionKind::kStateChange, "i-1", "stopping"},
      PodDisruptionBudgetUpserted{PodDisruptionBudget{"shop", "cart", {{{"app", "cart"}}, {}}, 1}},
      PodDisruptionBudgetDeleted{"shop", "cart"},
      WatchesStarted{},
      WatchesSynced{},
      NodeClaimObserved{ObservedClaim()},
      NodeClassResolved{"default", Resolution()},
      NodeOverlayUpserted{NodeOverlay{"spot-discount",
                                      10,
                                      {{label::kCapacityType, RequirementOp::kIn, {"spot"}, 0}},
                                      PriceChange{PriceChange::Kind::kPercent, -200'000'000},
                                      {{"smarter-devices/fuse", 1}},
                                      ""}},
      NodeOverlayDeleted{"spot-discount"}};
}

// Every event kind survives encode -> decode unchanged.
TEST(Codec, EveryEventRoundTrips) {
  auto events = EveryEvent();
  ASSERT_EQ(events.size(), std::variant_size_v<Event>);
  for (const auto& event : events) {
    auto entry = log::DecodeEntry(log::EncodeEvent(event));
    ASSERT_TRUE(std::holds_alternative<Event>(entry));
    EXPECT_EQ(std::get<Event>(entry), event) << log::EventKind(event);
  }
}

// Outputs of a real fold (commands of every kind, a decision) round-trip.
TEST(Codec, OutputsAndDecisionsRoundTrip) {
  Folder f;
  f.Start({Pool("default")});
  Pod pod = FullPod();
  pod.nominated_node.clear();  // A pod being preempted for is not provisioned for.
  pod.requests.extended.clear();
  f.Fold(PodUpserted{pod});
  Output out = f.Fold(Tick{kT0 + kSecond});
  out.commands.push_back({CommandId{90}, Seq{3}, DeleteNodeClaim{"x"}});
  out.commands.push_back(
      {CommandId{91}, Seq{3},
       PatchNode{"n", {{"k", "v"}}, {"t"}, {{"d", "", TaintEffect::kNoSchedule}}, "c"}});
  out.commands.push_back({CommandId{92}, Seq{3}, EvictPod{"default", "web-1", "c1"}});
  out.commands.push_back({CommandId{93}, Seq{3}, DeletePod{"default", "web-2", "c1"}});
  out.commands.push_back({CommandId{94}, Seq{3}, TerminateInstance{"i-1", "c1"}});
  out.commands.push_back({CommandId{95}, Seq{3}, RemoveFinalizer{"c1", "n1"}});
  NodePoolStatus status;
  status.registration_healthy = false;
  status.nodes = 3;
  status.resources = {Millicores{4000}, Bytes{1 << 30}, 58, {}};
  status.validated = true;
  status.nodeclass_unready = "NodeClassNotFound";
  out.commands.push_back({CommandId{96}, Seq{3}, PatchNodePoolStatus{"default", status}});
  out.commands.push_back(
      {CommandId{97}, Seq{3},
       ClaimCondition("c1", "Registered", true, "node n1", "aws:///z/i-1", "n1")});
  PatchNodeClaimStatus launched =
      ClaimCondition("c1", "Launched", true, "m5.large", "aws:///z/i-1", "");
  launched.labels = {{"node.kubernetes.io/instance-type", "m5.large"},
                     {"topology.kubernetes.io/zone", "us-east-1a"}};
  launched.image_id = "ami-0123456789abcdef0";
  launched.capacity = {Millicores{2000}, Bytes{8LL << 30}, 29, {{"nvidia.com/gpu", 1}}};
  launched.allocatable = {Millicores{1930}, Bytes{7LL << 30}, 29, {}};
  out.commands.push_back({CommandId{99}, Seq{3}, launched});
  out.commands.push_back({CommandId{98}, Seq{3}, DeleteQueueMessage{"msg-1"}});
  out.commands.push_back(
      {CommandId{100}, Seq{3},
       TagInstance{"i-1", "c1", {{"Name", "n1"}, {"eks:eks-cluster-name", "prod"}}}});
  out.commands.push_back({CommandId{101}, Seq{3}, PatchNodeClassStatus{"default", Resolution()}});
  LaunchInstance full{
      "c9",
      "default",
      "default",
      "c9",
      "spot",
      {{"m5.large", "us-east-1a", "spot", MicroUsdPerHour{40'000}, "subnet-a", "ami-1"}},
      {{"karpenter.sh/nodeclaim", "c9"}},
      "price-capacity-optimized",
      {"AL2023",
       "tenon_default",
       {"sg-1"},
       "echo hi",
       58,
       {{"team", "web"}},
       {{"dedicated", "web", TaintEffect::kNoSchedule}},
       {{"team", "web"}},
       "prod",
       "https://api.example",
       "Y2E="}};
  out.commands.push_back({CommandId{102}, Seq{3}, full});
  out.commands.push_back({CommandId{103}, Seq{3}, SetNodeClassFinalizer{"default", false}});
  out.commands.push_back(
      {CommandId{104}, Seq{3}, EnsureInstanceProfile{"default", "Node", "prod"}});
  out.commands.push_back({CommandId{105}, Seq{3}, DeleteNodeClassResources{"gpu", "prod", true}});
  out.commands.push_back(
      {CommandId{107}, Seq{3}, PatchNodeOverlayStatus{"a", {false, "Conflict", "conflict"}}});
  out.commands.push_back({CommandId{106}, Seq{3},
                          RecordKubeEvent{{"karpenter.k8s.aws/v1", "EC2NodeClass", "", "gpu"},
                                          "Normal",
                                          "WaitingOnNodeClaimTermination",
                                          "Waiting on NodeClaim termination for gpu-a"}});
  ASSERT_FALSE(out.decisions.empty());
  auto entry = log::DecodeEntry(log::EncodeOutput(Seq{12}, out));
  const auto& record = std::get<log::OutputRecord>(entry);
  EXPECT_EQ(record.cause, Seq{12});
  EXPECT_EQ(record.commands, out.commands);
  ASSERT_EQ(record.decision_ids.size(), out.decisions.size());
  EXPECT_EQ(record.decision_ids[0], out.decisions[0].id);
  EXPECT_EQ(log::DecodeDecision(log::EncodeDecision(out.decisions[0])), out.decisions[0]);
  Decision lifecycle{DecisionId{7}, Seq{4}, kT0,
                     LifecycleDecision{"c1", Transition::kEvicted, "pod shop/cart-1", "n1", "i-1",
                                       Cause::kNone, "shop/cart-1"}};
  EXPECT_EQ(log::DecodeDecision(log::EncodeDecision(lifecycle)), lifecycle);
  Decision disruption{
      DecisionId{8}, Seq{5}, kT0,
      DisruptionDecision{
          DisruptionMethod::kEmptiness,
          DisruptionPhase::kProposed,
          {"c1"},
          {{"c1", "default", "selected", Cause::kNone, ""},
           {"c2", "default", "budget allows 0 disruptions", Cause::kDisruptionBudget, "default"}},
          {{"default", "Empty", 1, "budget 0 (nodes 10%)"}},
          "validating for 15 s",
          {MicroUsdPerHour{192'000},
           {{"m5.large", "us-east-1a", "on-demand", MicroUsdPerHour{96'000}}},
           MicroUsdPerHour{96'000}}}};
  EXPECT_EQ(log::DecodeDecision(log::EncodeDecision(disruption)), disruption);
}

// A pass's candidates share their pools and outcomes: each distinct text is stored once, so a
// pass over many candidates with one blocker is a fraction of the candidates' texts.
TEST(Codec, DisruptionCandidatesShareTheirTexts) {
  const std::string blocker(200, 'b');
  DisruptionDecision pass{DisruptionMethod::kSingleNodeConsolidation,
                          DisruptionPhase::kBlocked,
                          {},
                          {},
                          {},
                          "pass",
                          {}};
  for (int i = 0; i < 1000; ++i) {
    pass.candidates.push_back(
        {"claim-" + std::to_string(i), "default", blocker, Cause::kNoBetterPlacement, ""});
  }
  pass.candidates[7].outcome = "selected";
  pass.candidates[7].cause = Cause::kNone;
  pass.candidates[9].cause = Cause::kDoNotDisrupt;
  pass.candidates[9].subject = "shop/cart-1";
  const Decision decision{DecisionId{3}, Seq{2}, kT0, pass};
  const std::string bytes = log::EncodeDecision(decision);
  EXPECT_EQ(log::DecodeDecision(bytes), decision);
  EXPECT_LT(bytes.size(), 1000 * blocker.size() / 2);  // Not every copy of the blocker.
  // Decoding the candidates of one pool decodes only them, texts resolved.
  const Decision kept =
      log::DecodeDecisionKeeping(bytes, [](std::string_view claim, std::string_view pool) {
        return pool == "default" && claim == "claim-7";
      });
  const auto& only = std::get<DisruptionDecision>(kept.body).candidates;
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0], (DisruptionCandidate{"claim-7", "default", "selected", Cause::kNone, ""}));
}

// Decisions recorded before the shared texts carry each candidate's pool and outcome in the
// candidate itself; they decode as they always did. A reference past the table, or a decision
// without an id, is an error.
TEST(Codec, DisruptionCandidatesWithTheirOwnTextsStillDecode) {
  capnp::MallocMessageBuilder message;
  auto d = message.initRoot<tenon::schema::Decision>();
  d.setId(5);
  d.setCauseSeq(4);
  d.setAtNs(kT0.value);
  auto g = d.initDisruption();
  g.setMethod("Emptiness");
  g.setPhase("blocked");
  auto candidates = g.initCandidates(2);
  candidates[0].setNodeClaim("c1");
  candidates[0].setNodePool("default");
  candidates[0].setOutcome("budget allows 0 now");
  candidates[1].setNodeClaim("c2");
  candidates[1].setNodePool("spot");
  candidates[1].setOutcome("selected");
  const auto words = capnp::messageToFlatArray(message);
  const std::string old(reinterpret_cast<const char*>(words.asBytes().begin()),
                        words.asBytes().size());
  const Decision decoded = log::DecodeDecision(old);
  const auto& got = std::get<DisruptionDecision>(decoded.body);
  ASSERT_EQ(got.candidates.size(), 2u);
  EXPECT_EQ(got.candidates[0],
            (DisruptionCandidate{"c1", "default", "budget allows 0 now", Cause::kNone, ""}));
  EXPECT_EQ(got.candidates[1], (DisruptionCandidate{"c2", "spot", "selected", Cause::kNone, ""}));

  candidates[0].setCause(200);  // No such code: a damaged record.
  const auto unknown = capnp::messageToFlatArray(message);
  EXPECT_THROW(
      log::DecodeDecision(std::string(reinterpret_cast<const char*>(unknown.asBytes().begin()),
                                      unknown.asBytes().size())),
      log::CodecError);
  candidates[0].setCause(0);
  candidates[1].setOutcomeText(3);  // The decision has no shared texts.
  const auto bad = capnp::messageToFlatArray(message);
  EXPECT_THROW(log::DecodeDecision(std::string(reinterpret_cast<const char*>(bad.asBytes().begin()),
                                               bad.asBytes().size())),
               log::CodecError);
  candidates[1].setOutcomeText(0);
  EXPECT_EQ(got.method, DisruptionMethod::kEmptiness);
  EXPECT_EQ(got.phase, DisruptionPhase::kBlocked);
  g.setMethod("Sideways");  // The log names its methods; an unknown name is a damaged record.
  const auto unnamed = capnp::messageToFlatArray(message);
  try {
    log::DecodeDecision(std::string(reinterpret_cast<const char*>(unnamed.asBytes().begin()),
                                    unnamed.asBytes().size()));
    ADD_FAILURE() << "decoded a decision of an unknown method";
  } catch (const log::CodecError& e) {
    EXPECT_STREQ(e.what(), "unknown disruption method \"Sideways\"");
  }
  g.setMethod("Emptiness");
  candidates[1].setOutcomeText(0);
  d.setId(0);  // Ids start at 1: a decision without one keys nothing in the log.
  const auto anonymous = capnp::messageToFlatArray(message);
  EXPECT_THROW(
      log::DecodeDecision(std::string(reinterpret_cast<const char*>(anonymous.asBytes().begin()),
                                      anonymous.asBytes().size())),
      log::CodecError);
}

// Under each candidate's NodeClaim term, a disruption pass's record stores only that claim's
// candidates, in the pass's order (a claim may be a candidate twice, apart), and under its kind
// term the pass without candidates; the two make the pass trimmed to the claim. Other terms
// carry no value.
// A multi-node consolidation names one long outcome (its plan, with every pod move) for each of
// its candidates; the shared text is stored once and must decode within the record's traversal
// limit however many candidates name it.
TEST(Codec, ALongOutcomeSharedByManyCandidatesDecodes) {
  std::string plan = "delete, saving $1.0000/h; its pods move:";
  for (int i = 0; i < 200; ++i) plan += " default/web-" + std::to_string(i) + " -> node-7";
  DisruptionDecision pass{DisruptionMethod::kMultiNodeConsolidation,
                          DisruptionPhase::kExecuted,
                          {},
                          {},
                          {},
                          "unchanged after 15 s; deleting",
                          {}};
  for (int i = 0; i < 20; ++i) {
    pass.nodeclaims.push_back("c-" + std::to_string(i));
    pass.candidates.push_back({"c-" + std::to_string(i), "default", plan, Cause::kNone, ""});
  }
  const Decision decision{DecisionId{3}, Seq{7}, kT0, pass};
  EXPECT_EQ(log::DecodeDecision(log::EncodeDecision(decision)), decision);
}

TEST(Codec, IndexValuesAreThePassTrimmedToEachClaim) {
  DisruptionDecision pass{DisruptionMethod::kSingleNodeConsolidation,
                          DisruptionPhase::kBlocked,
                          {"c-2"},
                          {{"c-2", "a", "first", Cause::kNone, ""},
                           {"c-1", "a", "second", Cause::kNone, ""},
                           {"c-3", "b", "third", Cause::kNone, ""},
                           {"c-1", "a", "fourth", Cause::kNone, ""},
                           {"c-10", "b", "fifth", Cause::kNone, ""}},
                          {{"a", "Underutilized", 1, "budget"}},
                          "pass",
                          {MicroUsdPerHour{5}, {}, MicroUsdPerHour{2}}};
  const Decision decision{DecisionId{4}, Seq{9}, kT0, pass};
  const log::DecisionRecord record = log::DecisionRecordFor(decision);
  ASSERT_EQ(record.index_values.size(), record.index_terms.size());
  const std::string kind = log::IndexTerm(log::IndexKind::kKind, "disruption");
  std::optional<Decision> head;
  for (std::size_t i = 0; i < record.index_terms.size(); ++i) {
    if (record.index_terms[i] == kind) head = log::DecodeDecision(record.index_values[i]);
  }
  ASSERT_TRUE(head.has_value());
  DisruptionDecision headless = pass;
  headless.candidates.clear();
  EXPECT_EQ(*head, (Decision{decision.id, decision.cause, decision.at, headless}));
  EXPECT_FALSE(log::DecodeCandidatesOnly(log::EncodeDecision(*head)).has_value());
  std::size_t valued = 0;
  for (std::size_t i = 0; i < record.index_terms.size(); ++i) {
    const std::string& term = record.index_terms[i];
    if (term == kind) continue;
    if (term.front() != 'c') {
      EXPECT_TRUE(record.index_values[i].empty()) << term;
      continue;
    }
    const std::string claim = term.substr(1, term.size() - 2);
    DisruptionDecision trimmed = pass;
    std::erase_if(trimmed.candidates, [&](const auto& c) { return c.nodeclaim != claim; });
    auto only = log::DecodeCandidatesOnly(record.index_values[i]);
    ASSERT_TRUE(only.has_value()) << claim;
    EXPECT_THROW(log::DecodeDecision(record.index_values[i]), log::CodecError)
        << "candidates alone are no decision";
    EXPECT_EQ(log::WithHead(*head, *only),
              (Decision{decision.id, decision.cause, decision.at, trimmed}))
        << claim;
    ++valued;
  }
  EXPECT_EQ(valued, 4u);  // c-1, c-10, c-2, c-3.
  // Only a disruption pass takes candidates.
  EXPECT_THROW(
      log::WithHead(Decision{decision.id, decision.cause, decision.at, LifecycleDecision{}}, {}),
      log::CodecError);
}

// The log records methods, phases and transitions by name: each name reads back as its code.
TEST(Codec, EveryCodeHasTheNameTheLogRecords) {
  for (int i = 0; i <= static_cast<int>(DisruptionMethod::kMultiNodeConsolidation); ++i) {
    const auto method = static_cast<DisruptionMethod>(i);
    EXPECT_EQ(ParseDisruptionMethod(Name(method)), method) << Name(method);
  }
  for (int i = 0; i <= static_cast<int>(DisruptionPhase::kExecuted); ++i) {
    const auto phase = static_cast<DisruptionPhase>(i);
    EXPECT_EQ(ParseDisruptionPhase(Name(phase)), phase) << Name(phase);
  }
  for (int i = 0; i <= static_cast<int>(Transition::kLeakedInstanceTerminated); ++i) {
    const auto transition = static_cast<Transition>(i);
    EXPECT_EQ(ParseTransition(Name(transition)), transition) << Name(transition);
  }
  EXPECT_STREQ(Name(DisruptionPhase::kRolledBack), "rolled back");
  EXPECT_STREQ(Name(DisruptionMethod::kSingleNodeConsolidation), "SingleNodeConsolidation");
  EXPECT_FALSE(ParseDisruptionMethod("").has_value());
  EXPECT_FALSE(ParseTransition("launched").has_value());
}

// A snapshot restores the exact state, hash included; encoding it twice gives the same bytes.
TEST(Codec, SnapshotRestoresExactState) {
  Folder f;
  f.Start({Pool("default"), FullPool()});
  for (int i = 0; i < 5; ++i) f.Fold(PodUpserted{PendingPod("p" + std::to_string(i), 900, 900)});
  f.Fold(Tick{kT0 + kSecond});
  f.Fold(FleetFailed{CommandId{999},
                     "none",
                     {{"c5.large", "us-east-1a", "spot", ErrorCode::kInsufficientCapacity, ""}},
                     ""});
  ASSERT_FALSE(f.state.lifecycle.nodeclaims.empty());
  // A launch that failed and waits to be sent again.
  for (const auto& [id, command] : std::map<CommandId, Command>(f.state.inflight)) {
    if (const auto* launch = std::get_if<LaunchInstance>(&command.body)) {
      f.Fold(CommandFailed{id, ErrorCode::kThrottled, "RequestLimitExceeded"});
      ASSERT_TRUE(f.state.lifecycle.relaunches.contains(launch->nodeclaim));
      break;
    }
  }
  f.Fold(NodeClassResolved{"default", Resolution()});
  ASSERT_TRUE(f.state.nodeclass.resolutions.contains("default"));
  // A deleted EC2NodeClass waiting on its NodeClaims.
  NodeClass deleted = f.state.cluster.nodeclasses.at("default");
  deleted.terminating = true;
  f.Fold(NodeClassUpserted{deleted});
  ASSERT_TRUE(f.state.nodeclass.terminations.contains("default"));
  ASSERT_FALSE(f.state.nodeclass.terminations.at("default").waiting_message.empty());
  NodeClaim& registered = f.state.lifecycle.nodeclaims.begin()->second;
  registered.node_name = "node-x";
  f.state.lifecycle.claims_by_node.Add("node-x", registered.name);
  // A NodeOverlay and its published status (its overlaid catalogs are made again on load).
  f.state.cluster.nodeoverlays["fuse"] = NodeOverlay{
      "fuse", 5, {}, PriceChange{PriceChange::Kind::kAdd, 10'000}, {{"smarter-devices/fuse", 1}},
      ""};
  f.state.cluster.nodeoverlay_status["fuse"] = NodeOverlayStatus{false, "Conflict", "conflict"};
  std::vector<std::string> parts = EncodeSnapshotParts(f.state);
  EXPECT_EQ(parts, EncodeSnapshotParts(f.state));
  std::uint64_t stored = 0;
  State restored = log::DecodeSnapshot(parts, &stored);
  EXPECT_EQ(restored, f.state);
  EXPECT_EQ(stored, StateHash(f.state));
  EXPECT_EQ(StateHash(restored), stored);
  // The claims-by-node index is not in the snapshot: it is rebuilt from the claims.
  EXPECT_TRUE(restored.lifecycle.claims_by_node.Matches(restored.lifecycle.nodeclaims));
  bool found = false;
  restored.lifecycle.claims_by_node.ForEach(
      "node-x", [&](const std::string& claim) { found = claim == registered.name; });
  EXPECT_TRUE(found);
}

// A snapshot's copy of the pods without their views (PodTable::PodsOnly, what the pipelined
// runtime hands its writer) encodes and hashes as the State it was taken from.
TEST(Codec, PodsOnlyCopyEncodesAsTheState) {
  Folder f;
  f.Start({Pool("default")});
  for (int i = 0; i < 4; ++i) {
    Pod pod = PendingPod("web-" + std::to_string(i), 500, 512);
    if (i % 2 == 0) pod.node_name = "ip-10-0-0-1";
    f.Fold(PodUpserted{pod});
  }
  ASSERT_EQ(f.state.cluster.pods.OnNode("ip-10-0-0-1").pods.size(), 2u);
  State copy = f.state;
  copy.cluster.pods = PodTable::PodsOnly(f.state.cluster.pods);
  EXPECT_EQ(copy, f.state);
  EXPECT_EQ(StateHash(copy), StateHash(f.state));
  const std::vector<std::string> parts = EncodeSnapshotParts(copy);
  EXPECT_EQ(parts, EncodeSnapshotParts(f.state));
  State decoded = log::DecodeSnapshot(parts, nullptr);
  EXPECT_EQ(decoded.cluster.pods.OnNode("ip-10-0-0-1").pods.size(), 2u)
      << "a decoded State has its views";
  EXPECT_EQ(decoded.cluster.pods.Provisionable().size(),
            f.state.cluster.pods.Provisionable().size());
}

// A state with thousands of pods is written as a head and slices of bounded size, and the
// slices put it back exactly.
// A snapshot of nodes and pods whose texts the State shares (label keys and values, namespaces,
// owner kinds, priority classes) is byte for byte the snapshot of the same nodes and pods
// holding copies of their own, and decodes to the same State with the same hash.
TEST(Codec, SharedNodeAndPodTextsEncodeAsSeparateCopies) {
  Folder f;
  f.Start({Pool("default")});
  std::map<std::string, Pod> pods;
  for (int i = 0; i < 3; ++i) {
    Pod pod = PendingPod("web-" + std::to_string(i), 500, 512);
    pod.owner_kind = "ReplicaSet";
    pod.priority_class = "system-cluster-critical";
    pods[PodKey(pod.ns, pod.name)] = pod;
    f.Fold(PodUpserted{pod});
  }
  std::map<std::string, Node> nodes;
  for (int i = 0; i < 3; ++i) {
    Node node;
    node.name = "ip-10-0-0-" + std::to_string(i);
    node.provider_id = "aws:///us-east-1a/i-" + std::to_string(i);
    node.labels = {{label::kHostname, node.name},
                   {label::kZone, "us-east-1a"},
                   {label::kNodePool, "default"},
                   {label::kInstanceType, "m5.large"}};
    nodes[node.name] = node;
    f.Fold(NodeUpserted{node});
  }
  State separate = f.state;  // The same State, but with nodes and pods holding their own texts.
  separate.cluster.nodes = nodes;
  separate.cluster.pods.clear();
  for (const auto& [key, pod] : pods) separate.cluster.pods.Upsert(key, pod);
  ASSERT_EQ(f.state, separate);
  EXPECT_EQ(&f.state.cluster.pods.at("default/web-0").owner_kind.str(),
            &f.state.cluster.pods.at("default/web-2").owner_kind.str());
  EXPECT_EQ(&f.state.cluster.pods.at("default/web-0").ns.str(),
            &f.state.cluster.pods.at("default/web-2").ns.str());
  std::vector<std::string> parts = EncodeSnapshotParts(f.state);
  EXPECT_EQ(parts, EncodeSnapshotParts(separate));
  std::uint64_t stored = 0;
  State decoded = log::DecodeSnapshot(parts, &stored);
  EXPECT_EQ(decoded, separate);
  EXPECT_EQ(stored, StateHash(separate));
  EXPECT_EQ(StateHash(decoded), StateHash(separate));
  EXPECT_EQ(&decoded.cluster.nodes.at("ip-10-0-0-0").labels.at(label::kZone),
            &decoded.cluster.nodes.at("ip-10-0-0-2").labels.at(label::kZone))
      << "a decoded snapshot shares the texts too";
}

TEST(Codec, LargeSnapshotIsSlicedAndRestored) {
  Folder f;
  f.Start({Pool("default"), FullPool()});
  for (int i = 0; i < 2500; ++i) {
    f.Fold(PodUpserted{PendingPod("p" + std::to_string(i), 100, 100)});
  }
  std::vector<std::string> parts = EncodeSnapshotParts(f.state);
  ASSERT_GE(parts.size(), 4u);  // The head, then 2,500 pods in slices of at most 1,024.
  std::size_t largest = 0;
  for (const auto& part : parts) largest = std::max(largest, part.size());
  std::size_t total = 0;
  for (const auto& part : parts) total += part.size();
  EXPECT_LT(largest, total / 2);
  std::uint64_t stored = 0;
  State restored = log::DecodeSnapshot(parts, &stored);
  EXPECT_EQ(restored, f.state);
  EXPECT_EQ(StateHash(restored), stored);
}

// Truncated, bit-flipped and random inputs raise CodecError (or decode), never crash.
TEST(Codec, MalformedBytesAreRejectedCleanly) {
  EXPECT_THROW(log::DecodeEntry(""), log::CodecError);
  EXPECT_THROW(log::DecodeEntry("1234567"), log::CodecError);
  std::string good = log::EncodeEvent(PodUpserted{FullPod()});
  EXPECT_THROW(log::DecodeEntry(good.substr(0, good.size() - 8)), log::CodecError);
  std::mt19937_64 rng(1234);
  int rejected = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string bytes = good;
    for (int flips = 0; flips < 4; ++flips)
      bytes[rng() % bytes.size()] ^= static_cast<char>(1 << (rng() % 8));
    try {
      log::DecodeEntry(bytes);
    } catch (const log::CodecError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace tenon::testing
