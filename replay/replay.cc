#include "replay/replay.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "log/codec.h"

namespace tenon::replay {
namespace {

constexpr std::uint64_t kProgressEvery = 10'000;
// Stretches verified side by side at most: past this, memory (one State each) outgrows the gain.
constexpr std::size_t kVerifyThreadsMax = 16;
// Stretches per thread: the cost of a stretch follows what the cluster did then, not its
// length, so threads take more, shorter stretches from a queue as they finish.
constexpr std::size_t kStretchesPerThread = 4;
// And at least this many, where the log has the snapshots: the longest stretch is the least
// time the verification can take with a core for each, and a stretch costs only the decoding
// of the snapshot it starts from beyond the fold it shares out.
constexpr std::size_t kStretchesMin = 64;

std::string CommandsText(const std::vector<Command>& commands) {
  std::string text = "[";
  for (const auto& c : commands) {
    if (text.size() > 1) text += ", ";
    text += log::CommandKind(c) + "#" + std::to_string(c.id.value);
  }
  return text + "]";
}

// A recorded decision and the replayed one are the same. A disruption decision recorded before
// decisions carried prices (all zero, as the schema reads fields it did not have) is compared
// without the replayed one's: they are for audit and change nothing that was done, so a log
// written by an earlier version still verifies.
bool SameDecision(const Decision& recorded, const Decision& replayed) {
  const auto* r = std::get_if<DisruptionDecision>(&recorded.body);
  const auto* p = std::get_if<DisruptionDecision>(&replayed.body);
  if (r == nullptr || p == nullptr || r->prices != DisruptionPrices{} ||
      p->prices == DisruptionPrices{}) {
    return recorded == replayed;
  }
  Decision unpriced = replayed;
  std::get<DisruptionDecision>(unpriced.body).prices = {};
  return recorded == unpriced;
}

// Names the first difference between two command lists in a sentence.
std::string CommandDiff(const std::vector<Command>& recorded, const std::vector<Command>& now) {
  for (std::size_t i = 0; i < std::min(recorded.size(), now.size()); ++i) {
    if (recorded[i] == now[i]) continue;
    return "command " + std::to_string(i) + " differs: recorded " + log::CommandKind(recorded[i]) +
           "#" + std::to_string(recorded[i].id.value) + ", replay produced " +
           log::CommandKind(now[i]) + "#" + std::to_string(now[i].id.value) +
           (log::CommandKind(recorded[i]) == log::CommandKind(now[i]) ? " with other fields" : "");
  }
  return "recorded " + std::to_string(recorded.size()) + " commands " + CommandsText(recorded) +
         ", replay produced " + std::to_string(now.size()) + " " + CommandsText(now);
}

// Verifies one stretch of the log: the events after `begin` up to and including `end` (0: to
// the log's end), from the state the snapshot at `begin` holds (from zero when `begin` is 0).
// Outputs of this stretch's events written after `end` are checked here; outputs of earlier
// events met at the start belong to the stretch before.
class Verifier {
 public:
  Verifier(const log::EventLog& log, Seq begin, Seq end, const std::set<Seq>& snapshots,
           bool decode_snapshots, const RequestRenderer& render)
      : log_(log),
        begin_(begin),
        end_(end),
        snapshots_(snapshots),
        decode_snapshots_(decode_snapshots),
        render_(render) {}

  // Whether the stretch could start: its snapshot exists and holds its stored hash.
  bool Start() {
    // A log truncated by retention begins with the snapshot at the cut: its state, checked
    // against its stored hash, is where the fold starts.
    const Seq first = log_.FirstSeq();
    if (begin_ == Seq{0} && first > Seq{1}) begin_ = first - 1;
    at_ = begin_;
    if (begin_ == Seq{0}) return true;
    const bool cut = begin_ == first - 1;
    auto snapshot = log_.SnapshotAtOrBelow(begin_);
    if (!snapshot || snapshot->seq != begin_) {
      Fail(Verdict::kCorrupt, begin_ + 1,
           cut ? "the log was truncated but has no snapshot at the cut"
               : "no snapshot at seq " + std::to_string(begin_.value));
      return false;
    }
    std::uint64_t stored = 0;
    state_ = log::DecodeSnapshot(snapshot->parts, &stored);
    ++report_.snapshots_decoded;
    if (StateHash(state_) != stored) {
      Fail(Verdict::kCorrupt, snapshot->seq,
           cut ? "the snapshot at the cut fails its state hash"
               : "the snapshot at seq " + std::to_string(begin_.value) + " fails its state hash");
      return false;
    }
    if (cut) report_.first_seq = first;
    return true;
  }

  // `progress` is called with the number of records this stretch has read so far.
  void Run(const std::function<void(std::uint64_t)>& progress) {
    std::uint64_t read = 0;
    log_.Scan(begin_ + 1, Seq{0}, [&](const log::Record& record) {
      at_ = record.seq;
      if (progress && ++read % kProgressEvery == 0) progress(read);
      if (end_ != Seq{0} && record.seq > end_) {
        // Past the stretch: only the outputs still owed by its own events.
        if (unrecorded_.empty()) return false;
        CheckTailOutput(record);
        return report_.verdict == Verdict::kIdentical;
      }
      Visit(record);
      if (snapshots_.contains(record.seq)) CheckSnapshot(record.seq);
      return report_.verdict == Verdict::kIdentical;
    });
    if (report_.verdict != Verdict::kIdentical) return;
    if (!unrecorded_.empty()) {
      Fail(Verdict::kIncomplete, unrecorded_.begin()->first,
           std::to_string(unrecorded_.size()) +
               " events at the tail have outputs that were never written; the writer stopped "
               "mid-step (restarting it on this log records them)");
    }
  }

  VerifyReport& report() { return report_; }
  const State& state() const { return state_; }
  void ReleaseState() { state_ = State{}; }
  // The record being verified (the snapshot at the start before the first).
  Seq at() const { return at_; }
  void Corrupt(Seq seq, std::string detail) { Fail(Verdict::kCorrupt, seq, std::move(detail)); }

 private:
  void Fail(Verdict verdict, Seq seq, std::string detail) {
    if (report_.verdict != Verdict::kIdentical) return;
    report_.verdict = verdict;
    report_.first_bad_seq = seq;
    report_.detail = std::move(detail);
  }

  std::optional<log::Entry> Decode(const log::Record& record) {
    try {
      return log::DecodeEntry(record.payload);
    } catch (const log::CodecError& e) {
      Fail(Verdict::kCorrupt, record.seq, "record does not decode: " + std::string(e.what()));
      return std::nullopt;
    }
  }

  void Visit(const log::Record& record) {
    std::optional<log::Entry> entry = Decode(record);
    if (!entry) return;
    if (const auto* event = std::get_if<Event>(&*entry)) {
      if (render_) CheckRequest(record.seq, *event);
      Output out = Step(state_, Seq{record.seq}, *event);
      ++report_.events;
      if (!out.empty()) unrecorded_.emplace(Seq{record.seq}, std::move(out));
      return;
    }
    const auto& output = std::get<log::OutputRecord>(*entry);
    if (output.cause <= begin_) return;  // The stretch before checks it.
    CheckOutput(record.seq, output);
  }

  // The request a launch's result recorded against the one its command renders now (the
  // command is in flight until its result is folded).
  void CheckRequest(Seq seq, const Event& event) {
    const std::string* recorded = nullptr;
    CommandId command{0};
    if (const auto* launched = std::get_if<FleetLaunched>(&event)) {
      recorded = &launched->request;
      command = launched->command;
    } else if (const auto* failed = std::get_if<FleetFailed>(&event)) {
      recorded = &failed->request;
      command = failed->command;
    }
    if (recorded == nullptr || recorded->empty()) return;
    const auto it = state_.inflight.find(command);
    if (it == state_.inflight.end()) return;  // A late answer to a command already settled.
    const std::string now = render_(it->second);
    ++report_.requests_rendered;
    if (now == *recorded) return;
    const auto differ = std::mismatch(now.begin(), now.end(), recorded->begin(), recorded->end());
    Fail(Verdict::kDiverged, seq,
         "the CreateFleet body recorded at seq " + std::to_string(seq.value) + " (" +
             std::to_string(recorded->size()) + " bytes) differs from what command " +
             std::to_string(command.value) + " renders now (" + std::to_string(now.size()) +
             " bytes) from byte " + std::to_string(differ.first - now.begin()));
  }

  void CheckTailOutput(const log::Record& record) {
    std::optional<log::Entry> entry = Decode(record);
    if (!entry) return;
    const auto* output = std::get_if<log::OutputRecord>(&*entry);
    if (output != nullptr && output->cause <= end_) CheckOutput(record.seq, *output);
  }

  void CheckOutput(Seq seq, const log::OutputRecord& recorded) {
    ++report_.outputs;
    auto it = unrecorded_.find(recorded.cause);
    std::string where = "output at seq " + std::to_string(seq.value) + " for event seq " +
                        std::to_string(recorded.cause.value) + ": ";
    if (it == unrecorded_.end()) {
      Fail(
          Verdict::kDiverged, recorded.cause,
          where + "replay produced no output, the log recorded " + CommandsText(recorded.commands));
      return;
    }
    const Output& now = it->second;
    if (now.commands != recorded.commands) {
      Fail(Verdict::kDiverged, recorded.cause,
           where + CommandDiff(recorded.commands, now.commands));
      return;
    }
    CheckDecisions(recorded, now);
    unrecorded_.erase(it);
  }

  void CheckDecisions(const log::OutputRecord& recorded, const Output& now) {
    if (recorded.decision_ids.size() != now.decisions.size()) {
      Fail(Verdict::kDiverged, recorded.cause,
           "recorded " + std::to_string(recorded.decision_ids.size()) + " decisions, replay made " +
               std::to_string(now.decisions.size()));
      return;
    }
    for (std::size_t i = 0; i < now.decisions.size(); ++i) {
      ++report_.decisions;
      auto stored = log_.ReadDecision(recorded.decision_ids[i].value);
      if (!stored || !SameDecision(log::DecodeDecision(stored->payload), now.decisions[i])) {
        Fail(Verdict::kDiverged, recorded.cause,
             "decision " + std::to_string(recorded.decision_ids[i].value) +
                 (stored ? " differs from the replayed one" : " is missing from the log"));
        return;
      }
    }
  }

  // The snapshot must hold the hash of the state replayed up to it (the hash it was written
  // with), and with decode_snapshots_ also decode to a state of that hash.
  void CheckSnapshot(Seq seq) {
    std::uint64_t stored = 0;
    std::optional<State> decoded;
    if (decode_snapshots_) {
      auto snapshot = log_.SnapshotAtOrBelow(seq);
      if (!snapshot || snapshot->seq != seq) return;
      decoded = log::DecodeSnapshot(snapshot->parts, &stored);
      ++report_.snapshots_decoded;
    } else {
      auto head = log_.SnapshotHead(seq);
      if (!head) return;
      stored = log::SnapshotStoredHash(*head);
    }
    ++report_.snapshots_checked;
    const std::uint64_t now = StateHash(state_);
    if (stored != now || (decoded && StateHash(*decoded) != now)) {
      Fail(Verdict::kDiverged, seq,
           "snapshot at seq " + std::to_string(seq.value) +
               " holds a state other than the replayed one");
    }
  }

  const log::EventLog& log_;
  Seq begin_;
  Seq end_;
  Seq at_ = begin_;
  State state_;
  const std::set<Seq>& snapshots_;  // Every snapshot's sequence number.
  const bool decode_snapshots_;
  const RequestRenderer& render_;  // Empty: requests are not rendered again.
  std::map<Seq, Output> unrecorded_;
  VerifyReport report_;
};

}  // namespace

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kIdentical:
      return "identical";
    case Verdict::kDiverged:
      return "diverged";
    case Verdict::kIncomplete:
      return "incomplete";
    case Verdict::kCorrupt:
      return "corrupt";
  }
  return "unknown";
}

namespace {

// The CPU time the calling thread has used.
std::chrono::nanoseconds ThreadCpu() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

// Where to cut the log into `parts` stretches of about equal length: snapshot sequence
// numbers, each stretch starting from the snapshot at its cut.
std::vector<Seq> Cuts(const log::EventLog& log, const std::vector<Seq>& snapshots,
                      std::size_t parts) {
  std::vector<Seq> cuts;
  const Seq first = log.FirstSeq(), last = log.LastSeq();
  for (std::size_t i = 1; i < parts; ++i) {
    const Seq target = first + (last - first).value * i / parts;
    auto it = std::upper_bound(snapshots.begin(), snapshots.end(), target);
    if (it == snapshots.begin()) continue;
    const Seq cut = *std::prev(it);
    if (cut >= first && cut < last && (cuts.empty() || cut > cuts.back())) cuts.push_back(cut);
  }
  return cuts;
}

// A whole log's verification: its stretches between snapshots, and beside them the fold from the
// newest snapshot, taken as jobs from one queue by the threads that run it. Job 0 is the fold
// from the newest snapshot (when there is one), job i + 1 stretch i.
class Verification {
 public:
  Verification(const log::EventLog& log, const std::function<void(Seq, Seq)>& progress,
               std::size_t threads, bool decode_snapshots, const RequestRenderer& render)
      : log_(log),
        progress_(progress),
        listed_(log.SnapshotSeqs()),
        snapshots_(listed_.begin(), listed_.end()),
        cuts_(threads == 1
                  ? std::vector<Seq>{}
                  : Cuts(log, listed_, std::max(threads * kStretchesPerThread, kStretchesMin))),
        newest_(listed_.empty() ? Seq{0} : listed_.back()),
        next_(newest_ == Seq{0} ? 1u : 0u) {
    for (std::size_t i = 0; i <= cuts_.size(); ++i) {
      parts_.push_back(std::make_unique<Verifier>(log, i == 0 ? Seq{0} : cuts_[i - 1],
                                                  i < cuts_.size() ? cuts_[i] : Seq{0}, snapshots_,
                                                  decode_snapshots, render));
    }
    read_.assign(parts_.size(), 0);
    cpu_.resize(parts_.size());
  }

  void Run(std::size_t threads) {
    std::vector<std::jthread> workers;
    for (std::size_t t = 1; t < std::min(threads, parts_.size() + 1); ++t) {
      workers.emplace_back([this] { Work(); });
    }
    Work();
  }

  VerifyReport Report() {
    VerifyReport report = Merged();
    report.cuts = cuts_;
    report.stretch_cpu = std::move(cpu_);
    report.newest_cpu = newest_cpu_;
    report.last_seq = log_.LastSeq();
    report.final_hash = StateHash(parts_.back()->state());
    if (report.verdict == Verdict::kIdentical && newest_ != Seq{0}) CheckNewest(report);
    return report;
  }

 private:
  void Work() {
    for (std::size_t job = next_++; job <= parts_.size(); job = next_++) {
      const std::chrono::nanoseconds start = ThreadCpu();
      if (job == 0) {
        FoldFromNewest();
        newest_cpu_ = ThreadCpu() - start;
        continue;
      }
      VerifyStretch(job - 1);
      cpu_[job - 1] = ThreadCpu() - start;
    }
  }

  void VerifyStretch(std::size_t i) {
    Verifier& part = *parts_[i];
    try {
      if (!part.Start()) return;
      part.Run([&](std::uint64_t n) { ShowProgress(i, n); });
    } catch (const log::LogError& e) {
      part.Corrupt(Seq{e.key()}, e.what());
    } catch (const std::exception& e) {
      // A snapshot that does not decode, found on a worker thread: reported, not thrown.
      part.Corrupt(part.at(), e.what());
    }
    if (i + 1 < parts_.size()) part.ReleaseState();  // Only the last stretch's is reported.
  }

  // Stretch i has read `n` records: the records all stretches have read, as a position in the log.
  void ShowProgress(std::size_t i, std::uint64_t n) {
    if (!progress_) return;
    std::lock_guard<std::mutex> lock(mu_);
    read_[i] = n;
    std::uint64_t total = 0;
    for (auto r : read_) total += r;
    progress_(log_.FirstSeq() + total, log_.LastSeq());
  }

  // As a restart folds: it is as long as a stretch's start and no shorter for more cores, so it
  // goes first in the queue.
  void FoldFromNewest() {
    try {
      from_newest_ = StateHash(FoldTo(log_, Seq{0}, true));
    } catch (const std::exception& e) {
      newest_error_ = e.what();
    }
  }

  // The earliest failing stretch speaks for the log; the counts add up.
  VerifyReport Merged() const {
    VerifyReport report = parts_.front()->report();
    for (std::size_t i = 1; i < parts_.size(); ++i) {
      const VerifyReport& part = parts_[i]->report();
      if (report.verdict == Verdict::kIdentical && part.verdict != Verdict::kIdentical) {
        report.verdict = part.verdict;
        report.first_bad_seq = part.first_bad_seq;
        report.detail = part.detail;
      }
      report.events += part.events;
      report.outputs += part.outputs;
      report.decisions += part.decisions;
      report.snapshots_checked += part.snapshots_checked;
      report.snapshots_decoded += part.snapshots_decoded;
      report.requests_rendered += part.requests_rendered;
    }
    return report;
  }

  // The fold from the newest snapshot must end where the fold from zero did.
  void CheckNewest(VerifyReport& report) const {
    report.newest_snapshot = newest_;
    report.final_hash_from_snapshot = from_newest_;
    ++report.snapshots_decoded;
    if (!newest_error_.empty()) {
      report.verdict = Verdict::kCorrupt;
      report.first_bad_seq = newest_;
      report.detail = "folding from the snapshot at seq " + std::to_string(newest_.value) +
                      " failed: " + newest_error_;
    } else if (from_newest_ != report.final_hash) {
      report.verdict = Verdict::kDiverged;
      report.first_bad_seq = newest_;
      report.detail = "folding from the snapshot at seq " + std::to_string(newest_.value) +
                      " ends in another state than folding from zero";
    }
  }

  const log::EventLog& log_;
  const std::function<void(Seq, Seq)>& progress_;
  const std::vector<Seq> listed_;
  const std::set<Seq> snapshots_;  // The stretches read it.
  const std::vector<Seq> cuts_;
  const Seq newest_;  // 0: the log has no snapshot.
  std::vector<std::unique_ptr<Verifier>> parts_;
  std::mutex mu_;
  std::vector<std::uint64_t> read_;  // Records each stretch has read, under mu_.
  std::vector<std::chrono::nanoseconds> cpu_;
  std::chrono::nanoseconds newest_cpu_{0};
  std::uint64_t from_newest_ = 0;
  std::string newest_error_;
  std::atomic<std::size_t> next_;  // The next job to take.
};

}  // namespace

VerifyReport Verify(const log::EventLog& log, const std::function<void(Seq, Seq)>& progress,
                    std::size_t threads, bool decode_snapshots, const RequestRenderer& render) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  // The stretches between snapshots are verified side by side: each starts from the snapshot
  // at its cut, and the stretch before checks that snapshot against the state it folded, so
  // the chain is the same proof as one fold from zero.
  threads = std::min(threads, kVerifyThreadsMax);
  Verification verification(log, progress, threads, decode_snapshots, render);
  verification.Run(threads);
  return verification.Report();
}

State FoldTo(const log::EventLog& log, Seq to, bool use_snapshot) {
  State state;
  Seq from{1};
  // A truncated log starts at its oldest snapshot whatever the caller prefers.
  if (use_snapshot || log.FirstSeq() > Seq{1}) {
    if (auto snapshot = log.SnapshotAtOrBelow(to)) {
      state = log::DecodeSnapshot(snapshot->parts, nullptr);
      from = snapshot->seq + 1;
    }
  }
  log.Scan(from, to, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    if (const auto* event = std::get_if<Event>(&entry)) Step(state, Seq{record.seq}, *event);
    return true;
  });
  return state;
}

Seq SeqAtTime(const log::EventLog& log, Instant until) {
  Seq at = log.LastSeq();
  Seq previous = log.FirstSeq() - 1;
  log.Scan(log.FirstSeq(), Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    const auto* event = std::get_if<Event>(&entry);
    const auto* tick = event != nullptr ? std::get_if<Tick>(event) : nullptr;
    if (tick != nullptr && tick->now > until) {
      at = previous;
      return false;
    }
    previous = record.seq;
    return true;
  });
  return at;
}

}  // namespace tenon::replay
