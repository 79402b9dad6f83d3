// The AWS side of the runtime's Executor. It owns exactly four commands: LaunchInstances
// (CreateFleet), TerminateInstance (TerminateInstances), TagInstance (CreateTags) and
// DeleteQueueMessage (SQS DeleteMessage). Every other command belongs to the Kubernetes adapter:
// RoutingExecutor sends each command to the one that owns it, so no command is silently dropped.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "adapters/aws/ec2.h"
#include "adapters/aws/sqs.h"
#include "adapters/runtime/runtime.h"

namespace tenon::aws {

// What CreateFleet needs that the core's LaunchInstances does not carry yet: the NodeClass's
// launch template and a subnet per zone (see the report on core model changes).
struct LaunchContext {
  std::string launch_template_name;
  std::map<std::string, std::string> subnet_by_zone;
  // What the launch template was made from, reported with the instance for drift.
  std::string image_id;
  std::vector<std::string> security_groups;
  // When not empty, the only instance types the template can launch (its AMI's architecture).
  std::set<std::string> instance_types;
};
// The context of a launch, or why there is none (the launch fails with that reason).
using LaunchResolver = std::function<Result<LaunchContext>(const LaunchInstances&)>;

class AwsExecutor : public runtime::Executor {
 public:
  AwsExecutor(Ec2& ec2, InterruptionQueue* queue, LaunchResolver resolve)
      : ec2_(ec2), queue_(queue), resolve_(std::move(resolve)) {}

  static bool Owns(const Command& command);
  // Commands it does not own produce no events.
  std::vector<Event> Execute(const Command& command) override;

 private:
  std::vector<Event> Launch(const Command& command, const LaunchInstances& launch);
  std::vector<Event> Terminate(const Command& command, const TerminateInstance& terminate);
  std::vector<Event> Acknowledge(const Command& command, const DeleteQueueMessage& ack);
  std::vector<Event> Tag(const Command& command, const TagInstance& tag);

  Ec2& ec2_;
  InterruptionQueue* queue_;  // Null: no interruption queue configured.
  LaunchResolver resolve_;
};

// Sends AwsExecutor::Owns commands to `aws`, the rest to `other`.
class RoutingExecutor : public runtime::Executor {
 public:
  RoutingExecutor(runtime::Executor& aws, runtime::Executor& other) : aws_(aws), other_(other) {}
  std::vector<Event> Execute(const Command& command) override {
    return AwsExecutor::Owns(command) ? aws_.Execute(command) : other_.Execute(command);
  }

 private:
  runtime::Executor& aws_;
  runtime::Executor& other_;
};

// The FleetLaunched / FleetFailed for a CreateFleet answer; pure.
Event FleetOutcome(const Command& command, const LaunchInstances& launch,
                   const LaunchContext& context, const Result<FleetResult>& result);

}  // namespace tenon::aws
