// The simulated cloud: CreateFleet launches (idempotent on the client token, failing on
// offerings out of capacity), terminations, spot reclaims, prices, instance listings and the
// EC2NodeClass's resolved AMIs, subnets and security groups.
#include "adapters/sim/world.h"

#include <algorithm>
#include <cstdio>

#include "adapters/sim/world_parts.h"

namespace tenon::sim {

std::vector<Event> World::InterruptSpot(const SimInstance& instance) {
  std::string id = "msg-" + std::to_string(record_.next_message++);
  // EC2 reclaims the instance two minutes after the warning.
  AddTimer(record_.now + Duration{2 * kMinute.value}, Timer{Timer::Kind::kReclaim, instance.id});
  return {InterruptionReceived{id, InterruptionKind::kSpotInterruption, instance.id,
                               "two-minute warning"}};
}

void World::ChangePrice(const Action& action) {
  for (auto& type : catalog_) {
    if (type.name != action.instance_type) continue;
    for (auto& o : type.offerings) {
      if (o.capacity_type != action.capacity_type) continue;
      if (!action.zone.empty() && o.zone != action.zone) continue;
      o.price = MicroUsdPerHour{o.price.value * action.price_permille / 1000};
    }
  }
}

// What the instance costs now: its offering's current price (spot prices move), else what it
// was launched at.
MicroUsdPerHour World::PriceNow(const SimInstance& instance) const {
  for (const auto& type : catalog_) {
    if (type.name != instance.instance_type) continue;
    for (const auto& o : type.offerings) {
      if (o.zone == instance.zone && o.capacity_type == instance.capacity_type) return o.price;
    }
  }
  return instance.price;
}

bool World::OutOfCapacity(const std::string& offering) const {
  if (scenario_.cloud.insufficient_capacity.contains(offering)) return true;
  const Duration at = record_.now - scenario_.start;
  return std::any_of(scenario_.cloud.capacity_windows.begin(),
                     scenario_.cloud.capacity_windows.end(), [&](const CapacityWindow& w) {
                       return w.offering == offering && w.from <= at &&
                              (w.until.value == 0 || at < w.until);
                     });
}

std::vector<Event> World::ListInstances() {
  if (record_.now < record_.next_listing) return {};
  record_.next_listing = record_.now + scenario_.cloud.list_interval;
  InstancesListed listed;
  for (const auto& [id, i] : record_.instances)
    listed.instances.push_back({id, i.nodeclaim, i.launched, "running"});
  return {listed};
}

std::string World::CurrentAmi(const NodeClass& nodeclass) const {
  std::string family = nodeclass.ami_family.empty() ? "al2023" : nodeclass.ami_family;
  std::transform(family.begin(), family.end(), family.begin(), ::tolower);
  return "ami-" + family + "-r" + std::to_string(record_.ami_release);
}

NodeClass World::Resolved(const NodeClass& nodeclass) const {
  NodeClass out = nodeclass;
  out.amis = {CurrentAmi(nodeclass)};
  std::set<std::string> zones;
  for (const auto& type : scenario_.catalog) {
    for (const auto& o : type.offerings) zones.insert(o.zone);
  }
  out.subnets.clear();
  for (const auto& zone : zones) out.subnets.push_back("subnet-" + zone);
  out.zones.assign(zones.begin(), zones.end());
  out.security_groups = {"sg-" + scenario_.settings.cluster_name + "-nodes"};
  out.finalizer = record_.nodeclass_finalizers.contains(nodeclass.name);
  return out;
}

NodeClassResolution World::Resolution(const NodeClass& nodeclass) const {
  constexpr std::int64_t kSubnetAddresses = 8187;  // A /19 less the five AWS keeps.
  NodeClassResolution out;
  // One image serves every architecture the catalog has; the simulated images carry no
  // creation date.
  std::set<std::string> archs;
  for (const auto& type : scenario_.catalog) archs.insert(type.arch);
  for (const std::string& arch : archs) {
    out.amis.push_back({CurrentAmi(nodeclass),
                        nodeclass.ami_family + " release " + std::to_string(record_.ami_release),
                        arch, ""});
  }
  std::map<std::string, std::int64_t> used;
  for (const auto& [id, instance] : record_.instances) ++used[instance.zone];
  const NodeClass ids = Resolved(nodeclass);
  for (std::size_t i = 0; i < ids.zones.size(); ++i) {
    const std::string& zone = ids.zones[i];
    out.subnets.push_back(
        {"subnet-" + zone, zone, "use1-az" + std::to_string(i + 1), kSubnetAddresses - used[zone]});
  }
  const std::string group = scenario_.settings.cluster_name + "-nodes";
  out.security_groups.push_back({"sg-" + group, group});
  if (!nodeclass.role.empty()) {
    out.instance_profile = scenario_.settings.cluster_name + "_" + nodeclass.name;
  }
  return out;
}

FleetLaunched World::Answer(CommandId command, const SimInstance& i,
                            std::vector<FleetError> errors) const {
  return FleetLaunched{command,
                       i.nodeclaim,
                       i.id,
                       "aws:///" + i.zone + "/" + i.id,
                       i.instance_type,
                       i.zone,
                       i.capacity_type,
                       i.price,
                       std::move(errors),
                       i.image_id,
                       "subnet-" + i.zone,
                       {"sg-" + scenario_.settings.cluster_name + "-nodes"},
                       ""};
}

std::vector<Event> World::Launch(const Command& command, const LaunchInstance& launch) {
  ++record_.launch_calls;
  if (auto token = record_.client_tokens.find(launch.client_token);
      token != record_.client_tokens.end()) {
    auto i = record_.instances.find(token->second);
    if (i == record_.instances.end()) {
      // The token's instance was launched and has since terminated. EC2 would describe the
      // terminated instance again; the simulated cloud answers NotFound, which fails the
      // NodeClaim if it is still waiting for its launch.
      return {CommandFailed{command.id, ErrorCode::kNotFound,
                            "instance of client token " + launch.client_token + " terminated"}};
    }
    return {Answer(command.id, i->second, {})};
  }
  std::vector<FleetError> errors;
  for (const auto& o : launch.overrides) {
    std::string key = o.instance_type + "/" + o.zone + "/" + o.capacity_type;
    if (OutOfCapacity(key)) {
      errors.push_back({o.instance_type, o.zone, o.capacity_type, ErrorCode::kInsufficientCapacity,
                        "InsufficientInstanceCapacity: no capacity in the pool"});
      continue;
    }
    char id[32];
    std::snprintf(
        id, sizeof id, "i-%017llx",
        static_cast<unsigned long long>(Mix(scenario_.seed ^ record_.next_instance++) >> 4));
    // The AMI the launch names, as EC2 launches the template's image.
    std::string image = o.image;
    for (const auto& c : scenario_.nodeclasses) {
      if (c.name == launch.nodeclass && image.empty()) image = CurrentAmi(c);
    }
    SimInstance instance{id,
                         launch.nodeclaim,
                         launch.nodepool,
                         o.instance_type,
                         o.zone,
                         o.capacity_type,
                         o.price,
                         record_.now,
                         "",
                         image};
    record_.instances[instance.id] = instance;
    record_.client_tokens[launch.client_token] = instance.id;
    if (!scenario_.cloud.never_register.contains(o.instance_type)) {
      AddTimer(record_.now + scenario_.cloud.registration_delay,
               Timer{Timer::Kind::kRegister, instance.id});
    }
    // CreateFleet (instant) answers with the instance and the errors of the overrides it
    // tried before it; with a launch latency that answer comes back that much later.
    if (scenario_.cloud.launch_latency.value > 0) {
      AddTimer(record_.now + scenario_.cloud.launch_latency,
               Timer{Timer::Kind::kLaunchAnswer, instance.id, command.id.value});
      if (!errors.empty()) answer_errors_[instance.id] = std::move(errors);
      return {};
    }
    return {Answer(command.id, instance, std::move(errors))};
  }
  return {FleetFailed{command.id, launch.nodeclaim, errors, ""}};
}

std::vector<Event> World::Terminate(const Command& command, const TerminateInstance& terminate) {
  auto it = record_.instances.find(terminate.instance_id);
  if (it == record_.instances.end()) {
    return {CommandFailed{command.id, ErrorCode::kNotFound,
                          "InvalidInstanceID.NotFound: " + terminate.instance_id}};
  }
  std::vector<Event> events{CommandSucceeded{command.id}};
  for (auto& e : RemoveInstance(it->first)) events.push_back(std::move(e));
  return events;
}

// The instance is gone, and its kubelet with it: the Node stops being Ready. The node-lifecycle
// controller deletes a Node whose instance is gone unless a finalizer holds it, which only a
// NodeClaim's Node has (karpenter.sh/termination); a leaked instance's Node goes at once.
std::vector<Event> World::RemoveInstance(const std::string& id) {
  const SimInstance instance = record_.instances.at(id);
  record_.instances.erase(id);
  room_may_have_changed_ = true;
  auto node = record_.nodes.find(instance.node_name);
  if (node == record_.nodes.end()) return {};
  if (record_.nodeclaims.contains(instance.nodeclaim)) {
    node->second.ready = false;
    return {NodeUpserted{node->second}};
  }
  record_.nodes.erase(node);
  std::vector<Event> events{NodeDeleted{instance.node_name}};
  for (auto& e : DeletePodsOn(instance.node_name)) events.push_back(std::move(e));
  return events;
}

}  // namespace tenon::sim
