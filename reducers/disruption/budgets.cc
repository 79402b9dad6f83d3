// NodePool disruption budgets, as Karpenter reads them: for a disruption reason, the most
// restrictive active budget of the pool wins, less the pool's nodes already disrupting.
#include <algorithm>
#include <optional>

#include "reducers/cron.h"
#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

// A budget's `nodes`: a count, or a percent of `total` rounded up. Unreadable: 0 (fail safe).
std::int64_t BudgetNodes(const std::string& nodes, std::int64_t total) {
  if (nodes.empty()) return 0;
  bool percent = nodes.back() == '%';
  std::string digits = percent ? nodes.substr(0, nodes.size() - 1) : nodes;
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return 0;
  if (digits.size() > 9) return 0;
  std::int64_t n = std::stoll(digits);
  return percent ? (total * n + 99) / 100 : n;
}

// Karpenter's rule: the most restrictive active budget for `reason` wins, minus the pool's
// nodes already deleting or not ready.
Allowance Allowed(const State& state, const NodePool& pool, const std::string& reason,
                  Lookups& looked) {
  const auto counted = looked.pool_nodes.find(pool.name);
  const Lookups::PoolNodes counts =
      counted == looked.pool_nodes.end() ? Lookups::PoolNodes{} : counted->second;
  const std::int64_t total = counts.total;
  const std::int64_t disrupting = counts.disrupting;
  std::optional<std::int64_t> least;
  std::string why = "no budget is active";
  for (std::size_t i = 0; i < pool.budgets.size(); ++i) {
    const DisruptionBudget& b = pool.budgets[i];
    if (!b.reasons.empty() &&
        std::find(b.reasons.begin(), b.reasons.end(), reason) == b.reasons.end()) {
      continue;
    }
    std::string window;
    if (!b.schedule.empty()) {
      try {
        Duration horizon = std::min(b.duration, kBudgetScheduleHorizonMax);
        auto fired = Cron::Parse(b.schedule).LastFiring(state.now, horizon);
        if (!fired || *fired + b.duration <= state.now) continue;
        window = ", schedule '" + b.schedule + "' until " + ClockUtc(*fired + b.duration);
      } catch (const CronError& e) {
        window = ", unreadable schedule treated as active: " + std::string(e.what());
      }
    }
    std::int64_t nodes = BudgetNodes(b.nodes, total);
    if (!least || nodes < *least) {
      least = nodes;
      why = "budget " + std::to_string(i) + " (nodes " + b.nodes + window + ")";
    }
  }
  Allowance a;
  a.allowed = least ? std::max<std::int64_t>(0, *least - disrupting) : total;
  a.detail = why + ", " + std::to_string(disrupting) + " of " + std::to_string(total) +
             " nodes already disrupting";
  return a;
}

}  // namespace

const std::string& Budgets::Over(const std::string& pool) {
  Entry& e = Of(pool);
  if (e.over.empty()) {
    e.over = "over budget: " + reason_ + " allows " + std::to_string(e.allowed.allowed) + " now (" +
             e.allowed.detail + ")";
  }
  return e.over;
}

Budgets::Entry& Budgets::Of(const std::string& pool) {
  auto [it, fresh] = pools_.try_emplace(pool);
  if (fresh) {
    auto [known, computed] = looked_.allowances.try_emplace({pool, reason_});
    if (computed) {
      known->second = Allowed(state_, state_.cluster.nodepools.at(pool), reason_, looked_);
    }
    it->second.allowed = known->second;
    it->second.left = it->second.allowed.allowed;
    pass_.budgets.push_back({pool, reason_, it->second.allowed.allowed, it->second.allowed.detail});
  }
  return it->second;
}

}  // namespace tenon::core::disruption
