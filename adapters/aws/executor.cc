#include "adapters/aws/executor.h"

#include <spdlog/spdlog.h>
#include <xxhash.h>

#include "adapters/aws/userdata.h"

namespace tenon::aws {
namespace {

// The zone of a subnet the launch named.
std::string ZoneOfSubnet(const LaunchInstance& launch, const std::string& subnet) {
  for (const LaunchOverride& o : launch.overrides) {
    if (o.subnet == subnet) return o.zone;
  }
  return "";
}

// The override an instance (or an error) answers: its type in its zone.
const LaunchOverride* OverrideOf(const LaunchInstance& launch, const std::string& type,
                                 const std::string& zone) {
  for (const LaunchOverride& o : launch.overrides) {
    if (o.instance_type == type && o.zone == zone) return &o;
  }
  return nullptr;
}

FleetError ToFleetError(const FleetErrorEntry& e, const LaunchInstance& launch) {
  const std::string zone = e.zone.empty() ? ZoneOfSubnet(launch, e.subnet_id) : e.zone;
  return FleetError{e.instance_type, zone,
                    e.capacity_type.empty() ? launch.capacity_type : e.capacity_type,
                    MapErrorCode(e.error_code, 400), e.error_code + ": " + e.message};
}

std::string Hex(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

bool AwsExecutor::Owns(const Command& command) {
  return std::holds_alternative<LaunchInstance>(command.body) ||
         std::holds_alternative<TerminateInstance>(command.body) ||
         std::holds_alternative<DeleteQueueMessage>(command.body) ||
         std::holds_alternative<TagInstance>(command.body) ||
         std::holds_alternative<EnsureInstanceProfile>(command.body) ||
         std::holds_alternative<DeleteNodeClassResources>(command.body);
}

std::vector<Event> AwsExecutor::Execute(const Command& command) {
  if (const auto* launch = std::get_if<LaunchInstance>(&command.body))
    return Launch(command, *launch);
  if (const auto* terminate = std::get_if<TerminateInstance>(&command.body)) {
    return Terminate(command, *terminate);
  }
  if (const auto* ack = std::get_if<DeleteQueueMessage>(&command.body))
    return Acknowledge(command, *ack);
  if (const auto* tag = std::get_if<TagInstance>(&command.body)) return Tag(command, *tag);
  if (const auto* ensure = std::get_if<EnsureInstanceProfile>(&command.body)) {
    return Profile(command, *ensure);
  }
  if (const auto* cleanup = std::get_if<DeleteNodeClassResources>(&command.body)) {
    return Cleanup(command, *cleanup);
  }
  return {};
}

RenderedLaunch RenderLaunch(const LaunchInstance& launch) {
  RenderedLaunch out;
  auto refuse = [&](std::string message) {
    out.refused = FleetError{"", "", launch.capacity_type, ErrorCode::kInvalid, std::move(message)};
    return out;
  };
  const LaunchNode& node = launch.node;
  const ClusterInfo cluster{node.cluster_name, node.cluster_endpoint, node.cluster_ca_bundle};
  const NodeBootstrap bootstrap{node.labels, node.taints, node.max_pods, node.user_data};
  const std::optional<std::string> user_data =
      UserData(AmiFamily(node.ami_family), cluster, bootstrap);
  if (!user_data) return refuse("unknown AMI family " + node.ami_family);
  // The name changes with anything the template holds, so a changed NodeClass or NodePool
  // never launches from a stale template.
  std::string identity = *user_data + "\n" + node.instance_profile;
  for (const auto& g : node.security_groups) identity += "\n" + g;
  for (const auto& [k, v] : node.tags) identity += "\n" + k + "=" + v;
  const std::string hash = Hex(XXH3_64bits(identity.data(), identity.size()));
  std::map<std::string, std::size_t> config_of_image;
  std::size_t overrides = 0;
  for (const LaunchOverride& o : launch.overrides) {
    if (o.subnet.empty() || o.image.empty()) {
      return refuse("EC2NodeClass " + launch.nodeclass + " had no subnet or no AMI for " +
                    o.instance_type + " in " + o.zone + " when the launch was planned");
    }
    // The offerings come cheapest first; those beyond what one CreateFleet takes are left.
    if (overrides == static_cast<std::size_t>(kFleetOverridesMax)) break;
    ++overrides;
    const auto [it, added] = config_of_image.emplace(o.image, out.request.configs.size());
    if (added) {
      LaunchTemplateSpec spec;
      spec.name = LaunchTemplateName(node.cluster_name, hash, o.image);
      spec.image_id = o.image;
      spec.instance_profile = node.instance_profile;
      spec.security_group_ids = node.security_groups;
      spec.user_data = *user_data;
      spec.tags = node.tags;
      out.request.configs.push_back({spec.name, {}});
      out.templates.push_back(std::move(spec));
    }
    out.request.configs[it->second].overrides.push_back({o.instance_type, o.subnet, o.zone});
  }
  if (overrides == 0) return refuse("nothing to launch");
  out.request.capacity_type = launch.capacity_type;
  out.request.allocation_strategy = launch.allocation_strategy;
  out.request.tags = launch.tags;
  out.request.client_token = launch.client_token;
  out.body = CreateFleetBody(out.request);
  return out;
}

Event FleetOutcome(const Command& command, const LaunchInstance& launch,
                   const RenderedLaunch& rendered, const Result<FleetResult>& result) {
  if (!result.ok()) {
    return FleetFailed{command.id,
                       launch.nodeclaim,
                       {FleetError{"", "", launch.capacity_type, result.error.code,
                                   result.error.aws_code + ": " + result.error.message}},
                       rendered.body};
  }
  std::vector<FleetError> errors;
  for (const FleetErrorEntry& e : result.value->errors) errors.push_back(ToFleetError(e, launch));
  if (result.value->instances.empty()) {
    if (errors.empty()) {
      errors.push_back(FleetError{"", "", launch.capacity_type, ErrorCode::kTransient,
                                  "CreateFleet returned neither an instance nor an error"});
    }
    return FleetFailed{command.id, launch.nodeclaim, std::move(errors), rendered.body};
  }
  const FleetInstance& instance = result.value->instances.front();
  const std::string zone =
      instance.zone.empty() ? ZoneOfSubnet(launch, instance.subnet_id) : instance.zone;
  const std::string capacity =
      instance.capacity_type.empty() ? launch.capacity_type : instance.capacity_type;
  const LaunchOverride* chosen = OverrideOf(launch, instance.instance_type, zone);
  return FleetLaunched{
      command.id,
      launch.nodeclaim,
      instance.instance_id,
      "aws:///" + zone + "/" + instance.instance_id,
      instance.instance_type,
      zone,
      capacity,
      chosen != nullptr ? chosen->price : MicroUsdPerHour{0},
      std::move(errors),
      chosen != nullptr ? chosen->image : "",
      instance.subnet_id.empty() && chosen != nullptr ? chosen->subnet : instance.subnet_id,
      launch.node.security_groups,
      rendered.body};
}

std::vector<Event> AwsExecutor::Launch(const Command& command, const LaunchInstance& launch) {
  const RenderedLaunch rendered = RenderLaunch(launch);
  if (rendered.refused) return {FleetFailed{command.id, launch.nodeclaim, {*rendered.refused}, ""}};
  for (const LaunchTemplateSpec& spec : rendered.templates) {
    if (known_ != nullptr && known_->contains(spec.name)) continue;
    const Result<LaunchTemplate> ensured = EnsureLaunchTemplate(ec2_, spec);
    if (!ensured.ok()) {
      return {FleetFailed{command.id,
                          launch.nodeclaim,
                          {FleetError{"", "", launch.capacity_type, ensured.error.code,
                                      "launch template " + spec.name + ": " +
                                          ensured.error.aws_code + ": " + ensured.error.message}},
                          ""}};
    }
    if (known_ != nullptr) known_->insert(spec.name);
  }
  Event outcome = FleetOutcome(command, launch, rendered, ec2_.CreateFleet(rendered.request));
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

std::vector<Event> AwsExecutor::Profile(const Command& command,
                                        const EnsureInstanceProfile& ensure) {
  if (iam_ == nullptr) return {CommandFailed{command.id, ErrorCode::kInvalid, "no IAM client"}};
  const std::string name = InstanceProfileName(ensure.cluster_name, ensure.nodeclass);
  const Result<InstanceProfile> profile = iam_->EnsureInstanceProfile(
      name, ensure.role, NodeClassOwnerTags(ensure.cluster_name, ensure.nodeclass));
  if (!profile.ok()) {
    return {CommandFailed{command.id, profile.error.code,
                          "instance profile " + name + " for role " + ensure.role + ": " +
                              profile.error.aws_code + ": " + profile.error.message}};
  }
  spdlog::info("aws: instance profile {} holds role {} (EC2NodeClass {})", name, ensure.role,
               ensure.nodeclass);
  return {CommandSucceeded{command.id}};
}

std::vector<Event> AwsExecutor::Cleanup(const Command& command,
                                        const DeleteNodeClassResources& cleanup) {
  const std::string& nodeclass = cleanup.nodeclass;
  std::string profile_done = "no instance profile of its own";
  if (cleanup.instance_profile) {
    if (iam_ == nullptr) return {CommandFailed{command.id, ErrorCode::kInvalid, "no IAM client"}};
    const std::string profile = InstanceProfileName(cleanup.cluster_name, nodeclass);
    const auto removed =
        iam_->DeleteInstanceProfile(profile, NodeClassOwnerTags(cleanup.cluster_name, nodeclass));
    if (!removed.ok()) {
      return {CommandFailed{command.id, removed.error.code,
                            "deleting the instance profile " + profile + ": " +
                                removed.error.aws_code + ": " + removed.error.message}};
    }
    switch (*removed.value) {
      case ProfileRemoval::kDeleted:
        profile_done = "instance profile " + profile + " deleted";
        break;
      case ProfileRemoval::kAbsent:
        profile_done = "instance profile " + profile + " already gone";
        break;
      case ProfileRemoval::kNotOwned:
        profile_done = "instance profile " + profile + " left (not tagged as tenon's)";
        break;
    }
  }
  const auto templates = DeleteNodeClassLaunchTemplates(ec2_, cleanup.cluster_name, nodeclass);
  if (!templates.ok()) {
    return {CommandFailed{command.id, templates.error.code,
                          "deleting its launch templates: " + templates.error.aws_code + ": " +
                              templates.error.message}};
  }
  if (known_ != nullptr) {
    for (const std::string& t : *templates.value) known_->erase(t);
  }
  spdlog::info("aws: EC2NodeClass {} cleaned up: {}, {} launch template(s) deleted", nodeclass,
               profile_done, templates.value->size());
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
