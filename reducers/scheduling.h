// Private to reducers/: the scheduler's working structures. One pass builds them from the
// state, places pods, and throws them away; nothing here is part of State.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "reducers/internal.h"

namespace tenon::core {

// Limits of one pass, each a named constant.
inline constexpr std::size_t kPreferenceRelaxationsMax = 64;  // Per pod.
inline constexpr std::size_t kTopologyGroupsMax = 10'000;     // Distinct constraints per pass.
inline constexpr std::size_t kQueuePassesMax = 1'000;         // Retries of unplaced pods.

// A bitset over one pool's instance types.
class TypeMask {
 public:
  TypeMask() = default;
  explicit TypeMask(std::size_t size, bool all = false);
  void Set(std::size_t i) { words_[i / 64] |= std::uint64_t{1} << (i % 64); }
  void Clear(std::size_t i) { words_[i / 64] &= ~(std::uint64_t{1} << (i % 64)); }
  bool Test(std::size_t i) const { return (words_[i / 64] >> (i % 64)) & 1; }
  bool Any() const;
  std::size_t Count() const;
  TypeMask& operator&=(const TypeMask& other);
  TypeMask& AndNot(const TypeMask& other);
  bool Intersects(const TypeMask& other) const;
  void ClearAll();
  template <class F>
  void ForEach(F&& f) const {
    for (std::size_t w = 0; w < words_.size(); ++w) {
      for (std::uint64_t bits = words_[w]; bits != 0; bits &= bits - 1) {
        f(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
      }
    }
  }
  friend bool operator==(const TypeMask&, const TypeMask&) = default;

 private:
  std::vector<std::uint64_t> words_;
};

// One instance type as a given NodePool would launch it.
struct TypeRow {
  const CatalogEntry* entry = nullptr;
  Resources allocatable;  // NodeClass kubelet settings applied, DaemonSet overhead removed.
  Resources daemon_overhead;
  std::vector<const Offering*> offerings;  // Available and not in the unavailable cache.
  // The same offerings, compact: zone and capacity type as indexes into the template's
  // zone and capacity-type names, for the launch choice's inner loops.
  struct Offer {
    std::uint16_t zone = 0;
    std::uint16_t capacity = 0;
    MicroUsdPerHour price{0};
    const Offering* offering = nullptr;
  };
  std::vector<Offer> offers;
  bool exotic = false;  // GPU, accelerator or metal.
};

struct PoolTemplate {
  const NodePool* pool = nullptr;
  const NodeClass* nodeclass = nullptr;
  // Where the NodeClass can launch: the zones of its subnets and the architectures of its
  // AMIs, from its resolution (else its status). Empty: not known, nothing ruled out.
  std::vector<std::string> launch_zones;
  std::vector<std::string> launch_archs;
  std::string unusable;  // Why the pool cannot launch at all, or empty.
  Requirements requirements;
  Labels labels;  // Template labels plus the nodepool label.
  // Label keys the catalog gives instance types of its own (InstanceType::labels): each is a key
  // an instance type determines, like the instance-type label itself.
  std::set<std::string> catalog_keys;
  std::vector<TypeRow> types;
  TypeMask all;
  // Limits: what is left after existing and in-flight claims, and what planned claims hold.
  bool limited = false;
  Resources remaining;
  std::int64_t nodes_remaining = 0;
  Resources reserved;
  std::int64_t nodes_reserved = 0;
  std::map<std::string, TypeMask> mask_cache;  // Requirements signature -> compatible types.
  // Per dimension (cpu, memory, pods): each distinct allocatable amount, ascending, with the
  // types that have at least that much, so "which types hold this" is a lookup and an AND.
  struct Threshold {
    std::int64_t at_least = 0;
    TypeMask types;
  };
  std::array<std::vector<Threshold>, 3> thresholds;
  std::vector<std::string> zones;       // Every zone an offering names; Offer::zone indexes it.
  std::vector<std::string> capacities;  // Likewise for capacity types.
  TypeMask with_extended;               // Types with extended resources (GPUs and the like).
  TypeMask exotic;                      // Types with GPUs, accelerators or metal.
  // Per capacity type: rows that offer it, by their cheapest offering of it (anywhere).
  std::map<std::string, std::vector<std::pair<MicroUsdPerHour, std::size_t>>> by_price;
};

// Pods per topology domain, looked up by string_view.
using DomainCounts = std::map<std::string, std::int32_t, std::less<>>;

enum class GroupKind : std::uint8_t { kSpread, kAffinity, kAntiAffinity };

// Pods matching a selector, counted per topology domain (Karpenter's TopologyGroup).
struct TopologyGroup {
  GroupKind kind = GroupKind::kSpread;
  std::string key;
  std::vector<std::string> namespaces;  // Sorted; empty with all_namespaces = every one.
  bool all_namespaces = false;
  LabelSelector selector;
  std::int32_t max_skew = 1;
  std::int32_t min_domains = 0;
  // Spread only: the nodes that count (nodeAffinityPolicy / nodeTaintsPolicy = Honor).
  bool filter_affinity = false;
  Requirements filter_requirements;
  bool filter_taints = false;
  std::vector<Toleration> filter_tolerations;
  std::set<std::string, std::less<>> domains;  // Every domain the owners could use.
  DomainCounts counts;                         // Selected pods per domain.
  DomainCounts owners;                         // Anti-affinity: owning pods per domain.
  // Bumped whenever a change could turn a refusal into an acceptance: any count of a spread
  // group, a domain of an affinity or anti-affinity group going from empty to occupied.
  std::uint64_t version = 0;
  std::uint64_t owners_version = 0;  // Bumped when an owner takes a domain it had not held.
  // Spread: the least-loaded usable domain's count, as last computed for a pod view (stamp)
  // at a version; a pod tried on many nodes asks for it once.
  mutable std::uint64_t min_stamp = 0;
  mutable std::uint64_t min_version = 0;
  mutable std::int32_t min_count = 0;
};

// Planned claims, fewest pods first. One array holds them bucketed by pod count, so a claim
// gaining a pod moves with one swap. Within a count the order is a function of the pass's
// history, so it is deterministic (Karpenter's is an unstable sort).
class ClaimOrder {
 public:
  // A new claim, with no pods yet.
  void Add(std::size_t claim);
  // The claim has one more pod.
  void Bump(std::size_t claim);
  // No claims (keeping the allocations, for the next trial).
  void Clear();
  const std::vector<std::size_t>& claims() const { return order_; }

 private:
  std::vector<std::size_t> order_;  // Claims, by pod count.
  std::vector<std::size_t> pos_;    // claim -> position in order_.
  std::vector<std::size_t> count_;  // claim -> pods.
  std::vector<std::size_t> start_;  // count -> first position of that bucket.
  void Swap(std::size_t a, std::size_t b);
};

// A place a pod can go: an existing node, an in-flight NodeClaim, or a claim planned now.
struct Bin {
  // Node name or NodeClaim name (the state's key, which outlives the pass), or "#<index>" for a
  // planned claim (Pass::PlannedName).
  std::string_view name;
  bool planned = false;
  bool gone = false;     // Existing bins: taken away for a consolidation trial.
  std::size_t pool = 0;  // Planned claims: index into the pool templates.
  // Existing bins: their labels. A node's own map when it already names the node as its
  // hostname (a disruption pass looks at thousands of nodes; copying each one's labels was
  // most of its memory), else `own_labels`.
  const NodeLabels* node_labels = nullptr;
  NodeLabels own_labels;
  // Existing nodes' bins until Pass::Resolve: the node whose labels and zone are still to read.
  const Node* node = nullptr;
  const NodeLabels& labels() const { return node_labels != nullptr ? *node_labels : own_labels; }
  std::string zone;  // Existing bins: their zone label, if any.
  std::vector<Taint> taints;
  Resources remaining;        // Existing bins only.
  Requirements requirements;  // Planned claims only.
  TypeMask types;             // Planned claims only.
  Resources requests;         // Planned claims only: pods plus daemonset overhead.
  Resources reservation;      // Planned claims: the largest capacity counted against limits.
  Resources room;             // Planned claims: per dimension, the most any candidate type holds.
  // Planned claims: their pods' keys (the scheduler's pod views hold the strings).
  std::vector<const std::string*> pods;
  std::vector<HostPort> host_ports;
  std::map<std::string, std::set<std::string>> volumes;  // driver -> volume ids
  std::map<std::string, std::int64_t> volume_limits;     // driver -> attach limit
};

// A planned claim's pods' keys.
inline std::vector<std::string> PodKeys(const Bin& bin) {
  std::vector<std::string> keys;
  keys.reserve(bin.pods.size());
  for (const std::string* key : bin.pods) keys.push_back(*key);
  return keys;
}

// A pending pod as the scheduler currently sees it: its constraints with the preferences
// relaxed so far. Karpenter relaxes a copy of the pod; this is that copy.
struct PodView {
  const Pod* pod = nullptr;
  std::string key;  // namespace/name
  Resources need;   // Requests plus one pod slot.
  Requirements volume_requirements;
  std::map<std::string, std::set<std::string>> volumes;  // driver -> volume ids
  // Preferences, heaviest first, and how many of each have been dropped.
  std::vector<NodeSelectorTerm> preferred_node;
  std::vector<PodAffinityTerm> preferred_affinity;
  std::vector<PodAffinityTerm> preferred_anti_affinity;
  std::size_t required_term = 0;
  std::size_t preferred_node_dropped = 0;
  std::size_t preferred_affinity_dropped = 0;
  std::size_t preferred_anti_affinity_dropped = 0;
  std::vector<bool> spread_dropped;
  bool tolerate_prefer_no_schedule = false;
  std::vector<std::string> relaxed;
  std::string target;        // The bin it was placed on, once placed.
  std::size_t existing = 0;  // Once placed on an existing bin: its index.
  std::size_t tries = 0;     // How many times this run tried to place it (Pass::TryPlace).
  // A pending pod in a consolidation trial: the existing bin the pass's base run placed it on
  // at its first try, or that no existing bin took it then (Pass::PlaceByHint).
  std::size_t hint = std::numeric_limits<std::size_t>::max();
  bool deferred = false;  // Placed on its hint without a view (Pass::Defer).
  // The stored view (Pass::base_views_) this one is an untouched copy of, apart from the pod's
  // own name, requests and target; null once relaxed, or when built for the pod alone.
  const PodView* base = nullptr;
  // Derived from the above by Refresh().
  std::uint64_t stamp = 0;  // Unique per Refresh in a pass: a key for per-view caches.
  Requirements requirements;
  std::vector<std::size_t> groups;  // Topology groups the pod owns.
  // Pods with equal constraints share a class; a claim that refuses a class is skipped by
  // later pods of that class while the reason holds.
  std::size_t shape = 0;
  // The topology groups that select this pod, by group index (shared by its class).
  const std::vector<std::size_t>* selecting = nullptr;
};

}  // namespace tenon::core
