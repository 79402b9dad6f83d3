// The codec round-trips every event, command, decision and a whole state exactly, encodes
// deterministically, and turns malformed bytes into CodecError instead of crashing.
#include <gtest/gtest.h>

#include <random>

#include "log/codec.h"
#include "tests/reducers/fixtures.h"

namespace tenon::testing {
namespace {

Pod FullPod() {
  Pod pod = PendingPod("web-1", 500, 512);
  pod.labels = {{"app", "web"}};
  pod.node_selector = {{label::kZone, "us-east-1a"}};
  pod.tolerations = {{"gpu", false, "true", TaintEffect::kNoSchedule},
                     {"", true, "", std::nullopt}};
  pod.owner_kind = "ReplicaSet";
  return pod;
}

NodePool FullPool() {
  NodePool pool = Pool("gpu", 30, {{label::kInstanceCpu, RequirementOp::kGt, {"3"}, 2}});
  pool.labels = {{"team", "ml"}};
  pool.taints = {{"gpu", "true", TaintEffect::kNoSchedule}};
  pool.startup_taints = {{"cni", "", TaintEffect::kNoExecute}};
  pool.limits = {Millicores{100'000}, std::nullopt, 20};
  pool.expire_after = Nanos{-1};
  return pool;
}

std::vector<Event> EveryEvent() {
  Node node{"n1",         "aws:///us-east-1a/i-1",
            {{"a", "b"}}, {{"t", "v", TaintEffect::kNoExecute}},
            true,         {Millicores{1930}, Bytes{7'000'000'000}, 29},
            kT0};
  return {
      Tick{kT0},
      ControllerStarted{"v1", 99, Settings{"prod", Nanos{2}, Nanos{3}, 80}},
      CatalogRefreshed{SmallCatalog()},
      NodePoolUpserted{FullPool()},
      NodePoolDeleted{"gpu"},
      NodeClassUpserted{NodeClass{"default", "AL2023", "role", false}},
      NodeClassDeleted{"default"},
      PodUpserted{FullPod()},
      PodDeleted{"default", "web-1"},
      NodeUpserted{node},
      NodeDeleted{"n1"},
      FleetLaunched{CommandId{4}, "c1", "i-1", "aws:///z/i-1", "m5.large", "z", "spot",
                    MicroUsdPerHour{38'400}},
      FleetFailed{
          CommandId{5}, "c2", {{"m5.large", "z", "spot", ErrorCode::kInsufficientCapacity, "ICE"}}},
      CommandSucceeded{CommandId{6}},
      CommandFailed{CommandId{7}, ErrorCode::kThrottled, "slow down"},
      InputRejected{"kube/pods", "bad json", std::string("\0\xff{raw", 6)}};
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
  f.Fold(PodUpserted{FullPod()});
  Output out = f.Fold(Tick{kT0 + kSecond});
  out.commands.push_back({CommandId{90}, Seq{3}, DeleteNodeClaim{"x"}});
  out.commands.push_back({CommandId{91}, Seq{3}, PatchNode{"n", {{"k", "v"}}, {"t"}}});
  ASSERT_FALSE(out.decisions.empty());
  auto entry = log::DecodeEntry(log::EncodeOutput(Seq{12}, out));
  const auto& record = std::get<log::OutputRecord>(entry);
  EXPECT_EQ(record.cause, Seq{12});
  EXPECT_EQ(record.commands, out.commands);
  ASSERT_EQ(record.decision_ids.size(), out.decisions.size());
  EXPECT_EQ(record.decision_ids[0], out.decisions[0].id);
  EXPECT_EQ(log::DecodeDecision(log::EncodeDecision(out.decisions[0])), out.decisions[0]);
}

// A snapshot restores the exact state, hash included; encoding it twice gives the same bytes.
TEST(Codec, SnapshotRestoresExactState) {
  Folder f;
  f.Start({Pool("default"), FullPool()});
  for (int i = 0; i < 5; ++i) f.Fold(PodUpserted{PendingPod("p" + std::to_string(i), 900, 900)});
  f.Fold(Tick{kT0 + kSecond});
  f.Fold(FleetFailed{CommandId{999},
                     "none",
                     {{"c5.large", "us-east-1a", "spot", ErrorCode::kInsufficientCapacity, ""}}});
  std::string bytes = log::EncodeSnapshot(f.state);
  EXPECT_EQ(bytes, log::EncodeSnapshot(f.state));
  std::uint64_t stored = 0;
  State restored = log::DecodeSnapshot(bytes, &stored);
  EXPECT_EQ(restored, f.state);
  EXPECT_EQ(stored, StateHash(f.state));
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
