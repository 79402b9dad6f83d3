// libFuzzer target: every EC2 XML parser on arbitrary bytes must return (items or an error),
// never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "adapters/aws/ec2_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string xml(reinterpret_cast<const char*>(data), size);
  tenon::aws::ParseInstanceTypes(xml);
  tenon::aws::ParseInstanceTypeOfferings(xml);
  tenon::aws::ParseSpotPriceHistory(xml);
  tenon::aws::ParseAvailabilityZones(xml);
  tenon::aws::ParseSubnets(xml);
  tenon::aws::ParseSecurityGroups(xml);
  tenon::aws::ParseImages(xml);
  tenon::aws::ParseLaunchTemplates(xml);
  tenon::aws::ParseInstances(xml);
  tenon::aws::ParseTerminatedIds(xml);
  std::string error;
  tenon::aws::ParseCreateFleet(xml, &error);
  tenon::aws::ParsePrice(xml);
  return 0;
}
