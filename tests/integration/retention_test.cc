// Log retention: the runtime cuts the log at a snapshot by age and by size; what is left
// recovers to the same state and replays identically from the snapshot at the cut.
#include <gtest/gtest.h>

#include "adapters/runtime/runtime.h"
#include "log/event_log.h"
#include "replay/replay.h"
#include "tests/integration/fixtures.h"
#include "tests/support/temp_dir.h"

namespace tenon::testing {
namespace {

// Commands never get a result here: retention does not depend on them.
class Silent : public runtime::Executor {
 public:
  std::vector<Event> Execute(const Command&) override { return {}; }
};

// An hour of one-second ticks with a pod every minute.
void FoldAnHour(runtime::Runtime& rt) {
  for (int s = 1; s <= 3600; ++s) {
    std::vector<Event> events{Tick{Instant{s * kSecond.value}}};
    if (s % 60 == 0) events.push_back(PodUpserted{PendingPod(s / 60)});
    rt.Ingest(std::move(events));
  }
}

TEST(Retention, AgeCutsAtTheNewestSnapshotOldEnoughAndReplaysIdentically) {
  TempDir dir;
  std::uint64_t hash = 0;
  {
    auto log = log::EventLog::Open(dir.path(), {});
    Silent silent;
    runtime::Options options;
    options.snapshot_every_events = 100;
    options.snapshot_min_interval = Duration{5 * 60 * kSecond.value};
    options.retain_age = Duration{15 * 60 * kSecond.value};
    runtime::Runtime rt(*log, silent, options);
    rt.Recover();
    FoldAnHour(rt);
    hash = StateHash(rt.state());
    // Snapshots every 5 min; the cut is at the newest one at least 15 min old.
    EXPECT_GT(log->FirstSeq(), Seq{2000});
    EXPECT_FALSE(log->Read(Seq{1}).has_value());
    EXPECT_FALSE(log->Read(log->FirstSeq() - 1).has_value());
    EXPECT_TRUE(log->Read(log->FirstSeq()).has_value());
    const auto snapshots = log->SnapshotSeqs();
    ASSERT_FALSE(snapshots.empty());
    EXPECT_EQ(snapshots.front(), log->FirstSeq() - 1);
    EXPECT_LE(snapshots.size(), 4u);  // 15 min kept at one per 5 min, plus the cut's.
  }
  auto log = log::EventLog::Open(dir.path(), {});
  const auto report = replay::Verify(*log, {});
  EXPECT_EQ(report.verdict, replay::Verdict::kIdentical) << report.detail;
  EXPECT_EQ(report.final_hash, hash);
  EXPECT_EQ(report.first_seq, log->FirstSeq());
  // Recovery from the truncated log ends where the writer did.
  Silent silent;
  runtime::Runtime again(*log, silent, {});
  again.Recover();
  EXPECT_EQ(StateHash(again.state()), hash);
}

TEST(Retention, SizeKeepsTheNewestSnapshotAndStaysUnderTheBudget) {
  TempDir dir;
  auto log = log::EventLog::Open(dir.path(), {});
  Silent silent;
  runtime::Options options;
  options.snapshot_every_events = 200;
  options.retain_bytes = 64 << 10;
  runtime::Runtime rt(*log, silent, options);
  rt.Recover();
  FoldAnHour(rt);
  EXPECT_GT(log->FirstSeq(), Seq{1})
      << log->DiskBytes() << " bytes, snapshots " << log->SnapshotSeqs().size();
  EXPECT_FALSE(log->SnapshotSeqs().empty());
  const auto report = replay::Verify(*log, {});
  EXPECT_EQ(report.verdict, replay::Verdict::kIdentical) << report.detail;
  EXPECT_EQ(report.final_hash, StateHash(rt.state()));
}

TEST(Retention, TruncateNeedsASnapshotAtTheCut) {
  TempDir dir;
  auto log = log::EventLog::Open(dir.path(), {});
  Silent silent;
  runtime::Runtime rt(*log, silent, {});
  rt.Recover();
  rt.Ingest({Tick{Instant{kSecond.value}}, PodUpserted{PendingPod(1)}});
  EXPECT_THROW(log->Truncate(Seq{1}), log::LogError);
  EXPECT_EQ(log->FirstSeq(), Seq{1});
}

}  // namespace
}  // namespace tenon::testing
