// The runtime's log writer thread, for pipelined appends (Options::appends). Private to
// adapters/runtime.
//
// The runtime folds events under sequence numbers it gives them itself and hands the events
// and their outputs over here; one thread encodes them and appends them to the log in the order
// they were handed over, checking that the log gives each record the sequence number it was
// folded under. The log is therefore at every moment a prefix of what was folded.
//
// Everything handed over comes back to the runtime's thread to be freed (Collect): events and
// outputs hold Shared<T> values that the State may hold too, and Shared<T>::Mutable decides from
// the use count whether it may change a value in place. Counting down on the runtime's thread
// only keeps that decision ordered after the writer's last read.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "adapters/runtime/runtime.h"
#include "log/event_log.h"
#include "reducers/core.h"

namespace tenon::runtime {

// What both ways of appending write, the synchronous runtime's and the writer's: one output's
// record (added to `batch` with its decisions), and the state's snapshot at `at`.
void AddOutput(log::AppendBatch& batch, Seq cause, const Output& output);
void PutSnapshot(log::EventLog& log, const State& state, Seq at);

// Most hand-overs waiting for the writer (a few a tick: enough to ride out a snapshot's write),
// most decisions among them (a disruption pass's can be MBs) and most snapshots (each a copy
// of the State): the runtime waits for room beyond these, so the queue's memory stays bounded.
inline constexpr std::size_t kQueuedMax = 1024;
inline constexpr std::size_t kQueuedDecisionsMax = 64;
inline constexpr std::size_t kQueuedSnapshotsMax = 1;

// Records at consecutive sequence numbers from `first`: the events, then one output record per
// output (with its decisions beside it). Or, alone, a snapshot.
struct Records {
  Seq first{0};
  // Shared with the runtime, which folds them while the writer encodes them; may be null.
  std::shared_ptr<const std::vector<Event>> events = {};
  std::vector<std::pair<Seq, Output>> outputs = {};
  // A copy of the state after folding seq `first - 1`, to write as that seq's snapshot once
  // every record up to it is written: the copy takes a third of the time encoding does.
  std::unique_ptr<const State> snapshot = {};
};

// One append the writer made, for the runtime's observer and on_ack.
struct Appended {
  bool snapshot = false;  // A snapshot at `last` was written, no records.
  std::size_t records = 0;
  std::size_t bytes = 0;
  std::chrono::nanoseconds took{0};  // In EventLog::Append.
  Seq last{0};
  // The records' payloads, seqs last - size + 1 .. last: only when acknowledgements are asked.
  std::vector<std::string> payloads;
};

class LogWriter {
 public:
  LogWriter(log::EventLog& log, log::AppendOptions options, bool keep_payloads);
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;
  // Appends what is queued (unless the writer failed), then stops the thread. Throws nothing.
  ~LogWriter();

  // Queues `records`, waiting while kQueuedMax hand-overs are queued. Rethrows a failure.
  void Push(Records records);
  // Waits until everything pushed is in the log. Rethrows a failure.
  void Drain();
  // The appends made since the last call, in order; frees what the writer is done with.
  std::vector<Appended> Collect();
  PipelineStats stats() const;

 private:
  void Run();
  // Takes the next hand-overs to write together: one snapshot, or records up to one snapshot
  // (at least one hand-over, at most kAppendBatchMax records).
  std::vector<Records> TakeGroup();
  Appended Write(std::vector<Records>& group);
  Appended WriteSnapshot(const State& state, Seq at);
  void ThrowIfFailed() const;
  // Whether `records` may join the queue now (always, once there is nothing ahead of it).
  bool HasRoomFor(const Records& records) const;
  // Waits on `cv` until `ready`, adding the time to stats_.waited.
  template <class Ready>
  void WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Ready ready);

  log::EventLog& log_;
  const log::AppendOptions options_;
  const bool keep_payloads_;
  mutable std::mutex mu_;
  std::condition_variable work_;  // Something queued, or stop.
  std::condition_variable room_;  // The queue shrank, the writer went idle, or failed.
  std::deque<Records> queue_;
  bool busy_ = false;          // The writer holds a group taken from the queue.
  std::size_t decisions_ = 0;  // In the queue.
  std::size_t snapshots_ = 0;  // Pushed and not yet written.
  bool stop_ = false;
  std::exception_ptr failure_;  // Set once; the writer writes nothing after it.
  std::vector<Appended> appended_;
  std::vector<Records> done_;  // Written, waiting to be freed on the runtime's thread.
  PipelineStats stats_;
  std::thread thread_;  // Last: starts once everything above is initialised.
};

}  // namespace tenon::runtime
