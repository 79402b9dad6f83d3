#include "adapters/aws/sqs.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "adapters/aws/eventbridge.h"

namespace tenon::aws {

Result<std::string> SqsCall(AwsClient& client, const std::string& operation,
                            const std::string& json_body) {
  return client.Json("sqs", "AmazonSQS." + operation, "application/x-amz-json-1.0", json_body);
}

Result<std::vector<Event>> InterruptionQueue::Receive(std::int32_t messages_max,
                                                      std::int32_t wait_seconds) {
  const nlohmann::json request = {
      {"QueueUrl", queue_url_},
      {"MaxNumberOfMessages", std::clamp(messages_max, 1, kReceiveMessagesMax)},
      {"WaitTimeSeconds", std::clamp(wait_seconds, 0, kWaitSecondsMax)}};
  Result<std::string> body = SqsCall(client_, "ReceiveMessage", request.dump());
  if (!body.ok()) return Result<std::vector<Event>>::Fail(body.error);
  const auto answer = nlohmann::json::parse(*body.value, nullptr, false);
  std::vector<Event> events;
  std::lock_guard lock(mu_);
  if (answer.is_discarded() || !answer.is_object()) {
    events.push_back(InputRejected{"sqs-receive", "ReceiveMessage answer is not a JSON object",
                                   *body.value, ""});
    return Result<std::vector<Event>>::Ok(std::move(events));
  }
  const auto messages = answer.find("Messages");
  if (messages == answer.end() || !messages->is_array()) return Result<std::vector<Event>>::Ok({});
  for (const auto& m : *messages) {
    const std::string id = m.is_object() ? m.value("MessageId", "") : "";
    const std::string receipt = m.is_object() ? m.value("ReceiptHandle", "") : "";
    if (id.empty() || receipt.empty()) {
      events.push_back(
          InputRejected{"sqs-receive", "message without MessageId/ReceiptHandle", m.dump(), ""});
      continue;
    }
    // A message delivered again before it was acknowledged (its visibility timeout ran out)
    // already produced its events: only its newest receipt handle matters now.
    const bool again = receipts_.contains(id);
    if (receipts_.size() < kReceiptsMax || again) receipts_[id] = receipt;
    if (again) {
      ++redeliveries_;
      continue;
    }
    const std::string text =
        m.contains("Body") && m["Body"].is_string() ? m["Body"].get<std::string>() : "";
    std::vector<Event> parsed = ParseEventBridge(id, text);
    std::move(parsed.begin(), parsed.end(), std::back_inserter(events));
  }
  spdlog::debug("sqs: {} messages, {} events", messages->size(), events.size());
  return Result<std::vector<Event>>::Ok(std::move(events));
}

Result<Unit> InterruptionQueue::Acknowledge(const std::string& message_id) {
  std::string receipt;
  {
    std::lock_guard lock(mu_);
    const auto it = receipts_.find(message_id);
    if (it == receipts_.end()) {
      return Result<Unit>::Fail(AwsError{ErrorCode::kNotFound, "UnknownReceipt",
                                         "no receipt handle for message " + message_id, 0});
    }
    receipt = it->second;
  }
  const nlohmann::json request = {{"QueueUrl", queue_url_}, {"ReceiptHandle", receipt}};
  Result<std::string> body = SqsCall(ack_client_, "DeleteMessage", request.dump());
  if (!body.ok()) return Result<Unit>::Fail(body.error);
  std::lock_guard lock(mu_);
  receipts_.erase(message_id);
  return Result<Unit>::Ok(Unit{});
}

}  // namespace tenon::aws
