// The catalog file reader. The file describes instance types as AWS publishes them; offerings
// are one per (zone, usage class). Spot prices are not in the file, so the simulated market
// sets each spot offering at 30-70% of on-demand, fixed per (type, zone, seed).
#include <xxhash.h>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "adapters/kube/objects.h"
#include "adapters/sim/scenario.h"

namespace tenon::sim {
namespace {

constexpr std::size_t kCatalogTypesMax = 10'000;
constexpr std::int64_t kSpotPermilleMin = 300;
constexpr std::int64_t kSpotPermilleSpan = 401;
constexpr double kPriceUsdMax = 1000;
constexpr std::size_t kCountDigitsMax = 12;  // Per hour: well above the dearest EC2 type.

MicroUsdPerHour SpotPrice(MicroUsdPerHour on_demand, const std::string& type,
                          const std::string& zone, std::uint64_t seed) {
  std::string key = type + "/" + zone;
  std::uint64_t h = XXH3_64bits_withSeed(key.data(), key.size(), seed);
  std::int64_t permille = kSpotPermilleMin + static_cast<std::int64_t>(h % kSpotPermilleSpan);
  return MicroUsdPerHour{on_demand.value * permille / 1000};
}

MicroUsdPerHour Price(const nlohmann::json& usd, const std::string& where) {
  const double price = usd.get<double>();
  if (!std::isfinite(price) || price < 0 || price > kPriceUsdMax) {
    throw ScenarioError(where + ": must be a price in US dollars per hour, 0 to " +
                        std::to_string(static_cast<int>(kPriceUsdMax)));
  }
  return MicroUsdPerHour{std::llround(price * 1e6)};
}

// A type's `offerings`, written out by hand: each zone and capacity type it is sold in, at the
// price given, and whether the catalog shows it available.
std::vector<Offering> HandOfferings(const nlohmann::json& list, const std::string& type) {
  if (!list.is_array()) throw ScenarioError("instance type " + type + ": offerings: a list");
  std::vector<Offering> offerings;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& o = list[i];
    const std::string where = "instance type " + type + ": offerings[" + std::to_string(i) + "]";
    for (const auto& [key, value] : o.items()) {
      if (key != "zone" && key != "capacity_type" && key != "price_usd_hour" &&
          key != "available") {
        throw ScenarioError(where + "." + key +
                            ": unknown field (zone, capacity_type, price_usd_hour, available)");
      }
    }
    Offering offering;
    offering.zone = o.at("zone").get<std::string>();
    offering.capacity_type = o.at("capacity_type").get<std::string>();
    if (offering.zone.empty()) throw ScenarioError(where + ".zone: required");
    if (offering.capacity_type != kCapacityOnDemand && offering.capacity_type != kCapacitySpot &&
        offering.capacity_type != kCapacityReserved) {
      throw ScenarioError(where + ".capacity_type: on-demand, spot or reserved, not '" +
                          offering.capacity_type + "'");
    }
    offering.price = Price(o.at("price_usd_hour"), where + ".price_usd_hour");
    offering.available = o.value("available", true);
    for (const Offering& other : offerings) {
      if (other.zone == offering.zone && other.capacity_type == offering.capacity_type) {
        throw ScenarioError(where + ": " + offering.zone + "/" + offering.capacity_type +
                            " is listed twice");
      }
    }
    offerings.push_back(std::move(offering));
  }
  return offerings;
}

// A count written as a number or as a string of digits ("2").
std::int64_t Count(const nlohmann::json& value, const std::string& where) {
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) return value.get<std::int64_t>();
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (!text.empty() && text.size() <= kCountDigitsMax &&
        text.find_first_not_of("0123456789") == std::string::npos) {
      return std::stoll(text);
    }
  }
  throw ScenarioError(where + ": must be a whole number >= 0");
}

// What a type's catalog entry adds to AWS's description: its own labels, the extended resources
// its nodes advertise, and allocatable written by hand (cpu and memory as Kubernetes quantities,
// pods and other resources as counts).
void ParseOwn(const nlohmann::json& j, InstanceType& t) {
  const std::string where = "instance type " + t.name + ": ";
  if (j.contains("labels")) {
    if (!j["labels"].is_object()) throw ScenarioError(where + "labels: a map of strings");
    for (const auto& [key, value] : j["labels"].items()) {
      if (!value.is_string()) throw ScenarioError(where + "labels." + key + ": a string");
      t.labels[key] = value.get<std::string>();
    }
  }
  if (j.contains("extended_resources")) {
    if (!j["extended_resources"].is_object()) {
      throw ScenarioError(where + "extended_resources: a map of counts");
    }
    for (const auto& [name, count] : j["extended_resources"].items()) {
      t.extended[name] = Count(count, where + "extended_resources." + name);
    }
  }
  if (j.contains("allocatable")) {
    if (!j["allocatable"].is_object()) throw ScenarioError(where + "allocatable: a map");
    Resources allocatable;
    for (const auto& [name, value] : j["allocatable"].items()) {
      const std::string field = where + "allocatable." + name;
      try {
        if (name == "cpu") {
          allocatable.cpu =
              kube::ParseCpu(value.is_string() ? value.get<std::string>() : value.dump());
        } else if (name == "memory") {
          allocatable.memory =
              kube::ParseMemory(value.is_string() ? value.get<std::string>() : value.dump());
        } else if (name == "pods") {
          allocatable.pods = Count(value, field);
        } else {
          allocatable.extended[name] = Count(value, field);
        }
      } catch (const kube::ObjectError& e) {
        throw ScenarioError(field + ": " + e.what());
      }
    }
    t.allocatable = std::move(allocatable);
  }
}

InstanceType ParseType(const nlohmann::json& j, std::uint64_t seed) {
  InstanceType t;
  t.name = j.at("name").get<std::string>();
  const auto& arches = j.at("architectures");
  if (arches.empty()) throw ScenarioError("instance type " + t.name + " has no architecture");
  // Kubernetes names x86_64 "amd64"; types that also run i386 are amd64 nodes.
  t.arch = arches.front().get<std::string>();
  for (const auto& a : arches) {
    if (a == "x86_64") t.arch = "amd64";
  }
  t.cpu = Millicores{j.at("vcpu").get<std::int64_t>() * 1000};
  t.memory = Bytes{j.at("memory_mib").get<std::int64_t>() * kMebibyte.value};
  t.max_enis = j.value("max_network_interfaces", 0);
  t.ipv4_per_eni = j.value("ipv4_per_interface", 0);
  t.gpu_count = j.value("gpu_count", 0);
  t.bare_metal = j.value("bare_metal", false);
  t.gpu_name = j.value("gpu_name", std::string());
  t.gpu_manufacturer = j.value("gpu_manufacturer", std::string());
  // The file gives the GPU memory of the whole instance; Karpenter's label is per GPU.
  std::int64_t gpu_memory_mib = j.value("gpu_memory_mib", std::int64_t{0});
  if (t.gpu_count > 0) t.gpu_memory = Bytes{gpu_memory_mib / t.gpu_count * kMebibyte.value};
  t.accelerator_count = j.value("accelerator_count", 0);
  t.cpu_manufacturer = j.value("cpu_manufacturer", std::string());
  t.hypervisor = j.value("hypervisor", std::string());
  t.local_nvme_gib = j.value("local_storage_gb", std::int64_t{0});
  ParseOwn(j, t);
  if (j.contains("offerings")) {
    t.offerings = HandOfferings(j.at("offerings"), t.name);
    return t;
  }
  MicroUsdPerHour od{std::llround(j.at("on_demand_price_usd_hour").get<double>() * 1e6)};
  std::vector<std::string> classes = j.value("usage_classes", std::vector<std::string>{});
  bool has_od = std::find(classes.begin(), classes.end(), "on-demand") != classes.end();
  bool has_spot = std::find(classes.begin(), classes.end(), "spot") != classes.end();
  for (const auto& zone : j.at("zones")) {
    std::string z = zone.get<std::string>();
    if (has_od) t.offerings.push_back({z, kCapacityOnDemand, od, true});
    if (has_spot) t.offerings.push_back({z, kCapacitySpot, SpotPrice(od, t.name, z, seed), true});
  }
  return t;
}

}  // namespace

void RequireFile(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw ScenarioError(what + path.string() +
                        (std::filesystem::exists(path, ec) ? " is not a file" : " does not exist"));
  }
}

std::vector<InstanceType> LoadCatalogJson(const std::filesystem::path& path, std::uint64_t seed) {
  RequireFile(path, "catalog ");
  std::ifstream in(path);
  if (!in) throw ScenarioError("cannot open catalog " + path.string());
  std::vector<InstanceType> types;
  try {
    auto doc = nlohmann::json::parse(in);
    for (const auto& j : doc.at("instance_types")) {
      if (types.size() >= kCatalogTypesMax) throw ScenarioError("more than 10,000 instance types");
      if (!j.contains("offerings") &&
          (!j.contains("on_demand_price_usd_hour") || j["on_demand_price_usd_hour"].is_null())) {
        continue;  // Not sold on demand in this region: no price to plan with.
      }
      types.push_back(ParseType(j, seed));
    }
  } catch (const nlohmann::json::exception& e) {
    throw ScenarioError("catalog " + path.string() + ": " + e.what());
  } catch (const ScenarioError& e) {
    throw ScenarioError("catalog " + path.string() + ": " + e.what());
  }
  std::sort(types.begin(), types.end(),
            [](const InstanceType& a, const InstanceType& b) { return a.name < b.name; });
  return types;
}

}  // namespace tenon::sim
