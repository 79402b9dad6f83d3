// Lanes: the commands of `tenon run` executed off the fold thread.
//
//   fold thread --Execute (enqueue only)--> lane queue --worker--> executor (AWS, Kubernetes)
//   worker --Completion--> done queue --Drain (fold thread)--> Runtime::Executed + Ingest
//
// Each lane has one worker, so its commands run one at a time in the order the core issued
// them: a command on a NodeClaim or a Node never overtakes an earlier one on the same object,
// and an executor that is not thread-safe (an AWS connection) stays on one thread. A lane's
// queue holds at most `capacity` commands. When it is full, a command is parked on the fold
// thread, in order, and handed over as room frees (Drain): it is never dropped nor answered
// with a failure, since the core treats CommandFailed as final for most kinds (only launches
// are retried) and every command is already in the log.
//
// A command past its lane's deadline is not cancelled, and no result is made up for it: the
// call it waits on has timeouts of its own, and its one real result is folded when it comes.
// The deadline only marks the lane stuck (Status), which the controller reports as a metric, a
// warning and a line of /healthz, while the fold loop and the other lanes go on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "adapters/runtime/runtime.h"

namespace tenon::runtime {

using Clock = std::chrono::steady_clock;

struct LaneOptions {
  std::string name;  // "aws", "kube": the metrics' and the health line's label.
  // Commands handed to the worker and not yet finished, at most.
  std::size_t capacity = 1024;
  // How long a command may take from its issue to its result before the lane counts as stuck.
  std::chrono::milliseconds deadline{60'000};
};

struct Lane {
  LaneOptions options;
  // Not owned; called on the lane's worker only. It must not read the runtime's state: a
  // command carries all its effect needs.
  Executor* executor = nullptr;
};

// A command a worker executed, with its results and how long the executor took.
struct Completion {
  Command command;
  std::vector<Event> results;
  std::chrono::nanoseconds took{0};
};

// One lane as the fold thread sees it.
struct LaneStatus {
  std::string name;
  std::size_t queued = 0;  // Handed to the worker, not finished (the running one included).
  std::size_t parked = 0;  // Waiting on the fold thread for room in the queue.
  std::size_t capacity = 0;
  std::chrono::milliseconds deadline{0};
  // Since the oldest unfinished command (queued, running or parked) was handed to the lane;
  // zero when there is none.
  std::chrono::nanoseconds oldest{0};
  bool full() const { return parked > 0 || queued >= capacity; }
  bool late() const { return oldest > deadline; }
  bool stuck() const { return full() || late(); }
  // "aws: oldest command 75 s old (deadline 60 s), 3 queued, 0 parked"; empty when not stuck.
  std::string Problem() const;
};

class Lanes : public Executor {
 public:
  // Sends each command to the lane `route` names (an index into `lanes`). Starts the workers.
  Lanes(std::vector<Lane> lanes, std::function<std::size_t(const Command&)> route,
        std::function<Clock::time_point()> clock = {});
  ~Lanes() override;
  Lanes(const Lanes&) = delete;
  Lanes& operator=(const Lanes&) = delete;

  // Fold thread: hands the command to its lane (or parks it) and returns no events; its results
  // come back through Drain.
  std::vector<Event> Execute(const Command& command) override;
  bool Defers() const override { return true; }

  // Fold thread: the commands finished since the last call, in the order they finished; hands
  // parked commands over as room frees. Rethrows what a worker's executor threw (a
  // kube::LeadershipLost among others): that lane runs nothing more.
  std::vector<Completion> Drain();
  // Waits until a completion is ready to Drain or `timeout` passes (tests, benchmarks).
  bool WaitForCompletion(std::chrono::milliseconds timeout);

  std::vector<LaneStatus> Status() const;
  std::size_t size() const { return lanes_.size(); }

  // Ends the workers once their current command returns. Commands still queued or parked stay
  // without a result: in flight in the log, the next start re-drives them.
  void Stop();

 private:
  struct Item {
    Command command;
    Clock::time_point issued;
  };
  struct Worker;
  void Run(Worker& worker);
  void HandOver(Worker& worker, Item item);  // Under the worker's lock.
  Clock::time_point Now() const;

  std::function<std::size_t(const Command&)> route_;
  std::function<Clock::time_point()> clock_;
  std::vector<std::unique_ptr<Worker>> lanes_;
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::vector<Completion> done_;
  std::exception_ptr failure_;
};

}  // namespace tenon::runtime
