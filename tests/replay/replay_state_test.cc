// tenon replay --until / --to on the PDB scenario: the state printed at 00:03:00 is the known
// one (two m5.xlarge nodes, a's three pods on one, b's on the other, nothing pending), and the
// time maps to the last record before the clock passes it. And the time flags every incident
// command takes.
#include "tests/replay/incident.h"

namespace tenon::testing {
namespace {

TEST(ReplayState, UntilPrintsTheStateAtThatTime) {
  auto run = RunKept(PdbScenario());
  auto log = run->Open();
  const Instant at = Minutes(3);
  const Seq seq = replay::SeqAtTime(*log, at);
  ASSERT_GT(seq, Seq{0});
  State state = replay::FoldTo(*log, seq, true);
  EXPECT_EQ(state.now, at);
  // The next Tick is past the time.
  bool later_tick = false;
  log->Scan(seq + 1, Seq{0}, [&](const log::Record& r) {
    auto entry = log::DecodeEntry(r.payload);
    const auto* e = std::get_if<Event>(&entry);
    const auto* tick = e != nullptr ? std::get_if<Tick>(e) : nullptr;
    if (tick == nullptr) return true;
    later_tick = tick->now > at;
    return false;
  });
  EXPECT_TRUE(later_tick);

  auto cli = Tenon("replay " + run->log().string() + " --until 00:03:00");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(StateHash(state)));
  EXPECT_NE(cli.out.find("state at seq " + std::to_string(state.last_seq.value) +
                         ", 2026-01-01T00:03:00Z, hash " + hash),
            std::string::npos)
      << cli.out;
  EXPECT_NE(cli.out.find("nodepool default          weight   0  nodeclaims    2"),
            std::string::npos)
      << cli.out;
  EXPECT_NE(cli.out.find("pods: default/a-1 default/a-2 default/a-3\n"), std::string::npos)
      << cli.out;
  EXPECT_NE(cli.out.find("pods: default/b-4 default/b-5 default/b-6\n"), std::string::npos)
      << cli.out;
  EXPECT_NE(cli.out.find("pods 6, pending 0"), std::string::npos) << cli.out;
  // --to the same seq prints the same state.
  auto to = Tenon("replay " + run->log().string() + " --to " + std::to_string(seq.value));
  EXPECT_EQ(to.out, cli.out);
  // Before the log begins there is nothing to show.
  auto early = Tenon("replay " + run->log().string() + " --until 2025-12-31T23:00:00Z");
  EXPECT_EQ(early.exit_code, 1);
}

// The time flags (--at, --until, --since): a full UTC time with or without its Z, or a time of
// day on the log's day, each checked against the calendar and the clock.
TEST(TimeFlags, ReadEveryShapeAndNothingElse) {
  const Instant day{1'767'225'600'000'000'000};  // 2026-01-01T00:00:00Z
  const Instant at = day + (2 * 3600 + 14 * 60 + 9) * kSecond;
  EXPECT_EQ(replay::ParseTime("2026-01-01T02:14:09Z", Instant{}), at);
  EXPECT_EQ(replay::ParseTime("2026-01-01T02:14:09", Instant{}), at);
  EXPECT_EQ(replay::ParseTime("02:14:09", day + kSecond), at);
  EXPECT_EQ(replay::ParseTime("02:14", day), at - 9 * kSecond);
  for (const char* bad : {"2026-02-30T00:00:00Z", "25:00", "02:61", "02:14:60", "2:14",
                          "02:14:09.5", "2026-01-01T02:14:09+01:00", "yesterday", ""}) {
    EXPECT_FALSE(replay::ParseTime(bad, day).has_value()) << bad;
  }
}

}  // namespace
}  // namespace tenon::testing
