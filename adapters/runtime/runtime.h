// The runtime joins adapters, the log and the core:
//
//   events --append (durable)--> log --fold in seq order--> Step --> output
//   output --append (durable)--> log --> execute commands --> result events --> ...
//
// A command is always in the log before it runs, and its result always comes back as an event.
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

// Sets the C allocator up for a process that runs for weeks: at most two malloc arenas (one per
// thread by default, each holding on to freed memory of its own) and a fixed mmap threshold, so
// that large short-lived buffers go back to the system when freed instead of raising the
// threshold and fragmenting the heap. Call once, first thing in main.
void TuneAllocatorForLongRun();

// Performs commands against the world. Results are returned as events (possibly none, when the
// result arrives later through another adapter). Implementations must be idempotent per command
// id: after a crash the runtime re-drives every command that has no result.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::vector<Event> Execute(const Command& command) = 0;
};

// Sees what the runtime does, for metrics and logs; called on the runtime's thread, after the
// log has made each thing durable. Must not throw.
class Observer {
 public:
  virtual ~Observer() = default;
  // One append to the log: how many records, their bytes, how long the write took, and the
  // highest sequence number written.
  virtual void OnAppend(std::size_t /*records*/, std::size_t /*bytes*/,
                        std::chrono::nanoseconds /*latency*/, log::Seq /*last*/) {}
  // An event folded (also during recovery), with its sequence number.
  virtual void OnEvent(Seq /*seq*/, const Event& /*event*/) {}
  // What the core produced for the event at `cause` (not called for empty outputs, nor for
  // outputs already recorded when recovery folds them).
  virtual void OnOutput(Seq /*cause*/, const Output& /*output*/) {}
  // A command executed, with the events it returned and how long it took.
  virtual void OnExecuted(const Command& /*command*/, const std::vector<Event>& /*results*/,
                          std::chrono::nanoseconds /*took*/) {}
  virtual void OnSnapshot(log::Seq /*seq*/) {}
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
                log::Seq last) override {
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
  void OnSnapshot(log::Seq seq) override {
    for (auto* o : observers_) o->OnSnapshot(seq);
  }
  void OnFolded(Seq seq, const Event& event, const Output& output,
                std::chrono::nanoseconds took) override {
    for (auto* o : observers_) o->OnFolded(seq, event, output, took);
  }

 private:
  std::vector<Observer*> observers_;
};

struct Options {
  std::uint64_t snapshot_every_events = 1000;
  // And at least this much cluster time (Tick) since the last snapshot: a large cluster folds
  // thousands of events a minute, and each snapshot holds the whole state.
  Nanos snapshot_min_interval{0};
  // Retention, applied after each snapshot (0: keep everything). Age: records older (in
  // cluster time) than the newest snapshot at least this old are dropped. Size: while the log
  // holds more bytes than this, it is cut at its oldest snapshot but the newest.
  Nanos retain_age{0};
  std::uint64_t retain_bytes = 0;
  bool sync = false;  // fsync the WAL on every append.
  // Called after every append with the sequence numbers and payloads the log acknowledged.
  std::function<void(log::Seq, const std::string&)> on_ack;
  Observer* observer = nullptr;  // Not owned; may be null.
};

struct RecoveryReport {
  log::Seq snapshot_seq = 0;  // 0: folded from the start.
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

  // Loads the newest snapshot, folds the events after it, appends outputs a crash left
  // unwritten, then re-drives every command still in flight. Call once, before Ingest.
  RecoveryReport Recover();

  // Appends `events`, folds them, appends their outputs, executes their commands, and does the
  // same for the results, until nothing is left (bounded by kRoundsMax).
  void Ingest(std::vector<Event> events);

  const State& state() const { return state_; }
  std::uint64_t events_folded() const { return events_folded_; }

 private:
  std::vector<Command> AppendAndFold(const std::vector<Event>& events);
  // Consumes `outputs`: each decision is freed once encoded (a disruption pass's can be MBs).
  void AppendOutputs(std::vector<std::pair<Seq, Output>> outputs);
  void MaybeSnapshot();
  std::vector<Event> Execute(const Command& command);
  std::vector<log::Seq> AppendAcked(log::AppendBatch batch);

  log::EventLog& log_;
  Executor& executor_;
  Options options_;
  State state_;
  std::uint64_t events_folded_ = 0;
  std::uint64_t events_since_snapshot_ = 0;
  Nanos snapshot_taken_{0};  // Cluster time of the last snapshot this process wrote.
  // The snapshots this process wrote, by seq, with their cluster time (older ones, from before
  // a restart, have no known time and go only with a cut above them).
  std::map<log::Seq, Nanos> snapshot_times_;
  void ApplyRetention();
};

}  // namespace tenon::runtime
