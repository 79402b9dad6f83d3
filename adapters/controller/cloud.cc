// The AWS side's threads, its event queue and its command executor.
#include "adapters/controller/cloud.h"

#include <spdlog/spdlog.h>

namespace tenon::controller {

CloudSource::CloudSource(CloudOptions options, kube::Client& kube, std::function<bool()> may_act)
    : options_(std::move(options)),
      kube_(kube),
      may_act_(std::move(may_act)),
      main_(options_.aws, aws::ProcessEnv(), {.abort = &abort_}),
      ec2_(main_.client()),
      iam_(main_.client()) {
  if (!options_.interruption_queue.empty() && !options_.read_only) {
    aws::TransportOptions poll;
    poll.total_timeout_ms = (options_.poll_wait_seconds + 10) * 1000;
    poll.abort = &abort_;
    poller_ = std::make_unique<aws::AwsConnection>(options_.aws, aws::ProcessEnv(), poll);
  }
  executor_ = std::make_unique<aws::AwsExecutor>(ec2_, nullptr, &templates_, &iam_);
}

CloudSource::~CloudSource() {
  Stop();
}

std::vector<Event> CloudSource::Execute(const Command& command) {
  const auto* ack = std::get_if<DeleteQueueMessage>(&command.body);
  if (ack == nullptr) {
    std::vector<Event> results = executor_->Execute(command);
    if (std::holds_alternative<EnsureInstanceProfile>(command.body) && !results.empty() &&
        std::holds_alternative<CommandSucceeded>(results.front())) {
      PokeNodeClasses();
    }
    return results;
  }
  aws::InterruptionQueue* queue = queue_ready_.load();
  if (queue == nullptr) {
    return {CommandFailed{command.id, ErrorCode::kTransient,
                          "the interruption queue is not reachable yet"}};
  }
  const auto done = queue->Acknowledge(ack->message_id);
  if (!done.ok()) return {CommandFailed{command.id, done.error.code, done.error.message}};
  return {CommandSucceeded{command.id}};
}

void CloudSource::Start() {
  if (options_.refresh_catalog) threads_.emplace_back([this] { CatalogLoop(); });
  if (poller_ != nullptr) threads_.emplace_back([this] { InterruptionLoop(); });
  threads_.emplace_back([this] { GarbageLoop(); });
  threads_.emplace_back([this] { NodeClassLoop(); });
}

void CloudSource::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  abort_.Trigger();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void CloudSource::Push(std::vector<Event> events) {
  std::lock_guard lock(mu_);
  for (auto& e : events) events_.push_back(std::move(e));
}

std::vector<Event> CloudSource::Drain() {
  std::lock_guard lock(mu_);
  std::vector<Event> out(std::make_move_iterator(events_.begin()),
                         std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

bool CloudSource::Sleep(std::chrono::milliseconds duration) {
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, duration, [&] { return stop_.load(); });
  return !stop_.load();
}

}  // namespace tenon::controller
