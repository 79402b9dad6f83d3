#include "tests/simulation/fault_run.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>

#include "adapters/runtime/runtime.h"
#include "adapters/sim/world.h"
#include "log/event_log.h"
#include "replay/replay.h"
#include "tests/simulation/checker.h"
#include "tests/support/idle_notes.h"
#include "tests/support/temp_dir.h"

namespace tenon::simtest {
namespace {

using Rng = std::mt19937_64;  // Its output sequence is fixed by the C++ standard.

constexpr Instant kStart{1'767'225'600'000'000'000};  // 2026-01-01T00:00:00Z
constexpr const char* kTypes[] = {"c5.large",   "c5.xlarge", "m5.large", "m5.xlarge",
                                  "m5.2xlarge", "r5.large",  "t3.large"};
constexpr const char* kZones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
constexpr std::int64_t kCpus[] = {250, 500, 1000, 1500};
constexpr std::int64_t kMemoryMib[] = {256, 512, 1024, 2048};
constexpr const char* kBudgets[] = {"1", "2", "50%", "100%"};
constexpr std::uint64_t kSnapshotEvery = 200;
constexpr Duration kRelistWithin{10 * kSecond.value};  // A lost watch event is relisted by then.
constexpr Duration kSettle{3 * kMinute.value};         // Pods older than this must be bound.
constexpr std::uint64_t kCrashCommandsMax = 80;        // The crash strikes among the first ones.

std::uint64_t Below(Rng& rng, std::uint64_t n) {
  return rng() % n;
}
bool Chance(Rng& rng, std::uint64_t permille) {
  return Below(rng, 1000) < permille;
}
Duration Seconds(std::int64_t s) {
  return Duration{s * kSecond.value};
}

// Which faults strike, and how often (per mille, per event or command).
struct Faults {
  std::uint64_t throttle = 0;
  std::uint64_t evict_refuse = 0;
  std::uint64_t drop_watch = 0;
  std::uint64_t duplicate = 0;
  std::uint64_t reorder = 0;
  std::uint64_t drop_sqs = 0;
  std::uint64_t clock_jump = 0;  // Per tick.
  bool crash = false;
  std::uint64_t crash_at_command = 0;
  bool crash_after_execute = false;  // Between the command's effect and its result.
  Duration fault_phase{0};
  Duration converge_phase{0};
};

Faults ChooseFaults(Rng& rng) {
  Faults f;
  auto some = [&](std::uint64_t max) { return Chance(rng, 500) ? Below(rng, max + 1) : 0; };
  f.throttle = some(300);
  f.evict_refuse = some(500);
  f.drop_watch = some(100);
  f.duplicate = some(150);
  f.reorder = some(200);
  f.drop_sqs = some(500);
  f.clock_jump = some(20);
  f.crash = Chance(rng, 500);
  f.crash_at_command = 1 + Below(rng, kCrashCommandsMax);
  f.crash_after_execute = Chance(rng, 500);
  f.fault_phase = Seconds(180 + static_cast<std::int64_t>(Below(rng, 181)));
  return f;
}

NodePool MakePool(Rng& rng, std::size_t index) {
  NodePool pool;
  pool.name = "p" + std::to_string(index);
  pool.nodeclass = "default";
  pool.weight = static_cast<std::int32_t>(10 - index);
  Requirement types{label::kInstanceType, RequirementOp::kIn, {}, 0};
  for (const char* t : kTypes) {
    if (Chance(rng, 450)) types.values.push_back(t);
  }
  if (types.values.empty()) types.values.push_back(kTypes[Below(rng, std::size(kTypes))]);
  std::vector<std::string> capacity[] = {
      {kCapacityOnDemand}, {kCapacitySpot}, {kCapacitySpot, kCapacityOnDemand}};
  pool.requirements = {types,
                       {label::kCapacityType, RequirementOp::kIn, capacity[Below(rng, 3)], 0}};
  if (Chance(rng, 300))
    pool.limits.cpu = Millicores{static_cast<std::int64_t>(8 + 8 * Below(rng, 3)) * 1000};
  pool.budgets = {DisruptionBudget{kBudgets[Below(rng, std::size(kBudgets))], "", Duration{0}, {}}};
  const Duration after[] = {Duration{0}, Seconds(30), Seconds(120)};
  pool.consolidate_after = after[Below(rng, 3)];
  if (Chance(rng, 250)) pool.consolidation_policy = ConsolidationPolicy::kWhenEmpty;
  if (index > 0 && Chance(rng, 500)) {
    pool.taints.push_back({"dedicated", pool.name, TaintEffect::kNoSchedule});
  }
  return pool;
}

void AddWorkloads(Rng& rng, const Faults& f, sim::Scenario& s) {
  const std::size_t deployments = 1 + Below(rng, 3);
  for (std::size_t i = 0; i < deployments; ++i) {
    sim::WorkloadStep step;
    step.name = "d" + std::to_string(i);
    step.replicas = 1 + static_cast<std::int64_t>(Below(rng, 10));
    step.requests.cpu = Millicores{kCpus[Below(rng, std::size(kCpus))]};
    step.requests.memory = Bytes{kMemoryMib[Below(rng, std::size(kMemoryMib))] * kMebibyte.value};
    step.do_not_disrupt = Chance(rng, 200);
    for (const auto& pool : s.nodepools) {
      for (const auto& taint : pool.taints) {
        if (Chance(rng, 700)) step.tolerations.push_back({taint.key, true, "", std::nullopt});
      }
    }
    if (Chance(rng, 150)) step.node_selector[label::kCapacityType] = kCapacitySpot;
    s.workloads.push_back(step);
    if (Chance(rng, 330)) {
      s.budgets.push_back({"default", step.name, {{{"app", step.name}}, {}}, std::nullopt, 1});
    }
    for (std::uint64_t k = Below(rng, 4); k > 0; --k) {
      sim::WorkloadStep scale;
      scale.name = step.name;
      scale.at =
          Seconds(static_cast<std::int64_t>(Below(rng, f.fault_phase.value / kSecond.value)));
      scale.replicas = static_cast<std::int64_t>(Below(rng, 13));
      s.workloads.push_back(scale);
    }
  }
  std::stable_sort(s.workloads.begin(), s.workloads.end(), [](const auto& a, const auto& b) {
    return a.at != b.at ? a.at < b.at : a.name < b.name;
  });
}

void AddActions(Rng& rng, const Faults& f, sim::Scenario& s) {
  using Kind = sim::Action::Kind;
  for (Kind kind : {Kind::kSpotInterruption, Kind::kDeleteNodeClaim, Kind::kTerminateInstance,
                    Kind::kRebalanceRecommendation, Kind::kStrayInstance}) {
    if (!Chance(rng, 250)) continue;
    sim::Action action;
    action.kind = kind;
    action.at = Seconds(static_cast<std::int64_t>(Below(rng, f.fault_phase.value / kSecond.value)));
    action.instance_type = "m5.large";
    action.zone = kZones[Below(rng, std::size(kZones))];
    s.actions.push_back(action);
  }
  std::stable_sort(s.actions.begin(), s.actions.end(),
                   [](const auto& a, const auto& b) { return a.at < b.at; });
}

void ChooseCloud(Rng& rng, const Faults& f, sim::Scenario& s) {
  s.cloud.registration_delay = Seconds(5 + static_cast<std::int64_t>(Below(rng, 56)));
  s.cloud.ready_delay = Seconds(static_cast<std::int64_t>(Below(rng, 21)));
  if (Chance(rng, 250))
    s.cloud.launch_latency = Seconds(1 + static_cast<std::int64_t>(Below(rng, 5)));
  if (Chance(rng, 500)) {
    for (std::uint64_t k = 1 + Below(rng, 4); k > 0; --k) {
      std::string offering = std::string(kTypes[Below(rng, std::size(kTypes))]) + "/" +
                             kZones[Below(rng, std::size(kZones))] + "/" +
                             (Chance(rng, 500) ? kCapacitySpot : kCapacityOnDemand);
      Duration from =
          Seconds(static_cast<std::int64_t>(Below(rng, f.fault_phase.value / kSecond.value)));
      s.cloud.capacity_windows.push_back({offering, from, f.fault_phase});
    }
  }
  if (Chance(rng, 200)) s.cloud.never_register.insert(kTypes[Below(rng, std::size(kTypes))]);
  s.cloud.list_interval = Seconds(30 + static_cast<std::int64_t>(Below(rng, 91)));
}

sim::Scenario MakeScenario(Rng& rng, const std::vector<InstanceType>& catalog, Faults& f) {
  sim::Scenario s;
  s.name = "faults";
  s.seed = rng();
  s.start = kStart;
  s.tick = kSecond;
  s.settings.cluster_name = "faults";
  s.catalog = catalog;
  NodeClass nodeclass;
  nodeclass.name = "default";
  nodeclass.role = "r";
  s.nodeclasses.push_back(nodeclass);
  for (std::size_t i = 0, n = 1 + Below(rng, 2); i < n; ++i)
    s.nodepools.push_back(MakePool(rng, i));
  AddWorkloads(rng, f, s);
  AddActions(rng, f, s);
  ChooseCloud(rng, f, s);
  // A kubelet that never registers is given up on after 15 minutes: converge past that.
  f.converge_phase = s.cloud.never_register.empty() ? Seconds(6 * 60) : Seconds(17 * 60);
  s.duration = f.fault_phase + f.converge_phase;
  return s;
}

std::string Describe(const sim::Scenario& s, const Faults& f) {
  std::string text = "pools";
  for (const auto& p : s.nodepools) {
    text += " " + p.name + "[";
    for (const auto& r : p.requirements) {
      for (const auto& v : r.values) text += v + ",";
    }
    text += " budget " + p.budgets.front().nodes;
    if (p.limits.cpu) text += " cpu<=" + std::to_string(p.limits.cpu->value / 1000);
    text += p.taints.empty() ? "]" : " tainted]";
  }
  text += "; " + std::to_string(s.workloads.size()) + " workload steps, " +
          std::to_string(s.budgets.size()) + " PDBs, " + std::to_string(s.actions.size()) +
          " actions, " + std::to_string(s.cloud.capacity_windows.size()) + " ICE windows" +
          (s.cloud.never_register.empty() ? ""
                                          : ", never registers " + *s.cloud.never_register.begin());
  text += "; faults per mille: throttle " + std::to_string(f.throttle) + ", evictions refused " +
          std::to_string(f.evict_refuse) + ", watch lost " + std::to_string(f.drop_watch) +
          " dup " + std::to_string(f.duplicate) + " reordered " + std::to_string(f.reorder) +
          ", sqs lost " + std::to_string(f.drop_sqs) + ", clock jumps " +
          std::to_string(f.clock_jump) +
          (f.crash ? ", crash at command " + std::to_string(f.crash_at_command) +
                         (f.crash_after_execute ? " after its effect" : " before it")
                   : "");
  return text;
}

struct Crash {};

// The boundary between the controller and the world, where commands fail as the cloud and the
// API server make them fail, and where the controller dies.
class FaultyExecutor : public runtime::Executor {
 public:
  FaultyExecutor(sim::World& world, Rng& rng, const Faults& faults)
      : world_(world), rng_(rng), faults_(faults), crash_armed_(faults.crash) {}

  std::vector<Event> Execute(const Command& command) override {
    if (!on_) return world_.Execute(command);
    // A Kubernetes Event has no result to lose: a crash before one is the crash after the
    // command before it, so the crash lands on commands with results.
    const bool counted = !std::holds_alternative<RecordKubeEvent>(command.body);
    if (crash_armed_ && counted && ++executed_ == faults_.crash_at_command) {
      crash_armed_ = false;
      if (faults_.crash_after_execute) world_.Execute(command);  // Its result never arrives.
      throw Crash{};
    }
    const bool cloud = std::holds_alternative<LaunchInstance>(command.body) ||
                       std::holds_alternative<TerminateInstance>(command.body);
    if (cloud && Chance(rng_, faults_.throttle)) {
      return {CommandFailed{command.id, ErrorCode::kThrottled, "RequestLimitExceeded"}};
    }
    if (std::holds_alternative<EvictPod>(command.body) && Chance(rng_, faults_.evict_refuse)) {
      return {CommandFailed{command.id, ErrorCode::kDisruptionBudget,
                            "429: Cannot evict pod as it would violate a disruption budget"}};
    }
    return world_.Execute(command);
  }
  void Off() { on_ = false; }

 private:
  sim::World& world_;
  Rng& rng_;
  const Faults& faults_;
  bool on_ = true;
  bool crash_armed_;
  std::uint64_t executed_ = 0;
};

// The decisions and commands of each step, for the checker.
class DecisionTap : public runtime::Observer {
 public:
  void OnOutput(Seq, const Output& output) override {
    decisions.insert(decisions.end(), output.decisions.begin(), output.decisions.end());
    commands.insert(commands.end(), output.commands.begin(), output.commands.end());
  }
  std::vector<Decision> decisions;
  std::vector<Command> commands;
};

bool IsWatch(const Event& e) {
  return std::holds_alternative<PodUpserted>(e) || std::holds_alternative<PodDeleted>(e) ||
         std::holds_alternative<NodeUpserted>(e) || std::holds_alternative<NodeDeleted>(e);
}

std::string Subject(const Event& e) {
  if (const auto* p = std::get_if<PodUpserted>(&e)) return PodKey(p->pod.ns, p->pod.name);
  if (const auto* p = std::get_if<PodDeleted>(&e)) return PodKey(p->ns, p->name);
  if (const auto* n = std::get_if<NodeUpserted>(&e)) return "node " + n->node.name;
  return "node " + std::get<NodeDeleted>(e).name;
}

// What the watches deliver of the world's changes: some lost (a relist is then due), some
// twice, some swapped with a neighbour about another object. The Tick stays last.
std::vector<Event> Deliver(std::vector<Event> events, Rng& rng, const Faults& f, Instant now,
                           Instant& relist_at) {
  Event tick = std::move(events.back());
  events.pop_back();
  std::vector<Event> out;
  for (auto& e : events) {
    if (IsWatch(e) && Chance(rng, f.drop_watch)) {
      relist_at =
          std::min(relist_at,
                   now + Duration{static_cast<std::int64_t>(Below(rng, kRelistWithin.value) + 1)});
      continue;
    }
    if (std::holds_alternative<InterruptionReceived>(e) && Chance(rng, f.drop_sqs)) continue;
    const bool twice = IsWatch(e) && Chance(rng, f.duplicate);
    out.push_back(e);
    if (twice) out.push_back(std::move(e));
  }
  for (std::size_t i = 0; i + 1 < out.size(); ++i) {
    if (IsWatch(out[i]) && IsWatch(out[i + 1]) && Subject(out[i]) != Subject(out[i + 1]) &&
        Chance(rng, f.reorder)) {
      std::swap(out[i], out[i + 1]);
      ++i;
    }
  }
  out.push_back(std::move(tick));
  return out;
}

// The controller process: its log handle and runtime, killed and started again on the same
// log folder.
class Controller {
 public:
  Controller(std::filesystem::path dir, sim::World& world, runtime::Executor& executor,
             runtime::Observer& observer, runtime::Appends appends)
      : dir_(std::move(dir)),
        world_(world),
        executor_(executor),
        observer_(observer),
        appends_(appends) {}

  // Startup lists the world, with deletions for what the recovered state holds and the world
  // no longer does (an informer's relist after a restart).
  void Start() {
    log::OpenOptions open;
    open.writer_version = "tenon-faults";
    open.cluster_id = "faults";
    log_ = log::EventLog::Open(dir_, open);
    runtime::Options options;
    options.snapshot_every_events = kSnapshotEvery;
    options.observer = &observer_;
    options.appends = appends_;
    runtime_ = std::make_unique<runtime::Runtime>(*log_, executor_, options);
    runtime_->Recover();
    runtime_->Ingest(world_.StartupEvents(runtime_->state()));
  }
  void Kill() {
    runtime_.reset();
    log_.reset();
  }
  runtime::Runtime& runtime() { return *runtime_; }
  log::EventLog& log() { return *log_; }

 private:
  std::filesystem::path dir_;
  sim::World& world_;
  runtime::Executor& executor_;
  runtime::Observer& observer_;
  const runtime::Appends appends_;
  std::unique_ptr<log::EventLog> log_;
  std::unique_ptr<runtime::Runtime> runtime_;
};

const std::vector<InstanceType>& Catalog(const std::filesystem::path& path) {
  static std::map<std::filesystem::path, std::vector<InstanceType>> cache;
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, sim::LoadCatalogJson(path, 1)).first;
  return it->second;
}

// Feeds one tick's changes to the controller; a crash restarts it (once).
void Step(Controller& controller, std::vector<Event> events, SeedResult& result) {
  try {
    controller.runtime().Ingest(std::move(events));
  } catch (const Crash&) {
    result.crashed = true;
    controller.Kill();
    controller.Start();
  }
}

}  // namespace

namespace {

void Drive(std::uint64_t seed, const SeedOptions& options, SeedResult& result) {
  result.seed = seed;
  Rng rng(seed);
  Faults faults = ChooseFaults(rng);
  if (options.no_crash) faults.crash = false;
  sim::Scenario scenario = MakeScenario(rng, Catalog(options.catalog), faults);
  const sim::Scenario written = scenario;  // What the checker holds the controller to.
  // Odd seeds run the runtime with pipelined appends: a command runs only once its output is in
  // the log, so the crash (thrown as a command runs) finds the log as the synchronous runtime
  // leaves it, and every check holds the pipelined runtime to the same behaviour.
  const runtime::Appends appends =
      seed % 2 == 1 ? runtime::Appends::kPipelined : runtime::Appends::kSynchronous;
  result.summary = Describe(scenario, faults) +
                   (appends == runtime::Appends::kPipelined ? "; pipelined appends" : "");
  sim::World world(scenario, std::filesystem::path());
  world.SkewBudgetsForTest(options.budget_skew);
  testing::TempDir dir;
  FaultyExecutor executor(world, rng, faults);
  DecisionTap tap;
  Controller controller(options.keep_log.empty() ? dir.path() / "log" : options.keep_log, world,
                        executor, tap, appends);
  Checker checker(written);
  try {
    controller.Start();
  } catch (const Crash&) {
    result.crashed = true;
    controller.Kill();
    controller.Start();
  }
  const Instant faults_end = scenario.start + faults.fault_phase;
  const Instant end = scenario.start + scenario.duration;
  Instant relist_at = end + Duration{1};
  bool faulty = true;
  for (Instant t = scenario.start + scenario.tick; t <= end; t += scenario.tick) {
    if (faulty && t >= faults_end) {
      // Faults off: the cloud has capacity and registers every kubelet again.
      faulty = false;
      executor.Off();
      scenario.cloud.never_register.clear();
      scenario.cloud.capacity_windows.clear();
    }
    if (faulty && Chance(rng, faults.clock_jump)) {
      t = std::min(faults_end, t + Seconds(5 + static_cast<std::int64_t>(Below(rng, 86))));
    }
    std::vector<Event> events = world.Advance(t);
    if (faulty) events = Deliver(std::move(events), rng, faults, t, relist_at);
    if (t >= relist_at) {
      relist_at = end + Duration{1};
      auto relisted = world.Relist(controller.runtime().state());
      events.insert(events.end() - 1, relisted.begin(), relisted.end());
    }
    Step(controller, std::move(events), result);
    checker.AfterStep(world, tap.decisions, tap.commands);
    tap.decisions.clear();
    tap.commands.clear();
    ++result.steps;
  }
  checker.AtConvergence(world, end - kSettle);
  result.violations = checker.violations();
  for (const auto& [id, instance] : world.instances()) {
    ++result.instances;
    result.cost += instance.price.value;
    result.dearest = std::max(result.dearest, instance.price.value);
  }
  controller.runtime().Flush();
  auto verify = replay::Verify(controller.log());
  result.records = controller.log().LastSeq().value;
  if (verify.verdict != replay::Verdict::kIdentical) {
    result.violations.push_back(std::string("replay of the log: ") +
                                replay::VerdictName(verify.verdict) + " at seq " +
                                std::to_string(verify.first_bad_seq.value) + ": " + verify.detail);
  }
  if (std::string differed = testing::CompareWithoutIdleNotes(controller.log(), result.idle_skips);
      !differed.empty()) {
    result.violations.push_back(differed);
  }
}

}  // namespace

namespace {

std::string Dollars(std::int64_t micro_usd_per_hour) {
  char text[32];
  std::snprintf(text, sizeof text, "$%.4f/h", static_cast<double>(micro_usd_per_hour) / 1e6);
  return text;
}

// A crashed run against its twin run without the crash: at most one instance more, and no
// dearer than the twin by more than one instance of its own (one consolidation step, which a
// crash may leave still to come or already taken): a crash must not leak or duplicate
// capacity. Fewer is no defect: every pod is served (the checker holds both runs to that), and
// consolidation is path-dependent, so a run that restarted may well settle on a tighter packing
// than its twin's local optimum (nodes each too full to empty, a budget too small for the
// multi-node step that would merge them).
void CompareWithTwin(std::uint64_t seed, const SeedOptions& options, SeedResult& crashed) {
  SeedOptions twin_options = options;
  twin_options.no_crash = true;
  twin_options.keep_log.clear();
  SeedResult twin;
  Drive(seed, twin_options, twin);
  for (const auto& v : twin.violations) crashed.violations.push_back("without the crash: " + v);
  const auto more =
      static_cast<std::int64_t>(crashed.instances) - static_cast<std::int64_t>(twin.instances);
  if (more > 1 || crashed.cost > twin.cost + crashed.dearest) {
    crashed.violations.push_back("killed and restarted, the run ends with " +
                                 std::to_string(crashed.instances) + " instances at " +
                                 Dollars(crashed.cost) + "; without the crash, " +
                                 std::to_string(twin.instances) + " at " + Dollars(twin.cost) +
                                 " (more than one consolidation step apart)");
  }
}

}  // namespace

SeedResult RunSeed(std::uint64_t seed, const SeedOptions& options) {
  SeedResult result;
  try {
    Drive(seed, options, result);
    if (result.crashed && !options.no_crash) CompareWithTwin(seed, options, result);
  } catch (const std::exception& e) {
    // The controller (or the world) threw: as much a failure as a broken invariant.
    result.violations.push_back(std::string("exception: ") + e.what());
  }
  return result;
}

}  // namespace tenon::simtest
