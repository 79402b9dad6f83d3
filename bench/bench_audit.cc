// tenon audit's node query on a 1,000,000-event log through the decision index, beside the same
// answer by a full scan of the decisions (the baseline), both measured in this run.
//
// The log is built in code: 1,000,000 event records (Ticks, one a second) with, every tenth
// event, a decision: each of 5,000 NodeClaims launched, registered (naming its node) and
// initialized, and disruption passes whose candidates are 10 claims each (--candidates N),
// blocked or executed, so each node is a candidate in ~190 decisions.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "log/codec.h"
#include "log/event_log.h"
#include "replay/replay.h"

namespace {

using namespace tenon;

constexpr std::uint64_t kBatchEvents = 1000;
constexpr std::uint64_t kDecisionEvery = 10;

struct Options {
  std::uint64_t events = 1'000'000;
  std::uint64_t claims = 5'000;
  int queries = 200;
  std::size_t candidates_per_pass = 10;  // --candidates N
};

std::string Claim(std::uint64_t i) {
  return "general-" + std::to_string(i);
}
std::string NodeName(std::uint64_t i) {
  return "ip-10-0-" + std::to_string(i) + ".ec2.internal";
}

// The decision made at event `seq` (every kDecisionEvery-th): the claims' lifecycle first, then
// disruption passes over rotating groups of candidates.
Decision DecisionAt(std::uint64_t n, std::uint64_t seq, const Options& o) {
  Decision d;
  d.id = DecisionId{n};
  d.cause = Seq{seq};
  d.at = Instant{static_cast<std::int64_t>(seq) * kSecond.value};
  if (n <= 3 * o.claims) {
    const std::uint64_t claim = (n - 1) / 3;
    static constexpr Transition kSteps[] = {Transition::kLaunched, Transition::kRegistered,
                                            Transition::kInitialized};
    const auto step = (n - 1) % 3;
    d.body = LifecycleDecision{Claim(claim),
                               kSteps[step],
                               "bench",
                               step == 0 ? "" : NodeName(claim),
                               "i-" + std::to_string(claim),
                               Cause::kNone,
                               ""};
    return d;
  }
  DisruptionDecision x{DisruptionMethod::kSingleNodeConsolidation,
                       n % 7 == 0 ? DisruptionPhase::kExecuted : DisruptionPhase::kBlocked,
                       {},
                       {},
                       {},
                       "no candidate can go now",
                       {}};
  const std::uint64_t first = (n * o.candidates_per_pass) % o.claims;
  for (std::size_t i = 0; i < o.candidates_per_pass; ++i) {
    const std::uint64_t c = (first + i) % o.claims;
    x.candidates.push_back({Claim(c), "general",
                            "no cheaper replacement: cheapest fit m5.large costs $0.0960/h",
                            Cause::kNoBetterPlacement, ""});
  }
  if (x.phase == DisruptionPhase::kExecuted) x.nodeclaims.push_back(Claim(first));
  x.budgets.push_back({"general", "Underutilized", 1, "budget 0 (nodes 10%)"});
  d.body = std::move(x);
  return d;
}

void Build(log::EventLog& log, const Options& o) {
  std::uint64_t seq = 0, decision = 0;
  while (seq < o.events) {
    log::AppendBatch batch;
    for (std::uint64_t i = 0; i < kBatchEvents && seq < o.events; ++i) {
      ++seq;
      batch.events.push_back(
          log::EncodeEvent(Event{Tick{Instant{static_cast<std::int64_t>(seq) * kSecond.value}}}));
      if (seq % kDecisionEvery == 0) {
        batch.decisions.push_back(log::DecisionRecordFor(DecisionAt(++decision, seq, o)));
      }
    }
    log.Append(std::move(batch));
  }
}

double Millis(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

struct Figures {
  double median_ms = 0, p99_ms = 0, max_ms = 0;
  std::uint64_t decisions_found = 0, decisions_read = 0;
  std::vector<std::vector<std::uint64_t>> ids;  // Per query, the decisions found.
};

template <class Query>
Figures Measure(int queries, const Options& o, Query query) {
  std::vector<double> times;
  Figures f;
  for (int q = 0; q < queries; ++q) {
    const std::uint64_t claim = (static_cast<std::uint64_t>(q) * 7919) % o.claims;
    const auto start = std::chrono::steady_clock::now();
    replay::AuditQuery by_node;
    by_node.node = NodeName(claim);
    replay::AuditResult result = query(by_node);
    times.push_back(Millis(std::chrono::steady_clock::now() - start));
    f.decisions_found += result.decisions.size();
    f.decisions_read += result.decisions_read;
    f.ids.emplace_back();
    for (const auto& d : result.decisions) f.ids.back().push_back(d.id.value);
  }
  std::sort(times.begin(), times.end());
  f.median_ms = times[times.size() / 2];
  f.p99_ms = times[std::min(times.size() - 1, times.size() * 99 / 100)];
  f.max_ms = times.back();
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) o = Options{20'000, 500, 20, 10};
    if (std::strcmp(argv[i], "--candidates") == 0 && i + 1 < argc) {
      o.candidates_per_pass = std::stoul(argv[++i]);
    }
  }
  const auto dir =
      std::filesystem::temp_directory_path() / ("tenon-bench-audit-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto build_start = std::chrono::steady_clock::now();
  {
    auto log = log::EventLog::Open(dir, {});
    Build(*log, o);
  }
  std::printf("log: %" PRIu64 " events, %" PRIu64 " decisions, %" PRIu64
              " NodeClaims, %zu candidates per pass; built in %.1f s\n",
              o.events, o.events / kDecisionEvery, o.claims, o.candidates_per_pass,
              Millis(std::chrono::steady_clock::now() - build_start) / 1000);
  log::OpenOptions read;
  read.read_only = true;
  read.create_if_missing = false;
  auto log = log::EventLog::Open(dir, read);
  auto indexed = Measure(o.queries, o, [&](const auto& q) { return replay::Audit(*log, q); });
  const int scans = std::max(3, o.queries / 20);
  auto scanned = Measure(scans, o, [&](const auto& q) { return replay::AuditByScan(*log, q); });
  std::printf(
      "audit --node through the index: median %.3f ms, p99 %.3f ms, max %.3f ms over %d "
      "queries (%.1f decisions found, %.1f read per query)\n",
      indexed.median_ms, indexed.p99_ms, indexed.max_ms, o.queries,
      static_cast<double>(indexed.decisions_found) / o.queries,
      static_cast<double>(indexed.decisions_read) / o.queries);
  std::printf(
      "baseline, a full scan of the decisions: median %.1f ms over %d queries "
      "(%.1f decisions found per query)\n",
      scanned.median_ms, scans, static_cast<double>(scanned.decisions_found) / scans);
  std::printf("target: a node query under 10 ms: %s\n", indexed.p99_ms < 10 ? "pass" : "MISS");
  log.reset();
  std::filesystem::remove_all(dir);
  // The same queries (the first `scans`) must find the same decisions both ways: a smoke run
  // failing here means the index is wrong, not slow.
  for (int q = 0; q < scans; ++q) {
    if (indexed.ids[q] != scanned.ids[q] || indexed.ids[q].empty()) {
      std::printf("query %d: the index and the scan disagree (or found nothing)\n", q);
      return 1;
    }
  }
  return 0;
}
