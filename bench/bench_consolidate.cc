// Consolidation at scale against tenon's targets (printed at the end), over the us-east-1
// catalog in data/catalog/:
//
//   single-node: a 1,000-node / 10,000-pod cluster (Karpenter's five-way constraint mix) after
//     a scale-down; every candidate simulated on its own, once directly through Simulation and
//     once as the controller does it (one disruption pass, budget 1 so multi-node cannot act).
//   multi-node: a 5,000-node / 50,000-pod cluster; one disruption pass whose multi-node
//     consolidation binary-searches the 100 cheapest-to-disrupt candidates.
//
// Baseline in the same run: the same simulation as a fresh scheduling pass per question (what
// consolidation cost before the reusable pass). Beside them, Karpenter's published figures.
//
//   bench_consolidate [--catalog PATH] [--quick] [--single-pods N] [--multi-pods N] (0 skips)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "adapters/sim/scenario.h"
#include "bench/workload.h"
#include "reducers/core.h"

namespace {

using namespace tenon;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kTypesInBenchmark = 400;
constexpr const char* kNodeType = "m5.2xlarge";
bool simulations_only = false;  // --simulations-only: for profiling the simulation loop.

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<InstanceType> PickTypes(const std::vector<InstanceType>& all) {
  std::vector<InstanceType> out;
  for (std::size_t i = 0; i < kTypesInBenchmark && i < all.size(); ++i) {
    out.push_back(all[i * all.size() / kTypesInBenchmark]);
  }
  bool has = std::any_of(out.begin(), out.end(), [](const auto& t) { return t.name == kNodeType; });
  for (const auto& t : all) {
    if (!has && t.name == kNodeType) out.push_back(t);
  }
  return out;
}

// One disruption pass, as the controller runs it on a tick; returns its seconds and decision.
double Pass(State state, DisruptionDecision* decision) {
  auto start = Clock::now();
  Output out = Step(state, Seq{state.last_seq.value + 1}, Tick{state.now + kSecond});
  double seconds = Since(start);
  for (const auto& d : out.decisions) {
    if (const auto* x = std::get_if<DisruptionDecision>(&d.body)) *decision = *x;
  }
  return seconds;
}

std::size_t WithPods(const State& state, Simulation& sim, std::vector<std::string>* out) {
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (!sim.PodsOf(claim).empty()) out->push_back(name);
  }
  return out->size();
}

// Per-question seconds of a fresh scheduling pass (the baseline), over the first `n` claims.
double FreshSeconds(const State& state, Simulation& sim, const std::vector<std::string>& claims,
                    std::size_t n) {
  auto start = Clock::now();
  for (std::size_t i = 0; i < n && i < claims.size(); ++i) {
    Schedule(state, sim.PodsOf(state.lifecycle.nodeclaims.at(claims[i])), {claims[i]});
  }
  return Since(start) / static_cast<double>(std::min(n, claims.size()));
}

bool SingleNode(const std::vector<InstanceType>& types, std::size_t pods) {
  State state = bench::MakeCluster(types, kNodeType, pods, 6, "1");
  auto build_start = Clock::now();
  Simulation sim(state);
  double build = Since(build_start);
  std::vector<std::string> claims;
  WithPods(state, sim, &claims);
  std::vector<double> each;
  std::size_t deletable = 0;
  std::size_t replaceable = 0;
  auto all_start = Clock::now();
  for (const auto& name : claims) {
    auto start = Clock::now();
    ScheduleResult r = sim.Without({name});
    each.push_back(Since(start));
    bool placed = std::all_of(r.pods.begin(), r.pods.end(),
                              [](const PodOutcome& o) { return !o.target.empty(); });
    deletable += placed && r.claims.empty() ? 1 : 0;
    replaceable += placed && r.claims.size() == 1 ? 1 : 0;
  }
  double all = Since(all_start) + build;
  std::sort(each.begin(), each.end());
  if (simulations_only) {
    std::printf("simulations only: %zu in %.4f s, median %.1f us\n", each.size(), all,
                each[each.size() / 2] * 1e6);
    return true;
  }
  double fresh = FreshSeconds(state, sim, claims, 20);
  DisruptionDecision decision;
  double pass = Pass(state, &decision);
  std::size_t evaluated = 0;
  for (const auto& c : decision.candidates)
    evaluated += c.outcome.rfind("not consolidatable", 0) == 0 ? 0 : 1;
  std::printf(
      "single-node: %zu nodes, %zu pods, %zu candidates (%zu could be deleted, %zu replaced by "
      "one node)\n",
      state.lifecycle.nodeclaims.size(), state.cluster.pods.size(), claims.size(), deletable,
      replaceable);
  std::printf(
      "  every candidate: %.4f s (pass built in %.4f s); one simulation median %.1f us, p99 %.1f "
      "us | fresh-pass baseline %.1f us per simulation (%.0fx)\n",
      all, build, each[each.size() / 2] * 1e6, each[each.size() * 99 / 100] * 1e6, fresh * 1e6,
      fresh / each[each.size() / 2]);
  std::printf("  one disruption pass (%s %s, %zu candidates recorded): %.4f s\n",
              Name(decision.method), Name(decision.phase), evaluated, pass);
  return !claims.empty() && decision.method == DisruptionMethod::kSingleNodeConsolidation;
}

bool MultiNode(const std::vector<InstanceType>& types, std::size_t pods) {
  State state = bench::MakeCluster(types, kNodeType, pods, 6, "100%");
  DisruptionDecision decision;
  double pass = Pass(state, &decision);
  Simulation sim(state);
  std::vector<std::string> claims;
  WithPods(state, sim, &claims);
  std::vector<std::string> hundred(claims.begin(),
                                   claims.begin() + std::min<std::size_t>(100, claims.size()));
  auto start = Clock::now();
  Schedule(
      state,
      [&] {
        std::vector<const Pod*> all;
        for (const auto& c : hundred) {
          const auto& mine = sim.PodsOf(state.lifecycle.nodeclaims.at(c));
          all.insert(all.end(), mine.begin(), mine.end());
        }
        return all;
      }(),
      std::set<std::string>(hundred.begin(), hundred.end()));
  double fresh = Since(start);
  std::printf(
      "multi-node: %zu nodes, %zu pods; one disruption pass: %.4f s (%s %s, %zu nodes) | "
      "fresh-pass baseline for the 100-node group alone: %.4f s\n",
      state.lifecycle.nodeclaims.size(), state.cluster.pods.size(), pass, Name(decision.method),
      Name(decision.phase), decision.nodeclaims.size(), fresh);
  return decision.method == DisruptionMethod::kMultiNodeConsolidation &&
         decision.nodeclaims.size() >= 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string catalog = "data/catalog/ec2-us-east-1.json";
  bool quick = false;
  std::size_t single_pods = 12000;  // About 1,000 nodes and 10,000 pods after the scale-down.
  std::size_t multi_pods = 60000;   // About 5,000 nodes and 50,000 pods.
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--simulations-only") == 0) simulations_only = true;
    if (std::strcmp(argv[i], "--catalog") == 0 && i + 1 < argc) catalog = argv[++i];
    if (std::strcmp(argv[i], "--single-pods") == 0 && i + 1 < argc)
      single_pods = std::stoul(argv[++i]);
    if (std::strcmp(argv[i], "--multi-pods") == 0 && i + 1 < argc)
      multi_pods = std::stoul(argv[++i]);
  }
  if (quick) single_pods = 1200, multi_pods = 6000;
  std::vector<InstanceType> all;
  try {
    all = tenon::sim::LoadCatalogJson(catalog, 42);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_consolidate: %s (run from the repository root or pass --catalog)\n",
                 e.what());
    return 2;
  }
  std::vector<InstanceType> types = PickTypes(all);
  std::printf("catalog: %zu types, %zu in the benchmark NodePool; nodes are %s\n", all.size(),
              types.size(), kNodeType);
  bool single = single_pods == 0 || SingleNode(types, single_pods);
  bool multi = multi_pods == 0 || MultiNode(types, multi_pods);
  std::printf(
      "\nKarpenter (published): single-node at 1,000 nodes evaluates 37-49 candidates in its "
      "3-minute timeout; one simulation ~0.9 s; multi-node caps at 100 candidates with a "
      "1-minute timeout.\ntenon targets: every single-node candidate at 1,000 nodes < 0.1 s; one "
      "simulation < 100 us; multi-node at 5,000 nodes < 1 s.\n");
  if (!single || !multi) {
    std::fprintf(stderr, "bench_consolidate: a pass did not consolidate as expected\n");
    return 1;
  }
  return 0;
}
