// One seed of the deterministic fault tests (after TigerBeetle's VOPR and FoundationDB's
// simulator): the seed picks a small scenario and which faults strike, the real runtime and core
// run against the simulated world through a faulty boundary, then a phase with every fault off in
// which the cluster must converge. The checker (checker.h) judges every step.
//
// Faults, all outside the core: CreateFleet out of capacity (ICE) for a while, throttled
// CreateFleet and TerminateInstances, slow kubelets and kubelets that never register, watch
// events lost (a relist follows within seconds, as an informer's watch resumes), duplicated and
// reordered, interruption messages dropped, evictions refused, the controller killed and
// restarted at a random point (also between a command's execution and its result reaching the
// log), and the clock jumping forward. A seed whose controller crashed runs again without the
// crash: the crashed run must end at its twin's instance count and cost, within one
// consolidation step.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tenon::simtest {

struct SeedOptions {
  std::filesystem::path catalog;  // examples/catalogs/small.json
  // The planted bug: the world serves every NodePool with its count budgets this much higher
  // than the scenario wrote (0: no bug). The checker must catch it.
  std::int64_t budget_skew = 0;
  bool verbose = false;  // Print the scenario and faults chosen.
  // Write the log here and keep it (for `tenon replay`), instead of a temporary folder.
  std::filesystem::path keep_log;
  bool no_crash = false;  // Run the seed with its crash taken out (the crashed run's twin).
};

struct SeedResult {
  std::uint64_t seed = 0;
  std::vector<std::string> violations;  // Empty: every invariant held.
  std::string summary;                  // The scenario and faults the seed chose.
  std::uint64_t steps = 0;
  std::uint64_t records = 0;
  bool crashed = false;  // The controller was killed and restarted.
  // Ticks of the log folded again whose NodeClaim walk an idle note let them skip.
  std::uint64_t idle_skips = 0;
  // The world at the end: instances and their cost, and the dearest instance's price (the most
  // one consolidation step can save).
  std::size_t instances = 0;
  std::int64_t cost = 0;  // micro-USD per hour
  std::int64_t dearest = 0;
};

SeedResult RunSeed(std::uint64_t seed, const SeedOptions& options);

}  // namespace tenon::simtest
