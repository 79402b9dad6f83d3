// Crash safety: `tenon simulate` is killed with SIGKILL and restarted on the same log, at
// random points and right after a LaunchInstances command is acknowledged (before or after
// the cloud acted on it, whichever the race gives). Nothing the log acknowledged is lost, no
// NodeClaim gets a second instance, no instance is left without a NodeClaim, and the log
// replays identically.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "log/codec.h"
#include "replay/replay.h"
#include "tests/integration/helpers.h"

namespace tenon::testing {
namespace {

const std::string kTenon = TENON_BINARY;
const std::string kDemo = std::string(TENON_SOURCE_DIR) + "/examples/scenarios/demo.yaml";
constexpr int kRandomRounds = 4;
constexpr int kLaunchWindowRounds = 6;

using Acks = std::map<log::Seq, std::uint64_t>;

// Runs the demo on `dir`, reading "ack SEQ HASH" lines; kills the child after `kill_after`
// acks (0: let it finish). Returns the acks it saw and the exit status.
std::pair<Acks, int> RunChild(const std::filesystem::path& dir, std::size_t kill_after) {
  Child child({kTenon, "simulate", kDemo, "--log", dir.string(), "--trace-acks", "--quiet",
               "--snapshot-every", "50"});
  Acks acks;
  std::string line;
  while (child.ReadLine(line)) {
    std::istringstream in(line);
    std::string word;
    log::Seq seq = 0;
    std::string hash;
    if (!(in >> word >> seq >> hash) || word != "ack") continue;
    acks[seq] = std::stoull(hash, nullptr, 16);
    if (kill_after != 0 && acks.size() >= kill_after) {
      child.Kill();
      return {acks, 137};
    }
  }
  return {acks, child.Wait()};
}

std::unique_ptr<log::EventLog> OpenReadOnly(const std::filesystem::path& dir) {
  log::OpenOptions open;
  open.read_only = true;
  open.create_if_missing = false;
  return log::EventLog::Open(dir, open);
}

void CheckAcksKept(const log::EventLog& log, const Acks& acks) {
  for (const auto& [seq, hash] : acks) {
    auto record = log.Read(seq);
    ASSERT_TRUE(record.has_value()) << "acknowledged record " << seq << " is gone";
    EXPECT_EQ(XXH3_64bits(record->payload.data(), record->payload.size()), hash)
        << "acknowledged record " << seq << " changed";
  }
}

// Every NodeClaim the log saw launched has exactly one instance, in the log and in the cloud.
void CheckNoDoubleLaunch(const log::EventLog& log, const std::filesystem::path& dir) {
  std::map<std::string, std::set<std::string>> instances_by_claim;
  log.Scan(1, 0, [&](const log::Record& r) {
    auto entry = log::DecodeEntry(r.payload);
    if (auto* event = std::get_if<Event>(&entry)) {
      if (auto* launched = std::get_if<FleetLaunched>(event)) {
        instances_by_claim[launched->nodeclaim].insert(launched->instance_id);
      }
    }
    return true;
  });
  for (const auto& [claim, ids] : instances_by_claim) {
    EXPECT_EQ(ids.size(), 1u) << "nodeclaim " << claim << " launched " << ids.size() << " times";
  }
  std::ifstream in(dir / "sim-world.json");
  auto world = nlohmann::json::parse(in);
  std::map<std::string, int> cloud_count;
  for (const auto& i : world["instances"]) cloud_count[i["nodeclaim"].get<std::string>()]++;
  for (const auto& [claim, count] : cloud_count) {
    EXPECT_EQ(count, 1) << "the cloud holds " << count << " instances for " << claim;
    // No leak: every instance still running belongs to a NodeClaim the cluster holds.
    EXPECT_TRUE(world["nodeclaims"].contains(claim)) << "instance of " << claim << " leaked";
    EXPECT_TRUE(instances_by_claim.contains(claim)) << "the log never saw " << claim << " launch";
  }
}

// The acknowledgement counts at which the reference run had just logged a LaunchInstances.
std::vector<std::size_t> LaunchWindows(const std::filesystem::path& dir, const Acks& acks) {
  auto log = OpenReadOnly(dir);
  std::vector<std::size_t> out;
  std::size_t index = 0;
  for (const auto& [seq, hash] : acks) {
    ++index;
    auto record = log->Read(seq);
    if (!record) continue;
    auto entry = log::DecodeEntry(record->payload);
    const auto* output = std::get_if<log::OutputRecord>(&entry);
    if (output == nullptr) continue;
    for (const auto& c : output->commands) {
      if (std::holds_alternative<LaunchInstances>(c.body)) {
        out.push_back(index);
        break;
      }
    }
  }
  return out;
}

void KillRestartCheck(std::size_t kill_after) {
  TempDir dir;
  auto [before, killed] = RunChild(dir.path(), kill_after);
  ASSERT_EQ(killed, 137);
  auto [after, restarted] = RunChild(dir.path(), 0);
  ASSERT_EQ(restarted, 0);
  auto log = OpenReadOnly(dir.path());
  CheckAcksKept(*log, before);
  CheckAcksKept(*log, after);
  CheckNoDoubleLaunch(*log, dir.path());
  auto verify = replay::Verify(*log);
  EXPECT_EQ(verify.verdict, replay::Verdict::kIdentical) << verify.detail;
}

TEST(Crash, KillAndRestartLosesNothingLaunchesOnce) {
  std::mt19937_64 rng(TestSeed());
  TempDir reference;
  auto [full, status] = RunChild(reference.path(), 0);
  ASSERT_EQ(status, 0);
  ASSERT_GT(full.size(), 100u);
  for (int round = 0; round < kRandomRounds; ++round) {
    std::size_t kill_after = 1 + rng() % (full.size() - 1);
    SCOPED_TRACE("random round " + std::to_string(round) + ", killed after " +
                 std::to_string(kill_after) + " acks");
    KillRestartCheck(kill_after);
  }
  // The same seed writes the same records, so the reference run tells where launches are.
  auto windows = LaunchWindows(reference.path(), full);
  ASSERT_GE(windows.size(), 3u);
  for (int round = 0; round < kLaunchWindowRounds; ++round) {
    std::size_t kill_after = windows[rng() % windows.size()];
    SCOPED_TRACE("launch-window round " + std::to_string(round) + ", killed after " +
                 std::to_string(kill_after) + " acks");
    KillRestartCheck(kill_after);
  }
}

}  // namespace
}  // namespace tenon::testing
