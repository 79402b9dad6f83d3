// libFuzzer target: the EventBridge parser on arbitrary bytes always yields at least one event
// (an interruption or an InputRejected keeping the payload) and never crashes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "adapters/aws/eventbridge.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  const std::vector<tenon::Event> events = tenon::aws::ParseEventBridge("fuzz", body);
  if (events.empty()) std::abort();
  return 0;
}
