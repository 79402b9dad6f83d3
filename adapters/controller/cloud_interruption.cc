// The interruption queue: long polls of SQS into InterruptionReceived and InputRejected events.
#include "adapters/controller/cloud.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

namespace tenon::controller {

void CloudSource::InterruptionLoop() {
  std::string url = options_.interruption_queue;
  while (url.rfind("http", 0) != 0) {
    const nlohmann::json request = {{"QueueName", options_.interruption_queue}};
    auto answer = aws::SqsCall(poller_->client(), "GetQueueUrl", request.dump());
    if (!answer.ok() && stop_.load()) return;  // Aborted by Stop.
    if (answer.ok()) {
      const auto body = nlohmann::json::parse(*answer.value, nullptr, false);
      if (body.is_object() && body.contains("QueueUrl") && body["QueueUrl"].is_string()) {
        url = body["QueueUrl"].get<std::string>();
        break;
      }
    }
    spdlog::warn("interruption: queue {} not found yet: {}", options_.interruption_queue,
                 answer.ok() ? "no QueueUrl in the answer" : answer.error.message);
    if (!Sleep(options_.retry)) return;
  }
  queue_ = std::make_unique<aws::InterruptionQueue>(poller_->client(), main_.client(), url);
  queue_ready_ = queue_.get();
  spdlog::info("interruption: polling {}", url);
  while (!stop_.load()) {
    auto received = queue_->Receive(aws::kReceiveMessagesMax, options_.poll_wait_seconds);
    if (!received.ok() && stop_.load()) return;  // Aborted by Stop: the messages stay queued.
    if (!received.ok()) {
      spdlog::warn("interruption: {}: {}", received.error.aws_code, received.error.message);
      if (!Sleep(options_.retry)) return;
      continue;
    }
    // A message that was only rejected input is deleted by the core (DeleteQueueMessage) once
    // its rejection is in the log.
    Push(std::move(*received.value));
  }
}

}  // namespace tenon::controller
