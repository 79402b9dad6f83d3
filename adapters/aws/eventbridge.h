// EventBridge messages from the interruption queue, classified into the core's events. Pure:
// anything unknown or malformed becomes InputRejected with the raw payload kept for audit.
#pragma once

#include <string>
#include <vector>

#include "model/model.h"

namespace tenon::aws {

inline constexpr char kInterruptionSource[] = "sqs-interruption";
inline constexpr std::size_t kMessageBytesMax = 256 * 1024;  // SQS's own message size limit.
inline constexpr std::size_t kAffectedEntitiesMax = 1000;

// One SQS message body -> InterruptionReceived per instance it names, or one InputRejected.
std::vector<Event> ParseEventBridge(const std::string& message_id, const std::string& body);

}  // namespace tenon::aws
