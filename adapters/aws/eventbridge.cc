#include "adapters/aws/eventbridge.h"

#include <nlohmann/json.hpp>

namespace tenon::aws {
namespace {

using nlohmann::json;

Event Rejected(const std::string& message_id, const std::string& reason, const std::string& body) {
  return InputRejected{kInterruptionSource, reason, body, message_id};
}

std::string StringAt(const json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

bool IsInstanceId(const std::string& id) {
  return id.size() > 2 && id.rfind("i-", 0) == 0;
}

std::vector<Event> FromHealth(const std::string& message_id, const json& detail,
                              const std::string& body) {
  if (StringAt(detail, "service") != "EC2" ||
      StringAt(detail, "eventTypeCategory") != "scheduledChange") {
    return {Rejected(message_id, "health event that is not an EC2 scheduled change", body)};
  }
  std::string description;
  if (const auto d = detail.find("eventDescription");
      d != detail.end() && d->is_array() && !d->empty()) {
    description = StringAt((*d)[0], "latestDescription");
  }
  std::vector<Event> out;
  const auto entities = detail.find("affectedEntities");
  if (entities == detail.end() || !entities->is_array()) {
    return {Rejected(message_id, "health event without affectedEntities", body)};
  }
  for (const json& entity : *entities) {
    if (out.size() >= kAffectedEntitiesMax) break;
    const std::string id = StringAt(entity, "entityValue");
    if (IsInstanceId(id)) {
      out.push_back(
          InterruptionReceived{message_id, InterruptionKind::kScheduledChange, id, description});
    }
  }
  if (out.empty()) return {Rejected(message_id, "health event naming no instance", body)};
  return out;
}

std::vector<Event> FromInstanceEvent(const std::string& message_id, InterruptionKind kind,
                                     const json& detail, const std::string& body) {
  const std::string id = StringAt(detail, "instance-id");
  if (!IsInstanceId(id))
    return {Rejected(message_id, "event without a valid detail.instance-id", body)};
  std::string what;
  switch (kind) {
    case InterruptionKind::kSpotInterruption:
      what = StringAt(detail, "instance-action");
      break;
    case InterruptionKind::kStateChange:
      what = StringAt(detail, "state");
      if (what.empty()) return {Rejected(message_id, "state change without detail.state", body)};
      break;
    case InterruptionKind::kRebalanceRecommendation:
    case InterruptionKind::kScheduledChange:
      break;
  }
  return {InterruptionReceived{message_id, kind, id, what}};
}

}  // namespace

std::vector<Event> ParseEventBridge(const std::string& message_id, const std::string& body) {
  if (body.size() > kMessageBytesMax)
    return {Rejected(message_id, "message larger than 256 KiB", body.substr(0, kMessageBytesMax))};
  const json message = json::parse(body, nullptr, false);
  if (message.is_discarded()) return {Rejected(message_id, "not JSON", body)};
  if (!message.is_object()) return {Rejected(message_id, "not a JSON object", body)};
  const std::string type = StringAt(message, "detail-type");
  const std::string source = StringAt(message, "source");
  const auto detail = message.find("detail");
  if (detail == message.end() || !detail->is_object())
    return {Rejected(message_id, "no detail object", body)};
  if (source == "aws.ec2" && type == "EC2 Spot Instance Interruption Warning") {
    return FromInstanceEvent(message_id, InterruptionKind::kSpotInterruption, *detail, body);
  }
  if (source == "aws.ec2" && type == "EC2 Instance Rebalance Recommendation") {
    return FromInstanceEvent(message_id, InterruptionKind::kRebalanceRecommendation, *detail, body);
  }
  if (source == "aws.ec2" && type == "EC2 Instance State-change Notification") {
    return FromInstanceEvent(message_id, InterruptionKind::kStateChange, *detail, body);
  }
  if (source == "aws.health" && type == "AWS Health Event") {
    return FromHealth(message_id, *detail, body);
  }
  return {Rejected(message_id, "unknown event: source '" + source + "', detail-type '" + type + "'",
                   body)};
}

}  // namespace tenon::aws
