// tenon cost: node cost over a window split over the pods by their requests, idle apart.
//
// For every stretch of cluster time between two Ticks, each launched NodeClaim costs its price
// for that long. Its pods share that cost by requests against what the node can hold: a pod's
// share is the mean of its CPU and memory fractions of the NodeClaim's allocatable, the
// shares capped together at the whole node; what no pod requests is idle.
#include <algorithm>
#include <map>

#include "log/codec.h"
#include "replay/replay.h"

namespace tenon::replay {
namespace {

double Fraction(std::int64_t part, std::int64_t whole) {
  return whole <= 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

std::string GroupOf(const Pod& pod, const CostQuery& query) {
  if (query.label.empty()) return pod.ns;
  auto it = pod.labels->find(query.label);
  return it == pod.labels->end() ? "(no " + query.label + ")" : it->second;
}

// Adds the cost of [from, to) with the cluster as `state` has it.
void Attribute(const State& state, Instant from, Instant to, const CostQuery& query,
               CostReport& out) {
  if (to <= from) return;
  const double hours = static_cast<double>(to.value - from.value) / 3.6e12;
  std::map<std::string, std::vector<const Pod*>> pods_on;
  for (const auto& [key, pod] : state.cluster.pods) {
    bool done = pod.phase == PodPhase::kSucceeded || pod.phase == PodPhase::kFailed;
    if (!pod.node_name.empty() && !done) pods_on[pod.node_name].push_back(&pod);
  }
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (claim.launched.value == 0) continue;
    const double cost = static_cast<double>(claim.price.value) / 1e6 * hours;
    out.total_usd += cost;
    out.node_hours += hours;
    std::map<std::string, double> shares;
    double used = 0;
    if (!claim.node_name.empty()) {
      for (const Pod* pod : pods_on[claim.node_name]) {
        const double share =
            (Fraction(pod->requests.cpu.value, claim.allocatable.cpu.value) +
             Fraction(pod->requests.memory.value, claim.allocatable.memory.value)) /
            2;
        shares[GroupOf(*pod, query)] += share;
        used += share;
      }
    }
    // Requests beyond allocatable (not expected) would count more than the node costs.
    const double scale = used > 1 ? 1 / used : 1;
    for (const auto& [group, share] : shares) out.usd_by_group[group] += cost * share * scale;
    out.idle_usd += cost * (1 - std::min(used, 1.0));
  }
}

}  // namespace

CostReport Cost(const log::EventLog& log, const CostQuery& query) {
  CostReport out;
  State state;
  Instant last;
  bool started = false;
  log.Scan(Seq{1}, Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    const auto* event = std::get_if<Event>(&entry);
    if (event == nullptr) return true;
    if (const auto* tick = std::get_if<Tick>(event); tick != nullptr && started) {
      const Instant from = std::max(last, query.since.value_or(last));
      const Instant to = query.until ? std::min(tick->now, *query.until) : tick->now;
      Attribute(state, from, to, query, out);
      if (query.until && tick->now >= *query.until) return false;
    }
    Step(state, Seq{record.seq}, *event);
    started = started || state.now.value != 0;
    last = state.now;
    return true;
  });
  return out;
}

std::string CostText(const CostReport& report, const CostQuery& query) {
  std::vector<std::pair<std::string, double>> rows(report.usd_by_group.begin(),
                                                   report.usd_by_group.end());
  // Largest first; ties by name.
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  char line[256];
  std::string text;
  std::snprintf(line, sizeof line, "%-32s %14s %7s\n",
                query.label.empty() ? "namespace" : ("label " + query.label).c_str(), "cost (USD)",
                "share");
  text += line;
  auto row = [&](const std::string& name, double usd) {
    std::snprintf(line, sizeof line, "%-32s %14.6f %6.1f%%\n", name.c_str(), usd,
                  report.total_usd > 0 ? 100 * usd / report.total_usd : 0.0);
    text += line;
  };
  for (const auto& [group, usd] : rows) row(group, usd);
  row("(idle)", report.idle_usd);
  row("total", report.total_usd);
  std::snprintf(line, sizeof line, "node-hours %.3f\n", report.node_hours);
  return text + line;
}

}  // namespace tenon::replay
