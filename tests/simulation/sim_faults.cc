// The seeded fault tests' driver (fault_run.h): runs a range of seeds, or one, and on a failure
// prints the one command that reproduces it.
//
//   sim_faults --catalog PATH [--from N] [--count N] [--seed N] [--verbose] [--keep-log DIR]
//   sim_faults --catalog PATH --plant-budget-bug [--from N] [--count N]
//
// With --plant-budget-bug the world serves every NodePool with count budgets one higher than the
// scenario wrote; the run succeeds only if the checker catches it on some seed, that seed's
// command is printed, and running that seed again fails the same way.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "tests/simulation/fault_run.h"

namespace {

using tenon::simtest::RunSeed;
using tenon::simtest::SeedOptions;
using tenon::simtest::SeedResult;

struct Args {
  std::string self;
  SeedOptions options;
  std::uint64_t from = 1;
  std::uint64_t count = 1;
  bool plant = false;
};

std::string Reproduce(const Args& args, std::uint64_t seed) {
  return args.self + " --catalog " + args.options.catalog.string() + " --seed " +
         std::to_string(seed) + (args.plant ? " --plant-budget-bug" : "") + " --verbose";
}

void PrintFailure(const Args& args, const SeedResult& r) {
  std::printf("seed %" PRIu64 " FAILED (%zu violations; %s)\n", r.seed, r.violations.size(),
              r.summary.c_str());
  for (const auto& v : r.violations) std::printf("  %s\n", v.c_str());
  std::printf("reproduce: %s\n", Reproduce(args, r.seed).c_str());
}

int RunRange(const Args& args) {
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t failed = 0, crashed = 0, steps = 0, records = 0, idle_skips = 0;
  for (std::uint64_t seed = args.from; seed < args.from + args.count; ++seed) {
    SeedResult r = RunSeed(seed, args.options);
    crashed += r.crashed ? 1 : 0;
    idle_skips += r.idle_skips;
    steps += r.steps;
    records += r.records;
    if (args.options.verbose) {
      std::printf("seed %" PRIu64 ": %s; %" PRIu64 " steps, %" PRIu64 " records%s\n", seed,
                  r.summary.c_str(), r.steps, r.records,
                  r.crashed ? ", crashed and restarted" : "");
    }
    if (!r.violations.empty()) {
      ++failed;
      PrintFailure(args, r);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%" PRIu64 " seeds from %" PRIu64 ": %" PRIu64 " failed, %" PRIu64
              " with a controller crash and restart; %" PRIu64 " steps, %" PRIu64
              " log records; %" PRIu64 " ticks folded again on an idle note; %.1f s\n",
              args.count, args.from, failed, crashed, steps, records, idle_skips, seconds);
  // Each seed compares its log folded with and without the idle notes; a range of seeds in
  // which no note was ever used would have compared nothing.
  if (args.count >= 10 && idle_skips == 0) {
    std::printf("no tick of %" PRIu64 " seeds found an idle note holding: nothing was compared\n",
                args.count);
    return 1;
  }
  return failed == 0 ? 0 : 1;
}

// The planted bug must be caught, and the printed seed must reproduce it.
int RunPlanted(const Args& args) {
  for (std::uint64_t seed = args.from; seed < args.from + args.count; ++seed) {
    SeedResult r = RunSeed(seed, args.options);
    bool budget = false;
    for (const auto& v : r.violations)
      budget = budget || v.find("budgets allow") != std::string::npos;
    if (!budget) continue;
    PrintFailure(args, r);
    SeedResult again = RunSeed(seed, args.options);
    if (again.violations != r.violations) {
      std::printf("planted bug: seed %" PRIu64 " did not fail the same way again\n", seed);
      return 1;
    }
    std::printf("planted bug caught by seed %" PRIu64 " (%" PRIu64
                " seeds tried) and reproduced by the command above\n",
                seed, seed - args.from + 1);
    return 0;
  }
  std::printf("planted bug NOT caught in %" PRIu64 " seeds\n", args.count);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  args.self = argv[0];
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (std::strcmp(argv[i], "--catalog") == 0) {
      args.options.catalog = next();
    } else if (std::strcmp(argv[i], "--from") == 0) {
      args.from = std::stoull(next());
    } else if (std::strcmp(argv[i], "--count") == 0) {
      args.count = std::stoull(next());
    } else if (std::strcmp(argv[i], "--seed") == 0) {
      args.from = std::stoull(next());
      args.count = 1;
    } else if (std::strcmp(argv[i], "--keep-log") == 0) {
      args.options.keep_log = next();
    } else if (std::strcmp(argv[i], "--verbose") == 0) {
      args.options.verbose = true;
    } else if (std::strcmp(argv[i], "--plant-budget-bug") == 0) {
      args.plant = true;
      args.options.budget_skew = 1;
    } else {
      std::fprintf(stderr, "sim_faults: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (args.options.catalog.empty()) {
    std::fprintf(stderr, "sim_faults: --catalog is required\n");
    return 2;
  }
  try {
    return args.plant && args.count > 1 ? RunPlanted(args) : RunRange(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sim_faults: %s\n", e.what());
    return 1;
  }
}
