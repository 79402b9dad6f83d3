#include "adapters/runtime/runtime.h"

#include <malloc.h>

#include <algorithm>
#include <cassert>
#include <deque>
#include <map>

#include "adapters/runtime/log_writer.h"
#include "log/codec.h"

namespace tenon::runtime {

void TuneAllocatorForLongRun() {
  constexpr int kArenasMax = 2;
  constexpr int kMmapThresholdBytes = 128 << 10;
  constexpr int kTrimThresholdBytes = 128 << 10;
  ::mallopt(M_ARENA_MAX, kArenasMax);
  ::mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  ::mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes);
}

}  // namespace tenon::runtime

// jemalloc's control interface, present only when the program links jemalloc (weak: null
// otherwise).
extern "C" int mallctl(const char* name, void* oldp, std::size_t* oldlenp, void* newp,
                       std::size_t newlen) __attribute__((weak));

namespace tenon::runtime {

void ReleaseFreeMemory() {
  if (mallctl != nullptr) {
    // "arena.4096.purge": 4096 is MALLCTL_ARENAS_ALL, every arena.
    mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
    return;
  }
  ::malloc_trim(0);
}

std::uint64_t HeapBytesInUse() {
  if (mallctl != nullptr) {
    // jemalloc's statistics are a snapshot taken when the epoch advances.
    std::uint64_t epoch = 1;
    std::size_t size = sizeof epoch;
    mallctl("epoch", &epoch, &size, &epoch, size);
    std::size_t allocated = 0;
    size = sizeof allocated;
    if (mallctl("stats.allocated", &allocated, &size, nullptr, 0) == 0) return allocated;
  }
  const struct mallinfo2 info = ::mallinfo2();
  return info.uordblks + info.hblkhd;
}
namespace {

// Command results feeding further commands must settle; a chain longer than this is a bug.
constexpr std::size_t kRoundsMax = 10'000;

std::string Describe(const Output& output) {
  std::string text = std::to_string(output.commands.size()) + " commands [";
  for (const auto& c : output.commands) {
    text += log::CommandKind(c) + "#" + std::to_string(c.id.value) + " ";
  }
  return text + "], " + std::to_string(output.decisions.size()) + " decisions";
}

}  // namespace

Runtime::Runtime(log::EventLog& log, Executor& executor, Options options)
    : log_(log), executor_(executor), options_(std::move(options)) {
  if (options_.appends == Appends::kSynchronous) return;
  next_seq_ = log_.LastSeq() + 1;
  writer_ = std::make_unique<LogWriter>(log_, log::AppendOptions{options_.sync},
                                        static_cast<bool>(options_.on_ack));
}

Runtime::~Runtime() {
  writer_.reset();  // First: the writer finishes while everything it was handed still stands.
}

void Runtime::Deliver() {
  if (writer_ == nullptr) return;
  // Frees what the writer has written: a snapshot's state copy is trimmed away by the writer's
  // next snapshot (LogWriter::WriteSnapshot).
  const std::vector<Appended> appended = writer_->Collect();
  for (const Appended& a : appended) {
    if (a.snapshot) {
      if (options_.observer != nullptr) options_.observer->OnSnapshot(a.last);
      continue;
    }
    if (options_.observer != nullptr) {
      options_.observer->OnAppend(a.records, a.bytes, a.took, a.last);
    }
    const Seq first = a.last + 1 - a.payloads.size();
    for (std::size_t i = 0; i < a.payloads.size(); ++i) options_.on_ack(first + i, a.payloads[i]);
  }
}

void Runtime::Flush() {
  if (writer_ == nullptr) return;
  try {
    writer_->Drain();
  } catch (...) {
    Deliver();  // What was appended before the failure is still acknowledged.
    throw;
  }
  Deliver();
}

PipelineStats Runtime::pipeline_stats() const {
  if (writer_ == nullptr) return PipelineStats{};
  PipelineStats stats = writer_->stats();
  stats.copy = snapshot_copy_;
  return stats;
}

std::vector<Seq> Runtime::AppendAcked(log::AppendBatch batch) {
  std::vector<std::string> copies;
  if (options_.on_ack) copies = batch.events;
  std::size_t bytes = 0;
  for (const auto& e : batch.events) bytes += e.size();
  const std::size_t records = batch.events.size();
  const auto start = std::chrono::steady_clock::now();
  auto seqs = log_.Append(std::move(batch), log::AppendOptions{options_.sync});
  if (options_.observer != nullptr && !seqs.empty()) {
    options_.observer->OnAppend(records, bytes, std::chrono::steady_clock::now() - start,
                                seqs.back());
  }
  if (options_.on_ack) {
    for (std::size_t i = 0; i < seqs.size(); ++i) options_.on_ack(seqs[i], copies[i]);
  }
  return seqs;
}

void Runtime::AppendOutputs(std::vector<std::pair<Seq, Output>> outputs) {
  if (outputs.empty()) return;
  if (options_.observer != nullptr) {
    for (const auto& [cause, output] : outputs) options_.observer->OnOutput(cause, output);
  }
  if (writer_ != nullptr) {
    const Seq first = next_seq_;
    next_seq_ += outputs.size();
    writer_->Push(Records{.first = first, .outputs = std::move(outputs)});
    return;
  }
  log::AppendBatch batch;
  for (auto& [cause, output] : outputs) {
    AddOutput(batch, cause, output);
    // Encoded, the decisions are not needed again: the batch is their only copy from here on.
    for (auto& d : output.decisions) d.body = DecisionBody{};
  }
  outputs.clear();
  AppendAcked(std::move(batch));
}

void Runtime::MaybeSnapshot() {
  if (options_.snapshot_every_events == 0) return;
  if (events_since_snapshot_ < options_.snapshot_every_events) return;
  if (state_.now - snapshot_taken_ < options_.snapshot_min_interval) return;
  snapshot_taken_ = state_.now;
  events_since_snapshot_ = 0;
  // Keyed by the last record folded, so every output of the folded events is below the key.
  const Seq at = writer_ != nullptr ? next_seq_ - 1 : log_.LastSeq();
  if (writer_ != nullptr) {
    // The writer encodes a copy once every record up to `at` is written.
    const auto start = std::chrono::steady_clock::now();
    auto copy = SnapshotCopy();
    snapshot_copy_ += std::chrono::steady_clock::now() - start;
    writer_->Push(Records{.first = next_seq_, .snapshot = std::move(copy)});
  } else {
    WriteSnapshot(at);
  }
  snapshot_times_[at] = state_.now;
  if (options_.retain_age.value == 0 && options_.retain_bytes == 0) return;
  Flush();  // Retention cuts at snapshots: with pipelined appends, once this one is written.
  ApplyRetention();
}

std::unique_ptr<const State> Runtime::SnapshotCopy() {
  // The copy is only encoded and hashed: its pods are copied without the views a pass reads.
  // The State's other members are copied with the pods moved aside (a move keeps the nodes
  // the views point at), then the pods come back.
  struct Aside {
    State& state;
    PodTable pods;
    ~Aside() { state.cluster.pods = std::move(pods); }
  } aside{state_, std::move(state_.cluster.pods)};
  auto copy = std::make_unique<State>(state_);
  copy->cluster.pods = PodTable::PodsOnly(aside.pods);
  return copy;
}

void Runtime::WriteSnapshot(Seq at) {
  PutSnapshot(log_, state_, at);
  // Encoding a snapshot frees as much as it allocated: hand those pages back to the system
  // rather than keep them as a resident high-water mark between snapshots.
  ReleaseFreeMemory();
  if (options_.observer != nullptr) options_.observer->OnSnapshot(at);
}

std::vector<Command> Runtime::Fold(const std::vector<Event>& events, Seq first,
                                   std::vector<std::pair<Seq, Output>>& outputs) {
  std::vector<Command> to_run;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const Seq seq{first + i};
    // The clock is read only for an observer.
    const auto start = options_.observer != nullptr ? std::chrono::steady_clock::now()
                                                    : std::chrono::steady_clock::time_point{};
    Output out = Step(state_, seq, events[i]);
    if (options_.observer != nullptr) {
      const auto took = std::chrono::steady_clock::now() - start;
      options_.observer->OnEvent(seq, events[i]);
      options_.observer->OnFolded(seq, events[i], out, took);
    }
    ++events_folded_;
    ++events_since_snapshot_;
    if (out.empty()) continue;
    to_run.insert(to_run.end(), out.commands.begin(), out.commands.end());
    outputs.emplace_back(seq, std::move(out));
  }
  return to_run;
}

std::vector<Command> Runtime::AppendAndFold(std::vector<Event> events) {
  if (events.empty()) return {};
  std::vector<std::pair<Seq, Output>> outputs;
  std::vector<Command> to_run;
  if (writer_ != nullptr) {
    Deliver();
    // The writer encodes the events while the core folds them.
    auto shared = std::make_shared<const std::vector<Event>>(std::move(events));
    const Seq first = next_seq_;
    next_seq_ += shared->size();
    writer_->Push(Records{.first = first, .events = shared});
    to_run = Fold(*shared, first, outputs);
  } else {
    log::AppendBatch batch;
    for (const auto& e : events) batch.events.push_back(log::EncodeEvent(e));
    auto seqs = AppendAcked(std::move(batch));
    // One append numbers its records one after another.
    assert(seqs.size() == events.size() && seqs.back() + 1 == seqs.front() + seqs.size());
    to_run = Fold(events, seqs.front(), outputs);
  }
  // The outputs are durable before any command of theirs runs (with pipelined appends, once
  // Execute has waited for the writer, or not at all with kPipelinedAhead).
  AppendOutputs(std::move(outputs));
  MaybeSnapshot();
  return to_run;
}

void Runtime::ApplyRetention() {
  if (options_.retain_age.value > 0) {
    Seq cut{0};
    for (const auto& [seq, taken] : snapshot_times_) {
      if (state_.now - taken >= options_.retain_age) cut = seq;
    }
    if (cut >= log_.FirstSeq()) log_.Truncate(cut);
  }
  if (options_.retain_bytes > 0) {
    while (log_.DiskBytes() > options_.retain_bytes) {
      const std::vector<Seq> snapshots = log_.SnapshotSeqs();
      // The oldest snapshot above the current start, never the newest: recovery needs one.
      auto next = std::find_if(snapshots.begin(), snapshots.end(),
                               [&](Seq s) { return s >= log_.FirstSeq(); });
      if (next == snapshots.end() || *next == snapshots.back()) break;
      log_.Truncate(*next);
    }
  }
  std::erase_if(snapshot_times_,
                [&](const auto& entry) { return entry.first < log_.FirstSeq() - 1; });
}

std::vector<Event> Runtime::Execute(const Command& command) {
  if (options_.appends == Appends::kPipelined) Flush();
  if (options_.observer == nullptr || executor_.Defers()) return executor_.Execute(command);
  const auto start = std::chrono::steady_clock::now();
  std::vector<Event> results = executor_.Execute(command);
  options_.observer->OnExecuted(command, results, std::chrono::steady_clock::now() - start);
  return results;
}

void Runtime::Executed(const Command& command, const std::vector<Event>& results,
                       std::chrono::nanoseconds took) {
  if (options_.observer != nullptr) options_.observer->OnExecuted(command, results, took);
}

void Runtime::Ingest(std::vector<Event> events) {
  std::deque<Event> pending(std::make_move_iterator(events.begin()),
                            std::make_move_iterator(events.end()));
  for (std::size_t round = 0; !pending.empty(); ++round) {
    if (round >= kRoundsMax) throw std::logic_error("runtime: command results did not settle");
    std::vector<Event> now(std::make_move_iterator(pending.begin()),
                           std::make_move_iterator(pending.end()));
    pending.clear();
    for (const Command& command : AppendAndFold(std::move(now))) {
      for (auto& result : Execute(command)) pending.push_back(std::move(result));
    }
  }
}

RecoveryReport Runtime::Recover() {
  RecoveryReport report;
  Seq from{1};
  if (auto snapshot = log_.SnapshotAtOrBelow(Seq{0})) {
    std::uint64_t stored_hash = 0;
    state_ = log::DecodeSnapshot(snapshot->parts, &stored_hash);
    if (StateHash(state_) != stored_hash) {
      throw DivergenceError("snapshot at seq " + std::to_string(snapshot->seq.value) +
                            " does not match its stored state hash");
    }
    report.snapshot_seq = snapshot->seq;
    from = snapshot->seq + 1;
  }
  std::map<Seq, Output> unrecorded;  // Outputs produced now that the log does not hold yet.
  log_.Scan(from, Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    if (const auto* event = std::get_if<Event>(&entry)) {
      Output out = Step(state_, Seq{record.seq}, *event);
      if (options_.observer != nullptr) options_.observer->OnEvent(Seq{record.seq}, *event);
      ++report.events_folded;
      if (!out.empty()) unrecorded.emplace(Seq{record.seq}, std::move(out));
      return true;
    }
    const auto& recorded = std::get<log::OutputRecord>(entry);
    auto it = unrecorded.find(recorded.cause);
    if (it == unrecorded.end() || it->second.commands != recorded.commands) {
      throw DivergenceError("recovery: the output recorded for seq " +
                            std::to_string(recorded.cause.value) +
                            " differs from what this build produces (" +
                            (it == unrecorded.end() ? "nothing" : Describe(it->second)) + ")");
    }
    unrecorded.erase(it);
    return true;
  });
  events_folded_ = report.events_folded;
  std::vector<std::pair<Seq, Output>> missing(unrecorded.begin(), unrecorded.end());
  report.outputs_restored = missing.size();
  AppendOutputs(std::move(missing));
  // Re-drive every command without a result; the executor's idempotency keys make this safe.
  std::vector<Command> inflight;
  for (const auto& [id, command] : state_.inflight) inflight.push_back(command);
  report.commands_redriven = inflight.size();
  std::vector<Event> results;
  for (const auto& command : inflight) {
    for (auto& e : Execute(command)) results.push_back(std::move(e));
  }
  Ingest(std::move(results));
  return report;
}

}  // namespace tenon::runtime
