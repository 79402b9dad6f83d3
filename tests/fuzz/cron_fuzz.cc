// libFuzzer target: a disruption budget's schedule. Cron::Parse returns a schedule or throws
// CronError, nothing else; a parsed schedule's LastFiring is a minute at or before the time
// asked, within the horizon, at which Fires holds, and is the time itself when that minute fires.
#include "reducers/cron.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tenon;
  std::optional<core::Cron> cron;
  if (!fuzz::ReturnsOrThrows<core::CronError>(
          [&] { cron = core::Cron::Parse(fuzz::Text(data, size)); })) {
    return 0;
  }
  // 2026-03-01T12:34:56Z, a Sunday after February's end; a week back covers every weekday.
  const Instant at{1772368496LL * kSecond.value};
  const Duration horizon{7 * 24 * 60 * kMinute.value};
  const std::optional<Instant> last = cron->LastFiring(at, horizon);
  if (!last) return 0;
  if (last->value > at.value || at.value - last->value > horizon.value) {
    fuzz::Fail("LastFiring outside the horizon");
  }
  if (last->value % kMinute.value != 0) fuzz::Fail("LastFiring not on a whole minute");
  if (!cron->Fires(*last)) fuzz::Fail("LastFiring names a minute the schedule does not fire at");
  const Instant minute{at.value - at.value % kMinute.value};
  if (cron->Fires(at) != (*last == minute)) fuzz::Fail("Fires and LastFiring disagree on now");
  return 0;
}
