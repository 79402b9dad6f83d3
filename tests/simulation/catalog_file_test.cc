// Catalog files: offerings written by hand (zones, capacity types, prices, availability) take
// the place of the ones a type's zones and usage classes would make, and bad ones are refused
// with the file, the type and the field.
#include <gtest/gtest.h>

#include <fstream>

#include "adapters/sim/scenario.h"
#include "tests/support/temp_dir.h"

namespace tenon::sim {
namespace {

std::filesystem::path Write(const testing::TempDir& dir, const std::string& offerings) {
  const auto path = dir.path() / "catalog.json";
  std::ofstream(path) << R"({"instance_types": [
    {"name": "m5.large", "vcpu": 2, "memory_mib": 8192, "architectures": ["x86_64"],
     "on_demand_price_usd_hour": 0.096, "zones": ["us-east-1a"], "usage_classes": ["on-demand"]},
    {"name": "x1.test", "vcpu": 4, "memory_mib": 16384, "architectures": ["arm64"],
     "offerings": )" + offerings +
                             "}]}";
  return path;
}

TEST(CatalogFile, HandWrittenOfferingsKeepTheirPricesAndAvailability) {
  testing::TempDir dir;
  const auto types = LoadCatalogJson(
      Write(dir, R"([{"zone": "us-east-1a", "capacity_type": "spot", "price_usd_hour": 0.02},
                     {"zone": "us-east-1b", "capacity_type": "on-demand", "price_usd_hour": 0.2,
                      "available": false}])"),
      1);
  ASSERT_EQ(types.size(), 2u);
  const InstanceType& x = types[1];
  EXPECT_EQ(x.name, "x1.test");
  EXPECT_EQ(x.arch, "arm64");
  ASSERT_EQ(x.offerings.size(), 2u);
  EXPECT_EQ(x.offerings[0], (Offering{"us-east-1a", "spot", MicroUsdPerHour{20'000}, true}));
  EXPECT_EQ(x.offerings[1], (Offering{"us-east-1b", "on-demand", MicroUsdPerHour{200'000}, false}));
  // The other type's offerings still come from its zones and usage classes.
  ASSERT_EQ(types[0].offerings.size(), 1u);
  EXPECT_EQ(types[0].offerings[0].price, MicroUsdPerHour{96'000});
}

TEST(CatalogFile, RefusesBadOfferingsNamingTheField) {
  testing::TempDir dir;
  const auto refused = [&](const std::string& offerings, const std::string& expected) {
    const auto path = Write(dir, offerings);
    try {
      LoadCatalogJson(path, 1);
      ADD_FAILURE() << "accepted " << offerings;
    } catch (const ScenarioError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path.string()), std::string::npos) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
    }
  };
  refused(R"([{"zone": "us-east-1a", "capacity_type": "spto", "price_usd_hour": 1}])",
          "x1.test: offerings[0].capacity_type: on-demand, spot or reserved");
  refused(R"([{"zone": "us-east-1a", "capacity_type": "spot", "price_usd_hour": -1}])",
          "offerings[0].price_usd_hour: must be a price");
  refused(R"([{"zone": "us-east-1a", "capacity_type": "spot", "price": 1}])",
          "offerings[0].price: unknown field");
  refused(R"([{"zone": "a", "capacity_type": "spot", "price_usd_hour": 1},
              {"zone": "a", "capacity_type": "spot", "price_usd_hour": 2}])",
          "offerings[1]: a/spot is listed twice");
  refused(R"({"zone": "a"})", "x1.test: offerings: a list");
}

}  // namespace
}  // namespace tenon::sim
