// Soft expiration, beyond Karpenter (Settings::soft_expiration): a claim past its NodePool's
// expireAfter is disrupted gracefully and within budget, as drift is (drift.cc), instead of by
// Karpenter v1's forceful expiration (expiration.cc).
#include "reducers/disruption/decider.h"

namespace tenon::core::disruption {
namespace {

bool SoftExpirationEnabled(const Settings& settings) {
  return settings.soft_expiration;
}

std::string SoftExpirationBlocker(const State& state, Candidate& c) {
  const std::optional<Duration>& after = c.pool->expire_after;
  if (!after || state.now - c.claim->created < *after) return "-";
  c.why = "expired (created " + DurationText(state.now - c.claim->created) + " ago, expireAfter " +
          DurationText(*after) + ")";
  return "";
}

// The longest expired goes first: the claim's creation.
std::int64_t CreatedSince(const Candidate& c) {
  return c.claim->created.value;
}

void SelectSoftExpiration(const State& state, Simulation& sim, std::vector<Candidate>& cands,
                          Pass& pass, Lookups& looked, bool /*validating*/) {
  SelectEventual(state, sim, kSoftExpiration, CreatedSince, cands, pass, looked);
}

}  // namespace

const Decider kSoftExpiration{
    .enabled = SoftExpirationEnabled,
    .blocker = SoftExpirationBlocker,
    .plan = PlanReplacing,
    .select = SelectSoftExpiration,
    .deletion_cause = Cause::kExpired,
    .deletion_reason = EventualDeletionReason,
    .gone = "no longer expired or no longer exists",
};

}  // namespace tenon::core::disruption
