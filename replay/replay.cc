#include "replay/replay.h"

#include <map>
#include <set>

#include "log/codec.h"

namespace tenon::replay {
namespace {

constexpr log::Seq kProgressEvery = 10'000;

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

class Verifier {
 public:
  explicit Verifier(const log::EventLog& log) : log_(log) {
    for (auto seq : log.SnapshotSeqs()) snapshots_.insert(seq);
  }

  void Run(const std::function<void(log::Seq, log::Seq)>& progress) {
    log::Seq last = log_.LastSeq();
    // A log truncated by retention begins with the snapshot at the cut: its state, checked
    // against its stored hash, is where the fold starts.
    const log::Seq first = log_.FirstSeq();
    if (first > 1) {
      auto snapshot = log_.SnapshotAtOrBelow(first - 1);
      if (!snapshot || snapshot->seq != first - 1) {
        Fail(Verdict::kCorrupt, first, "the log was truncated but has no snapshot at the cut");
        return;
      }
      std::uint64_t stored = 0;
      state_ = log::DecodeSnapshot(snapshot->parts, &stored);
      if (StateHash(state_) != stored) {
        Fail(Verdict::kCorrupt, snapshot->seq, "the snapshot at the cut fails its state hash");
        return;
      }
      report_.first_seq = first;
    }
    log_.Scan(first, 0, [&](const log::Record& record) {
      if (progress && record.seq % kProgressEvery == 0) progress(record.seq, last);
      Visit(record);
      if (snapshots_.contains(record.seq)) CheckSnapshot(record.seq);
      return report_.verdict == Verdict::kIdentical;
    });
    if (report_.verdict != Verdict::kIdentical) return;
    if (!unrecorded_.empty()) {
      Fail(Verdict::kIncomplete, unrecorded_.begin()->first.value,
           std::to_string(unrecorded_.size()) +
               " events at the tail have outputs that were never written; the writer stopped "
               "mid-step (restarting it on this log records them)");
    }
  }

  VerifyReport& report() { return report_; }
  const State& state() const { return state_; }

 private:
  void Fail(Verdict verdict, log::Seq seq, std::string detail) {
    if (report_.verdict != Verdict::kIdentical) return;
    report_.verdict = verdict;
    report_.first_bad_seq = seq;
    report_.detail = std::move(detail);
  }

  void Visit(const log::Record& record) {
    log::Entry entry;
    try {
      entry = log::DecodeEntry(record.payload);
    } catch (const log::CodecError& e) {
      Fail(Verdict::kCorrupt, record.seq, "record does not decode: " + std::string(e.what()));
      return;
    }
    if (const auto* event = std::get_if<Event>(&entry)) {
      Output out = Step(state_, Seq{record.seq}, *event);
      ++report_.events;
      if (!out.empty()) unrecorded_.emplace(Seq{record.seq}, std::move(out));
      return;
    }
    CheckOutput(record.seq, std::get<log::OutputRecord>(entry));
  }

  void CheckOutput(log::Seq seq, const log::OutputRecord& recorded) {
    ++report_.outputs;
    auto it = unrecorded_.find(recorded.cause);
    std::string where = "output at seq " + std::to_string(seq) + " for event seq " +
                        std::to_string(recorded.cause.value) + ": ";
    if (it == unrecorded_.end()) {
      Fail(
          Verdict::kDiverged, recorded.cause.value,
          where + "replay produced no output, the log recorded " + CommandsText(recorded.commands));
      return;
    }
    const Output& now = it->second;
    if (now.commands != recorded.commands) {
      Fail(Verdict::kDiverged, recorded.cause.value,
           where + CommandDiff(recorded.commands, now.commands));
      return;
    }
    CheckDecisions(recorded, now);
    unrecorded_.erase(it);
  }

  void CheckDecisions(const log::OutputRecord& recorded, const Output& now) {
    if (recorded.decision_ids.size() != now.decisions.size()) {
      Fail(Verdict::kDiverged, recorded.cause.value,
           "recorded " + std::to_string(recorded.decision_ids.size()) + " decisions, replay made " +
               std::to_string(now.decisions.size()));
      return;
    }
    for (std::size_t i = 0; i < now.decisions.size(); ++i) {
      ++report_.decisions;
      auto stored = log_.ReadDecision(recorded.decision_ids[i].value);
      if (!stored || !SameDecision(log::DecodeDecision(stored->payload), now.decisions[i])) {
        Fail(Verdict::kDiverged, recorded.cause.value,
             "decision " + std::to_string(recorded.decision_ids[i].value) +
                 (stored ? " differs from the replayed one" : " is missing from the log"));
        return;
      }
    }
  }

  void CheckSnapshot(log::Seq seq) {
    auto snapshot = log_.SnapshotAtOrBelow(seq);
    if (!snapshot || snapshot->seq != seq) return;
    std::uint64_t stored = 0;
    State decoded = log::DecodeSnapshot(snapshot->parts, &stored);
    ++report_.snapshots_checked;
    std::uint64_t now = StateHash(state_);
    if (stored != now || StateHash(decoded) != now) {
      Fail(Verdict::kDiverged, seq,
           "snapshot at seq " + std::to_string(seq) + " holds a state other than the replayed one");
    }
  }

  const log::EventLog& log_;
  State state_;
  std::set<log::Seq> snapshots_;
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

VerifyReport Verify(const log::EventLog& log,
                    const std::function<void(log::Seq, log::Seq)>& progress) {
  Verifier verifier(log);
  try {
    verifier.Run(progress);
  } catch (const log::LogError& e) {
    VerifyReport report = verifier.report();
    report.verdict = Verdict::kCorrupt;
    report.first_bad_seq = e.key();
    report.detail = e.what();
    return report;
  }
  VerifyReport report = verifier.report();
  report.last_seq = log.LastSeq();
  report.final_hash = StateHash(verifier.state());
  if (report.verdict != Verdict::kIdentical) return report;
  if (auto newest = log.SnapshotAtOrBelow(0)) {
    report.newest_snapshot = newest->seq;
    report.final_hash_from_snapshot = StateHash(FoldTo(log, 0, true));
    if (report.final_hash_from_snapshot != report.final_hash) {
      report.verdict = Verdict::kDiverged;
      report.first_bad_seq = newest->seq;
      report.detail = "folding from the snapshot at seq " + std::to_string(newest->seq) +
                      " ends in another state than folding from zero";
    }
  }
  return report;
}

State FoldTo(const log::EventLog& log, log::Seq to, bool use_snapshot) {
  State state;
  log::Seq from = 1;
  // A truncated log starts at its oldest snapshot whatever the caller prefers.
  if (use_snapshot || log.FirstSeq() > 1) {
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

log::Seq SeqAtTime(const log::EventLog& log, Nanos until) {
  log::Seq at = log.LastSeq();
  log::Seq previous = log.FirstSeq() - 1;
  log.Scan(log.FirstSeq(), 0, [&](const log::Record& record) {
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
