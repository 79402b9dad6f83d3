// What a simulation run amounts to, for `tenon simulate`'s closing report and `--compare`:
// cost over time, how long pods waited, nodes launched and removed (by reason), decisions
// taken and blocked, budget usage.
//
// Computed outside the core: a runtime Observer reads the events folded and the decisions the
// core made, and the world is sampled once per tick for what it costs. Nothing here feeds back
// into a decision.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "adapters/runtime/runtime.h"
#include "adapters/sim/world.h"

namespace tenon::sim {

struct ReportSample {
  Instant at;
  MicroUsdPerHour cost{0};
  std::size_t nodes = 0;
  std::size_t pods_bound = 0;
  std::size_t pods_pending = 0;
};

// Per NodePool: how its disruption budgets were used.
struct BudgetUse {
  std::int64_t allowed_min = -1;  // The least any recorded decision found allowed (-1: none).
  std::int64_t allowed_max = -1;
  std::size_t disrupted = 0;          // Nodes taken by graceful disruptions.
  std::size_t blocked_by_budget = 0;  // Candidates recorded as over budget.
};

struct Report {
  std::string name;
  Instant start;
  Instant end;
  std::vector<ReportSample> samples;  // One per sample interval.
  ReportSample last;                  // The last tick.
  std::int64_t cost_micro_usd = 0;    // Integrated over the run.
  MicroUsdPerHour cost_peak{0};
  std::vector<Duration> pending;  // Per pod bound during the run: creation to binding.
  std::size_t pods_still_pending = 0;
  std::size_t nodes_launched = 0;
  std::size_t launch_failures = 0;
  std::size_t capacity_errors = 0;               // Offerings CreateFleet answered out of capacity.
  std::map<std::string, std::size_t> removed;    // Reason -> NodeClaims that began deleting.
  std::map<std::string, std::size_t> decisions;  // "Method phase" -> count.
  std::size_t provisioning_decisions = 0;
  std::size_t pods_unschedulable_outcomes = 0;  // Pod outcomes with no target.
  std::map<std::string, BudgetUse> budgets;
  std::size_t launch_calls = 0;
  double node_hours = 0;  // Instances running, integrated over the run.

  // The p-th percentile (0-100) of `pending`, nearest rank; 0 without samples.
  Duration PendingPercentile(int p) const;
};

class ReportBuilder : public runtime::Observer {
 public:
  ReportBuilder(std::string name, Instant start, Duration sample_every);

  void OnFolded(Seq seq, const Event& event, const Output& output,
                std::chrono::nanoseconds took) override;
  // Once per tick, after the tick's events were folded.
  void Sample(Instant now, const WorldSummary& world);
  // OnFolded's two halves, for a report built from a log read back (whatif/whatif.h), where an
  // event and the output recorded for it are separate records.
  void Observe(const Event& event);
  void Observe(const Output& output);

  const Report& report() const { return report_; }

 private:
  void OnDecision(const Decision& decision);
  void OnDisruption(const DisruptionDecision& d);

  Report report_;
  Duration sample_every_;
  Instant now_;
  Instant last_sample_;
  Instant last_cost_at_;
  MicroUsdPerHour last_cost_{0};
  std::size_t last_instances_ = 0;
  std::map<std::string, Instant> waiting_;  // Pending pods (ns/name) -> when they were created.
  std::vector<Instant> bound_since_tick_;   // Creation times of pods bound since the last Tick.
  std::map<std::string, std::string> claim_pool_;  // NodeClaim -> its NodePool.
};

// The report as text (cost every `rows` samples at most, then the figures).
std::string FormatReport(const Report& report);
// Two reports side by side, with the difference of each figure.
std::string FormatComparison(const Report& a, const Report& b);

}  // namespace tenon::sim
