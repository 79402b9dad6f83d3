#include "adapters/aws/executor.h"

#include <spdlog/spdlog.h>

namespace tenon::aws {
namespace {

std::string ZoneOfSubnet(const LaunchContext& context, const std::string& subnet) {
  for (const auto& [zone, id] : context.subnet_by_zone) {
    if (id == subnet) return zone;
  }
  return "";
}

FleetError ToFleetError(const FleetErrorEntry& e, const LaunchContext& context,
                        const std::string& capacity_type) {
  const std::string zone = e.zone.empty() ? ZoneOfSubnet(context, e.subnet_id) : e.zone;
  return FleetError{e.instance_type, zone,
                    e.capacity_type.empty() ? capacity_type : e.capacity_type,
                    MapErrorCode(e.error_code, 400), e.error_code + ": " + e.message};
}

MicroUsdPerHour PriceOf(const LaunchInstances& launch, const FleetInstance& instance,
                        const std::string& zone) {
  for (const LaunchOverride& o : launch.overrides) {
    if (o.instance_type == instance.instance_type && o.zone == zone) return o.price;
  }
  return MicroUsdPerHour{0};
}

}  // namespace

bool AwsExecutor::Owns(const Command& command) {
  return std::holds_alternative<LaunchInstances>(command.body) ||
         std::holds_alternative<TerminateInstance>(command.body) ||
         std::holds_alternative<DeleteQueueMessage>(command.body) ||
         std::holds_alternative<TagInstance>(command.body);
}

std::vector<Event> AwsExecutor::Execute(const Command& command) {
  if (const auto* launch = std::get_if<LaunchInstances>(&command.body))
    return Launch(command, *launch);
  if (const auto* terminate = std::get_if<TerminateInstance>(&command.body)) {
    return Terminate(command, *terminate);
  }
  if (const auto* ack = std::get_if<DeleteQueueMessage>(&command.body))
    return Acknowledge(command, *ack);
  if (const auto* tag = std::get_if<TagInstance>(&command.body)) return Tag(command, *tag);
  return {};
}

Event FleetOutcome(const Command& command, const LaunchInstances& launch,
                   const LaunchContext& context, const Result<FleetResult>& result) {
  if (!result.ok()) {
    return FleetFailed{command.id,
                       launch.nodeclaim,
                       {FleetError{"", "", launch.capacity_type, result.error.code,
                                   result.error.aws_code + ": " + result.error.message}}};
  }
  std::vector<FleetError> errors;
  for (const FleetErrorEntry& e : result.value->errors) {
    errors.push_back(ToFleetError(e, context, launch.capacity_type));
  }
  if (result.value->instances.empty()) {
    if (errors.empty()) {
      errors.push_back(FleetError{"", "", launch.capacity_type, ErrorCode::kTransient,
                                  "CreateFleet returned neither an instance nor an error"});
    }
    return FleetFailed{command.id, launch.nodeclaim, std::move(errors)};
  }
  const FleetInstance& instance = result.value->instances.front();
  const std::string zone =
      instance.zone.empty() ? ZoneOfSubnet(context, instance.subnet_id) : instance.zone;
  const std::string capacity =
      instance.capacity_type.empty() ? launch.capacity_type : instance.capacity_type;
  return FleetLaunched{command.id,
                       launch.nodeclaim,
                       instance.instance_id,
                       "aws:///" + zone + "/" + instance.instance_id,
                       instance.instance_type,
                       zone,
                       capacity,
                       PriceOf(launch, instance, zone),
                       std::move(errors),
                       context.image_id,
                       instance.subnet_id.empty() && context.subnet_by_zone.contains(zone)
                           ? context.subnet_by_zone.at(zone)
                           : instance.subnet_id,
                       context.security_groups};
}

std::vector<Event> AwsExecutor::Launch(const Command& command, const LaunchInstances& launch) {
  const Result<LaunchContext> resolved = resolve_(launch);
  if (!resolved.ok()) {
    return {
        FleetFailed{command.id,
                    launch.nodeclaim,
                    {FleetError{"", "", launch.capacity_type, resolved.error.code,
                                "NodeClass " + launch.nodeclass + ": " + resolved.error.message}}}};
  }
  const std::optional<LaunchContext>& context = resolved.value;
  FleetRequest request{context->launch_template_name,
                       launch.capacity_type,
                       launch.allocation_strategy,
                       {},
                       launch.tags,
                       launch.client_token};
  std::vector<FleetError> skipped;
  for (const LaunchOverride& o : launch.overrides) {
    if (!context->instance_types.empty() && !context->instance_types.contains(o.instance_type)) {
      skipped.push_back(FleetError{o.instance_type, o.zone, o.capacity_type, ErrorCode::kInvalid,
                                   "no AMI for its architecture"});
      continue;
    }
    const auto subnet = context->subnet_by_zone.find(o.zone);
    if (subnet == context->subnet_by_zone.end()) {
      skipped.push_back(FleetError{o.instance_type, o.zone, o.capacity_type, ErrorCode::kInvalid,
                                   "no subnet in zone"});
      continue;
    }
    if (request.overrides.size() < static_cast<std::size_t>(kFleetOverridesMax)) {
      request.overrides.push_back(FleetOverride{o.instance_type, subnet->second, o.zone});
    }
  }
  if (request.overrides.empty())
    return {FleetFailed{command.id, launch.nodeclaim, std::move(skipped)}};
  Event outcome = FleetOutcome(command, launch, *context, ec2_.CreateFleet(request));
  spdlog::info("aws: CreateFleet for {}: {}", launch.nodeclaim,
               std::holds_alternative<FleetLaunched>(outcome) ? "launched" : "failed");
  return {std::move(outcome)};
}

std::vector<Event> AwsExecutor::Terminate(const Command& command,
                                          const TerminateInstance& terminate) {
  Result<TerminateResult> result = ec2_.TerminateInstances({terminate.instance_id});
  if (!result.ok()) return {CommandFailed{command.id, result.error.code, result.error.message}};
  // An instance EC2 no longer knows counts as terminated.
  return {CommandSucceeded{command.id}};
}

std::vector<Event> AwsExecutor::Tag(const Command& command, const TagInstance& tag) {
  // As Karpenter's tagging controller: the keys the instance already carries keep their values
  // (a Name from the EC2NodeClass's tags, say), and nothing is sent when none is left.
  Result<std::vector<InstanceSummary>> found = ec2_.DescribeInstances({tag.instance_id});
  if (!found.ok()) return {CommandFailed{command.id, found.error.code, found.error.message}};
  if (found.value->empty()) {
    return {CommandFailed{command.id, ErrorCode::kNotFound,
                          "instance " + tag.instance_id + " not found"}};
  }
  Labels missing;
  for (const auto& [key, value] : tag.tags) {
    if (!found.value->front().tags.contains(key)) missing[key] = value;
  }
  if (missing.empty()) return {CommandSucceeded{command.id}};
  Result<Unit> tagged = ec2_.CreateTags({tag.instance_id}, missing);
  if (!tagged.ok()) return {CommandFailed{command.id, tagged.error.code, tagged.error.message}};
  spdlog::info("aws: tagged {} of {} ({} tag(s))", tag.instance_id, tag.nodeclaim, missing.size());
  return {CommandSucceeded{command.id}};
}

std::vector<Event> AwsExecutor::Acknowledge(const Command& command, const DeleteQueueMessage& ack) {
  if (queue_ == nullptr) {
    return {CommandFailed{command.id, ErrorCode::kInvalid, "no interruption queue configured"}};
  }
  Result<Unit> result = queue_->Acknowledge(ack.message_id);
  if (!result.ok()) return {CommandFailed{command.id, result.error.code, result.error.message}};
  return {CommandSucceeded{command.id}};
}

}  // namespace tenon::aws
