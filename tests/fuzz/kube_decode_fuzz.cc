// libFuzzer target: kube::Decode on an arbitrary watch change. The first byte picks the watched
// resource (and, from 0x80 up, a delete whose key is the rest); the rest is the object's JSON.
// Decode must never throw: an object it cannot read becomes InputRejected, so an upsert always
// gives at least one event. Every event it gives must survive the log codec, since the
// controller appends it as it is.
#include "adapters/kube/decode.h"
#include "tests/fuzz/codec_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tenon;
  if (size == 0) return 0;
  const auto& resources = kube::WatchedResources();
  kube::Change change;
  change.resource = &resources[data[0] % resources.size()];
  const std::string rest = fuzz::Text(data + 1, size - 1);
  if (data[0] & 0x80) {
    change.type = kube::Change::Type::kDelete;
    change.key = rest;
  } else {
    change.key = "fuzz/object";  // The informer's key from metadata: never empty for an upsert.
    change.object = rest;
  }
  std::vector<Event> events;
  fuzz::ReturnsOrThrows<fuzz::NothingDocumented>([&] { events = kube::Decode(change); });
  if (change.type == kube::Change::Type::kUpsert && events.empty()) {
    fuzz::Fail("an upsert of " + change.resource->plural + " decoded to no event");
  }
  for (const Event& event : events) fuzz::CheckEntryRoundTrip(event);
  return 0;
}
