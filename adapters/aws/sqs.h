// The interruption queue over SQS's JSON protocol: long-poll ReceiveMessage, classify each
// message (eventbridge.h), and DeleteMessage once the runtime says the event is durable.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "adapters/aws/http.h"
#include "model/model.h"

namespace tenon::aws {

inline constexpr std::int32_t kReceiveMessagesMax = 10;  // SQS's own limit per call.
inline constexpr std::int32_t kWaitSecondsMax = 20;
inline constexpr std::size_t kReceiptsMax = 10'000;

class InterruptionQueue {
 public:
  InterruptionQueue(AwsClient& client, std::string queue_url)
      : client_(client), ack_client_(client), queue_url_(std::move(queue_url)) {}
  // Receive on `client` (one thread, long polls) while Acknowledge runs on another thread with
  // `ack_client`: the receipts are shared under a lock.
  InterruptionQueue(AwsClient& client, AwsClient& ack_client, std::string queue_url)
      : client_(client), ack_client_(ack_client), queue_url_(std::move(queue_url)) {}

  // One long poll: the events of every message received (possibly none). A message received
  // again before it was acknowledged yields no second set of events (at-least-once delivery,
  // duplicates recognised by message id); after a restart the core recognises them instead.
  Result<std::vector<Event>> Receive(std::int32_t messages_max, std::int32_t wait_seconds);
  // Deletes a message received earlier (the DeleteQueueMessage command: for an interruption
  // once handled, for input that could not be read once its rejection is logged). A message
  // this process never received (after a restart) is left to come back after its visibility
  // timeout: NotFound.
  Result<Unit> Acknowledge(const std::string& message_id);
  std::int64_t redeliveries() {
    std::lock_guard lock(mu_);
    return redeliveries_;
  }

 private:
  AwsClient& client_;
  AwsClient& ack_client_;
  std::string queue_url_;
  std::mutex mu_;                                // Guards receipts_ and redeliveries_.
  std::map<std::string, std::string> receipts_;  // message id -> receipt handle.
  std::int64_t redeliveries_ = 0;
};

// SQS JSON-protocol helpers (also used by tests to create queues and send messages).
Result<std::string> SqsCall(AwsClient& client, const std::string& operation,
                            const std::string& json_body);

}  // namespace tenon::aws
