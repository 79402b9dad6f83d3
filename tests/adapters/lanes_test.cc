// Command lanes (runtime::Lanes): a lane whose executor blocks holds up no other lane nor the
// thread that hands commands over; each lane keeps the order the commands were issued in; a
// full queue parks commands instead of dropping them; a command past its deadline marks its
// lane stuck and still gets its one result; an executor's exception reaches Drain; and
// recovery re-drives the commands in flight through the lanes, reporting them only when they
// finish.
#include "adapters/runtime/lanes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "adapters/runtime/runtime.h"
#include "adapters/sim/world.h"
#include "log/event_log.h"
#include "tests/integration/fixtures.h"
#include "tests/support/temp_dir.h"

namespace tenon::testing {
namespace {

using namespace std::chrono_literals;
using runtime::Clock;

// Answers every command with CommandSucceeded; blocks while held.
class Gate : public runtime::Executor {
 public:
  std::vector<Event> Execute(const Command& command) override {
    std::unique_lock lock(mu_);
    ++entered_;
    entered_cv_.notify_all();
    open_cv_.wait(lock, [&] { return open_; });
    ran_.push_back(command.id.value);
    if (throws_) throw std::runtime_error("executor failed");
    return {CommandSucceeded{command.id}};
  }
  void Hold() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void Open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    open_cv_.notify_all();
  }
  void WaitEntered(int n) {
    std::unique_lock lock(mu_);
    ASSERT_TRUE(entered_cv_.wait_for(lock, 10s, [&] { return entered_ >= n; }));
  }
  void Throw() {
    std::lock_guard lock(mu_);
    throws_ = true;
  }
  std::vector<std::uint64_t> ran() {
    std::lock_guard lock(mu_);
    return ran_;
  }

 private:
  std::mutex mu_;
  std::condition_variable open_cv_;
  std::condition_variable entered_cv_;
  bool open_ = true;
  bool throws_ = false;
  int entered_ = 0;
  std::vector<std::uint64_t> ran_;
};

Command Launch(std::uint64_t id) {
  return Command{CommandId{id}, Seq{1}, LaunchInstance{}};
}
Command Evict(std::uint64_t id) {
  return Command{CommandId{id}, Seq{1}, EvictPod{"default", "p" + std::to_string(id), "claim"}};
}

// A clock the test moves.
struct FakeClock {
  std::atomic<std::int64_t> ms{0};
  Clock::time_point operator()() const {
    return Clock::time_point{} + std::chrono::milliseconds(ms);
  }
};

struct Fixture {
  Gate aws;
  Gate kube;
  FakeClock clock;
  std::unique_ptr<runtime::Lanes> lanes;
  explicit Fixture(std::size_t aws_capacity = 8) {
    std::vector<runtime::Lane> specs(2);
    specs[0] = {runtime::LaneOptions{"aws", aws_capacity, 60'000ms}, &aws};
    specs[1] = {runtime::LaneOptions{"kube", 8, 30'000ms}, &kube};
    lanes = std::make_unique<runtime::Lanes>(
        std::move(specs),
        [](const Command& c) { return std::holds_alternative<LaunchInstance>(c.body) ? 0 : 1; },
        [this] { return clock(); });
  }
  // Drains until `n` completions came back (or 10 s passed).
  std::vector<runtime::Completion> DrainN(std::size_t n) {
    std::vector<runtime::Completion> all;
    const auto until = Clock::now() + 10s;
    while (all.size() < n && Clock::now() < until) {
      lanes->WaitForCompletion(100ms);
      for (auto& c : lanes->Drain()) all.push_back(std::move(c));
    }
    return all;
  }
};

TEST(Lanes, ABlockedLaneHoldsUpNeitherTheCallerNorTheOtherLane) {
  Fixture f;
  f.aws.Hold();
  const auto start = Clock::now();
  EXPECT_TRUE(f.lanes->Execute(Launch(1)).empty());
  f.aws.WaitEntered(1);
  for (std::uint64_t id = 2; id <= 4; ++id) EXPECT_TRUE(f.lanes->Execute(Evict(id)).empty());
  EXPECT_LT(Clock::now() - start, 1s) << "Execute only hands the command over";
  const auto done = f.DrainN(3);
  ASSERT_EQ(done.size(), 3u);
  for (std::size_t i = 0; i < done.size(); ++i) {
    EXPECT_EQ(done[i].command.id.value, i + 2);
    ASSERT_EQ(done[i].results.size(), 1u);
    EXPECT_EQ(std::get<CommandSucceeded>(done[i].results[0]).command.value, i + 2);
  }
  f.aws.Open();
  const auto launch = f.DrainN(1);
  ASSERT_EQ(launch.size(), 1u);
  EXPECT_EQ(launch[0].command.id.value, 1u);
}

TEST(Lanes, ALaneRunsItsCommandsInIssueOrder) {
  Fixture f;
  for (std::uint64_t id = 1; id <= 8; ++id) f.lanes->Execute(Evict(id));
  const auto done = f.DrainN(8);
  ASSERT_EQ(done.size(), 8u);
  EXPECT_EQ(f.kube.ran(), (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  for (std::size_t i = 0; i < done.size(); ++i) EXPECT_EQ(done[i].command.id.value, i + 1);
}

TEST(Lanes, AFullQueueParksCommandsAndLosesNone) {
  Fixture f(/*aws_capacity=*/2);
  f.aws.Hold();
  f.lanes->Execute(Launch(1));
  f.aws.WaitEntered(1);
  for (std::uint64_t id = 2; id <= 6; ++id) f.lanes->Execute(Launch(id));
  EXPECT_TRUE(f.lanes->Drain().empty());
  auto status = f.lanes->Status();
  EXPECT_EQ(status[0].queued, 2u);
  EXPECT_EQ(status[0].parked, 4u);
  EXPECT_TRUE(status[0].full());
  EXPECT_TRUE(status[0].stuck());
  EXPECT_NE(status[0].Problem().find("aws: queue full"), std::string::npos) << status[0].Problem();
  EXPECT_FALSE(status[1].stuck());
  f.aws.Open();
  const auto done = f.DrainN(6);
  ASSERT_EQ(done.size(), 6u);
  EXPECT_EQ(f.aws.ran(), (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6}));
  status = f.lanes->Status();
  EXPECT_EQ(status[0].queued + status[0].parked, 0u);
  EXPECT_FALSE(status[0].stuck());
}

TEST(Lanes, ACommandPastItsDeadlineMarksItsLaneStuckAndKeepsItsOneResult) {
  Fixture f;
  f.aws.Hold();
  f.lanes->Execute(Launch(1));
  f.aws.WaitEntered(1);
  f.clock.ms = 59'000;
  EXPECT_FALSE(f.lanes->Status()[0].stuck());
  f.clock.ms = 61'000;
  auto status = f.lanes->Status();
  EXPECT_TRUE(status[0].late());
  EXPECT_EQ(status[0].oldest, 61'000ms);
  EXPECT_NE(status[0].Problem().find("oldest command 61 s old (deadline 60 s)"), std::string::npos)
      << status[0].Problem();
  EXPECT_FALSE(status[1].stuck());
  // Nothing is made up for it: Drain has no result until the executor answers, then one.
  EXPECT_TRUE(f.lanes->Drain().empty());
  f.aws.Open();
  const auto done = f.DrainN(1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].command.id.value, 1u);
  f.lanes->WaitForCompletion(200ms);
  EXPECT_TRUE(f.lanes->Drain().empty());
  EXPECT_FALSE(f.lanes->Status()[0].stuck());
}

TEST(Lanes, AnExecutorsExceptionReachesDrain) {
  Fixture f;
  f.kube.Throw();
  f.lanes->Execute(Evict(1));
  f.lanes->WaitForCompletion(10s);
  EXPECT_THROW(f.lanes->Drain(), std::runtime_error);
}

// Counts what the runtime reports as executed.
class Executions : public runtime::Observer {
 public:
  void OnExecuted(const Command&, const std::vector<Event>&, std::chrono::nanoseconds) override {
    ++count;
  }
  int count = 0;
};

class Silent : public runtime::Executor {
 public:
  std::vector<Event> Execute(const Command&) override { return {}; }
};

TEST(Lanes, RecoveryReDrivesTheCommandsInFlightThroughTheLanes) {
  TempDir dir;
  const sim::Scenario scenario = bench::MakeScenario(SmallChurnArgs());
  std::size_t inflight = 0;
  {
    // Commands issued, none answered: all in flight at the next start.
    auto log = log::EventLog::Open(dir.path(), {});
    sim::World world(scenario, std::filesystem::path());
    Silent silent;
    runtime::Runtime rt(*log, silent, {});
    rt.Recover();
    rt.Ingest(world.StartupEvents(rt.state()));
    for (int i = 1; i <= 30; ++i) rt.Ingest(world.Advance(scenario.start + i * scenario.tick));
    inflight = rt.state().inflight.size();
  }
  ASSERT_GT(inflight, 0u);
  auto log = log::EventLog::Open(dir.path(), {});
  Gate aws;
  Gate kube;
  std::vector<runtime::Lane> specs(2);
  specs[0] = {runtime::LaneOptions{"aws", 2, 60'000ms}, &aws};
  specs[1] = {runtime::LaneOptions{"kube", 2, 60'000ms}, &kube};
  runtime::Lanes lanes(std::move(specs), [](const Command& c) {
    return std::holds_alternative<LaunchInstance>(c.body) ? 0 : 1;
  });
  Executions executions;
  runtime::Options options;
  options.observer = &executions;
  runtime::Runtime rt(*log, lanes, options);
  const auto report = rt.Recover();
  EXPECT_EQ(report.commands_redriven, inflight);
  EXPECT_EQ(executions.count, 0) << "handed over, not executed yet";
  // The loop of `tenon run`: results folded as they come back, until nothing is in flight.
  const auto until = Clock::now() + 30s;
  std::size_t completed = 0;
  while (!rt.state().inflight.empty() && Clock::now() < until) {
    lanes.WaitForCompletion(100ms);
    std::vector<Event> results;
    for (auto& done : lanes.Drain()) {
      rt.Executed(done.command, done.results, done.took);
      ++completed;
      for (auto& e : done.results) results.push_back(std::move(e));
    }
    rt.Ingest(std::move(results));
  }
  EXPECT_TRUE(rt.state().inflight.empty());
  EXPECT_GE(completed, inflight);
  EXPECT_EQ(executions.count, static_cast<int>(completed));
}

}  // namespace
}  // namespace tenon::testing
