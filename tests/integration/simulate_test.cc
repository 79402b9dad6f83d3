// End-to-end: `tenon simulate` on the bundled scenario writes a log that replays identically,
// is byte-for-byte reproducible from its seed, resumes without launching twice, and whose
// corruption replay reports by sequence number.
#include <gtest/gtest.h>
#include <xxhash.h>

#include "adapters/sim/simulator.h"
#include "log/codec.h"
#include "replay/replay.h"
#include "tests/integration/helpers.h"

namespace tenon::testing {
namespace {

const std::filesystem::path kDemo =
    std::filesystem::path(TENON_SOURCE_DIR) / "examples/scenarios/demo.yaml";

sim::SimulateReport RunDemo(const std::filesystem::path& dir, std::uint64_t snapshot_every = 200) {
  auto scenario = sim::LoadScenario(kDemo);
  sim::SimulateOptions options;
  options.log_dir = dir;
  options.snapshot_every_events = snapshot_every;
  options.snapshot_min_interval = Duration{0};  // Every `snapshot_every` events, however close.
  return sim::Simulate(scenario, options);
}

std::unique_ptr<log::EventLog> OpenReadOnly(const std::filesystem::path& dir) {
  log::OpenOptions open;
  open.read_only = true;
  open.create_if_missing = false;
  return log::EventLog::Open(dir, open);
}

std::vector<std::string> AllPayloads(const log::EventLog& log) {
  std::vector<std::string> payloads;
  log.Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    payloads.push_back(r.payload);
    return true;
  });
  return payloads;
}

// The demo scales out (three launches), binds every pod, scales in (emptiness removes the
// nodes left empty, consolidation replaces two underused nodes with cheaper ones: two more
// launches), and its log replays identically (from zero and from the newest snapshot).
TEST(Simulate, DemoReplaysIdentically) {
  TempDir dir;
  auto report = RunDemo(dir.path());
  EXPECT_EQ(report.world.launch_calls, 5u);
  EXPECT_EQ(report.world.instances, 1u);
  EXPECT_EQ(report.world.pods_pending, 0u);
  EXPECT_EQ(report.world.pods_bound, 10u);  // web scaled back to 10, crunch to 0.
  auto log = OpenReadOnly(dir.path());
  auto verify = replay::Verify(*log);
  EXPECT_EQ(verify.verdict, replay::Verdict::kIdentical) << verify.detail;
  EXPECT_GT(verify.snapshots_checked, 1u);
  EXPECT_GT(verify.decisions, 0u);
  EXPECT_NE(verify.newest_snapshot, Seq{0});
  EXPECT_EQ(verify.final_hash, report.state_hash);
}

// Two runs of one scenario and seed write byte-identical logs.
TEST(Simulate, SameSeedSameBytes) {
  TempDir a, b;
  RunDemo(a.path());
  RunDemo(b.path());
  EXPECT_EQ(AllPayloads(*OpenReadOnly(a.path())), AllPayloads(*OpenReadOnly(b.path())));
}

// Running again on a finished log resumes from its snapshot, sees that the run is over, adds
// nothing and launches nothing; the log still replays identically.
TEST(Simulate, ResumeLaunchesNothingTwice) {
  TempDir dir;
  auto first = RunDemo(dir.path());
  EXPECT_FALSE(first.finished_before);
  auto second = RunDemo(dir.path());
  EXPECT_TRUE(second.resumed);
  EXPECT_TRUE(second.finished_before);
  EXPECT_NE(second.recovered_snapshot, Seq{0});
  EXPECT_EQ(second.world.instances, first.world.instances);
  EXPECT_EQ(second.last_seq, first.last_seq);
  EXPECT_EQ(second.state_hash, first.state_hash);
  auto verify = replay::Verify(*OpenReadOnly(dir.path()));
  EXPECT_EQ(verify.verdict, replay::Verdict::kIdentical) << verify.detail;
}

// A record corrupted in the middle stops replay, naming its sequence number.
TEST(Simulate, CorruptRecordIsNamed) {
  TempDir dir;
  auto report = RunDemo(dir.path(), 0);
  Seq bad{report.last_seq.value / 2};
  {
    log::OpenOptions open;
    auto log = log::EventLog::Open(dir.path(), open);
    log->PutRawEventForTest(bad, "\x01not a framed record");
  }
  auto verify = replay::Verify(*OpenReadOnly(dir.path()));
  EXPECT_EQ(verify.verdict, replay::Verdict::kCorrupt);
  EXPECT_EQ(verify.first_bad_seq, bad);
  EXPECT_NE(verify.detail.find(std::to_string(bad.value)), std::string::npos) << verify.detail;
}

// A record whose payload is replaced by a well-framed but different event is a divergence at
// exactly that record.
TEST(Simulate, AlteredEventIsADivergence) {
  TempDir dir;
  RunDemo(dir.path(), 0);
  auto log = OpenReadOnly(dir.path());
  // Find the first provisioning tick: an event followed by an output record with a launch.
  Seq target{0};
  log->Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    auto entry = log::DecodeEntry(r.payload);
    if (auto* out = std::get_if<log::OutputRecord>(&entry)) {
      for (const auto& c : out->commands) {
        if (std::holds_alternative<LaunchInstance>(c.body)) target = out->cause;
      }
    }
    return target == Seq{0};
  });
  ASSERT_NE(target, Seq{0});
  // Copy the log, rewriting that tick one nanosecond earlier: the batch no longer closes there.
  auto tick = std::get<Tick>(std::get<Event>(log::DecodeEntry(log->Read(target)->payload)));
  std::string altered = log::EncodeEvent(Tick{tick.now - Duration{1}});
  TempDir copy;
  auto dst = log::EventLog::Open(copy.path(), log::OpenOptions{});
  log->Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    dst->Append(log::AppendBatch{{r.seq == target ? altered : r.payload}, {}});
    return true;
  });
  log->ScanDecisions(0, [&](const log::DecisionRecord& d) {
    dst->Append(log::AppendBatch{{}, {d}});
    return true;
  });
  auto verify = replay::Verify(*dst);
  EXPECT_EQ(verify.verdict, replay::Verdict::kDiverged);
  EXPECT_EQ(verify.first_bad_seq, target) << verify.detail;
}

// Verification in stretches between snapshots, side by side, says what one fold from zero says.
TEST(Simulate, VerifyInStretchesMatchesOneFold) {
  TempDir dir;
  auto report = RunDemo(dir.path(), 40);
  auto log = OpenReadOnly(dir.path());
  auto one = replay::Verify(*log, {}, 1);
  auto four = replay::Verify(*log, {}, 4);
  EXPECT_TRUE(one.cuts.empty());
  EXPECT_GE(four.cuts.size(), 3u);
  EXPECT_EQ(four.verdict, replay::Verdict::kIdentical) << four.detail;
  EXPECT_EQ(four.events, one.events);
  EXPECT_EQ(four.outputs, one.outputs);
  EXPECT_EQ(four.decisions, one.decisions);
  EXPECT_EQ(four.snapshots_checked, one.snapshots_checked);
  EXPECT_EQ(four.final_hash, report.state_hash);
  EXPECT_EQ(one.final_hash, report.state_hash);
  // Each stretch's CPU time is reported, as is the fold from the newest snapshot's.
  ASSERT_EQ(four.stretch_cpu.size(), four.cuts.size() + 1);
  ASSERT_EQ(one.stretch_cpu.size(), 1u);
  for (auto cpu : four.stretch_cpu) EXPECT_GT(cpu.count(), 0);
  EXPECT_GT(one.newest_cpu.count(), 0);
  EXPECT_EQ(four.final_hash_from_snapshot, report.state_hash);
  // Fewer threads cut the log as finely: the longest stretch, what a machine with a core for
  // each would take, does not depend on the cores of the machine that verifies.
  auto two = replay::Verify(*log, {}, 2);
  EXPECT_EQ(two.verdict, replay::Verdict::kIdentical) << two.detail;
  EXPECT_EQ(two.cuts, four.cuts);
  EXPECT_GT(two.cuts.size(), 2u * 4u) << log->SnapshotSeqs().size() << " snapshots";
}

// The newest snapshot, folded from beside the stretches, is checked as a restart reads it: one
// that does not decode is corruption at its seq, not an exception out of Verify.
TEST(Simulate, UndecodableNewestSnapshotIsCorrupt) {
  TempDir dir;
  RunDemo(dir.path(), 40);
  Seq newest{0};
  {
    log::OpenOptions open;
    auto log = log::EventLog::Open(dir.path(), open);
    newest = log->SnapshotSeqs().back();
    log->PutSnapshot(newest, "not a snapshot");
  }
  auto verify = replay::Verify(*OpenReadOnly(dir.path()), {}, 4);
  EXPECT_EQ(verify.verdict, replay::Verdict::kCorrupt) << verify.detail;
  EXPECT_EQ(verify.first_bad_seq, newest) << verify.detail;
}

// A corrupt record in a later stretch is named as one fold names it.
TEST(Simulate, CorruptRecordInALaterStretchIsNamed) {
  TempDir dir;
  auto report = RunDemo(dir.path(), 40);
  Seq bad = report.last_seq - report.last_seq.value / 8;
  {
    log::OpenOptions open;
    auto log = log::EventLog::Open(dir.path(), open);
    log->PutRawEventForTest(bad, "\x01not a framed record");
  }
  auto verify = replay::Verify(*OpenReadOnly(dir.path()), {}, 4);
  ASSERT_GE(verify.cuts.size(), 3u);
  EXPECT_GT(bad, verify.cuts[1]);
  EXPECT_EQ(verify.verdict, replay::Verdict::kCorrupt);
  EXPECT_EQ(verify.first_bad_seq, bad) << verify.detail;
}

// Runs the demo with frequent snapshots, lets `rewrite` change the snapshot at the second cut
// a four-thread verify makes, and verifies again with four threads.
replay::VerifyReport VerifyWithSecondCutRewritten(
    const std::filesystem::path& dir, const std::function<void(log::EventLog&, Seq)>& rewrite) {
  RunDemo(dir, 40);
  const std::vector<Seq> cuts = replay::Verify(*OpenReadOnly(dir), {}, 4).cuts;
  EXPECT_GE(cuts.size(), 3u);
  if (cuts.size() < 2) return {};
  {
    log::OpenOptions open;
    rewrite(*log::EventLog::Open(dir, open), cuts[1]);
  }
  return replay::Verify(*OpenReadOnly(dir), {}, 4);
}

// A snapshot at a cut that holds another state (with a hash matching it) is caught by the
// stretch before it, which folded the real one: the chain is as strong as one fold.
TEST(Simulate, ForgedSnapshotAtACutIsADivergence) {
  TempDir dir;
  Seq cut{0};
  auto verify = VerifyWithSecondCutRewritten(dir.path(), [&](log::EventLog& log, Seq at) {
    cut = at;
    State forged = replay::FoldTo(log, at, false);
    forged.now = forged.now + Duration{1};
    auto writer = log.BeginSnapshot(at);
    log::EncodeSnapshot(forged, [&](std::string_view part) { writer->Add(part); });
    writer->Commit();
  });
  EXPECT_EQ(verify.verdict, replay::Verdict::kDiverged);
  EXPECT_EQ(verify.first_bad_seq, cut) << verify.detail;
}

// A snapshot at a cut that does not decode is reported as corruption, not thrown from the
// thread verifying the stretch that starts there.
TEST(Simulate, UndecodableSnapshotAtACutIsCorrupt) {
  TempDir dir;
  auto verify = VerifyWithSecondCutRewritten(
      dir.path(), [](log::EventLog& log, Seq at) { log.PutSnapshot(at, "not a snapshot"); });
  EXPECT_EQ(verify.verdict, replay::Verdict::kCorrupt) << verify.detail;
}

// Verify reads the stored hash of each snapshot it passes and decodes only those a fold starts
// from (the cuts and the newest); with decode_snapshots it decodes every one as well.
TEST(Simulate, VerifyDecodesEverySnapshotOnlyWhenAsked) {
  TempDir dir;
  RunDemo(dir.path(), 40);
  auto log = OpenReadOnly(dir.path());
  const std::size_t snapshots = log->SnapshotSeqs().size();
  auto quick = replay::Verify(*log, {}, 4);
  auto deep = replay::Verify(*log, {}, 4, true);
  ASSERT_GE(quick.cuts.size(), 3u);
  EXPECT_EQ(quick.verdict, replay::Verdict::kIdentical) << quick.detail;
  EXPECT_EQ(deep.verdict, replay::Verdict::kIdentical) << deep.detail;
  EXPECT_EQ(quick.snapshots_checked, snapshots);
  EXPECT_EQ(deep.snapshots_checked, snapshots);
  EXPECT_EQ(quick.snapshots_decoded, quick.cuts.size() + 1);
  EXPECT_EQ(deep.snapshots_decoded, snapshots + deep.cuts.size() + 1);
}

// A snapshot no fold starts from (not a cut, not the newest), rewritten by `rewrite`. The log
// has more snapshots than the stretches a verification cuts it into (at least 64).
Seq RewriteSnapshotBetweenCuts(const std::filesystem::path& dir,
                               const std::function<void(log::EventLog&, Seq)>& rewrite) {
  RunDemo(dir, 10);
  const std::vector<Seq> cuts = replay::Verify(*OpenReadOnly(dir), {}, 4).cuts;
  log::OpenOptions open;
  auto log = log::EventLog::Open(dir, open);
  const std::vector<Seq> all = log->SnapshotSeqs();
  for (std::size_t i = 0; i + 1 < all.size(); ++i) {
    if (std::find(cuts.begin(), cuts.end(), all[i]) != cuts.end()) continue;
    rewrite(*log, all[i]);
    return all[i];
  }
  ADD_FAILURE() << "every snapshot is a cut or the newest";
  return Seq{0};
}

// A snapshot between cuts holding another state (with a hash matching that state) differs from
// the replayed state's hash: caught without decoding it.
TEST(Simulate, ForgedSnapshotBetweenCutsIsADivergence) {
  TempDir dir;
  const Seq at = RewriteSnapshotBetweenCuts(dir.path(), [](log::EventLog& log, Seq at) {
    State forged = replay::FoldTo(log, at, false);
    forged.now = forged.now + Duration{1};
    auto writer = log.BeginSnapshot(at);
    log::EncodeSnapshot(forged, [&](std::string_view part) { writer->Add(part); });
    writer->Commit();
  });
  auto verify = replay::Verify(*OpenReadOnly(dir.path()), {}, 4);
  EXPECT_EQ(verify.verdict, replay::Verdict::kDiverged);
  EXPECT_EQ(verify.first_bad_seq, at) << verify.detail;
}

// A snapshot between cuts whose head is intact (the right stored hash) but whose body does not
// decode: only decoding finds it, and reports it as corruption.
TEST(Simulate, DecodeSnapshotsFindsABrokenBodyBetweenCuts) {
  TempDir dir;
  RewriteSnapshotBetweenCuts(dir.path(), [](log::EventLog& log, Seq at) {
    auto real = log.SnapshotAtOrBelow(at);
    ASSERT_TRUE(real.has_value());
    auto writer = log.BeginSnapshot(at);
    writer->Add(real->parts.front());
    writer->Add("not a snapshot part");
    writer->Commit();
  });
  auto quick = replay::Verify(*OpenReadOnly(dir.path()), {}, 4);
  EXPECT_EQ(quick.verdict, replay::Verdict::kIdentical) << quick.detail;
  auto deep = replay::Verify(*OpenReadOnly(dir.path()), {}, 4, true);
  EXPECT_EQ(deep.verdict, replay::Verdict::kCorrupt) << deep.detail;
}

}  // namespace
}  // namespace tenon::testing
