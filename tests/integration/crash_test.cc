// Crash safety: `tenon simulate` is killed with SIGKILL and restarted on the same log, at
// random points and right after a LaunchInstance command is acknowledged (before or after
// the cloud acted on it, whichever the race gives). Nothing the log acknowledged is lost, no
// NodeClaim gets a second instance, no instance is left without a NodeClaim, and the log
// replays identically. Resume.* holds a resumed or finished run, a missing world file and a
// second writer to their rules; LogDamage.* a damaged and a torn write-ahead log, and repair.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <atomic>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "adapters/sim/simulator.h"
#include "log/codec.h"
#include "replay/replay.h"
#include "tests/integration/helpers.h"

namespace tenon::testing {
namespace {

const std::string kTenon = TENON_BINARY;
const std::string kDemo = std::string(TENON_SOURCE_DIR) + "/examples/scenarios/demo.yaml";
constexpr int kRandomRounds = 4;
constexpr int kLaunchWindowRounds = 6;

using Acks = std::map<Seq, std::uint64_t>;

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
    std::uint64_t seq = 0;
    std::string hash;
    if (!(in >> word >> seq >> hash) || word != "ack") continue;
    acks[Seq{seq}] = std::stoull(hash, nullptr, 16);
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
    ASSERT_TRUE(record.has_value()) << "acknowledged record " << seq.value << " is gone";
    EXPECT_EQ(XXH3_64bits(record->payload.data(), record->payload.size()), hash)
        << "acknowledged record " << seq.value << " changed";
  }
}

// Every NodeClaim the log saw launched has exactly one instance, in the log and in the cloud.
void CheckNoDoubleLaunch(const log::EventLog& log, const std::filesystem::path& dir) {
  std::map<std::string, std::set<std::string>> instances_by_claim;
  log.Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
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
  const sim::Scenario scenario = sim::LoadScenario(kDemo);
  sim::World world(scenario, dir / sim::kWorldFile);
  ASSERT_TRUE(world.Load());
  std::map<std::string, int> cloud_count;
  for (const auto& [id, instance] : world.instances()) cloud_count[instance.nodeclaim]++;
  for (const auto& [claim, count] : cloud_count) {
    EXPECT_EQ(count, 1) << "the cloud holds " << count << " instances for " << claim;
    // No leak: every instance still running belongs to a NodeClaim the cluster holds.
    EXPECT_TRUE(world.nodeclaims().contains(claim)) << "instance of " << claim << " leaked";
    EXPECT_TRUE(instances_by_claim.contains(claim)) << "the log never saw " << claim << " launch";
  }
}

// The acknowledgement counts at which the reference run had just logged a LaunchInstance.
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
      if (std::holds_alternative<LaunchInstance>(c.body)) {
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

// `tenon ARGS...`: what it printed (stdout and stderr) and its exit status.
std::pair<std::string, int> RunTenon(std::vector<std::string> args) {
  args.insert(args.begin(), kTenon);
  Child child(args, /*with_stderr=*/true);
  std::string out = child.ReadAll();
  return {out, child.Wait()};
}

std::string FileText(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Simulating again on the log of a run that reached its scenario's end adds nothing: the same
// records, the same state, the same world file.
TEST(Resume, AFinishedRunStartedAgainChangesNothing) {
  TempDir dir;
  auto [first, status] = RunTenon({"simulate", kDemo, "--log", dir.path().string()});
  ASSERT_EQ(status, 0) << first;
  const auto done = first.find("done: ");
  ASSERT_NE(done, std::string::npos) << first;
  const std::string summary = first.substr(done, first.find('\n', done) - done);
  const std::string world = FileText(dir.path() / sim::kWorldFile);
  const Seq last = OpenReadOnly(dir.path())->LastSeq();
  for (int again = 0; again < 2; ++again) {
    auto [out, rerun] = RunTenon({"simulate", kDemo, "--log", dir.path().string()});
    ASSERT_EQ(rerun, 0) << out;
    EXPECT_NE(out.find("already reached the scenario's end"), std::string::npos) << out;
    EXPECT_NE(out.find(summary), std::string::npos) << out;
    EXPECT_EQ(OpenReadOnly(dir.path())->LastSeq(), last);
    EXPECT_EQ(FileText(dir.path() / sim::kWorldFile), world);
  }
}

// The report of a resumed run covers the whole run (from the log), not only the part after
// the resume.
TEST(Resume, TheReportOfAResumedRunCoversTheWholeRun) {
  TempDir dir;
  auto [acks, killed] = RunChild(dir.path(), 400);
  ASSERT_EQ(killed, 137);
  auto [out, status] = RunTenon({"simulate", kDemo, "--log", dir.path().string()});
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("resumed: "), std::string::npos) << out;
  EXPECT_NE(out.find("report: demo, 02:00:00 to 02:20:00"), std::string::npos) << out;
}

// A log whose world file is gone or damaged is not resumed against a new empty world: the run
// stops with an error naming the file, and the log is left as it was.
TEST(Resume, AMissingOrDamagedWorldFileIsAnError) {
  TempDir dir;
  auto [acks, killed] = RunChild(dir.path(), 400);
  ASSERT_EQ(killed, 137);
  const auto file = dir.path() / sim::kWorldFile;
  const std::string world = FileText(file);
  const Seq last = OpenReadOnly(dir.path())->LastSeq();

  std::filesystem::remove(file);
  auto [missing, status] = RunTenon({"simulate", kDemo, "--log", dir.path().string()});
  EXPECT_EQ(status, 1) << missing;
  EXPECT_NE(missing.find(file.string() + " is missing"), std::string::npos) << missing;
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_EQ(OpenReadOnly(dir.path())->LastSeq(), last);

  std::ofstream(file, std::ios::binary) << world.substr(0, world.size() / 2);
  auto [damaged, again] = RunTenon({"simulate", kDemo, "--log", dir.path().string()});
  EXPECT_EQ(again, 1) << damaged;
  EXPECT_NE(damaged.find(file.string() + ": damaged world file"), std::string::npos) << damaged;
  EXPECT_EQ(OpenReadOnly(dir.path())->LastSeq(), last);

  // The JSON world file of an older version is named, not taken for a missing one.
  std::filesystem::remove(file);
  std::ofstream(dir.path() / sim::kJsonWorldFile) << "{\"version\": \"tenon-sim/1\"}";
  auto [json, old] = RunTenon({"simulate", kDemo, "--log", dir.path().string()});
  EXPECT_EQ(old, 1) << json;
  EXPECT_NE(json.find("JSON form older versions"), std::string::npos) << json;
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_EQ(OpenReadOnly(dir.path())->LastSeq(), last);
}

// One `tenon simulate` writes its log while ten more, again and again, try to run on the same
// folder: each of them is refused, saying the log is in use, and the writer finishes with a
// log that replays identically.
TEST(Resume, TenOpenersCannotHarmAWriter) {
  const std::string scenario = std::string(TENON_SOURCE_DIR) + "/examples/scenarios/web-tier.yaml";
  TempDir dir;
  const std::string log_dir = dir.path().string();
  Child writer({kTenon, "simulate", scenario, "--log", log_dir, "--trace-acks", "--quiet"});
  std::string line;
  ASSERT_TRUE(writer.ReadLine(line)) << "the writer printed nothing";  // Its log is open.
  std::atomic<bool> finished{false};
  std::thread drain([&] {
    std::string rest;
    while (writer.ReadLine(rest)) {
    }
    finished = true;
  });
  int refused = 0;
  while (!finished) {
    std::vector<std::unique_ptr<Child>> openers;
    for (int i = 0; i < 10; ++i) {
      openers.push_back(std::make_unique<Child>(
          std::vector<std::string>{kTenon, "simulate", scenario, "--log", log_dir, "--quiet"},
          /*with_stderr=*/true));
    }
    for (auto& opener : openers) {
      const std::string said = opener->ReadAll();
      const int status = opener->Wait();
      if (status == 0) continue;  // It came after the writer was done, and found the run over.
      EXPECT_EQ(status, 1) << said;
      EXPECT_NE(said.find("is in use"), std::string::npos) << said;
      ++refused;
    }
  }
  drain.join();
  EXPECT_EQ(writer.Wait(), 0);
  EXPECT_GE(refused, 10);
  auto verify = replay::Verify(*OpenReadOnly(dir.path()));
  EXPECT_EQ(verify.verdict, replay::Verdict::kIdentical) << verify.detail;
}

// The demo's log, killed after 400 acknowledgements so that its write-ahead log holds them,
// and the path of that write-ahead log.
std::filesystem::path KilledDemoLog(const std::filesystem::path& dir) {
  auto [acks, killed] = RunChild(dir, 400);
  EXPECT_EQ(killed, 137);
  std::filesystem::path wal;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".log" && entry.path().filename() > wal.filename()) {
      wal = entry.path();
    }
  }
  EXPECT_GT(std::filesystem::file_size(wal), 20000u) << wal;
  return wal;
}

void FlipBit(const std::filesystem::path& file, std::uint64_t at) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(at));
  f.put(static_cast<char>(c ^ 0x10));
}

// Every file of a folder, by name, with its bytes.
std::map<std::string, std::string> FolderBytes(const std::filesystem::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) out[entry.path().filename()] = FileText(entry.path());
  }
  return out;
}

// One bit flipped in the middle of the write-ahead log: every tool stops with a non-zero
// status naming the file, and none of them writes anything (the folder is byte for byte as it
// was).
TEST(LogDamage, AFlippedBitInTheMiddleStopsEveryTool) {
  TempDir dir;
  const auto wal = KilledDemoLog(dir.path());
  FlipBit(wal, std::filesystem::file_size(wal) / 2);
  const auto before = FolderBytes(dir.path());
  const std::string log = dir.path().string();
  const std::string page = (dir.path().parent_path() / "timeline.html").string();
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"replay", log},
                                             {"replay", log, "--verify"},
                                             {"audit", log},
                                             {"explain", log, "pod", "default/web-1"},
                                             {"timeline", log, "-o", page},
                                             {"cost", log},
                                             {"simulate", kDemo, "--log", log}}) {
    auto [out, status] = RunTenon(args);
    EXPECT_NE(status, 0) << args[0] << ": " << out;
    EXPECT_NE(out.find(wal.string()), std::string::npos) << args[0] << ": " << out;
    EXPECT_NE(out.find("damaged before its end"), std::string::npos) << args[0] << ": " << out;
    // Where: the record holding the flipped bit starts at or before it, within a block or two.
    const std::string at = wal.filename().string() + " is damaged at offset ";
    const auto found = out.find(at);
    ASSERT_NE(found, std::string::npos) << args[0] << ": " << out;
    const std::uint64_t offset = std::stoull(out.substr(found + at.size()));
    EXPECT_LE(offset, std::filesystem::file_size(wal) / 2) << out;
    EXPECT_GE(offset + 65536, std::filesystem::file_size(wal) / 2) << out;
    EXPECT_NE(out.find("the records after sequence number "), std::string::npos) << out;
  }
  EXPECT_EQ(FolderBytes(dir.path()), before);
}

// A write-ahead log cut off a few bytes before its end is what a crash leaves: the tools
// answer, and say which file lost how many bytes; a resumed run goes on.
TEST(LogDamage, ATornTailIsRecoveredAndSaid) {
  TempDir dir;
  const auto wal = KilledDemoLog(dir.path());
  std::filesystem::resize_file(wal, std::filesystem::file_size(wal) - 5);
  auto [replayed, status] = RunTenon({"replay", dir.path().string(), "--verify"});
  EXPECT_EQ(status, 0) << replayed;
  EXPECT_NE(replayed.find(wal.string() + " ended in a torn record"), std::string::npos) << replayed;
  EXPECT_NE(replayed.find(" bytes from offset "), std::string::npos) << replayed;
  EXPECT_NE(replayed.find("verdict: identical"), std::string::npos) << replayed;
  auto [resumed, again] = RunTenon({"simulate", kDemo, "--log", dir.path().string()});
  EXPECT_EQ(again, 0) << resumed;
  EXPECT_NE(resumed.find("torn record"), std::string::npos) << resumed;
}

// `tenon log repair` sets the log as it was aside (the damaged write-ahead log byte for byte),
// writes what was lost, and leaves a log that opens, verifies and audits.
TEST(LogDamage, RepairSetsTheDamageAsideAndGoesOn) {
  TempDir dir;
  const auto log_dir = dir.path() / "log";
  const auto wal = KilledDemoLog(log_dir);
  FlipBit(wal, std::filesystem::file_size(wal) / 2);
  const std::string damaged = FileText(wal);
  auto [repaired, status] = RunTenon({"log", "repair", log_dir.string()});
  ASSERT_EQ(status, 0) << repaired;
  EXPECT_NE(repaired.find(wal.string() + ": dropping "), std::string::npos) << repaired;
  EXPECT_NE(repaired.find(wal.filename().string() + " is damaged at offset "), std::string::npos)
      << repaired;
  std::filesystem::path aside;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().filename().string().starts_with("log.damaged-")) aside = entry.path();
  }
  ASSERT_FALSE(aside.empty()) << repaired;
  EXPECT_EQ(FileText(aside / wal.filename()), damaged);
  EXPECT_NE(FileText(aside / "REPAIR.txt").find("lost from the log: every record after"),
            std::string::npos);
  auto [verified, ok] = RunTenon({"replay", log_dir.string(), "--verify"});
  EXPECT_EQ(ok, 0) << verified;
  EXPECT_NE(verified.find("verdict: identical"), std::string::npos) << verified;
  auto [audited, fine] = RunTenon({"audit", log_dir.string()});
  EXPECT_EQ(fine, 0) << audited;
  auto [again, nothing] = RunTenon({"log", "repair", log_dir.string()});
  EXPECT_EQ(nothing, 0) << again;
  EXPECT_NE(again.find("has no damage: nothing changed"), std::string::npos) << again;
}

}  // namespace
}  // namespace tenon::testing
