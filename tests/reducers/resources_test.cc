// Resource arithmetic: sums and differences dimension by dimension, zeroed extended dimensions
// dropped (one already held at zero too), the in-place forms agreeing with + and -.
#include <gtest/gtest.h>

#include "reducers/core.h"

namespace tenon {
namespace {

Resources Make(std::int64_t cpu, std::int64_t mib, std::int64_t pods,
               std::map<std::string, std::int64_t> extended) {
  return {Millicores{cpu}, Bytes{mib * 1024 * 1024}, pods, std::move(extended)};
}

TEST(Resources, InPlaceSumsEqualTheCopyingOnes) {
  const Resources a = Make(1000, 512, 2, {{"nvidia.com/gpu", 1}, {"example.com/zero", 0}});
  const std::vector<Resources> others = {
      Make(250, 64, 1, {}),
      // Brings a dimension to zero.
      Make(0, 0, 0, {{"nvidia.com/gpu", -1}}),
      Make(-1000, -512, -2, {{"example.com/fpga", 3}}),
      // Nothing: the zero already in `a` is still dropped, as + drops it.
      Make(0, 0, 0, {}),
  };
  for (const Resources& b : others) {
    Resources sum = a;
    sum += b;
    EXPECT_EQ(sum, a + b);
    Resources difference = a;
    difference -= b;
    EXPECT_EQ(difference, a - b);
  }
  EXPECT_EQ(a + others[0], Make(1250, 576, 3, {{"nvidia.com/gpu", 1}}));
  EXPECT_EQ(a - others[1], Make(1000, 512, 2, {{"nvidia.com/gpu", 2}}));
  EXPECT_EQ(a + others[2], Make(0, 0, 0, {{"nvidia.com/gpu", 1}, {"example.com/fpga", 3}}));
  EXPECT_EQ(Max(a, others[2]),
            Make(1000, 512, 2, {{"nvidia.com/gpu", 1}, {"example.com/fpga", 3}}));
  Resources sum = a;
  sum += Make(0, 0, 0, {{"nvidia.com/gpu", -1}});
  EXPECT_FALSE(sum.extended.contains("nvidia.com/gpu"));
  EXPECT_FALSE(sum.extended.contains("example.com/zero"));
}

}  // namespace
}  // namespace tenon
