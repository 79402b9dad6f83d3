// The AWS side of the runtime's Executor. It owns the commands that act in AWS:
// LaunchInstance (CreateFleet), TerminateInstance (TerminateInstances), TagInstance
// (CreateTags), DeleteQueueMessage (SQS DeleteMessage), EnsureInstanceProfile and
// DeleteNodeClassResources (IAM, launch templates). Every other command belongs to the Kubernetes
// adapter: RoutingExecutor sends each command to the one that owns it, so no command is silently
// dropped.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "adapters/aws/ec2.h"
#include "adapters/aws/iam.h"
#include "adapters/aws/sqs.h"
#include "adapters/runtime/runtime.h"

namespace tenon::aws {

// Launch templates known to exist in EC2: filled by launches, emptied of those deleted with
// their EC2NodeClass. Knowing one saves a DescribeLaunchTemplates before a launch; a template
// not known is described, and created when EC2 does not know it either. Thread-safe.
class KnownTemplates {
 public:
  bool contains(const std::string& name) const {
    std::lock_guard lock(mu_);
    return names_.contains(name);
  }
  void insert(const std::string& name) {
    std::lock_guard lock(mu_);
    names_.insert(name);
  }
  void erase(const std::string& name) {
    std::lock_guard lock(mu_);
    names_.erase(name);
  }

 private:
  mutable std::mutex mu_;
  std::set<std::string> names_;
};

// What a LaunchInstance renders to, from the command alone: a launch template per AMI (its
// user data from the command's node inputs) and the CreateFleet request naming them. Pure:
// a replay renders a recorded launch again and compares the bodies.
struct RenderedLaunch {
  std::vector<LaunchTemplateSpec> templates;
  FleetRequest request;
  std::string body;                   // CreateFleetBody(request).
  std::optional<FleetError> refused;  // Set: nothing can be launched, and why.
};
RenderedLaunch RenderLaunch(const LaunchInstance& launch);

class AwsExecutor : public runtime::Executor {
 public:
  // `known` (optional) remembers the launch templates made or found, across launches; `iam`
  // (optional) makes and deletes the EC2NodeClasses' instance profiles.
  AwsExecutor(Ec2& ec2, InterruptionQueue* queue, KnownTemplates* known = nullptr,
              Iam* iam = nullptr)
      : ec2_(ec2), queue_(queue), known_(known), iam_(iam) {}

  static bool Owns(const Command& command);
  // Commands it does not own produce no events.
  std::vector<Event> Execute(const Command& command) override;

 private:
  std::vector<Event> Launch(const Command& command, const LaunchInstance& launch);
  std::vector<Event> Terminate(const Command& command, const TerminateInstance& terminate);
  std::vector<Event> Acknowledge(const Command& command, const DeleteQueueMessage& ack);
  std::vector<Event> Tag(const Command& command, const TagInstance& tag);
  std::vector<Event> Profile(const Command& command, const EnsureInstanceProfile& ensure);
  std::vector<Event> Cleanup(const Command& command, const DeleteNodeClassResources& cleanup);

  Ec2& ec2_;
  InterruptionQueue* queue_;  // Null: no interruption queue configured.
  KnownTemplates* known_;
  Iam* iam_;  // Null: no IAM client.
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

// The FleetLaunched / FleetFailed for a CreateFleet answer to `rendered`; pure.
Event FleetOutcome(const Command& command, const LaunchInstance& launch,
                   const RenderedLaunch& rendered, const Result<FleetResult>& result);

}  // namespace tenon::aws
