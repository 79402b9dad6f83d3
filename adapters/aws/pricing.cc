#include "adapters/aws/pricing.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "adapters/aws/ec2_xml.h"

namespace tenon::aws {
namespace {

using nlohmann::json;

constexpr std::size_t kTermsMax = 100;

nlohmann::json Filters(const std::string& location) {
  json filters = json::array();
  for (const auto& [field, value] :
       std::map<std::string, std::string>{{"location", location},
                                          {"operatingSystem", "Linux"},
                                          {"tenancy", "Shared"},
                                          {"preInstalledSw", "NA"},
                                          {"capacitystatus", "Used"}}) {
    filters.push_back({{"Type", "TERM_MATCH"}, {"Field", field}, {"Value", value}});
  }
  return filters;
}

}  // namespace

std::string PricingLocation(const std::string& region) {
  static const std::map<std::string, std::string> kLocations{
      {"us-east-1", "US East (N. Virginia)"},
      {"us-east-2", "US East (Ohio)"},
      {"us-west-1", "US West (N. California)"},
      {"us-west-2", "US West (Oregon)"},
      {"eu-west-1", "EU (Ireland)"},
      {"eu-central-1", "EU (Frankfurt)"},
      {"ap-south-1", "Asia Pacific (Mumbai)"},
      {"ap-northeast-1", "Asia Pacific (Tokyo)"},
      {"ap-southeast-1", "Asia Pacific (Singapore)"},
      {"ap-southeast-2", "Asia Pacific (Sydney)"}};
  const auto it = kLocations.find(region);
  return it == kLocations.end() ? "" : it->second;
}

std::optional<std::pair<std::string, MicroUsdPerHour>> ParsePriceListEntry(
    const std::string& entry) {
  const json doc = json::parse(entry, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;
  const json* type = nullptr;
  if (doc.contains("product") && doc["product"].is_object() &&
      doc["product"].contains("attributes")) {
    const json& attributes = doc["product"]["attributes"];
    if (attributes.is_object() && attributes.contains("instanceType"))
      type = &attributes["instanceType"];
  }
  if (type == nullptr || !type->is_string()) return std::nullopt;
  if (!doc.contains("terms") || !doc["terms"].is_object() || !doc["terms"].contains("OnDemand"))
    return std::nullopt;
  const json& terms = doc["terms"]["OnDemand"];
  if (!terms.is_object()) return std::nullopt;
  std::size_t n = 0;
  for (const auto& [term_id, term] : terms.items()) {
    if (++n > kTermsMax || !term.is_object() || !term.contains("priceDimensions")) break;
    for (const auto& [dim_id, dim] : term["priceDimensions"].items()) {
      if (!dim.is_object() || !dim.contains("pricePerUnit") || !dim["pricePerUnit"].is_object())
        continue;
      const json& usd = dim["pricePerUnit"].value("USD", json());
      if (!usd.is_string()) continue;
      if (auto price = ParsePrice(usd.get<std::string>()); price && price->value > 0) {
        return std::pair{type->get<std::string>(), *price};
      }
    }
  }
  return std::nullopt;
}

Result<PriceMap> Pricing::OnDemandPrices(const std::string& region) {
  const std::string location = PricingLocation(region);
  if (location.empty()) {
    return Result<PriceMap>::Fail(
        AwsError{ErrorCode::kInvalid, "UnknownRegion", "no Price List location for " + region, 0});
  }
  PriceMap prices;
  std::string token;
  for (std::int32_t page = 0; page < kPricingPagesMax; ++page) {
    json request{{"ServiceCode", "AmazonEC2"}, {"Filters", Filters(location)}, {"MaxResults", 100}};
    if (!token.empty()) request["NextToken"] = token;
    Result<std::string> body = client_.Json("pricing", "AWSPriceListService.GetProducts",
                                            "application/x-amz-json-1.1", request.dump());
    if (!body.ok()) return Result<PriceMap>::Fail(body.error);
    const json answer = json::parse(*body.value, nullptr, false);
    if (answer.is_discarded() || !answer.is_object() || !answer.contains("PriceList") ||
        !answer["PriceList"].is_array()) {
      return Result<PriceMap>::Fail(AwsError{ErrorCode::kTransient, "MalformedResponse",
                                             "GetProducts without PriceList", 200});
    }
    for (const json& entry : answer["PriceList"]) {
      if (!entry.is_string()) continue;
      if (auto parsed = ParsePriceListEntry(entry.get<std::string>()))
        prices[parsed->first] = parsed->second;
    }
    token = answer.value("NextToken", std::string());
    if (token.empty()) return Result<PriceMap>::Ok(std::move(prices));
  }
  return Result<PriceMap>::Fail(
      AwsError{ErrorCode::kTransient, "MalformedResponse", "more price pages than the limit", 200});
}

PriceMap OnDemandPricesOrFallback(Pricing& pricing, const std::string& region,
                                  const PriceMap& fallback, bool* used_fallback) {
  Result<PriceMap> prices = pricing.OnDemandPrices(region);
  *used_fallback = !prices.ok() || prices.value->empty();
  if (*used_fallback) {
    spdlog::warn("pricing: {} ({}); using the operator's price file ({} types)",
                 prices.ok() ? "no prices" : prices.error.aws_code,
                 prices.ok() ? "" : prices.error.message.substr(0, 120), fallback.size());
    return fallback;
  }
  return std::move(*prices.value);
}

}  // namespace tenon::aws
