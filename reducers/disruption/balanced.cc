// Karpenter's Balanced consolidation policy (Karpenter 1.14): a move of underutilized nodes is
// scored, and goes ahead only when the score reaches 1/k, with k = 2.
//
//   score = (savings / the pool's cost) / (disruption / the pool's disruption cost)
//
// Savings are what the nodes cost an hour, less the replacement's cheapest offering when there
// is one. Disruption is 1 per node plus each moving pod's eviction cost taken as at least 0
// (pkg/utils/disruption's EvictionCost: priority and pod-deletion-cost). The pool's totals are
// over its nodes in the pass: the cost of those consolidation could look at, the disruption of
// every node of the pool. Empty nodes are Emptiness's and are never scored, nor are drift and
// expiration. All in integers: prices in micro-dollars an hour, costs in units of 2^-27, and the
// comparison k * savings * total disruption >= total cost * disruption made in 128 bits, so the
// verdict is exact (a score of exactly 0.5 passes, as in Karpenter's tests).
#include <algorithm>
#include <map>

#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

using Wide = __int128;

// floor(num / den) with `decimals` decimals, for num >= 0 and den > 0.
std::string Fixed(Wide num, Wide den, int decimals) {
  Wide scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  const Wide value = num * scale / den;
  std::string frac = std::to_string(static_cast<std::int64_t>(value % scale));
  frac.insert(0, static_cast<std::size_t>(decimals) - frac.size(), '0');
  return std::to_string(static_cast<std::int64_t>(value / scale)) + "." + frac;
}

}  // namespace

BalancedScore ScoreMove(std::int64_t savings, std::int64_t disruption,
                        const BalancedTotals& totals) {
  BalancedScore s;
  s.savings = savings;
  s.disruption = disruption;
  s.totals = totals;
  if (totals.cost <= 0 || totals.disruption <= 0 || savings <= 0) return s;  // Score 0.
  if (disruption <= 0) {
    s.approved = true;  // Savings for no disruption: an unbounded score.
    return s;
  }
  s.approved = Wide{kBalancedK} * savings * totals.disruption >= Wide{totals.cost} * disruption;
  return s;
}

std::string BalancedScore::Text() const {
  const bool scored = totals.cost > 0 && totals.disruption > 0 && savings > 0;
  std::string score = !scored           ? "0.00"
                      : disruption <= 0 ? "unbounded"
                                        : Fixed(Wide{savings} * totals.disruption,
                                                Wide{totals.cost} * disruption, 2);
  std::string text = "score " + score + (approved ? " >= " : " < ") + "threshold " +
                     Fixed(1, kBalancedK, 2) + " (k: " + std::to_string(kBalancedK);
  if (totals.cost > 0) {
    text += ", savings " + Fixed(std::max<std::int64_t>(savings, 0) * Wide{100}, totals.cost, 1) +
            "% of the NodePool's cost";
  }
  if (totals.disruption > 0) {
    text += ", disruption " +
            Fixed(std::max<std::int64_t>(disruption, 0) * Wide{100}, totals.disruption, 1) +
            "% of its disruption cost";
  }
  return text + ")";
}

std::int64_t MoveDisruption(const Candidate& c) {
  return kCostUnit + c.bound->positive_eviction_cost;
}

std::optional<BalancedScore> DeleteWouldFail(const Candidate& c) {
  if (c.balanced == nullptr || c.balanced->cost <= 0) return std::nullopt;
  BalancedScore score = ScoreMove(c.claim->price.value, MoveDisruption(c), *c.balanced);
  if (score.approved) return std::nullopt;
  return score;
}

std::string ScoreGroup(const std::vector<const Candidate*>& group, MicroUsdPerHour savings,
                       std::string& scores) {
  struct PoolPart {
    const BalancedTotals* totals = nullptr;
    std::int64_t price = 0;
    std::int64_t disruption = 0;
  };
  std::map<std::string, PoolPart> pools;
  std::int64_t source = 0;
  for (const Candidate* c : group) {
    source += c->claim->price.value;
    if (c->balanced == nullptr) continue;
    PoolPart& part = pools[c->claim->nodepool];
    part.totals = c->balanced;
    part.price += c->claim->price.value;
    part.disruption += MoveDisruption(*c);
  }
  std::string refused;
  for (const auto& [name, part] : pools) {
    // Across pools, each pool is credited with its share of the savings by what its nodes cost.
    std::int64_t share = savings.value;
    if (group.size() > 1 && source > 0 && part.price != source) {
      share = static_cast<std::int64_t>(Wide{savings.value} * part.price / source);
    }
    const BalancedScore score = ScoreMove(share, part.disruption, *part.totals);
    const std::string text = "NodePool " + name + " (Balanced): " + score.Text();
    if (!score.approved && refused.empty()) refused = text;
    scores += (scores.empty() ? "" : "; ") + text;
  }
  return refused;
}

}  // namespace tenon::core::disruption
