// libFuzzer target: the command line's time and duration arguments. replay::ParseTime never
// throws, and a time it reads is written back by Rfc3339Text as text it reads to the same
// time. kube::ParseDuration (every duration flag, and the durations of scenarios and custom
// resources) returns a duration that is not negative or throws ObjectError, and a duration
// of whole seconds reads back from DurationText.
#include "adapters/kube/objects.h"
#include "replay/replay.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tenon;
  const std::string text = fuzz::Text(data, size);
  const Instant reference{1767225600LL * kSecond.value};  // 2026-01-01T00:00:00Z
  std::optional<Instant> at;
  fuzz::ReturnsOrThrows<fuzz::NothingDocumented>([&] { at = replay::ParseTime(text, reference); });
  if (at && replay::ParseTime(Rfc3339Text(*at), reference) != at) {
    fuzz::Fail("'" + text + "' reads as a time that does not read back from its text");
  }
  Duration duration{0};
  if (!fuzz::ReturnsOrThrows<kube::ObjectError>([&] { duration = kube::ParseDuration(text); })) {
    return 0;
  }
  if (duration.value < 0) fuzz::Fail("'" + text + "' reads as a negative duration");
  if (duration.value >= 0 && duration.value % kSecond.value == 0 &&
      kube::ParseDuration(DurationText(duration)).value != duration.value) {
    fuzz::Fail("'" + text + "' does not read back from DurationText");
  }
  return 0;
}
