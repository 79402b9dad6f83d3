// The invariant checker of the seeded fault tests. It is not the code under test: it reads the
// simulated world (what really runs) and the decisions the core announces, and judges them with
// its own arithmetic — its own budget rule, its own idea of which NodePool could host a pod and
// what an instance type offers — never the reducers' functions.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "adapters/sim/world.h"

namespace tenon::simtest {

class Checker {
 public:
  // `scenario` is what the user wrote (budgets, limits): the truth the controller must keep to,
  // whatever it is served.
  explicit Checker(const sim::Scenario& scenario);

  // After every step: the world now, and the decisions and commands the core gave in it.
  void AfterStep(const sim::World& world, const std::vector<Decision>& decisions,
                 const std::vector<Command>& commands);
  // At the end of the converging phase (faults off): nothing leaked, nothing left pending that
  // a NodePool could host. `settled_since`: pods created before it must be bound by now.
  void AtConvergence(const sim::World& world, Instant settled_since);

  const std::vector<std::string>& violations() const { return violations_; }

 private:
  void OnGracefulDisruption(const sim::World& world, const DisruptionDecision& d);
  void CheckLimits(const sim::World& world);
  void CheckOneInstancePerClaim(const sim::World& world);
  // No launch without an offering; no command for one object retried again and again without
  // backing off; NodeClaims made in proportion to the pods that needed them.
  void CheckCommands(const sim::World& world, const std::vector<Command>& commands);
  // The most nodes `pool`'s budgets let be disrupted at once with `nodes` in it.
  std::int64_t BudgetAllows(const NodePool& pool, std::int64_t nodes) const;
  // Some instance type of `pool` could host `pod` on a new node within the pool's limit.
  bool PoolCouldHost(const sim::World& world, const NodePool& pool, const Pod& pod) const;
  void Fail(const sim::World& world, const std::string& what);

  const sim::Scenario& scenario_;
  std::map<std::string, const InstanceType*> types_;
  // NodeClaims taken by a graceful disruption (emptiness, drift, consolidation) and not gone.
  std::map<std::string, std::string> disrupting_;              // NodeClaim -> NodePool.
  std::map<std::string, std::set<std::string>> instances_of_;  // NodeClaim -> every instance.
  std::set<std::string> over_limit_;  // NodePools already reported over their limit.
  struct Repeats {
    Instant last;
    std::int64_t streak = 0;  // Issued this many times in a row, each soon after the last.
  };
  std::map<std::string, Repeats> repeats_;  // "kind subject" -> its run of issues.
  std::set<std::string> pods_seen_;         // Every pod the world has held.
  std::int64_t claims_created_ = 0;
  std::int64_t disruptions_ = 0;  // Graceful disruptions carried out (each may launch).
  bool too_many_claims_ = false;
  std::vector<std::string> violations_;
};

// What the checker assumes a node of `type` can give pods at least: CPU less 250m for the
// kubelet and system reserves, memory less 10% for the hypervisor and 1.5 GiB for reserves and
// eviction thresholds, pods by the ENI formula. Deliberately rough and on the low side, so that
// "it would have fit" is never claimed wrongly.
Resources LowerBoundAllocatable(const InstanceType& type);

}  // namespace tenon::simtest
