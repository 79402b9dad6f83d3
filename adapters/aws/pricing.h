// On-demand prices from the AWS Price List API (GetProducts, JSON protocol), following
// NextToken, with the operator's price file as the fallback when the API cannot answer
// (no Pricing endpoint in the partition, no permission, moto).
#pragma once

#include <map>
#include <string>

#include "adapters/aws/http.h"

namespace tenon::aws {

inline constexpr std::int32_t kPricingPagesMax = 200;

using PriceMap = std::map<std::string, MicroUsdPerHour>;

// The Price List "location" of a region (us-east-1 -> US East (N. Virginia)); empty if unknown.
std::string PricingLocation(const std::string& region);
// One PriceList entry (itself a JSON document) -> its instance type and hourly USD price.
std::optional<std::pair<std::string, MicroUsdPerHour>> ParsePriceListEntry(
    const std::string& entry);

class Pricing {
 public:
  explicit Pricing(AwsClient& client) : client_(client) {}
  // Linux, shared tenancy, no pre-installed software, capacity in use.
  Result<PriceMap> OnDemandPrices(const std::string& region);

 private:
  AwsClient& client_;
};

// The API's prices, or `fallback` (the operator's file) when the API fails; `used_fallback`
// says which.
PriceMap OnDemandPricesOrFallback(Pricing& pricing, const std::string& region,
                                  const PriceMap& fallback, bool* used_fallback);

}  // namespace tenon::aws
