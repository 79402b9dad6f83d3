// Private to reducers/: topology groups for one scheduling pass.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "reducers/scheduling.h"

namespace tenon::core {

class Topology {
 public:
  // Pods bound to `excluded_nodes` are not counted (a disruption simulation moves them).
  Topology(const State& state, const std::vector<PoolTemplate>& templates,
           const std::set<std::string>& excluded_nodes)
      : state_(&state), templates_(&templates), excluded_nodes_(&excluded_nodes) {}

  // The group for a constraint, created (domains registered, bound pods counted) on first use.
  std::size_t ForSpread(const Pod& pod, const TopologySpreadConstraint& constraint);
  std::size_t ForAffinity(const Pod& pod, const PodAffinityTerm& term, bool anti);
  // Required anti-affinity of pods already bound: the domains they hold are closed to the
  // pods they select.
  void AddExistingAntiAffinity();

  // The domains a check chose for a planned claim: group index and the values left.
  using Choices = std::vector<std::pair<std::size_t, std::vector<std::string_view>>>;

  // Checks the pod against a bin. Existing bins pass their labels; planned claims pass their
  // requirements instead and get the domains they must narrow to in `chosen`. On a refusal,
  // `permanent` (optional) says whether it holds for the whole pass and `why` (optional) why.
  // Verdicts per (group, domain) for one pod while nothing is placed: a scan over existing
  // nodes asks about the same few zones again and again.
  struct Memo {
    // (group, owned by the pod, domain) -> allowed.
    std::vector<std::tuple<std::size_t, bool, std::string_view, bool>> verdicts;
    std::vector<std::string_view> refused_zones;  // Zones some zone group refused.
  };
  bool Check(const PodView& view, std::string_view bin_name, const NodeLabels* labels,
             const Requirements* claim, Choices* chosen, bool* permanent = nullptr,
             std::string* why = nullptr, Memo* memo = nullptr) const;
  // For an existing node that Check refused: whether the refusal holds for the whole pass and
  // for every trial of it, because it comes from a hostname spread or anti-affinity count (those
  // only grow) that the current trial has not changed.
  bool RefusalOutlivesTrial(const PodView& view, std::string_view bin_name) const;
  // Whether applying a check's choices would narrow `claim`, and applying them.
  bool Narrows(const Choices& chosen, const Requirements& claim) const;
  void Apply(const Choices& chosen, Requirements& claim) const;
  // Counts a placed pod in every group that selects it.
  void Record(const PodView& view, std::string_view bin_name, const NodeLabels* labels,
              const PoolTemplate* t, const Requirements* claim_reqs);

  // The groups selecting `pod`, appended to `cache` for the groups made since it was last
  // brought up to date (`scanned` is how many groups it has seen).
  void Selecting(const Pod& pod, std::vector<std::size_t>& cache, std::size_t& scanned) const;
  // Changes whenever a topology refusal of this pod might no longer hold.
  std::uint64_t Epoch(const PodView& view) const;

  const std::vector<TopologyGroup>& groups() const { return groups_; }

  // Trials (consolidation's what-if): from BeginTrial, pods can be taken off their nodes and
  // every count that changes is saved first; Undo puts the counts back as they were. Groups
  // made during a trial stay, counted as if no pod had been taken off.
  void BeginTrial();
  void Unbind(const Pod& pod, const Node& node);
  void Undo();

 private:
  void Touch(std::size_t index);
  std::int32_t Add(std::size_t index, bool owners, std::string_view domain, std::int32_t delta);
  void Uncount(std::size_t index, const Pod& pod, const Node& node);
  std::size_t Intern(TopologyGroup g);
  void Register(TopologyGroup& g);
  void CountExisting(TopologyGroup& g);
  bool Selects(const TopologyGroup& g, const Pod& pod) const;
  bool NodeCounts(const TopologyGroup& g, const NodeLabels& labels,
                  const std::vector<Taint>& taints) const;
  bool ClaimCounts(const TopologyGroup& g, const PoolTemplate& t, const Requirements& reqs) const;
  std::int32_t Count(const TopologyGroup& g, std::string_view domain) const;
  bool Narrow(const PodView& view, const TopologyGroup& g, bool owned,
              std::vector<std::string_view>& node_domains, std::string* why) const;

  const State* state_;
  const std::vector<PoolTemplate>* templates_;
  const std::set<std::string>* excluded_nodes_;
  std::vector<TopologyGroup> groups_;
  std::map<std::string, std::size_t> index_;
  struct Saved {
    std::size_t index = 0;
    std::uint64_t version = 0;
    std::uint64_t owners_version = 0;
  };
  struct Change {  // A domain's count before a trial changed it (0: absent).
    std::size_t index = 0;
    bool owners = false;
    std::string domain;
    std::int32_t before = 0;
  };
  bool trial_ = false;
  std::vector<Saved> saved_;
  std::vector<Change> changes_;
  std::vector<bool> touched_;                                // [group]
  std::vector<std::pair<const Pod*, const Node*>> unbound_;  // Taken off in this trial.
  // Active pods bound to a known node (not excluded), for counting new groups.
  std::vector<std::pair<const Pod*, const Node*>> bound_;
  bool bound_ready_ = false;
  // (label key, value) -> indexes into bound_ of the pods carrying it.
  std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> bound_by_label_;
};

}  // namespace tenon::core
