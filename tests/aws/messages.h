// EventBridge messages as the interruption queue receives them, one of each kind.
#pragma once

namespace tenon::aws::testing {

inline constexpr char kSpotInterruption[] = R"({
  "version": "0", "id": "1e5527d7-bb36-4607-3370-4164db56a40e",
  "detail-type": "EC2 Spot Instance Interruption Warning", "source": "aws.ec2",
  "account": "123456789012", "time": "2026-11-23T05:00:00Z", "region": "us-east-1",
  "resources": ["arn:aws:ec2:us-east-1b:instance/i-0123456789abcdef0"],
  "detail": {"instance-id": "i-0123456789abcdef0", "instance-action": "terminate"}})";

inline constexpr char kRebalance[] = R"({
  "version": "0", "id": "5a2e7f2b-3b4c-4d1e-9f00-aaaaaaaaaaaa",
  "detail-type": "EC2 Instance Rebalance Recommendation", "source": "aws.ec2",
  "account": "123456789012", "time": "2026-11-23T05:00:00Z", "region": "us-east-1",
  "resources": ["arn:aws:ec2:us-east-1b:instance/i-0123456789abcdef1"],
  "detail": {"instance-id": "i-0123456789abcdef1"}})";

inline constexpr char kScheduledChange[] = R"({
  "version": "0", "id": "7bf73129-1428-4cd3-a780-95db273d1602",
  "detail-type": "AWS Health Event", "source": "aws.health",
  "account": "123456789012", "time": "2026-11-23T05:00:00Z", "region": "us-east-1",
  "resources": [],
  "detail": {"eventArn": "arn:aws:health:us-east-1::event/EC2/EC2_RETIREMENT_SCHEDULED/x",
             "service": "EC2", "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
             "eventTypeCategory": "scheduledChange",
             "eventDescription": [{"language": "en_US", "latestDescription": "The instance is scheduled for retirement."}],
             "affectedEntities": [{"entityValue": "i-0123456789abcdef2"}, {"entityValue": "i-0123456789abcdef3"}]}})";

inline constexpr char kStateChange[] = R"({
  "version": "0", "id": "7bf73129-1428-4cd3-a780-95db273d1603",
  "detail-type": "EC2 Instance State-change Notification", "source": "aws.ec2",
  "account": "123456789012", "time": "2026-11-23T05:00:00Z", "region": "us-east-1",
  "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-0123456789abcdef4"],
  "detail": {"instance-id": "i-0123456789abcdef4", "state": "stopping"}})";

inline constexpr char kMalformed[] =
    R"({"detail-type": "EC2 Spot Instance Interruption Warning", "detail": {)";

}  // namespace tenon::aws::testing
