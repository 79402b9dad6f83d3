// Scheduling throughput in Karpenter's benchmark shape (scheduling_benchmark_test.go):
// 400 instance types from the real us-east-1 catalog, one NodePool, pods whose requests are
// drawn from {100, 250, 500, 1000, 1500}m CPU and {100, 256, 512, 1024, 2048, 4096}Mi memory,
// split five ways: plain, zone spread (maxSkew 1), hostname spread (maxSkew 1), zone
// self-affinity and hostname anti-affinity. Label values come from {a..g} as in Karpenter.
// Also the 4,000-pod preferences case: every pod prefers something it cannot have (a zone that
// does not exist, spread ScheduleAnyway, hostname anti-affinity), so each needs relaxing.
//
// Beside each figure: a same-run baseline, first-fit-decreasing of the same requests into the
// largest type with no constraints, and Karpenter's published 20.2 s / 11.7 s.
//
//   bench_schedule [--catalog PATH] [--quick]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "adapters/sim/scenario.h"
#include "bench/workload.h"
#include "reducers/core.h"

namespace {

using namespace tenon;
using tenon::bench::DiversePods;
using tenon::bench::PreferencePods;

constexpr std::size_t kTypesInBenchmark = 400;
constexpr double kKarpenter20kSeconds = 20.2;
constexpr double kKarpenterPreferences4kSeconds = 11.7;

State MakeState(const std::vector<InstanceType>& types) {
  State state;
  Step(state, Seq{1}, ControllerStarted{"bench", 42, Settings{}});
  Step(state, Seq{2}, CatalogRefreshed{types});
  NodePool pool;
  pool.name = "default";
  pool.nodeclass = "default";
  Step(state, Seq{3}, NodePoolUpserted{pool});
  NodeClass nodeclass;
  nodeclass.name = "default";
  Step(state, Seq{4}, NodeClassUpserted{nodeclass});
  return state;
}

// Every third type or so, so the 400 span families and sizes like Karpenter's fake catalog.
std::vector<InstanceType> PickTypes(const std::vector<InstanceType>& all) {
  std::vector<InstanceType> out;
  for (std::size_t i = 0; i < kTypesInBenchmark && i < all.size(); ++i) {
    out.push_back(all[i * all.size() / kTypesInBenchmark]);
  }
  return out;
}

// The baseline: first-fit-decreasing of the same requests into bins the size of the largest
// type's allocatable, with no constraints at all.
std::size_t FirstFitDecreasing(const State& state, std::vector<const Pod*> pods) {
  Resources bin_size;
  for (const auto& [name, entry] : *state.cluster.catalog) {
    if (entry.allocatable.cpu > bin_size.cpu) bin_size = entry.allocatable;
  }
  std::sort(pods.begin(), pods.end(), [](const Pod* a, const Pod* b) {
    return a->requests.cpu != b->requests.cpu ? a->requests.cpu > b->requests.cpu
                                              : a->requests.memory > b->requests.memory;
  });
  std::vector<Resources> bins;
  for (const Pod* pod : pods) {
    Resources need = pod->requests;
    need.pods = 1;
    bool placed = false;
    for (Resources& bin : bins) {
      if (need.cpu <= bin.cpu && need.memory <= bin.memory && need.pods <= bin.pods) {
        bin.cpu -= need.cpu;
        bin.memory -= need.memory;
        bin.pods -= 1;
        placed = true;
        break;
      }
    }
    if (!placed) {
      Resources fresh = bin_size;
      fresh.cpu -= need.cpu;
      fresh.memory -= need.memory;
      fresh.pods -= 1;
      bins.push_back(fresh);
    }
  }
  return bins.size();
}

template <class F>
double SecondsOf(F&& f, int repeats) {
  std::vector<double> runs;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    f();
    runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

long MaxRssKib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

struct Row {
  std::size_t pods = 0;
  std::size_t placed = 0;
  std::size_t nodes = 0;
  double seconds = 0;
  std::size_t baseline_nodes = 0;
  double baseline_seconds = 0;
};

Row Measure(const State& state, const std::vector<Pod>& pods, int repeats) {
  std::vector<const Pod*> ptrs;
  for (const Pod& p : pods) ptrs.push_back(&p);
  Row row;
  row.pods = pods.size();
  // Each result is freed after its run's clock stops, so freeing is not timed.
  ScheduleResult result;
  std::vector<double> runs;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    ScheduleResult fresh = Schedule(state, ptrs);
    runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    std::swap(result, fresh);
  }
  std::sort(runs.begin(), runs.end());
  row.seconds = runs[runs.size() / 2];
  row.nodes = result.claims.size();
  for (const auto& outcome : result.pods) row.placed += outcome.target.empty() ? 0 : 1;
  row.baseline_seconds =
      SecondsOf([&] { row.baseline_nodes = FirstFitDecreasing(state, ptrs); }, repeats);
  return row;
}

void Print(const char* label, const Row& r) {
  std::printf(
      "%-12s %6zu pods %6zu placed %5zu nodes %9.4f s %10.0f pods/s | FFD baseline %5zu "
      "nodes %8.4f s %10.0f pods/s\n",
      label, r.pods, r.placed, r.nodes, r.seconds, r.pods / r.seconds, r.baseline_nodes,
      r.baseline_seconds, r.pods / r.baseline_seconds);
}

}  // namespace

int main(int argc, char** argv) {
  std::string catalog = "data/catalog/ec2-us-east-1.json";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    if (std::strcmp(argv[i], "--catalog") == 0 && i + 1 < argc) catalog = argv[++i];
  }
  std::vector<InstanceType> all;
  try {
    all = tenon::sim::LoadCatalogJson(catalog, 42);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_schedule: %s (run from the repository root or pass --catalog)\n",
                 e.what());
    return 2;
  }
  State state = MakeState(PickTypes(all));
  std::printf("catalog: %zu types, %zu in the benchmark NodePool\n", all.size(),
              state.cluster.catalog->size());

  // The 20,000-pod case first, so the peak-memory figure is its own.
  std::size_t big = quick ? 2000 : 20000;
  long rss_before = MaxRssKib();
  std::vector<Pod> big_pods = DiversePods(big);
  Row big_row = Measure(state, big_pods, quick ? 1 : 5);
  long rss_after = MaxRssKib();
  Print("diverse", big_row);
  std::printf("peak memory: %.1f MiB for the process (%.1f MiB above the catalog)\n",
              rss_after / 1024.0, (rss_after - rss_before) / 1024.0);

  std::vector<std::size_t> sizes = {1, 10, 100, 500, 1000, 2000, 5000, 10000};
  if (quick) sizes = {1, 100, 1000};
  for (std::size_t n : sizes) Print("diverse", Measure(state, DiversePods(n), quick ? 1 : 5));

  std::size_t prefs = quick ? 400 : 4000;
  Row pref_row = Measure(state, PreferencePods(prefs), quick ? 1 : 3);
  Print("preferences", pref_row);

  std::printf(
      "\nKarpenter (published, Apple M3 Pro): 20,000 pods in %.1f s; 4,000 pods with "
      "preferences in %.1f s\n",
      kKarpenter20kSeconds, kKarpenterPreferences4kSeconds);
  if (!quick) {
    std::printf(
        "tenon: 20,000 pods in %.3f s (%.0fx Karpenter, target < 0.2 s); preferences "
        "4,000 in %.3f s (%.0fx, target < 0.1 s)\n",
        big_row.seconds, kKarpenter20kSeconds / big_row.seconds, pref_row.seconds,
        kKarpenterPreferences4kSeconds / pref_row.seconds);
  }
  bool all_placed = big_row.placed == big_row.pods && pref_row.placed == pref_row.pods;
  if (!all_placed) std::printf("error: some pods were not placed\n");
  return all_placed ? 0 : 1;
}
