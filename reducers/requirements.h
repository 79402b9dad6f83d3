// The requirements algebra, as pure set operations (Karpenter's pkg/scheduling/requirement.go
// is the model): each label key maps to the set of values a node may carry for it.
//
// A ValueSet is either a finite set (In, DoesNotExist) or the complement of one (NotIn,
// Exists), optionally narrowed by integer bounds (Gt, Lt). `absent_ok` says whether a node
// without the label satisfies it, which is what separates NotIn (yes) from Exists (no).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.h"

namespace tenon::core {

struct ValueSet {
  bool complement = true;           // true: every value except `values`.
  std::vector<std::string> values;  // Sorted, unique.
  std::optional<std::int64_t> gt;   // Values must be integers greater than this.
  std::optional<std::int64_t> lt;   // Values must be integers less than this.
  bool absent_ok = true;            // A node without the label satisfies the set.
  std::int32_t min_values = 0;

  static ValueSet From(const Requirement& requirement);
  static ValueSet Exactly(std::string value);
  bool Has(std::string_view value) const;
  bool Allows(std::optional<std::string_view> value) const {
    return value ? Has(*value) : absent_ok;
  }
  // No value at all can satisfy it (a finite empty set, or bounds that cross).
  bool NoValue() const;
  ValueSet Intersect(const ValueSet& other) const;
  bool IsDoesNotExistLike() const { return NoValue() && absent_ok; }
  bool IsNotInLike() const { return complement && !gt && !lt && absent_ok; }
  std::string Describe(std::string_view key) const;
  friend bool operator==(const ValueSet&, const ValueSet&) = default;
};

class Requirements {
 public:
  Requirements() = default;
  explicit Requirements(const std::vector<Requirement>& list) { Add(list); }

  void Add(const Requirement& requirement);
  void Add(const std::vector<Requirement>& list);
  void Add(const std::string& key, const ValueSet& set);
  void Add(const Requirements& other);

  bool Has(const std::string& key) const { return sets_.contains(key); }
  // Whether adding `other` would change these requirements.
  bool Narrows(const Requirements& other) const;
  bool HasMinValues() const;
  const ValueSet* Get(const std::string& key) const;
  const std::map<std::string, ValueSet>& sets() const { return sets_; }

  // Karpenter's Compatible: every key both define must intersect; a key only `incoming`
  // defines must be NotIn/DoesNotExist, or well-known when `allow_undefined_well_known`.
  // Returns an empty string when compatible, else why not.
  std::string Compatible(const Requirements& incoming, bool allow_undefined_well_known) const;
  // True when a node with these labels satisfies every requirement.
  template <class Lookup>
  bool Matches(const Lookup& lookup) const {
    for (const auto& [key, set] : sets_) {
      if (!set.Allows(lookup(key))) return false;
    }
    return true;
  }
  // A canonical text form: equal requirements give equal text (used as a cache key).
  std::string Signature() const;
  std::string Describe() const;
  std::vector<Requirement> ToList() const;
  friend bool operator==(const Requirements&, const Requirements&) = default;

 private:
  std::map<std::string, ValueSet> sets_;
};

// Labels every node carries or that an instance type determines; a NodePool need not mention
// them for a pod to ask for them.
bool IsWellKnownLabel(std::string_view key);

// Why a pod may not ask for `key` on a node Karpenter would launch, or empty when it may:
// kubernetes.io/hostname, and labels in the domains kubernetes.io, k8s.io, karpenter.sh and
// karpenter.k8s.aws (but for their exceptions) are restricted unless well known (Karpenter's
// IsRestrictedLabel).
std::string RestrictedLabel(std::string_view key);
// The first requirement of the pod's nodeSelector or node affinity (required or preferred) on
// a restricted label, as Karpenter's provisioner validates a pending pod; empty when none.
// Karpenter ignores such a pod: it launches nothing for it.
std::string PodRequirementError(const Pod& pod);

}  // namespace tenon::core
