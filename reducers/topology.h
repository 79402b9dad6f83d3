// Private to reducers/: topology groups for one scheduling pass.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "reducers/scheduling.h"

namespace tenon::core {

class Topology {
 public:
  Topology(const State& state, const std::vector<PoolTemplate>& templates)
      : state_(&state), templates_(&templates) {}

  // The group for a constraint, created (domains registered, bound pods counted) on first use.
  std::size_t ForSpread(const Pod& pod, const TopologySpreadConstraint& constraint);
  std::size_t ForAffinity(const Pod& pod, const PodAffinityTerm& term, bool anti);
  // Required anti-affinity of pods already bound: the domains they hold are closed to the
  // pods they select.
  void AddExistingAntiAffinity();

  // Checks the pod against a bin. Existing bins pass their labels; planned claims pass null
  // and get the chosen domains added to `claim_reqs`. Returns why not, or empty.
  // `permanent` (optional) is set when the refusal will hold for the rest of the pass.
  std::string Check(const PodView& view, const std::string& bin_name, const Labels* labels,
                    Requirements& claim_reqs, bool* permanent = nullptr) const;
  // Counts a placed pod in every group that selects it.
  void Record(const PodView& view, const std::string& bin_name, const Labels* labels,
              const PoolTemplate* t, const Requirements* claim_reqs);

  const std::vector<TopologyGroup>& groups() const { return groups_; }

 private:
  std::size_t Intern(TopologyGroup g);
  void Register(TopologyGroup& g);
  void CountExisting(TopologyGroup& g);
  bool Selects(const TopologyGroup& g, const Pod& pod) const;
  bool NodeCounts(const TopologyGroup& g, const Labels& labels,
                  const std::vector<Taint>& taints) const;
  bool ClaimCounts(const TopologyGroup& g, const PoolTemplate& t, const Requirements& reqs) const;
  std::int32_t Count(const TopologyGroup& g, const std::string& domain) const;
  std::vector<std::string> PodDomains(const TopologyGroup& g, const Requirements& pod_reqs) const;
  std::string Narrow(const PodView& view, const TopologyGroup& g, bool owned,
                     std::vector<std::string>& node_domains) const;

  const State* state_;
  const std::vector<PoolTemplate>* templates_;
  std::vector<TopologyGroup> groups_;
  std::map<std::string, std::size_t> index_;
};

}  // namespace tenon::core
