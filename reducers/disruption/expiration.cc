// Expiration, as Karpenter v1's: forceful and not budgeted. A claim past its NodePool's
// expireAfter starts terminating at once (the drain still honours PDBs until the
// terminationGracePeriod). With Settings::soft_expiration it is a graceful method of the
// disruption pass instead (soft_expiration.cc).
#include "reducers/disruption/decider.h"

namespace tenon::core {

bool Expired(const State& state, const NodeClaim& claim, const NodePool*& pool) {
  if (claim.deleting || claim.phase == ClaimPhase::kPending) return false;
  if (PoolOf(state, claim, pool) == nullptr) return false;
  return pool->expire_after && state.now - claim.created >= *pool->expire_after;
}

namespace disruption {

void Expire(State& state, Seq seq, const std::vector<const NodeClaim*>& expired, Output& out) {
  if (state.settings.soft_expiration) return;
  const NodePool* pool = nullptr;
  for (const NodeClaim* c : expired) {
    const NodeClaim& claim = *c;
    const std::string& name = claim.name;
    if (claim.deleting || !Expired(state, claim, pool)) continue;
    const Duration after = *pool->expire_after;
    std::string reason = "expired: created " + DurationText(state.now - claim.created) +
                         " ago, expireAfter " + DurationText(after);
    Decide(state, seq,
           DisruptionDecision{DisruptionMethod::kExpiration,
                              DisruptionPhase::kExecuted,
                              {name},
                              {{name, claim.nodepool, reason, Cause::kNone, ""}},
                              {},
                              "forceful and not budgeted (v1)",
                              {}},
           out);
    BeginDeletion(state, seq, claim.name, reason, Cause::kExpired, true, out);
  }
}

}  // namespace disruption
}  // namespace tenon::core
