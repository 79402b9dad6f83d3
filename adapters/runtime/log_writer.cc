#include "adapters/runtime/log_writer.h"

#include <pthread.h>

#include <cassert>
#include <stdexcept>

#include "adapters/runtime/runtime.h"
#include "log/codec.h"

namespace tenon::runtime {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Records and decisions one hand-over puts into an append.
std::size_t CountRecords(const Records& r) {
  std::size_t n = r.events ? r.events->size() : 0;
  for (const auto& [cause, output] : r.outputs) n += 1 + output.decisions.size();
  return n;
}

std::size_t CountDecisions(const Records& r) {
  std::size_t n = 0;
  for (const auto& [cause, output] : r.outputs) n += output.decisions.size();
  return n;
}

std::string SeqRange(Seq first, std::size_t count) {
  return std::to_string(first.value) + ".." + std::to_string((first + count - 1).value);
}

// What the runtime's thread rethrows when the writer failed on `group`: a LogError of the same
// kind for a log error, else a runtime_error, saying which records and how far the log got.
std::exception_ptr Failure(const std::vector<Records>& group, Seq log_last,
                           const std::exception& e) {
  std::size_t records = 0;
  for (const Records& r : group) records += (r.events ? r.events->size() : 0) + r.outputs.size();
  const std::string which =
      group.front().snapshot
          ? "write the snapshot at seq " + std::to_string((group.front().first - 1).value)
          : "append the records folded as seqs " + SeqRange(group.front().first, records);
  const std::string what = "runtime: the log writer thread failed to " + which +
                           " (the log holds through " + std::to_string(log_last.value) +
                           " and takes nothing more): " + e.what();
  if (const auto* log_error = dynamic_cast<const log::LogError*>(&e)) {
    return std::make_exception_ptr(log::LogError(log_error->kind(), log_error->key(), what));
  }
  return std::make_exception_ptr(std::runtime_error(what));
}

}  // namespace

LogWriter::LogWriter(log::EventLog& log, log::AppendOptions options, bool keep_payloads)
    : log_(log), options_(options), keep_payloads_(keep_payloads), thread_([this] { Run(); }) {}

LogWriter::~LogWriter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

template <class Ready>
void LogWriter::WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                        Ready ready) {
  if (ready()) return;
  const auto start = SteadyClock::now();
  cv.wait(lock, ready);
  stats_.waited += SteadyClock::now() - start;
}

void LogWriter::ThrowIfFailed() const {
  if (failure_) std::rethrow_exception(failure_);
}

bool LogWriter::HasRoomFor(const Records& records) const {
  if (queue_.empty() && !busy_) return true;
  if (records.snapshot != nullptr && snapshots_ >= kQueuedSnapshotsMax) return false;
  const std::size_t decisions = CountDecisions(records);
  return queue_.size() < kQueuedMax && (decisions == 0 || decisions_ < kQueuedDecisionsMax);
}

void LogWriter::Push(Records records) {
  assert((records.snapshot != nullptr) != (CountRecords(records) > 0));
  {
    std::unique_lock lock(mu_);
    ThrowIfFailed();
    WaitFor(lock, room_, [&] { return HasRoomFor(records) || failure_; });
    ThrowIfFailed();
    snapshots_ += records.snapshot != nullptr ? 1 : 0;
    decisions_ += CountDecisions(records);
    queue_.push_back(std::move(records));
  }
  work_.notify_one();
}

void LogWriter::Drain() {
  std::unique_lock lock(mu_);
  WaitFor(lock, room_, [&] { return (queue_.empty() && !busy_) || failure_; });
  ThrowIfFailed();
}

std::vector<Appended> LogWriter::Collect() {
  std::vector<Appended> appended;
  std::vector<Records> done;  // Freed here, on the caller's thread, after the lock is let go.
  std::lock_guard lock(mu_);
  appended.swap(appended_);
  done.swap(done_);
  return appended;
}

PipelineStats LogWriter::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::vector<Records> LogWriter::TakeGroup() {
  std::unique_lock lock(mu_);
  work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
  std::vector<Records> group;
  std::size_t records = 0;
  while (!queue_.empty()) {
    const bool snapshot = queue_.front().snapshot != nullptr;
    const std::size_t n = CountRecords(queue_.front());
    if (!group.empty() && (snapshot || records + n > log::kAppendBatchMax)) break;
    records += n;
    decisions_ -= CountDecisions(queue_.front());
    group.push_back(std::move(queue_.front()));
    queue_.pop_front();
    if (snapshot) break;
  }
  busy_ = !group.empty();
  room_.notify_all();
  return group;
}

// Encodes the group's records in sequence order and appends them in one batch; throws when the
// log fails or gives them other sequence numbers than they were folded under.
Appended LogWriter::Write(std::vector<Records>& group) {
  const Seq first = group.front().first;
  const auto encode_start = SteadyClock::now();
  log::AppendBatch batch;
  for (const Records& r : group) {
    // Hand-overs follow one another without a gap: only a bug in the runtime breaks that.
    assert(r.first == first + batch.events.size());
    if (r.events) {
      for (const Event& e : *r.events) batch.events.push_back(log::EncodeEvent(e));
    }
    for (const auto& [cause, output] : r.outputs) AddOutput(batch, cause, output);
  }
  Appended appended;
  appended.records = batch.events.size();
  for (const auto& payload : batch.events) appended.bytes += payload.size();
  if (keep_payloads_) appended.payloads = batch.events;
  const auto append_start = SteadyClock::now();
  const std::vector<Seq> seqs = log_.Append(std::move(batch), options_);
  appended.took = SteadyClock::now() - append_start;
  if (seqs.size() != appended.records || seqs.front() != first ||
      seqs.back() != first + appended.records - 1) {
    throw log::LogError(log::ErrorKind::kInvalid, seqs.empty() ? Seq{0} : seqs.front(),
                        "the log gave them seqs " +
                            (seqs.empty() ? "none" : SeqRange(seqs.front(), seqs.size())) +
                            ": did something else append to this log?");
  }
  appended.last = seqs.back();
  std::lock_guard lock(mu_);
  stats_.encode += append_start - encode_start;
  stats_.append += appended.took;
  ++stats_.appends;
  return appended;
}

// Writes the snapshot of `state` at `at`, which must be the last record in the log.
Appended LogWriter::WriteSnapshot(const State& state, Seq at) {
  if (log_.LastSeq() != at) {
    throw log::LogError(log::ErrorKind::kInvalid, at,
                        "a snapshot at seq " + std::to_string(at.value) +
                            " while the log holds through " + std::to_string(log_.LastSeq().value));
  }
  const auto start = SteadyClock::now();
  PutSnapshot(log_, state, at);
  // Encoding frees as much as it allocated, and the runtime's thread has freed the previous
  // snapshot's state copy since the last one: hand those pages back to the system here, off the
  // runtime's thread (glibc's malloc_trim walks the whole heap: ~5 ms at 10,000 pods).
  ReleaseFreeMemory();
  Appended appended;
  appended.snapshot = true;
  appended.last = at;
  std::lock_guard lock(mu_);
  stats_.snapshot += SteadyClock::now() - start;
  ++stats_.snapshots;
  --snapshots_;
  return appended;
}

void LogWriter::Run() {
  ::pthread_setname_np(::pthread_self(), "tenon-log-write");  // For top and perf: 15 chars.
  for (;;) {
    std::vector<Records> group = TakeGroup();
    if (group.empty()) return;  // Stopped, with nothing left to write.
    Appended appended;
    std::exception_ptr failure;
    try {
      const Records& front = group.front();
      appended = front.snapshot ? WriteSnapshot(*front.snapshot, front.first - 1) : Write(group);
    } catch (const std::exception& e) {
      failure = Failure(group, log_.LastSeq(), e);
    }
    std::lock_guard lock(mu_);
    busy_ = false;
    for (auto& r : group) done_.push_back(std::move(r));
    if (failure) failure_ = failure;
    if (!failure) appended_.push_back(std::move(appended));
    room_.notify_all();
    if (failure_) return;
  }
}

void AddOutput(log::AppendBatch& batch, Seq cause, const Output& output) {
  batch.events.push_back(log::EncodeOutput(cause, output));
  for (const Decision& d : output.decisions) batch.decisions.push_back(log::DecisionRecordFor(d));
}

void PutSnapshot(log::EventLog& log, const State& state, Seq at) {
  auto writer = log.BeginSnapshot(at);
  log::EncodeSnapshot(state, [&](std::string_view part) { writer->Add(part); });
  writer->Commit();
}

}  // namespace tenon::runtime
