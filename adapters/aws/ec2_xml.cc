#include "adapters/aws/ec2_xml.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <pugixml.hpp>

namespace tenon::aws {
namespace {

// Every set in an answer is bounded, so a hostile or broken body cannot make us loop forever.
constexpr std::int32_t kItemsMax = 100'000;

// No figure of an EC2 answer comes near 2^40 (a count of MiB that large is an exbibyte): a
// larger or negative one is taken as absent (0), so that scaling it (MiB to bytes, vCPUs to
// millicores) cannot overflow.
constexpr std::int64_t kFigureMax = std::int64_t{1} << 40;
// Nor does a count of devices come near 2^20; a sum of them is held there.
constexpr std::int64_t kCountMax = std::int64_t{1} << 20;

std::int64_t ToInt(std::string_view text) {
  std::int64_t value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  return result.ec == std::errc() && value >= 0 && value <= kFigureMax ? value : 0;
}

// `total` plus the count in `text`, held at kCountMax.
std::int32_t AddCount(std::int32_t total, std::string_view text) {
  return static_cast<std::int32_t>(std::min(kCountMax, std::int64_t{total} + ToInt(text)));
}

std::string Text(pugi::xml_node node, const char* path) {
  return node.first_element_by_path(path).child_value();
}

// Parses `xml` and finds the answer's root element; fills `error` when it cannot.
template <class T>
pugi::xml_node Root(pugi::xml_document& doc, const std::string& xml, Page<T>& page) {
  const pugi::xml_parse_result parsed = doc.load_buffer(xml.data(), xml.size());
  if (!parsed) {
    page.error = std::string("not XML: ") + parsed.description();
    return {};
  }
  pugi::xml_node root = doc.document_element();
  if (std::string_view(root.name()) == "Response" || root.child("Errors")) {
    page.error = "error answer: " + Text(root, "Errors/Error/Code");
    return {};
  }
  page.next_token = root.child_value("nextToken");
  return root;
}

// Calls `each` for every <item> under `set` (a direct child of the root), at most kItemsMax.
template <class T, class F>
Page<T> Items(const std::string& xml, const char* set, F each) {
  Page<T> page;
  pugi::xml_document doc;
  pugi::xml_node root = Root(doc, xml, page);
  if (!root) return page;
  std::int32_t n = 0;
  for (pugi::xml_node item : root.child(set).children("item")) {
    if (++n > kItemsMax) {
      page.error = std::string("more than the item limit in ") + set;
      break;
    }
    if (std::optional<T> parsed = each(item)) page.items.push_back(std::move(*parsed));
  }
  return page;
}

Labels Tags(pugi::xml_node node) {
  Labels tags;
  std::int32_t n = 0;
  for (pugi::xml_node tag : node.child("tagSet").children("item")) {
    if (++n > kItemsMax) break;
    tags[tag.child_value("key")] = tag.child_value("value");
  }
  return tags;
}

std::string Arch(std::string_view aws) {
  if (aws == "x86_64") return "amd64";
  if (aws == "arm64") return "arm64";
  return std::string(aws);
}

void ParseGpus(pugi::xml_node item, InstanceType& out) {
  for (pugi::xml_node gpu : item.first_element_by_path("gpuInfo/gpus").children("item")) {
    out.gpu_count = AddCount(out.gpu_count, gpu.child_value("count"));
    out.gpu_name = gpu.child_value("name");
    out.gpu_manufacturer = gpu.child_value("manufacturer");
    out.gpu_memory = Bytes{ToInt(Text(gpu, "memoryInfo/sizeInMiB")) * kMebibyte.value};
  }
  for (pugi::xml_node acc :
       item.first_element_by_path("neuronInfo/neuronDevices").children("item")) {
    out.accelerator_count = AddCount(out.accelerator_count, acc.child_value("count"));
  }
  for (pugi::xml_node acc :
       item.first_element_by_path("inferenceAcceleratorInfo/accelerators").children("item")) {
    out.accelerator_count = AddCount(out.accelerator_count, acc.child_value("count"));
  }
}

std::optional<InstanceType> ParseInstanceType(pugi::xml_node item) {
  InstanceType out;
  out.name = item.child_value("instanceType");
  if (out.name.empty()) return std::nullopt;
  // Types that support both take amd64/arm64 from the first listed (i386 comes second).
  out.arch = Arch(Text(item, "processorInfo/supportedArchitectures/item"));
  out.cpu_manufacturer = Text(item, "processorInfo/manufacturer");
  out.cpu = Millicores{ToInt(Text(item, "vCpuInfo/defaultVCpus")) * 1000};
  out.memory = Bytes{ToInt(Text(item, "memoryInfo/sizeInMiB")) * kMebibyte.value};
  out.max_enis = AddCount(0, Text(item, "networkInfo/maximumNetworkInterfaces"));
  out.ipv4_per_eni = AddCount(0, Text(item, "networkInfo/ipv4AddressesPerInterface"));
  out.hypervisor = item.child_value("hypervisor");
  out.bare_metal = std::string_view(item.child_value("bareMetal")) == "true";
  if (Text(item, "instanceStorageInfo/nvmeSupport") != "unsupported") {
    out.local_nvme_gib = ToInt(Text(item, "instanceStorageInfo/totalSizeInGB"));
  }
  ParseGpus(item, out);
  // Offerings come from DescribeInstanceTypeOfferings; the usage classes say which capacity
  // types to offer in each zone.
  for (pugi::xml_node usage : item.child("supportedUsageClasses").children("item")) {
    out.offerings.push_back(Offering{"", usage.child_value(), MicroUsdPerHour{0}, true});
  }
  return out;
}

}  // namespace

std::optional<MicroUsdPerHour> ParsePrice(const std::string& text) {
  double value = 0;
  const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (result.ec != std::errc() || !std::isfinite(value) || value < 0 || value > 1e6) {
    return std::nullopt;
  }
  return MicroUsdPerHour{static_cast<std::int64_t>(std::llround(value * 1e6))};
}

Page<InstanceType> ParseInstanceTypes(const std::string& xml) {
  return Items<InstanceType>(xml, "instanceTypeSet", ParseInstanceType);
}

Page<TypeOffering> ParseInstanceTypeOfferings(const std::string& xml) {
  return Items<TypeOffering>(
      xml, "instanceTypeOfferingSet", [](pugi::xml_node item) -> std::optional<TypeOffering> {
        TypeOffering out{item.child_value("instanceType"), item.child_value("location")};
        if (out.instance_type.empty() || out.zone.empty()) return {};
        return out;
      });
}

Page<SpotPrice> ParseSpotPriceHistory(const std::string& xml) {
  return Items<SpotPrice>(
      xml, "spotPriceHistorySet", [](pugi::xml_node item) -> std::optional<SpotPrice> {
        const auto price = ParsePrice(item.child_value("spotPrice"));
        if (!price) return {};
        return SpotPrice{item.child_value("instanceType"), item.child_value("availabilityZone"),
                         *price, item.child_value("timestamp")};
      });
}

Page<Zone> ParseAvailabilityZones(const std::string& xml) {
  return Items<Zone>(xml, "availabilityZoneInfo", [](pugi::xml_node item) -> std::optional<Zone> {
    return Zone{item.child_value("zoneName"), item.child_value("zoneId"),
                item.child_value("zoneState")};
  });
}

Page<Subnet> ParseSubnets(const std::string& xml) {
  return Items<Subnet>(xml, "subnetSet", [](pugi::xml_node item) -> std::optional<Subnet> {
    return Subnet{item.child_value("subnetId"), item.child_value("availabilityZone"),
                  ToInt(item.child_value("availableIpAddressCount")), Tags(item),
                  item.child_value("availabilityZoneId")};
  });
}

Page<SecurityGroup> ParseSecurityGroups(const std::string& xml) {
  return Items<SecurityGroup>(xml, "securityGroupInfo",
                              [](pugi::xml_node item) -> std::optional<SecurityGroup> {
                                return SecurityGroup{item.child_value("groupId"),
                                                     item.child_value("groupName"), Tags(item)};
                              });
}

Page<Image> ParseImages(const std::string& xml) {
  return Items<Image>(xml, "imagesSet", [](pugi::xml_node item) -> std::optional<Image> {
    return Image{item.child_value("imageId"),
                 item.child_value("name"),
                 Arch(item.child_value("architecture")),
                 item.child_value("creationDate"),
                 item.child_value("imageOwnerId"),
                 Tags(item)};
  });
}

Page<LaunchTemplate> ParseLaunchTemplates(const std::string& xml) {
  Page<LaunchTemplate> page;
  pugi::xml_document doc;
  pugi::xml_node root = Root(doc, xml, page);
  if (!root) return page;
  // CreateLaunchTemplate answers one <launchTemplate>; Describe answers a set of them.
  if (pugi::xml_node one = root.child("launchTemplate")) {
    page.items.push_back(
        {one.child_value("launchTemplateId"), one.child_value("launchTemplateName")});
    return page;
  }
  return Items<LaunchTemplate>(xml, "launchTemplates",
                               [](pugi::xml_node item) -> std::optional<LaunchTemplate> {
                                 return LaunchTemplate{item.child_value("launchTemplateId"),
                                                       item.child_value("launchTemplateName")};
                               });
}

Page<InstanceSummary> ParseInstances(const std::string& xml) {
  Page<InstanceSummary> page;
  pugi::xml_document doc;
  pugi::xml_node root = Root(doc, xml, page);
  if (!root) return page;
  std::int32_t n = 0;
  for (pugi::xml_node reservation : root.child("reservationSet").children("item")) {
    for (pugi::xml_node item : reservation.child("instancesSet").children("item")) {
      if (++n > kItemsMax) return page;
      page.items.push_back(InstanceSummary{
          item.child_value("instanceId"), item.child_value("instanceType"),
          Text(item, "placement/availabilityZone"), Text(item, "instanceState/name"),
          item.child_value("launchTime"), Tags(item)});
    }
  }
  return page;
}

Page<std::string> ParseTerminatedIds(const std::string& xml) {
  return Items<std::string>(xml, "instancesSet",
                            [](pugi::xml_node item) -> std::optional<std::string> {
                              return std::string(item.child_value("instanceId"));
                            });
}

std::optional<FleetResult> ParseCreateFleet(const std::string& xml, std::string* error) {
  Page<FleetResult> page;
  pugi::xml_document doc;
  pugi::xml_node root = Root(doc, xml, page);
  if (!root) {
    *error = page.error;
    return std::nullopt;
  }
  FleetResult out;
  out.fleet_id = root.child_value("fleetId");
  std::int32_t n = 0;
  for (pugi::xml_node item : root.child("fleetInstanceSet").children("item")) {
    const pugi::xml_node o = item.first_element_by_path("launchTemplateAndOverrides/overrides");
    for (pugi::xml_node id : item.child("instanceIds").children("item")) {
      if (++n > kItemsMax) break;
      std::string type = item.child_value("instanceType");
      if (type.empty()) type = o.child_value("instanceType");
      out.instances.push_back(
          FleetInstance{id.child_value(), type, o.child_value("availabilityZone"),
                        o.child_value("subnetId"), item.child_value("lifecycle")});
    }
  }
  for (pugi::xml_node item : root.child("errorSet").children("item")) {
    if (++n > kItemsMax) break;
    const pugi::xml_node o = item.first_element_by_path("launchTemplateAndOverrides/overrides");
    out.errors.push_back(
        FleetErrorEntry{o.child_value("instanceType"), o.child_value("availabilityZone"),
                        o.child_value("subnetId"), item.child_value("lifecycle"),
                        item.child_value("errorCode"), item.child_value("errorMessage")});
  }
  return out;
}

}  // namespace tenon::aws
