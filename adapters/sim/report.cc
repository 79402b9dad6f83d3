#include "adapters/sim/report.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "reducers/disruption/methods.h"

namespace tenon::sim {
namespace {

constexpr std::size_t kSampleRowsMax = 48;  // Cost-over-time rows printed at most.
constexpr std::int64_t kNanosPerHour = 3600 * kSecond.value;

}  // namespace

namespace {

std::string Dollars(std::int64_t micro_usd) {
  return DollarsText(MicroUsdPerHour{micro_usd});
}
std::string Clock(Instant t) {
  return ClockText(t);
}

std::string Seconds(Duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fs", static_cast<double>(d.value) / 1e9);
  return text;
}

void Line(std::string& out, const char* format, auto... args) {
  char text[256];
  std::snprintf(text, sizeof text, format, args...);
  out += text;
}

}  // namespace

Duration Report::PendingPercentile(int p) const {
  if (pending.empty()) return Duration{0};
  std::vector<Duration> sorted = pending;
  std::sort(sorted.begin(), sorted.end());
  // Nearest rank: the smallest value with at least p% of the samples at or below it.
  std::size_t rank = (static_cast<std::size_t>(p) * sorted.size() + 99) / 100;
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

ReportBuilder::ReportBuilder(std::string name, Instant start, Duration sample_every)
    : sample_every_(sample_every), now_(start), last_cost_at_(start) {
  report_.name = std::move(name);
  report_.start = start;
  report_.end = start;
}

void ReportBuilder::OnFolded(Seq, const Event& event, const Output& output,
                             std::chrono::nanoseconds) {
  Observe(event);
  Observe(output);
}

void ReportBuilder::Observe(const Event& event) {
  if (const auto* tick = std::get_if<Tick>(&event)) {
    // A world's changes come before the Tick that carries their time: pods bound since the
    // last tick were bound now.
    now_ = tick->now;
    for (Instant created : bound_since_tick_) {
      report_.pending.push_back(std::max(Duration{0}, now_ - created));
    }
    bound_since_tick_.clear();
  }
  if (const auto* up = std::get_if<PodUpserted>(&event)) {
    const Pod& pod = up->pod;
    const std::string key = PodKey(pod.ns, pod.name);
    if (pod.owner_kind != "DaemonSet" && pod.node_name.empty()) {
      waiting_.emplace(key, pod.created);
    } else if (auto it = waiting_.find(key); it != waiting_.end()) {
      bound_since_tick_.push_back(it->second);
      waiting_.erase(it);
    }
  }
  if (const auto* del = std::get_if<PodDeleted>(&event)) waiting_.erase(PodKey(del->ns, del->name));
  if (const auto* launched = std::get_if<FleetLaunched>(&event)) {
    report_.capacity_errors += launched->errors.size();
  }
  if (const auto* failed = std::get_if<FleetFailed>(&event)) {
    report_.capacity_errors += failed->errors.size();
  }
}

void ReportBuilder::Observe(const Output& output) {
  for (const auto& c : output.commands) {
    if (const auto* create = std::get_if<CreateNodeClaim>(&c.body)) {
      claim_pool_[create->claim.name] = create->claim.nodepool;
    }
  }
  for (const auto& d : output.decisions) OnDecision(d);
}

void ReportBuilder::OnDecision(const Decision& decision) {
  if (const auto* p = std::get_if<ProvisioningDecision>(&decision.body)) {
    ++report_.provisioning_decisions;
    for (const auto& pod : p->pods) report_.pods_unschedulable_outcomes += pod.target.empty();
  } else if (const auto* l = std::get_if<LifecycleDecision>(&decision.body)) {
    if (l->transition == Transition::kLaunched) ++report_.nodes_launched;
    if (l->transition == Transition::kLaunchFailed) ++report_.launch_failures;
    if (l->transition == Transition::kDeleting) {
      // Each removal by its kind; a deletion recorded before kinds were kept counts as such.
      ++report_.removed[l->cause == Cause::kNone ? "Unknown" : CauseName(l->cause)];
    }
  } else {
    OnDisruption(std::get<DisruptionDecision>(decision.body));
  }
}

void ReportBuilder::OnDisruption(const DisruptionDecision& d) {
  const DisruptionMethodInfo& method = MethodInfo(d.method);
  ++report_.decisions[std::string(Name(d.method)) + " " + Name(d.phase)];
  for (const auto& b : d.budgets) {
    BudgetUse& use = report_.budgets[b.nodepool];
    use.allowed_min = use.allowed_min < 0 ? b.allowed : std::min(use.allowed_min, b.allowed);
    use.allowed_max = std::max(use.allowed_max, b.allowed);
  }
  for (const auto& c : d.candidates) {
    if (c.cause == Cause::kDisruptionBudget) {
      ++report_.budgets[c.nodepool].blocked_by_budget;
    }
  }
  if (method.graceful() &&
      (d.phase == DisruptionPhase::kExecuted || d.phase == DisruptionPhase::kReplacing)) {
    for (const auto& name : d.nodeclaims) {
      auto pool = claim_pool_.find(name);
      if (pool != claim_pool_.end()) ++report_.budgets[pool->second].disrupted;
    }
  }
}

void ReportBuilder::Sample(Instant now, const WorldSummary& world) {
  // Cost is a step function of time: what ran since the last sample cost the last price.
  report_.cost_micro_usd += static_cast<std::int64_t>(static_cast<__int128>(last_cost_.value) *
                                                      (now - last_cost_at_).value / kNanosPerHour);
  report_.node_hours += static_cast<double>(last_instances_) *
                        static_cast<double>((now - last_cost_at_).value) / kNanosPerHour;
  last_cost_at_ = now;
  last_cost_ = world.cost;
  last_instances_ = world.instances;
  report_.cost_peak = std::max(report_.cost_peak, world.cost);
  report_.end = now;
  report_.pods_still_pending = world.pods_pending;
  report_.launch_calls = world.launch_calls;
  report_.last = ReportSample{now, world.cost, world.nodes, world.pods_bound, world.pods_pending};
  if (report_.samples.empty() || now - last_sample_ >= sample_every_) {
    report_.samples.push_back(report_.last);
    last_sample_ = now;
  }
}

std::string FormatReport(const Report& r) {
  std::string out = "report: " + r.name + ", " + Clock(r.start) + " to " + Clock(r.end) + "\n";
  out += "  cost over time:\n";
  const std::size_t stride =
      std::max<std::size_t>(1, (r.samples.size() + kSampleRowsMax - 1) / kSampleRowsMax);
  auto row = [&](const ReportSample& s) {
    Line(out, "    %s  %s/h  nodes %4zu  pods bound %5zu pending %5zu\n", Clock(s.at).c_str(),
         Dollars(s.cost.value).c_str(), s.nodes, s.pods_bound, s.pods_pending);
  };
  for (std::size_t i = 0; i < r.samples.size(); i += stride) row(r.samples[i]);
  if (!r.samples.empty() && r.last.at > r.samples.back().at) row(r.last);
  Line(out, "  cost: %s over the run, peak %s/h; %.3f node-hours\n",
       Dollars(r.cost_micro_usd).c_str(), Dollars(r.cost_peak.value).c_str(), r.node_hours);
  Line(out,
       "  pod pending time (%zu pods bound): p50 %s  p90 %s  p99 %s  max %s; %zu still pending\n",
       r.pending.size(), Seconds(r.PendingPercentile(50)).c_str(),
       Seconds(r.PendingPercentile(90)).c_str(), Seconds(r.PendingPercentile(99)).c_str(),
       Seconds(r.PendingPercentile(100)).c_str(), r.pods_still_pending);
  Line(out,
       "  nodes launched: %zu (%zu CreateFleet calls, %zu launches failed, %zu offerings out of "
       "capacity)\n",
       r.nodes_launched, r.launch_calls, r.launch_failures, r.capacity_errors);
  std::size_t removed = 0;
  for (const auto& [reason, n] : r.removed) removed += n;
  Line(out, "  nodes removed: %zu\n", removed);
  for (const auto& [reason, n] : r.removed) Line(out, "    %-32s %zu\n", reason.c_str(), n);
  Line(out, "  decisions: %zu provisioning (%zu pod outcomes unschedulable)\n",
       r.provisioning_decisions, r.pods_unschedulable_outcomes);
  for (const auto& [kind, n] : r.decisions) Line(out, "    %-32s %zu\n", kind.c_str(), n);
  out += "  budgets:\n";
  for (const auto& [pool, use] : r.budgets) {
    Line(out,
         "    %-16s allowed %" PRId64 "..%" PRId64
         ", nodes disrupted %zu, candidates over budget %zu\n",
         pool.c_str(), use.allowed_min, use.allowed_max, use.disrupted, use.blocked_by_budget);
  }
  return out;
}

std::string FormatComparison(const Report& a, const Report& b) {
  std::string out = "compare: A = " + a.name + ", B = " + b.name + "\n";
  Line(out, "  %-34s %14s %14s %14s\n", "", "A", "B", "B - A");
  auto money = [&](const char* what, std::int64_t x, std::int64_t y) {
    Line(out, "  %-34s %14s %14s %14s\n", what, Dollars(x).c_str(), Dollars(y).c_str(),
         Dollars(y - x).c_str());
  };
  auto count = [&](const std::string& what, std::int64_t x, std::int64_t y) {
    Line(out, "  %-34s %14" PRId64 " %14" PRId64 " %+14" PRId64 "\n", what.c_str(), x, y, y - x);
  };
  auto secs = [&](const char* what, Duration x, Duration y) {
    Line(out, "  %-34s %14s %14s %14s\n", what, Seconds(x).c_str(), Seconds(y).c_str(),
         Seconds(y - x).c_str());
  };
  money("cost over the run", a.cost_micro_usd, b.cost_micro_usd);
  money("peak cost per hour", a.cost_peak.value, b.cost_peak.value);
  money("cost per hour at the end", a.last.cost.value, b.last.cost.value);
  Line(out, "  %-34s %14.3f %14.3f %+14.3f\n", "node-hours", a.node_hours, b.node_hours,
       b.node_hours - a.node_hours);
  secs("pending p50", a.PendingPercentile(50), b.PendingPercentile(50));
  secs("pending p90", a.PendingPercentile(90), b.PendingPercentile(90));
  secs("pending p99", a.PendingPercentile(99), b.PendingPercentile(99));
  auto n = [](std::size_t v) { return static_cast<std::int64_t>(v); };
  count("pods still pending", n(a.pods_still_pending), n(b.pods_still_pending));
  count("nodes launched", n(a.nodes_launched), n(b.nodes_launched));
  count("offerings out of capacity", n(a.capacity_errors), n(b.capacity_errors));
  count("provisioning decisions", n(a.provisioning_decisions), n(b.provisioning_decisions));
  std::map<std::string, std::pair<std::size_t, std::size_t>> removed;
  for (const auto& [k, v] : a.removed) removed[k].first = v;
  for (const auto& [k, v] : b.removed) removed[k].second = v;
  for (const auto& [k, v] : removed) count("removed: " + k, n(v.first), n(v.second));
  std::map<std::string, std::pair<std::size_t, std::size_t>> decisions;
  for (const auto& [k, v] : a.decisions) decisions[k].first = v;
  for (const auto& [k, v] : b.decisions) decisions[k].second = v;
  for (const auto& [k, v] : decisions) count(k, n(v.first), n(v.second));
  return out;
}

}  // namespace tenon::sim
