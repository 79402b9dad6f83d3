// Catalog polling: instance types, offerings and prices, published when they change.
#include "adapters/controller/cloud.h"

#include <spdlog/spdlog.h>

#include "adapters/aws/catalog_export.h"
#include "adapters/aws/pricing.h"

namespace tenon::controller {

void CloudSource::CatalogLoop() {
  aws::AwsConnection connection(options_.aws, aws::ProcessEnv(), {.abort = &abort_});
  aws::Ec2 ec2(connection.client());
  aws::Pricing pricing(connection.pricing());
  aws::PriceMap fallback;
  if (!options_.price_file.empty()) {
    auto loaded = aws::LoadPriceFile(options_.price_file);
    if (loaded.ok()) {
      fallback = std::move(*loaded.value);
    } else {
      spdlog::error("catalog: price file {}: {}", options_.price_file, loaded.error.message);
    }
  }
  aws::PriceMap prices;
  auto priced_at = std::chrono::steady_clock::time_point::min();
  std::vector<InstanceType> published;
  while (!stop_.load()) {
    const auto now = std::chrono::steady_clock::now();
    if (prices.empty() || now - priced_at >= options_.prices_every) {
      bool used_file = false;
      prices = aws::OnDemandPricesOrFallback(pricing, options_.aws.region, fallback, &used_file);
      priced_at = now;
      spdlog::info("catalog: {} on-demand prices from {}", prices.size(),
                   used_file ? "the price file" : "the Pricing API");
    }
    auto types = ec2.Catalog({}, prices);
    if (!types.ok() && stop_.load()) return;  // Aborted by Stop.
    if (!types.ok()) {
      spdlog::warn("catalog: {}: {}", types.error.aws_code, types.error.message);
      if (!Sleep(options_.retry)) return;
      continue;
    }
    if (*types.value != published) {
      published = *types.value;
      spdlog::info("catalog: {} instance types changed; publishing", published.size());
      Push({CatalogRefreshed{published}});
      ++catalogs_published_;
    }
    if (!Sleep(options_.catalog_every)) return;
  }
}

}  // namespace tenon::controller
