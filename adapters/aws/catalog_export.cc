#include "adapters/aws/catalog_export.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace tenon::aws {
namespace {

using nlohmann::json;

constexpr std::size_t kPricesMax = 100'000;

AwsError FileError(const std::string& message) {
  return AwsError{ErrorCode::kInvalid, "BadFile", message, 0};
}

double Usd(MicroUsdPerHour price) {
  return static_cast<double>(price.value) / 1e6;
}

json TypeJson(const InstanceType& t) {
  std::set<std::string> zones;
  std::set<std::string> classes;
  json spot = json::object();
  json on_demand = nullptr;
  for (const Offering& o : t.offerings) {
    zones.insert(o.zone);
    classes.insert(o.capacity_type);
    if (o.capacity_type == "spot" && o.price.value > 0) spot[o.zone] = Usd(o.price);
    if (o.capacity_type == "on-demand" && o.price.value > 0) on_demand = Usd(o.price);
  }
  return json{{"name", t.name},
              {"vcpu", t.cpu.value / 1000},
              {"memory_mib", t.memory.value / kMebibyte.value},
              {"architectures", {t.arch == "amd64" ? "x86_64" : t.arch}},
              {"cpu_manufacturer", t.cpu_manufacturer},
              {"hypervisor", t.hypervisor},
              {"bare_metal", t.bare_metal},
              {"usage_classes", classes},
              {"gpu_count", t.gpu_count},
              {"gpu_manufacturer", t.gpu_manufacturer},
              {"gpu_name", t.gpu_name},
              // The file holds the whole instance's GPU memory; the core keeps it per GPU.
              {"gpu_memory_mib", t.gpu_memory.value / kMebibyte.value * t.gpu_count},
              {"accelerator_count", t.accelerator_count},
              {"max_network_interfaces", t.max_enis},
              {"ipv4_per_interface", t.ipv4_per_eni},
              {"local_storage_gb", t.local_nvme_gib},
              {"zones", zones},
              {"on_demand_price_usd_hour", on_demand},
              {"spot_prices_usd_hour", spot}};
}

}  // namespace

Result<std::map<std::string, MicroUsdPerHour>> LoadPriceFile(const std::filesystem::path& path) {
  using Prices = std::map<std::string, MicroUsdPerHour>;
  std::ifstream in(path);
  if (!in) return Result<Prices>::Fail(FileError("cannot open price file " + path.string()));
  const json doc = json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Result<Prices>::Fail(FileError("price file " + path.string() + " is not a JSON object"));
  }
  Prices prices;
  const auto add = [&](const json& name, const json& usd) {
    if (!name.is_string() || !usd.is_number() || usd.get<double>() < 0 ||
        prices.size() >= kPricesMax)
      return;
    prices[name.get<std::string>()] =
        MicroUsdPerHour{static_cast<std::int64_t>(std::llround(usd.get<double>() * 1e6))};
  };
  if (const auto types = doc.find("instance_types"); types != doc.end() && types->is_array()) {
    for (const json& t : *types) {
      if (t.is_object() && t.contains("name") && t.contains("on_demand_price_usd_hour")) {
        add(t["name"], t["on_demand_price_usd_hour"]);
      }
    }
  } else {
    for (const auto& [name, usd] : doc.items()) add(json(name), usd);
  }
  return Result<Prices>::Ok(std::move(prices));
}

std::string CatalogFileJson(const std::string& region, const std::vector<InstanceType>& types) {
  json doc{{"region", region},
           {"source",
            "tenon catalog export: DescribeInstanceTypes, DescribeInstanceTypeOfferings, "
            "DescribeSpotPriceHistory; on-demand prices from the operator's price file"},
           {"instance_types", json::array()}};
  for (const InstanceType& t : types) doc["instance_types"].push_back(TypeJson(t));
  return doc.dump(1);
}

Result<std::int64_t> ExportCatalog(Ec2& ec2, const std::string& region,
                                   const std::map<std::string, MicroUsdPerHour>& on_demand_prices,
                                   const std::filesystem::path& out) {
  Result<std::vector<InstanceType>> catalog = ec2.Catalog({}, on_demand_prices);
  if (!catalog.ok()) return Result<std::int64_t>::Fail(catalog.error);
  std::ofstream file(out, std::ios::trunc);
  file << CatalogFileJson(region, *catalog.value) << "\n";
  if (!file) return Result<std::int64_t>::Fail(FileError("cannot write " + out.string()));
  return Result<std::int64_t>::Ok(static_cast<std::int64_t>(catalog.value->size()));
}

}  // namespace tenon::aws
