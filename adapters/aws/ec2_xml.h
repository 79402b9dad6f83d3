// Pure parsers for EC2 Query API answers (XML). They never throw: a body that does not parse,
// or lacks what the call must return, comes back as an error with the reason.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"

namespace tenon::aws {

// One page of a paginated call.
template <class T>
struct Page {
  std::vector<T> items;
  std::string next_token;
  std::string error;  // Non-empty: the body was unusable.
};

struct TypeOffering {
  std::string instance_type;
  std::string zone;
};
struct SpotPrice {
  std::string instance_type;
  std::string zone;
  MicroUsdPerHour price{0};
  std::string timestamp;  // ISO 8601; later sorts later.
};
struct Zone {
  std::string name;
  std::string zone_id;
  std::string state;
};
struct Subnet {
  std::string id;
  std::string zone;
  std::int64_t available_ips = 0;
  Labels tags;
  std::string zone_id;  // availabilityZoneId (use1-az1): the same place in every account.
};
struct SecurityGroup {
  std::string id;
  std::string name;
  Labels tags;
};
struct Image {
  std::string id;
  std::string name;
  std::string arch;  // amd64 | arm64
  std::string created;
  std::string owner;
  Labels tags;
};
struct LaunchTemplate {
  std::string id;
  std::string name;
};
// A launched instance from CreateFleet's fleetInstanceSet.
struct FleetInstance {
  std::string instance_id;
  std::string instance_type;
  std::string zone;
  std::string subnet_id;
  std::string capacity_type;  // spot | on-demand
};
// One entry of CreateFleet's errorSet.
struct FleetErrorEntry {
  std::string instance_type;
  std::string zone;
  std::string subnet_id;
  std::string capacity_type;
  std::string error_code;
  std::string message;
};
struct FleetResult {
  std::string fleet_id;
  std::vector<FleetInstance> instances;
  std::vector<FleetErrorEntry> errors;
};
struct InstanceSummary {
  std::string id;
  std::string instance_type;
  std::string zone;
  std::string state;
  std::string launch_time;
  Labels tags;
};

Page<InstanceType> ParseInstanceTypes(const std::string& xml);
Page<TypeOffering> ParseInstanceTypeOfferings(const std::string& xml);
Page<SpotPrice> ParseSpotPriceHistory(const std::string& xml);
Page<Zone> ParseAvailabilityZones(const std::string& xml);
Page<Subnet> ParseSubnets(const std::string& xml);
Page<SecurityGroup> ParseSecurityGroups(const std::string& xml);
Page<Image> ParseImages(const std::string& xml);
Page<LaunchTemplate> ParseLaunchTemplates(const std::string& xml);
Page<InstanceSummary> ParseInstances(const std::string& xml);
Page<std::string> ParseTerminatedIds(const std::string& xml);
std::optional<FleetResult> ParseCreateFleet(const std::string& xml, std::string* error);

// "0.0416" USD/hour -> 41600 micro-USD/hour; nullopt when not a price.
std::optional<MicroUsdPerHour> ParsePrice(const std::string& text);

}  // namespace tenon::aws
