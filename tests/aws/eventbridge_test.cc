// The four EventBridge kinds become InterruptionReceived; anything else is kept as InputRejected
// with its raw payload.
#include "adapters/aws/eventbridge.h"

#include <gtest/gtest.h>

#include "tests/aws/messages.h"

namespace tenon::aws {
namespace {

InterruptionReceived Only(const std::vector<Event>& events) {
  EXPECT_EQ(events.size(), 1u);
  const auto* e = std::get_if<InterruptionReceived>(&events.at(0));
  EXPECT_NE(e, nullptr);
  return e != nullptr ? *e : InterruptionReceived{};
}

TEST(AwsEventBridge, SpotInterruptionWarning) {
  EXPECT_EQ(Only(ParseEventBridge("m1", testing::kSpotInterruption)),
            (InterruptionReceived{"m1", InterruptionKind::kSpotInterruption, "i-0123456789abcdef0",
                                  "terminate"}));
}

TEST(AwsEventBridge, RebalanceRecommendation) {
  EXPECT_EQ(Only(ParseEventBridge("m2", testing::kRebalance)),
            (InterruptionReceived{"m2", InterruptionKind::kRebalanceRecommendation,
                                  "i-0123456789abcdef1", ""}));
}

TEST(AwsEventBridge, ScheduledChangeNamesEveryAffectedInstance) {
  const std::vector<Event> events = ParseEventBridge("m3", testing::kScheduledChange);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(std::get<InterruptionReceived>(events[0]).instance_id, "i-0123456789abcdef2");
  EXPECT_EQ(std::get<InterruptionReceived>(events[1]).instance_id, "i-0123456789abcdef3");
  EXPECT_EQ(std::get<InterruptionReceived>(events[0]).kind, InterruptionKind::kScheduledChange);
  EXPECT_EQ(std::get<InterruptionReceived>(events[0]).detail,
            "The instance is scheduled for retirement.");
}

TEST(AwsEventBridge, StateChange) {
  EXPECT_EQ(Only(ParseEventBridge("m4", testing::kStateChange)),
            (InterruptionReceived{"m4", InterruptionKind::kStateChange, "i-0123456789abcdef4",
                                  "stopping"}));
}

TEST(AwsEventBridge, MalformedAndUnknownAreRejectedWithTheirPayload) {
  for (
      const std::string& body :
      {std::string(testing::kMalformed), std::string("[1,2]"),
       std::string(R"({"source":"aws.s3","detail-type":"Object Created","detail":{}})"),
       std::string(
           R"({"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":7}})"),
       std::string(
           R"({"source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"issue"}})")}) {
    const std::vector<Event> events = ParseEventBridge("bad", body);
    ASSERT_EQ(events.size(), 1u) << body;
    const auto* rejected = std::get_if<InputRejected>(&events[0]);
    ASSERT_NE(rejected, nullptr) << body;
    EXPECT_EQ(rejected->payload, body);
    EXPECT_EQ(rejected->source, kInterruptionSource);
    EXPECT_FALSE(rejected->reason.empty());
  }
}

}  // namespace
}  // namespace tenon::aws
