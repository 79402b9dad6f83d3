#include "adapters/aws/ec2.h"

#include "adapters/aws/credentials.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cassert>
#include <regex>
#include <set>

namespace tenon::aws {
namespace {

template <class T>
Result<T> Failed(AwsError error) {
  return Result<T>::Fail(std::move(error));
}

AwsError Malformed(const std::string& action, const std::string& why) {
  return AwsError{ErrorCode::kTransient, "MalformedResponse", action + ": " + why, 200};
}

// Filter.N for a selector term's tags; "*" means the key exists with any value.
void AddTagFilters(const Labels& tags, Pairs& params, std::int32_t& filter) {
  for (const auto& [key, value] : tags) {
    const std::string prefix = "Filter." + std::to_string(filter++);
    if (value == "*") {
      params.emplace_back(prefix + ".Name", "tag-key");
      params.emplace_back(prefix + ".Value.1", key);
    } else {
      params.emplace_back(prefix + ".Name", "tag:" + key);
      params.emplace_back(prefix + ".Value.1", value);
    }
  }
}

void AddTags(const std::string& prefix, const Labels& tags, Pairs& params) {
  std::int32_t n = 1;
  for (const auto& [key, value] : tags) {
    params.emplace_back(prefix + ".Tag." + std::to_string(n) + ".Key", key);
    params.emplace_back(prefix + ".Tag." + std::to_string(n) + ".Value", value);
    ++n;
  }
}

template <class T>
std::string IdOf(const T& item) {
  return item.id;
}

}  // namespace

std::string Base64(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

template <class T, class Parser>
Result<std::vector<T>> Ec2::Paginate(const std::string& action, const Pairs& params, Parser parse) {
  std::vector<T> all;
  std::string token;
  for (std::int32_t page = 0; page < kPagesMax; ++page) {
    Pairs with_token = params;
    if (!token.empty()) with_token.emplace_back("NextToken", token);
    Result<std::string> body = client_.Query("ec2", action, kEc2Version, with_token);
    if (!body.ok()) return Failed<std::vector<T>>(body.error);
    Page<T> parsed = parse(*body.value);
    if (!parsed.error.empty()) return Failed<std::vector<T>>(Malformed(action, parsed.error));
    std::move(parsed.items.begin(), parsed.items.end(), std::back_inserter(all));
    if (parsed.next_token.empty()) return Result<std::vector<T>>::Ok(std::move(all));
    token = parsed.next_token;
  }
  return Failed<std::vector<T>>(Malformed(action, "more pages than the limit"));
}

template <class T, class Parser>
Result<std::vector<T>> Ec2::BySelectors(const std::string& action,
                                        const std::vector<SelectorTerm>& terms,
                                        const char* id_param, const char* name_filter,
                                        Parser parse) {
  // Each term is one request; the union is kept once per id, in id order.
  std::map<std::string, T> found;
  for (const SelectorTerm& term : terms) {
    Pairs params;
    std::int32_t filter = 1;
    if (!term.id.empty()) params.emplace_back(std::string(id_param) + ".1", term.id);
    if (!term.name.empty()) {
      const std::string prefix = "Filter." + std::to_string(filter++);
      params.emplace_back(prefix + ".Name", name_filter);
      params.emplace_back(prefix + ".Value.1", term.name);
    }
    if (!term.owner.empty()) params.emplace_back("Owner.1", term.owner);
    AddTagFilters(term.tags, params, filter);
    Result<std::vector<T>> got = Paginate<T>(action, params, parse);
    if (!got.ok()) return got;
    for (T& item : *got.value) found.emplace(IdOf(item), std::move(item));
  }
  std::vector<T> out;
  for (auto& [id, item] : found) out.push_back(std::move(item));
  return Result<std::vector<T>>::Ok(std::move(out));
}

Result<std::vector<InstanceType>> Ec2::DescribeInstanceTypes(
    const std::vector<std::string>& names) {
  Pairs params;
  for (std::size_t i = 0; i < names.size(); ++i) {
    params.emplace_back("InstanceType." + std::to_string(i + 1), names[i]);
  }
  if (names.empty()) params.emplace_back("MaxResults", "100");
  return Paginate<InstanceType>("DescribeInstanceTypes", params, ParseInstanceTypes);
}

Result<std::vector<TypeOffering>> Ec2::DescribeInstanceTypeOfferings() {
  return Paginate<TypeOffering>("DescribeInstanceTypeOfferings",
                                {{"LocationType", "availability-zone"}, {"MaxResults", "1000"}},
                                ParseInstanceTypeOfferings);
}

Result<std::vector<Zone>> Ec2::DescribeAvailabilityZones() {
  return Paginate<Zone>("DescribeAvailabilityZones", {}, ParseAvailabilityZones);
}

Result<std::vector<SpotPrice>> Ec2::DescribeSpotPriceHistory(
    const std::vector<std::string>& types) {
  Pairs params{{"ProductDescription.1", "Linux/UNIX"}, {"MaxResults", "1000"}};
  for (std::size_t i = 0; i < types.size(); ++i) {
    params.emplace_back("InstanceType." + std::to_string(i + 1), types[i]);
  }
  return Paginate<SpotPrice>("DescribeSpotPriceHistory", params, ParseSpotPriceHistory);
}

Result<std::vector<Subnet>> Ec2::DescribeSubnets(const std::vector<SelectorTerm>& terms) {
  return BySelectors<Subnet>("DescribeSubnets", terms, "SubnetId", "tag:Name", ParseSubnets);
}

Result<std::vector<SecurityGroup>> Ec2::DescribeSecurityGroups(
    const std::vector<SelectorTerm>& terms) {
  return BySelectors<SecurityGroup>("DescribeSecurityGroups", terms, "GroupId", "group-name",
                                    ParseSecurityGroups);
}

Result<std::vector<Image>> Ec2::DescribeImages(const std::vector<SelectorTerm>& terms) {
  return BySelectors<Image>("DescribeImages", terms, "ImageId", "name", ParseImages);
}

Result<LaunchTemplate> Ec2::CreateLaunchTemplate(const LaunchTemplateSpec& spec) {
  assert(!spec.name.empty());
  Pairs p{{"LaunchTemplateName", spec.name},
          {"LaunchTemplateData.ImageId", spec.image_id},
          {"LaunchTemplateData.MetadataOptions.HttpTokens",
           spec.imdsv2_required ? "required" : "optional"},
          {"LaunchTemplateData.MetadataOptions.HttpPutResponseHopLimit",
           std::to_string(spec.metadata_hop_limit)},
          {"LaunchTemplateData.MetadataOptions.HttpEndpoint", "enabled"}};
  if (!spec.instance_profile.empty()) {
    p.emplace_back("LaunchTemplateData.IamInstanceProfile.Name", spec.instance_profile);
  }
  if (!spec.user_data.empty())
    p.emplace_back("LaunchTemplateData.UserData", Base64(spec.user_data));
  for (std::size_t i = 0; i < spec.security_group_ids.size(); ++i) {
    p.emplace_back("LaunchTemplateData.SecurityGroupId." + std::to_string(i + 1),
                   spec.security_group_ids[i]);
  }
  for (std::size_t i = 0; i < spec.block_devices.size(); ++i) {
    const BlockDevice& d = spec.block_devices[i];
    const std::string prefix = "LaunchTemplateData.BlockDeviceMapping." + std::to_string(i + 1);
    p.emplace_back(prefix + ".DeviceName", d.device_name);
    p.emplace_back(prefix + ".Ebs.VolumeSize", std::to_string(d.volume_size_gib));
    p.emplace_back(prefix + ".Ebs.VolumeType", d.volume_type);
    p.emplace_back(prefix + ".Ebs.Encrypted", d.encrypted ? "true" : "false");
  }
  if (!spec.tags.empty()) {
    p.emplace_back("TagSpecification.1.ResourceType", "launch-template");
    AddTags("TagSpecification.1", spec.tags, p);
  }
  Result<std::string> body = client_.Query("ec2", "CreateLaunchTemplate", kEc2Version, p);
  if (!body.ok()) return Failed<LaunchTemplate>(body.error);
  Page<LaunchTemplate> parsed = ParseLaunchTemplates(*body.value);
  if (!parsed.error.empty() || parsed.items.empty()) {
    return Failed<LaunchTemplate>(Malformed("CreateLaunchTemplate", parsed.error));
  }
  return Result<LaunchTemplate>::Ok(parsed.items.front());
}

Result<std::vector<LaunchTemplate>> Ec2::DescribeLaunchTemplates(
    const std::vector<std::string>& names) {
  Pairs params;
  for (std::size_t i = 0; i < names.size(); ++i) {
    params.emplace_back("LaunchTemplateName." + std::to_string(i + 1), names[i]);
  }
  return Paginate<LaunchTemplate>("DescribeLaunchTemplates", params, ParseLaunchTemplates);
}

Result<std::vector<LaunchTemplate>> Ec2::DescribeLaunchTemplatesByTags(const Labels& tags) {
  Pairs params{{"MaxResults", "200"}};
  std::int32_t filter = 1;
  AddTagFilters(tags, params, filter);
  return Paginate<LaunchTemplate>("DescribeLaunchTemplates", params, ParseLaunchTemplates);
}

Result<Unit> Ec2::DeleteLaunchTemplate(const std::string& name) {
  Result<std::string> body =
      client_.Query("ec2", "DeleteLaunchTemplate", kEc2Version, {{"LaunchTemplateName", name}});
  if (!body.ok() && body.error.code != ErrorCode::kNotFound) return Failed<Unit>(body.error);
  return Result<Unit>::Ok(Unit{});
}

namespace {

Pairs CreateFleetParams(const FleetRequest& r) {
  const bool spot = r.capacity_type == "spot";
  Pairs p{{"Type", "instant"},
          {"ClientToken", r.client_token},
          {"TargetCapacitySpecification.TotalTargetCapacity", "1"},
          {"TargetCapacitySpecification.DefaultTargetCapacityType", spot ? "spot" : "on-demand"},
          {spot ? "SpotOptions.AllocationStrategy" : "OnDemandOptions.AllocationStrategy",
           r.allocation_strategy}};
  for (std::size_t c = 0; c < r.configs.size(); ++c) {
    const std::string config = "LaunchTemplateConfigs." + std::to_string(c + 1);
    p.emplace_back(config + ".LaunchTemplateSpecification.LaunchTemplateName",
                   r.configs[c].launch_template_name);
    p.emplace_back(config + ".LaunchTemplateSpecification.Version", "$Latest");
    const std::vector<FleetOverride>& overrides = r.configs[c].overrides;
    for (std::size_t i = 0; i < overrides.size(); ++i) {
      const std::string prefix = config + ".Overrides." + std::to_string(i + 1);
      p.emplace_back(prefix + ".InstanceType", overrides[i].instance_type);
      if (!overrides[i].subnet_id.empty())
        p.emplace_back(prefix + ".SubnetId", overrides[i].subnet_id);
      if (!overrides[i].zone.empty())
        p.emplace_back(prefix + ".AvailabilityZone", overrides[i].zone);
    }
  }
  // The wire name is singular (TagSpecification.N), unlike the SDK field TagSpecifications.
  std::int32_t spec = 1;
  for (const char* type : {"instance", "volume", "fleet"}) {
    const std::string prefix = "TagSpecification." + std::to_string(spec++);
    p.emplace_back(prefix + ".ResourceType", type);
    AddTags(prefix, r.tags, p);
  }
  return p;
}

std::size_t OverrideCount(const FleetRequest& r) {
  std::size_t n = 0;
  for (const FleetTemplateConfig& c : r.configs) n += c.overrides.size();
  return n;
}

}  // namespace

std::string CreateFleetBody(const FleetRequest& request) {
  Pairs form{{"Action", "CreateFleet"}, {"Version", kEc2Version}};
  const Pairs params = CreateFleetParams(request);
  form.insert(form.end(), params.begin(), params.end());
  return FormEncode(form);
}

Result<FleetResult> Ec2::CreateFleet(const FleetRequest& r) {
  const std::size_t overrides = OverrideCount(r);
  if (overrides == 0 || overrides > static_cast<std::size_t>(kFleetOverridesMax)) {
    return Failed<FleetResult>(AwsError{ErrorCode::kInvalid, "InvalidOverrides",
                                        "CreateFleet needs 1 to 60 overrides", 0});
  }
  Result<std::string> body = client_.Query("ec2", "CreateFleet", kEc2Version, CreateFleetParams(r));
  if (!body.ok()) return Failed<FleetResult>(body.error);
  std::string error;
  std::optional<FleetResult> parsed = ParseCreateFleet(*body.value, &error);
  if (!parsed) return Failed<FleetResult>(Malformed("CreateFleet", error));
  return Result<FleetResult>::Ok(std::move(*parsed));
}

Result<std::vector<InstanceSummary>> Ec2::DescribeInstancesByTags(const Labels& tags,
                                                                  std::int32_t page_size) {
  Pairs params{{"MaxResults", std::to_string(std::clamp(page_size, 5, 1000))}};
  std::int32_t filter = 1;
  AddTagFilters(tags, params, filter);
  const std::string prefix = "Filter." + std::to_string(filter);
  params.emplace_back(prefix + ".Name", "instance-state-name");
  std::int32_t n = 1;
  for (const char* state : {"pending", "running", "stopping", "stopped", "shutting-down"}) {
    params.emplace_back(prefix + ".Value." + std::to_string(n++), state);
  }
  return Paginate<InstanceSummary>("DescribeInstances", params, ParseInstances);
}

Result<std::vector<InstanceSummary>> Ec2::DescribeInstances(const std::vector<std::string>& ids) {
  Pairs params;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    params.emplace_back("InstanceId." + std::to_string(i + 1), ids[i]);
  }
  return Paginate<InstanceSummary>("DescribeInstances", params, ParseInstances);
}

std::vector<std::string> IdsInNotFoundMessage(const std::string& message) {
  static const std::regex kId("i-[0-9a-f]+");
  std::vector<std::string> ids;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), kId);
       it != std::sregex_iterator() && ids.size() < 1000; ++it) {
    ids.push_back(it->str());
  }
  return ids;
}

Result<TerminateResult> Ec2::TerminateInstances(std::vector<std::string> ids) {
  TerminateResult result;
  // One unknown id fails the whole call: drop the ids EC2 names and try again, a few times.
  for (std::int32_t attempt = 0; attempt <= kTerminateRetriesMax && !ids.empty(); ++attempt) {
    Pairs params;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      params.emplace_back("InstanceId." + std::to_string(i + 1), ids[i]);
    }
    Result<std::string> body = client_.Query("ec2", "TerminateInstances", kEc2Version, params);
    if (body.ok()) {
      Page<std::string> parsed = ParseTerminatedIds(*body.value);
      result.terminated = std::move(parsed.items);
      return Result<TerminateResult>::Ok(std::move(result));
    }
    if (body.error.aws_code != "InvalidInstanceID.NotFound")
      return Failed<TerminateResult>(body.error);
    const std::vector<std::string> missing = IdsInNotFoundMessage(body.error.message);
    const std::set<std::string> gone(missing.begin(), missing.end());
    const auto before = ids.size();
    std::erase_if(ids, [&](const std::string& id) { return gone.contains(id); });
    if (ids.size() == before) return Failed<TerminateResult>(body.error);
    result.missing.insert(result.missing.end(), missing.begin(), missing.end());
  }
  return Result<TerminateResult>::Ok(std::move(result));
}

Result<Unit> Ec2::CreateTags(const std::vector<std::string>& ids, const Labels& tags) {
  Pairs params;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    params.emplace_back("ResourceId." + std::to_string(i + 1), ids[i]);
  }
  std::int32_t n = 1;
  for (const auto& [key, value] : tags) {
    params.emplace_back("Tag." + std::to_string(n) + ".Key", key);
    params.emplace_back("Tag." + std::to_string(n) + ".Value", value);
    ++n;
  }
  Result<std::string> body = client_.Query("ec2", "CreateTags", kEc2Version, params);
  if (!body.ok()) return Failed<Unit>(body.error);
  return Result<Unit>::Ok(Unit{});
}

Result<std::vector<InstanceType>> Ec2::Catalog(
    const std::vector<std::string>& names,
    const std::map<std::string, MicroUsdPerHour>& on_demand_prices) {
  auto types = DescribeInstanceTypes(names);
  if (!types.ok()) return types;
  auto offerings = DescribeInstanceTypeOfferings();
  if (!offerings.ok()) return Failed<std::vector<InstanceType>>(offerings.error);
  auto spot = DescribeSpotPriceHistory(names);
  if (!spot.ok()) return Failed<std::vector<InstanceType>>(spot.error);
  return Result<std::vector<InstanceType>>::Ok(
      BuildCatalog(std::move(*types.value), *offerings.value, *spot.value, on_demand_prices));
}

std::vector<InstanceType> BuildCatalog(
    std::vector<InstanceType> types, const std::vector<TypeOffering>& offerings,
    const std::vector<SpotPrice>& spot_prices,
    const std::map<std::string, MicroUsdPerHour>& on_demand_prices) {
  std::map<std::string, std::set<std::string>> zones;
  for (const TypeOffering& o : offerings) zones[o.instance_type].insert(o.zone);
  std::map<std::pair<std::string, std::string>, const SpotPrice*> newest;
  for (const SpotPrice& s : spot_prices) {
    auto& slot = newest[{s.instance_type, s.zone}];
    if (slot == nullptr || slot->timestamp < s.timestamp) slot = &s;
  }
  for (InstanceType& type : types) {
    std::set<std::string> capacity_types;
    for (const Offering& o : type.offerings) capacity_types.insert(o.capacity_type);
    type.offerings.clear();
    for (const std::string& zone : zones[type.name]) {
      for (const std::string& capacity : capacity_types) {
        // An offering without a known price is left out: priced at zero it would always look
        // cheapest (Karpenter drops unpriced offerings too).
        std::optional<MicroUsdPerHour> price;
        if (capacity == "spot") {
          if (const auto it = newest.find({type.name, zone}); it != newest.end())
            price = it->second->price;
        } else if (const auto it = on_demand_prices.find(type.name); it != on_demand_prices.end()) {
          price = it->second;
        }
        if (price) type.offerings.push_back(Offering{zone, capacity, *price, true});
      }
    }
  }
  std::sort(types.begin(), types.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return types;
}

std::string LaunchTemplatePrefix(const std::string& cluster) {
  return "tenon/" + cluster + "/";
}

std::string LaunchTemplateName(const std::string& cluster, const std::string& nodeclass_hash,
                               const std::string& image_id) {
  return LaunchTemplatePrefix(cluster) + Sha256Hex(nodeclass_hash + "/" + image_id).substr(0, 16);
}

Result<LaunchTemplate> EnsureLaunchTemplate(Ec2& ec2, const LaunchTemplateSpec& spec) {
  Result<std::vector<LaunchTemplate>> found = ec2.DescribeLaunchTemplates({spec.name});
  if (found.ok() && !found.value->empty()) return Result<LaunchTemplate>::Ok(found.value->front());
  if (!found.ok() && found.error.code != ErrorCode::kNotFound)
    return Result<LaunchTemplate>::Fail(found.error);
  return ec2.CreateLaunchTemplate(spec);
}

Labels NodeClassOwnerTags(const std::string& cluster, const std::string& nodeclass) {
  return {{"kubernetes.io/cluster/" + cluster, "owned"},
          {"karpenter.k8s.aws/ec2nodeclass", nodeclass}};
}

Result<std::vector<std::string>> DeleteNodeClassLaunchTemplates(Ec2& ec2,
                                                                const std::string& cluster,
                                                                const std::string& nodeclass) {
  using R = Result<std::vector<std::string>>;
  Result<std::vector<LaunchTemplate>> found =
      ec2.DescribeLaunchTemplatesByTags(NodeClassOwnerTags(cluster, nodeclass));
  if (!found.ok()) return R::Fail(found.error);
  // Only names LaunchTemplateName gives: a template someone else tagged alike is not tenon's.
  const std::string prefix = LaunchTemplatePrefix(cluster);
  std::vector<std::string> deleted;
  for (const LaunchTemplate& t : *found.value) {
    if (t.name.rfind(prefix, 0) != 0) continue;
    Result<Unit> done = ec2.DeleteLaunchTemplate(t.name);
    if (!done.ok()) return R::Fail(done.error);
    deleted.push_back(t.name);
  }
  std::sort(deleted.begin(), deleted.end());
  return R::Ok(std::move(deleted));
}

InstancesListed ToInstancesListed(const std::vector<InstanceSummary>& instances) {
  InstancesListed out;
  for (const InstanceSummary& i : instances) {
    const auto claim = i.tags.find("karpenter.sh/nodeclaim");
    out.instances.push_back(CloudInstance{i.id, claim == i.tags.end() ? "" : claim->second,
                                          ParseIsoTime(i.launch_time).value_or(Instant{}),
                                          i.state});
  }
  std::sort(out.instances.begin(), out.instances.end(),
            [](const CloudInstance& a, const CloudInstance& b) { return a.id < b.id; });
  return out;
}

std::vector<Image> NewestPerArch(std::vector<Image> images) {
  std::map<std::string, Image> newest;
  for (Image& image : images) {
    auto it = newest.find(image.arch);
    // Newest creation date wins; ties break on id so the choice is deterministic.
    if (it == newest.end() ||
        std::tie(it->second.created, it->second.id) < std::tie(image.created, image.id)) {
      newest[image.arch] = std::move(image);
    }
  }
  std::vector<Image> out;
  for (auto& [arch, image] : newest) out.push_back(std::move(image));
  return out;
}

Labels LaunchedByNodePoolTags(const std::string& cluster_name) {
  return {{"kubernetes.io/cluster/" + cluster_name, "owned"}, {label::kNodePool, "*"}};
}

}  // namespace tenon::aws
