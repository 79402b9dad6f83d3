// EC2 over the Query API: the catalog (types, offerings, zones, spot prices), NodeClass
// resolution (subnets, security groups, images by selector terms), launch templates, CreateFleet,
// and the instance calls the controller needs (describe by tag, terminate, tag).
#pragma once

#include <string>
#include <vector>

#include "adapters/aws/ec2_xml.h"
#include "adapters/aws/http.h"

namespace tenon::aws {

inline constexpr char kEc2Version[] = "2016-11-15";
inline constexpr std::int32_t kPagesMax = 1000;
inline constexpr std::int32_t kFleetOverridesMax = 60;
inline constexpr std::int32_t kTerminateRetriesMax = 3;

// One NodeClass selector term: every field set must match (AND); terms are ORed. A tag value of
// "*" matches any value of that key.
struct SelectorTerm {
  Labels tags;
  std::string id;
  std::string name;
  std::string owner;  // Images only.
};

struct BlockDevice {
  std::string device_name = "/dev/xvda";
  std::int64_t volume_size_gib = 20;
  std::string volume_type = "gp3";
  bool encrypted = true;
};

struct LaunchTemplateSpec {
  std::string name;
  std::string image_id;
  std::string instance_profile;
  std::vector<std::string> security_group_ids;
  std::string user_data;  // Plain text; base64-encoded on the wire.
  bool imdsv2_required = true;
  std::int32_t metadata_hop_limit = 1;
  std::vector<BlockDevice> block_devices{BlockDevice{}};
  Labels tags;
};

struct FleetOverride {
  std::string instance_type;
  std::string subnet_id;
  std::string zone;
};

// One LaunchTemplateConfigs entry: a launch template and the overrides launched from it.
struct FleetTemplateConfig {
  std::string launch_template_name;
  std::vector<FleetOverride> overrides;
};

struct FleetRequest {
  std::vector<FleetTemplateConfig> configs;  // One per AMI; 1 to 60 overrides in all.
  std::string capacity_type;                 // spot | on-demand
  std::string allocation_strategy;
  Labels tags;
  std::string client_token;
};
// The form body CreateFleet sends for `request` (Action, Version and its parameters, in order);
// pure, so a replay can render the body of a recorded launch again.
std::string CreateFleetBody(const FleetRequest& request);

struct TerminateResult {
  std::vector<std::string> terminated;
  std::vector<std::string> missing;  // Unknown to EC2: already gone.
};

class Ec2 {
 public:
  explicit Ec2(AwsClient& client) : client_(client) {}

  // `names` empty: every type.
  Result<std::vector<InstanceType>> DescribeInstanceTypes(const std::vector<std::string>& names);
  Result<std::vector<TypeOffering>> DescribeInstanceTypeOfferings();
  Result<std::vector<Zone>> DescribeAvailabilityZones();
  Result<std::vector<SpotPrice>> DescribeSpotPriceHistory(const std::vector<std::string>& types);
  Result<std::vector<Subnet>> DescribeSubnets(const std::vector<SelectorTerm>& terms);
  Result<std::vector<SecurityGroup>> DescribeSecurityGroups(const std::vector<SelectorTerm>& terms);
  Result<std::vector<Image>> DescribeImages(const std::vector<SelectorTerm>& terms);
  Result<LaunchTemplate> CreateLaunchTemplate(const LaunchTemplateSpec& spec);
  Result<std::vector<LaunchTemplate>> DescribeLaunchTemplates(
      const std::vector<std::string>& names);
  // Launch templates carrying every tag in `tags`.
  Result<std::vector<LaunchTemplate>> DescribeLaunchTemplatesByTags(const Labels& tags);
  // A template EC2 does not know counts as deleted.
  Result<Unit> DeleteLaunchTemplate(const std::string& name);
  Result<FleetResult> CreateFleet(const FleetRequest& request);
  // Live instances (not terminated) carrying every tag in `tags` (a value of "*": the key with
  // any value); `page_size` bounds each answer.
  Result<std::vector<InstanceSummary>> DescribeInstancesByTags(const Labels& tags,
                                                               std::int32_t page_size = 500);
  // The instances named, in any state; an unknown id fails the call (kNotFound).
  Result<std::vector<InstanceSummary>> DescribeInstances(const std::vector<std::string>& ids);
  Result<TerminateResult> TerminateInstances(std::vector<std::string> ids);
  Result<Unit> CreateTags(const std::vector<std::string>& ids, const Labels& tags);

  // Types with their offerings (zone x capacity type) and prices: spot from the newest
  // DescribeSpotPriceHistory entry per type and zone, on-demand from `on_demand_prices`.
  Result<std::vector<InstanceType>> Catalog(
      const std::vector<std::string>& names,
      const std::map<std::string, MicroUsdPerHour>& on_demand_prices);

 private:
  template <class T, class Parser>
  Result<std::vector<T>> Paginate(const std::string& action, const Pairs& params, Parser parse);
  template <class T, class Parser>
  Result<std::vector<T>> BySelectors(const std::string& action,
                                     const std::vector<SelectorTerm>& terms, const char* id_param,
                                     const char* name_filter, Parser parse);

  AwsClient& client_;
};

// Joins the catalog's pieces; pure, so the simulator and tests can use it.
std::vector<InstanceType> BuildCatalog(
    std::vector<InstanceType> types, const std::vector<TypeOffering>& offerings,
    const std::vector<SpotPrice>& spot_prices,
    const std::map<std::string, MicroUsdPerHour>& on_demand_prices);
// One launch template per AMI x NodeClass hash: the name changes whenever either does, so a
// drifted NodeClass never launches from a stale template.
std::string LaunchTemplateName(const std::string& cluster, const std::string& nodeclass_hash,
                               const std::string& image_id);
// What every LaunchTemplateName in `cluster` begins with.
std::string LaunchTemplatePrefix(const std::string& cluster);
// Describes the template by name and creates it only when EC2 does not know it.
Result<LaunchTemplate> EnsureLaunchTemplate(Ec2& ec2, const LaunchTemplateSpec& spec);
// The tags that mark what tenon made for an EC2NodeClass in a cluster (its launch templates and
// its instance profile): kubernetes.io/cluster/CLUSTER=owned, karpenter.k8s.aws/ec2nodeclass.
Labels NodeClassOwnerTags(const std::string& cluster, const std::string& nodeclass);
// Deletes the launch templates tenon made for `nodeclass`, as Karpenter's EC2NodeClass
// termination does: those carrying NodeClassOwnerTags whose name LaunchTemplateName gave.
// Returns the names deleted.
Result<std::vector<std::string>> DeleteNodeClassLaunchTemplates(Ec2& ec2,
                                                                const std::string& cluster,
                                                                const std::string& nodeclass);

// The core's view of the cluster's instances, for garbage collection and recovery.
InstancesListed ToInstancesListed(const std::vector<InstanceSummary>& instances);
// The newest image per architecture, as amiSelectorTerms resolve.
std::vector<Image> NewestPerArch(std::vector<Image> images);
// The ids an InvalidInstanceID.NotFound message names.
std::vector<std::string> IdsInNotFoundMessage(const std::string& message);
std::string Base64(std::string_view data);

// The tags that select the instances NodePools launched in a cluster, for garbage collection:
// the cluster's, and the NodePool tag that only instances tenon or Karpenter launched carry. The
// cluster's tag alone also selects the instances of EKS managed node groups, which no NodeClaim
// tracks and which must never be collected.
Labels LaunchedByNodePoolTags(const std::string& cluster_name);

}  // namespace tenon::aws
