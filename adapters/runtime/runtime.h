// The runtime joins adapters, the log and the core:
//
//   events --append (durable)--> log --fold in seq order--> Step --> output
//   output --append (durable)--> log --> execute commands --> result events --> ...
//
// A command is always in the log before it runs (unless a run that nothing outlives asks
// otherwise, Appends::kPipelinedAhead), and its result always comes back as an event.
//
// With pipelined appends (Options::appends) the core does not wait for the log: the runtime
// gives each record its sequence number itself, folds at once, and one writer thread encodes
// and appends the records in the same order, so the log is always a prefix of what was folded.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "log/event_log.h"
#include "reducers/core.h"

namespace tenon::runtime {

// Sets glibc's allocator up for a process that runs for weeks: at most two malloc arenas (one per
// thread by default, each holding on to freed memory of its own) and a fixed mmap threshold, so
// that large short-lived buffers go back to the system when freed instead of raising the
// threshold and fragmenting the heap. Call once, first thing in main. A program linked with
// jemalloc (tenon is: cmd/malloc_conf.cc) takes its settings from there; this changes nothing.
void TuneAllocatorForLongRun();

// Hands memory the allocator holds free back to the system: malloc_trim under glibc, a purge
// of every arena under jemalloc (whichever this process runs with).
void ReleaseFreeMemory();
// Bytes the allocator has handed out and not had back, in every arena: jemalloc's
// stats.allocated when the program links jemalloc, glibc's mallinfo2 otherwise.
std::uint64_t HeapBytesInUse();

// Performs commands against the world. Results are returned as events (possibly none, when the
// result arrives later through another adapter). Implementations must be idempotent per command
// id: after a crash the runtime re-drives every command that has no result.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::vector<Event> Execute(const Command& command) = 0;
  // True when Execute only hands the command over (runtime::Lanes): its results and its time
  // come back later, and the caller reports them through Runtime::Executed.
  virtual bool Defers() const { return false; }
};

// Sees what the runtime does, for metrics and logs; called on the runtime's thread. Must not
// throw. With synchronous appends, each thing is durable before it is seen; with pipelined
// ones, OnAppend and OnSnapshot (and on_ack) come once the writer has written them (at the
// runtime's next fold, command or Flush), the rest as the core folds.
class Observer {
 public:
  virtual ~Observer() = default;
  // One append to the log: how many records, their bytes, how long the write took, and the
  // highest sequence number written.
  virtual void OnAppend(std::size_t /*records*/, std::size_t /*bytes*/,
                        std::chrono::nanoseconds /*latency*/, Seq /*last*/) {}
  // An event folded (also during recovery), with its sequence number.
  virtual void OnEvent(Seq /*seq*/, const Event& /*event*/) {}
  // What the core produced for the event at `cause` (not called for empty outputs, nor for
  // outputs already recorded when recovery folds them).
  virtual void OnOutput(Seq /*cause*/, const Output& /*output*/) {}
  // A command executed, with the events it returned and how long it took.
  virtual void OnExecuted(const Command& /*command*/, const std::vector<Event>& /*results*/,
                          std::chrono::nanoseconds /*took*/) {}
  virtual void OnSnapshot(Seq /*seq*/) {}
  // One live fold (not during recovery): the event, what the core produced (possibly empty)
  // and how long Step took. Scheduling and disruption simulations run inside Step, so this is
  // where their duration can be measured honestly.
  virtual void OnFolded(Seq /*seq*/, const Event& /*event*/, const Output& /*output*/,
                        std::chrono::nanoseconds /*took*/) {}
};

// Hands every callback to each of several observers, in the order they were added (metrics,
// then logs, ...). Not owning.
class ObserverList : public Observer {
 public:
  void Add(Observer* observer) { observers_.push_back(observer); }
  void OnAppend(std::size_t records, std::size_t bytes, std::chrono::nanoseconds latency,
                Seq last) override {
    for (auto* o : observers_) o->OnAppend(records, bytes, latency, last);
  }
  void OnEvent(Seq seq, const Event& event) override {
    for (auto* o : observers_) o->OnEvent(seq, event);
  }
  void OnOutput(Seq cause, const Output& output) override {
    for (auto* o : observers_) o->OnOutput(cause, output);
  }
  void OnExecuted(const Command& command, const std::vector<Event>& results,
                  std::chrono::nanoseconds took) override {
    for (auto* o : observers_) o->OnExecuted(command, results, took);
  }
  void OnSnapshot(Seq seq) override {
    for (auto* o : observers_) o->OnSnapshot(seq);
  }
  void OnFolded(Seq seq, const Event& event, const Output& output,
                std::chrono::nanoseconds took) override {
    for (auto* o : observers_) o->OnFolded(seq, event, output, took);
  }

 private:
  std::vector<Observer*> observers_;
};

// How the log's appends go with the fold.
enum class Appends {
  // On the runtime's thread: each event is durable before it is folded, and each output before
  // any command of its runs. `tenon run` against a real cluster: whatever a command did to the
  // cluster or the cloud, the log holds it after a crash.
  kSynchronous,
  // On a writer thread, overlapping the core's Step: the runtime gives sequence numbers itself
  // (it must be the log's only writer) and the writer encodes and appends in fold order. Before
  // a command runs, the runtime waits until its output is durable, so a crash can lose only
  // what nothing outside the process has seen yet: the same outcomes as kSynchronous (a caller
  // that persists something of its own calls Flush first, as Simulate does before saving its
  // world).
  kPipelined,
  // As kPipelined, but commands run without waiting for the log. Only for runs where nothing the
  // commands change outlives the process together with the log (a world in memory; a log
  // removed at exit): a crash there leaves no world to be consistent with.
  kPipelinedAhead,
};

// Whether the log of a run with these appends needs RocksDB's write-ahead log
// (log::OpenOptions::write_ahead_log): not when its commands run ahead of it, since its log is
// removed with the process.
inline bool NeedsWriteAheadLog(Appends appends) {
  return appends != Appends::kPipelinedAhead;
}

struct Options {
  std::uint64_t snapshot_every_events = 1000;
  // And at least this much cluster time (Tick) since the last snapshot: a large cluster folds
  // thousands of events a minute, and each snapshot holds the whole state.
  Duration snapshot_min_interval{0};
  // Retention, applied after each snapshot (0: keep everything). Age: records older (in
  // cluster time) than the newest snapshot at least this old are dropped. Size: while the log
  // holds more bytes than this, it is cut at its oldest snapshot but the newest.
  Duration retain_age{0};
  std::uint64_t retain_bytes = 0;
  bool sync = false;  // fsync the WAL on every append.
  Appends appends = Appends::kSynchronous;
  // Called after every append with the sequence numbers and payloads the log acknowledged (with
  // pipelined appends, on the runtime's thread at its next fold, command or Flush).
  std::function<void(Seq, const std::string&)> on_ack;
  Observer* observer = nullptr;  // Not owned; may be null.
};

// Where pipelined appends' time went.
struct PipelineStats {
  std::chrono::nanoseconds encode{0};    // On the writer thread: events, outputs, decisions.
  std::chrono::nanoseconds append{0};    // On the writer thread: EventLog::Append.
  std::chrono::nanoseconds snapshot{0};  // On the writer thread: encoding and writing them.
  std::chrono::nanoseconds copy{0};      // On the runtime's thread: the states they encode.
  std::chrono::nanoseconds waited{0};    // On the runtime's thread: for the writer.
  std::uint64_t appends = 0;
  std::uint64_t snapshots = 0;
};

class LogWriter;  // Pipelined appends' writer thread (log_writer.h).

struct RecoveryReport {
  Seq snapshot_seq{0};  // 0: folded from the start.
  std::uint64_t events_folded = 0;
  std::uint64_t outputs_restored = 0;  // Outputs a crash left unwritten, appended now.
  std::uint64_t commands_redriven = 0;
};

// The recorded output of an event differs from what the core produces now.
class DivergenceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Runtime {
 public:
  Runtime(log::EventLog& log, Executor& executor, Options options);
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  // With pipelined appends, lets the writer append everything folded before it stops (so an
  // exception that unwinds the runtime leaves the log a prefix of the fold); the observer sees
  // nothing more: call Flush first to see every append and learn of any failure.
  ~Runtime();

  // Loads the newest snapshot, folds the events after it, appends outputs a crash left
  // unwritten, then re-drives every command still in flight. Call once, before Ingest.
  RecoveryReport Recover();

  // Appends `events`, folds them, appends their outputs, executes their commands, and does the
  // same for the results, until nothing is left (bounded by kRoundsMax).
  void Ingest(std::vector<Event> events);

  // A command a deferring executor (Executor::Defers) ran: hands it to the observer with its
  // results and time. Fold the results with Ingest.
  void Executed(const Command& command, const std::vector<Event>& results,
                std::chrono::nanoseconds took);

  // Waits until the log holds every record of what was folded and hands the observer and
  // on_ack what the writer appended (pipelined appends; nothing to wait for otherwise). Call it
  // before reading the log, or persisting anything that must not get ahead of it. Throws the
  // writer's failure (a LogError when the log failed), as every later call does.
  void Flush();
  // Where the pipelined appends' time went (zero with synchronous appends).
  PipelineStats pipeline_stats() const;

  const State& state() const { return state_; }
  std::uint64_t events_folded() const { return events_folded_; }

 private:
  std::vector<Command> AppendAndFold(std::vector<Event> events);
  // Folds `events` at seqs first, first + 1, ...; adds their non-empty outputs to `outputs` and
  // returns their commands.
  std::vector<Command> Fold(const std::vector<Event>& events, Seq first,
                            std::vector<std::pair<Seq, Output>>& outputs);
  // Consumes `outputs`: each decision is freed once encoded (a disruption pass's can be MBs).
  void AppendOutputs(std::vector<std::pair<Seq, Output>> outputs);
  // Hands the observer and on_ack what the writer appended since the last time.
  void Deliver();
  void MaybeSnapshot();
  // Encodes and writes the snapshot at `at` on this thread (synchronous appends).
  void WriteSnapshot(Seq at);
  // The state as the writer thread encodes it for a snapshot (PodTable::PodsOnly).
  std::unique_ptr<const State> SnapshotCopy();
  std::vector<Event> Execute(const Command& command);
  std::vector<Seq> AppendAcked(log::AppendBatch batch);

  log::EventLog& log_;
  Executor& executor_;
  Options options_;
  // Pipelined appends only: the writer thread, and the seq the next record will be given.
  std::unique_ptr<LogWriter> writer_;
  Seq next_seq_{0};
  std::chrono::nanoseconds snapshot_copy_{0};  // Copying the state for the writer's snapshots.
  State state_;
  std::uint64_t events_folded_ = 0;
  std::uint64_t events_since_snapshot_ = 0;
  Instant snapshot_taken_;  // Cluster time of the last snapshot this process wrote.
  // The snapshots this process wrote, by seq, with their cluster time (older ones, from before
  // a restart, have no known time and go only with a cut above them).
  std::map<Seq, Instant> snapshot_times_;
  void ApplyRetention();
};

}  // namespace tenon::runtime
