// Pipelined appends (runtime::Appends): the runtime folds at once and a writer thread encodes
// and appends. The log it writes is the synchronous runtime's, record by record; a snapshot is
// keyed above every output of the events it folded; with kPipelined a command runs only once
// its output is in the log; a failure of the writer reaches the runtime's thread; and a runtime
// destroyed without Flush still leaves everything it folded in the log.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "adapters/runtime/runtime.h"
#include "adapters/sim/world.h"
#include "log/codec.h"
#include "log/event_log.h"
#include "replay/replay.h"
#include "tests/integration/fixtures.h"
#include "tests/integration/helpers.h"

namespace tenon::testing {
namespace {

using runtime::Appends;

constexpr std::uint64_t kSnapshotEvery = 300;

// A small churning cluster (bench/churn.h): launches, consolidation, interruptions, NodeClaims
// deleted and instances terminated by hand, so outputs carry commands and decisions.
sim::Scenario SmallChurn() {
  bench::ChurnArgs args = SmallChurnArgs();
  args.churn_seconds = 1800;
  return bench::MakeScenario(args);
}

// Everything a log holds, to compare two logs.
struct Contents {
  std::vector<std::pair<Seq, std::string>> records;
  std::vector<std::pair<std::uint64_t, std::string>> decisions;
  std::vector<std::pair<std::uint64_t, std::string>> index;  // Decision id, value.
  std::vector<std::pair<Seq, std::vector<std::string>>> snapshots;
  friend bool operator==(const Contents&, const Contents&) = default;
};

Contents Read(const log::EventLog& log) {
  Contents c;
  log.Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    c.records.emplace_back(r.seq, r.payload);
    return true;
  });
  log.ScanDecisions(0, [&](const log::DecisionRecord& d) {
    c.decisions.emplace_back(d.id, d.payload);
    return true;
  });
  log.ScanDecisionIndexValues("", std::string(1, '\x7f'), [&](std::uint64_t id, auto value) {
    c.index.emplace_back(id, std::string(value));
    return true;
  });
  for (const Seq seq : log.SnapshotSeqs()) {
    c.snapshots.emplace_back(seq, log.SnapshotAtOrBelow(seq)->parts);
  }
  return c;
}

// What the observer and on_ack are told about the log.
struct Tally : runtime::Observer {
  void OnAppend(std::size_t n, std::size_t, std::chrono::nanoseconds, Seq l) override {
    records += n;
    last = l;
  }
  void OnSnapshot(Seq seq) override { snapshots.push_back(seq); }
  std::uint64_t records = 0;
  Seq last{0};
  std::vector<Seq> snapshots;
  std::map<Seq, std::string> acks;
};

struct RunResult {
  Contents contents;
  std::uint64_t hash = 0;
  Tally tally;
};

// The scenario through a runtime with `appends` into a log in `dir`.
void RunChurn(Appends appends, const std::filesystem::path& dir, RunResult& run) {
  const sim::Scenario scenario = SmallChurn();
  auto log = log::EventLog::Open(dir, {});
  sim::World world(scenario, std::filesystem::path());
  runtime::Options options;
  options.snapshot_every_events = kSnapshotEvery;
  options.appends = appends;
  options.observer = &run.tally;
  options.on_ack = [&](Seq seq, const std::string& payload) {
    EXPECT_TRUE(run.tally.acks.emplace(seq, payload).second)
        << "seq " << seq.value << " acked twice";
  };
  runtime::Runtime rt(*log, world, options);
  rt.Recover();
  rt.Ingest(world.StartupEvents(rt.state()));
  for (Instant t = scenario.start + scenario.tick; t <= scenario.start + scenario.duration;
       t += scenario.tick) {
    rt.Ingest(world.Advance(t));
  }
  rt.Flush();
  run.hash = StateHash(rt.state());
  run.contents = Read(*log);
}

// The synchronous run every pipelined one is compared with, made once.
const RunResult& Synchronous() {
  static const RunResult* run = [] {
    auto* r = new RunResult();
    TempDir dir;
    RunChurn(Appends::kSynchronous, dir.path(), *r);
    return r;
  }();
  return *run;
}

TEST(PipelinedAppends, WriteTheSynchronousLogRecordByRecord) {
  const RunResult& reference = Synchronous();
  ASSERT_GT(reference.contents.records.size(), 1000u);
  ASSERT_FALSE(reference.contents.decisions.empty());
  ASSERT_GT(reference.contents.snapshots.size(), 2u);
  for (const Appends appends : {Appends::kPipelined, Appends::kPipelinedAhead}) {
    SCOPED_TRACE(appends == Appends::kPipelined ? "kPipelined" : "kPipelinedAhead");
    TempDir dir;
    RunResult run;
    RunChurn(appends, dir.path(), run);
    EXPECT_EQ(run.hash, reference.hash);
    EXPECT_EQ(run.contents.records.size(), reference.contents.records.size());
    EXPECT_TRUE(run.contents.records == reference.contents.records);
    EXPECT_TRUE(run.contents.decisions == reference.contents.decisions);
    EXPECT_TRUE(run.contents.index == reference.contents.index);
    EXPECT_TRUE(run.contents.snapshots == reference.contents.snapshots);
    // The observer and on_ack, told on the runtime's thread, saw every record and snapshot.
    EXPECT_EQ(run.tally.records, run.contents.records.size());
    EXPECT_EQ(run.tally.last, run.contents.records.back().first);
    EXPECT_EQ(run.tally.snapshots, reference.tally.snapshots);
    std::map<Seq, std::string> logged(run.contents.records.begin(), run.contents.records.end());
    EXPECT_TRUE(run.tally.acks == logged);
  }
}

// Each snapshot, written by the writer thread from a copy of the state, is keyed by the last
// record folded: no output record above it answers an event at or below it, and its state is
// the fold of the log up to it (replay --verify compares every snapshot's hash).
TEST(PipelinedAppends, SnapshotsAreKeyedAboveEveryOutputOfTheirEvents) {
  TempDir dir;
  RunResult run;
  RunChurn(Appends::kPipelinedAhead, dir.path(), run);
  const auto& snapshots = run.contents.snapshots;
  ASSERT_GT(snapshots.size(), 2u);
  std::size_t outputs_checked = 0;
  for (const auto& [seq, payload] : run.contents.records) {
    const auto entry = log::DecodeEntry(payload);
    const auto* output = std::get_if<log::OutputRecord>(&entry);
    if (output == nullptr) continue;
    ++outputs_checked;
    for (const auto& [at, parts] : snapshots) {
      EXPECT_FALSE(output->cause <= at && seq > at)
          << "the output of seq " << output->cause.value << " is at " << seq.value
          << ", above the snapshot at " << at.value;
    }
  }
  EXPECT_GT(outputs_checked, 0u);
  auto log = log::EventLog::Open(dir.path(), {});
  const auto verify = replay::Verify(*log);
  EXPECT_EQ(verify.verdict, replay::Verdict::kIdentical) << verify.detail;
  EXPECT_EQ(verify.snapshots_checked, snapshots.size());
  EXPECT_EQ(verify.final_hash, run.hash);
}

// The world, seen through what the log holds when each command runs.
class LoggedFirst : public runtime::Executor {
 public:
  LoggedFirst(sim::World& world, const log::EventLog& log) : world_(world), log_(log) {}
  std::vector<Event> Execute(const Command& command) override {
    log_.Scan(scanned_ + 1, Seq{0}, [&](const log::Record& r) {
      scanned_ = r.seq;
      const auto entry = log::DecodeEntry(r.payload);
      if (const auto* output = std::get_if<log::OutputRecord>(&entry)) {
        for (const auto& c : output->commands) logged_.insert(c.id);
      }
      return true;
    });
    if (!logged_.contains(command.id)) ++ahead;
    ++ran;
    return world_.Execute(command);
  }
  std::uint64_t ran = 0;
  std::uint64_t ahead = 0;  // Commands run before their output was in the log.

 private:
  sim::World& world_;
  const log::EventLog& log_;
  Seq scanned_{0};
  std::set<CommandId> logged_;
};

TEST(PipelinedAppends, ACommandRunsOnlyOnceItsOutputIsInTheLog) {
  const sim::Scenario scenario = SmallChurn();
  TempDir dir;
  auto log = log::EventLog::Open(dir.path(), {});
  sim::World world(scenario, std::filesystem::path());
  LoggedFirst executor(world, *log);
  runtime::Options options;
  options.appends = Appends::kPipelined;
  runtime::Runtime rt(*log, executor, options);
  rt.Recover();
  rt.Ingest(world.StartupEvents(rt.state()));
  for (Instant t = scenario.start + scenario.tick;
       t <= scenario.start + Duration{1200 * kSecond.value}; t += scenario.tick) {
    rt.Ingest(world.Advance(t));
  }
  EXPECT_GT(executor.ran, 50u);
  EXPECT_EQ(executor.ahead, 0u);
}

class Silent : public runtime::Executor {
 public:
  std::vector<Event> Execute(const Command&) override { return {}; }
};

// Throws what Ingest or, at the latest, Flush throws: where a failure on the writer thread
// surfaces depends on how far the writer got, never whether.
std::string FailureOf(runtime::Runtime& rt, std::vector<Event> events) {
  try {
    rt.Ingest(std::move(events));
    rt.Flush();
  } catch (const log::LogError& e) {
    return e.what();
  }
  return "";
}

TEST(PipelinedAppends, ALogErrorOnTheWriterThreadSurfacesOnTheRuntimesThread) {
  TempDir dir;
  {
    auto log = log::EventLog::Open(dir.path(), {});
    Silent silent;
    runtime::Runtime rt(*log, silent, {});
    rt.Ingest({Tick{Instant{kSecond.value}}});
  }
  log::OpenOptions read_only;
  read_only.read_only = true;
  auto log = log::EventLog::Open(dir.path(), read_only);
  Silent silent;
  runtime::Options options;
  options.appends = Appends::kPipelinedAhead;
  runtime::Runtime rt(*log, silent, options);
  rt.Recover();
  const std::string what =
      FailureOf(rt, {Tick{Instant{2 * kSecond.value}}, PodUpserted{PendingPod(1)}});
  EXPECT_NE(what.find("log writer thread failed to append the records folded as seqs 2.."),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("opened read-only"), std::string::npos) << what;
  // Every later call says so again; the log took nothing.
  EXPECT_THROW(rt.Ingest({Tick{Instant{3 * kSecond.value}}}), log::LogError);
  EXPECT_THROW(rt.Flush(), log::LogError);
  EXPECT_EQ(log->LastSeq(), Seq{1});
}

TEST(PipelinedAppends, AnotherWriterOnTheLogIsCaughtByItsSequenceNumbers) {
  TempDir dir;
  auto log = log::EventLog::Open(dir.path(), {});
  Silent silent;
  runtime::Options options;
  options.appends = Appends::kPipelinedAhead;
  runtime::Runtime rt(*log, silent, options);
  rt.Recover();
  rt.Ingest({Tick{Instant{kSecond.value}}});
  rt.Flush();
  log::AppendBatch intruder;
  intruder.events.push_back(log::EncodeEvent(Tick{Instant{2 * kSecond.value}}));
  log->Append(std::move(intruder));
  const std::string what = FailureOf(rt, {Tick{Instant{3 * kSecond.value}}});
  EXPECT_NE(what.find("folded as seqs 2.."), std::string::npos) << what;
  EXPECT_NE(what.find("the log gave them seqs 3.."), std::string::npos) << what;
}

// A runtime destroyed without Flush (as an exception unwinds it) lets the writer finish: the
// log holds every record of what was folded and replays to the same state.
TEST(PipelinedAppends, DestructionWritesEverythingFolded) {
  TempDir dir;
  auto log = log::EventLog::Open(dir.path(), {});
  std::uint64_t hash = 0;
  std::uint64_t folded = 0;
  {
    Silent silent;
    runtime::Options options;
    options.appends = Appends::kPipelinedAhead;
    runtime::Runtime rt(*log, silent, options);
    rt.Recover();
    for (int s = 1; s <= 100; ++s) rt.Ingest({Tick{Instant{s * kSecond.value}}});
    // A large last batch: the writer is still encoding it as the runtime goes.
    std::vector<Event> pods;
    for (int i = 0; i < 5000; ++i) pods.push_back(PodUpserted{PendingPod(i)});
    rt.Ingest(std::move(pods));
    hash = StateHash(rt.state());
    folded = rt.events_folded();
  }
  std::uint64_t events = 0;
  log->Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    events += std::holds_alternative<Event>(log::DecodeEntry(r.payload)) ? 1 : 0;
    return true;
  });
  EXPECT_EQ(events, folded);
  const auto verify = replay::Verify(*log);
  EXPECT_EQ(verify.verdict, replay::Verdict::kIdentical) << verify.detail;
  EXPECT_EQ(verify.final_hash, hash);
}

}  // namespace
}  // namespace tenon::testing
