#include "adapters/runtime/lanes.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace tenon::runtime {

struct Lanes::Worker {
  LaneOptions options;
  Executor* executor = nullptr;
  mutable std::mutex mu;
  std::condition_variable wake;
  std::deque<Item> queue;   // Handed over, not started.
  std::deque<Item> parked;  // Waiting for room, in issue order.
  bool running = false;     // A command of the queue is executing.
  Clock::time_point running_since{};
  bool stopping = false;
  bool failed = false;  // Its executor threw: it runs nothing more.
  std::thread thread;
};

namespace {

std::string Seconds(std::chrono::nanoseconds d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + " s";
}

}  // namespace

std::string LaneStatus::Problem() const {
  if (!stuck()) return "";
  std::string text = name + ": ";
  if (late()) {
    text += "oldest command " + Seconds(oldest) + " old (deadline " + Seconds(deadline) + "), ";
  } else {
    text += "queue full, ";
  }
  return text + std::to_string(queued) + " queued (capacity " + std::to_string(capacity) + "), " +
         std::to_string(parked) + " parked";
}

Lanes::Lanes(std::vector<Lane> lanes, std::function<std::size_t(const Command&)> route,
             std::function<Clock::time_point()> clock)
    : route_(std::move(route)), clock_(std::move(clock)) {
  for (Lane& lane : lanes) {
    if (lane.executor == nullptr || lane.options.capacity == 0) {
      throw std::invalid_argument("lane " + lane.options.name + ": no executor or no capacity");
    }
    auto worker = std::make_unique<Worker>();
    worker->options = std::move(lane.options);
    worker->executor = lane.executor;
    lanes_.push_back(std::move(worker));
  }
  for (auto& worker : lanes_) {
    Worker* w = worker.get();
    w->thread = std::thread([this, w] { Run(*w); });
  }
}

Lanes::~Lanes() {
  Stop();
}

Clock::time_point Lanes::Now() const {
  return clock_ ? clock_() : Clock::now();
}

void Lanes::Stop() {
  for (auto& worker : lanes_) {
    {
      std::lock_guard lock(worker->mu);
      worker->stopping = true;
    }
    worker->wake.notify_all();
  }
  for (auto& worker : lanes_) {
    if (worker->thread.joinable()) worker->thread.join();
  }
}

void Lanes::HandOver(Worker& worker, Item item) {
  const std::size_t busy = worker.queue.size() + (worker.running ? 1 : 0);
  if (!worker.parked.empty() || busy >= worker.options.capacity) {
    worker.parked.push_back(std::move(item));
    return;
  }
  worker.queue.push_back(std::move(item));
  worker.wake.notify_one();
}

std::vector<Event> Lanes::Execute(const Command& command) {
  const std::size_t index = route_(command);
  if (index >= lanes_.size()) throw std::logic_error("lanes: no lane for a command");
  Worker& worker = *lanes_[index];
  Item item{command, Now()};
  std::lock_guard lock(worker.mu);
  HandOver(worker, std::move(item));
  return {};
}

void Lanes::Run(Worker& worker) {
  while (true) {
    Item item;
    {
      std::unique_lock lock(worker.mu);
      worker.wake.wait(lock, [&] { return worker.stopping || !worker.queue.empty(); });
      if (worker.stopping) return;
      item = std::move(worker.queue.front());
      worker.queue.pop_front();
      worker.running = true;
      worker.running_since = item.issued;
    }
    Completion completion;
    std::exception_ptr failure;
    try {
      const auto start = Clock::now();
      completion.results = worker.executor->Execute(item.command);
      completion.took = Clock::now() - start;
      completion.command = std::move(item.command);
    } catch (...) {
      failure = std::current_exception();
    }
    // The command stops counting as running before its completion can be drained, so that a
    // caller who has drained every completion sees an idle lane.
    {
      std::lock_guard lock(worker.mu);
      worker.running = false;
      // On a failure what is left stays in flight: a restart re-drives it.
      if (failure != nullptr) worker.failed = true;
    }
    {
      std::lock_guard lock(done_mu_);
      if (failure != nullptr) {
        if (failure_ == nullptr) failure_ = failure;
      } else {
        done_.push_back(std::move(completion));
      }
    }
    done_cv_.notify_all();
    if (failure != nullptr) return;
  }
}

std::vector<Completion> Lanes::Drain() {
  std::vector<Completion> out;
  {
    std::lock_guard lock(done_mu_);
    if (failure_ != nullptr) std::rethrow_exception(failure_);
    out.swap(done_);
  }
  for (auto& worker : lanes_) {
    std::lock_guard lock(worker->mu);
    if (worker->failed) continue;
    while (!worker->parked.empty() &&
           worker->queue.size() + (worker->running ? 1 : 0) < worker->options.capacity) {
      worker->queue.push_back(std::move(worker->parked.front()));
      worker->parked.pop_front();
      worker->wake.notify_one();
    }
  }
  return out;
}

bool Lanes::WaitForCompletion(std::chrono::milliseconds timeout) {
  std::unique_lock lock(done_mu_);
  return done_cv_.wait_for(lock, timeout, [&] { return !done_.empty() || failure_ != nullptr; });
}

std::vector<LaneStatus> Lanes::Status() const {
  const auto now = Now();
  std::vector<LaneStatus> out;
  for (const auto& worker : lanes_) {
    std::lock_guard lock(worker->mu);
    LaneStatus s;
    s.name = worker->options.name;
    s.queued = worker->queue.size() + (worker->running ? 1 : 0);
    s.parked = worker->parked.size();
    s.capacity = worker->options.capacity;
    s.deadline = worker->options.deadline;
    // In issue order: the running item, then the queue, then the parked ones.
    std::optional<Clock::time_point> oldest;
    if (worker->running) {
      oldest = worker->running_since;
    } else if (!worker->queue.empty()) {
      oldest = worker->queue.front().issued;
    } else if (!worker->parked.empty()) {
      oldest = worker->parked.front().issued;
    }
    if (oldest) s.oldest = std::max(std::chrono::nanoseconds{0}, now - *oldest);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tenon::runtime
