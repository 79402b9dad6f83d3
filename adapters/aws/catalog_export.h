// `tenon catalog export`: the instance types, offerings and prices of a real account, written
// in the catalog file format `tenon simulate` reads (adapters/sim LoadCatalogJson).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "adapters/aws/ec2.h"

namespace tenon::aws {

// On-demand prices from the operator (AWS Pricing is not called): either {"m5.large": 0.096}
// or a catalog file whose types carry on_demand_price_usd_hour. Unreadable input: an error.
Result<std::map<std::string, MicroUsdPerHour>> LoadPriceFile(const std::filesystem::path& path);

// The catalog file for `types` (offerings and prices already joined); pure.
std::string CatalogFileJson(const std::string& region, const std::vector<InstanceType>& types);

// Fetches the catalog through `ec2` and writes it to `out`; returns the number of types.
Result<std::int64_t> ExportCatalog(Ec2& ec2, const std::string& region,
                                   const std::map<std::string, MicroUsdPerHour>& on_demand_prices,
                                   const std::filesystem::path& out);

}  // namespace tenon::aws
