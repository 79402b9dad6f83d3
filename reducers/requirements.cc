// The requirements algebra and toleration matching.
#include "reducers/requirements.h"

#include <algorithm>
#include <charconv>
#include <iterator>

#include "reducers/internal.h"

namespace tenon::core {
namespace {

std::optional<std::int64_t> ParseInt(std::string_view text) {
  std::int64_t value = 0;
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::vector<std::string> SortedUnique(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

bool WithinBounds(const ValueSet& set, std::string_view value) {
  if (!set.gt && !set.lt) return true;
  auto n = ParseInt(value);
  if (!n) return false;
  return (!set.gt || *n > *set.gt) && (!set.lt || *n < *set.lt);
}

std::vector<std::string> SetOp(const std::vector<std::string>& a, const std::vector<std::string>& b,
                               bool intersect, bool difference) {
  std::vector<std::string> out;
  if (intersect) {
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  } else if (difference) {
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  } else {
    std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  }
  return out;
}

template <class T>
std::optional<T> Tighter(std::optional<T> a, std::optional<T> b, bool larger) {
  if (!a) return b;
  if (!b) return a;
  return larger ? std::max(*a, *b) : std::min(*a, *b);
}

}  // namespace

ValueSet ValueSet::From(const Requirement& r) {
  ValueSet set;
  set.min_values = r.min_values;
  switch (r.op) {
    case RequirementOp::kIn:
      set = {false, SortedUnique(r.values), {}, {}, false, r.min_values};
      break;
    case RequirementOp::kNotIn:
      set = {true, SortedUnique(r.values), {}, {}, true, r.min_values};
      break;
    case RequirementOp::kExists:
      set = {true, {}, {}, {}, false, r.min_values};
      break;
    case RequirementOp::kDoesNotExist:
      set = {false, {}, {}, {}, true, r.min_values};
      break;
    case RequirementOp::kGt:
    case RequirementOp::kLt: {
      // A malformed bound (not one integer) admits nothing, as the API server would reject it.
      std::optional<std::int64_t> bound;
      if (r.values.size() == 1) bound = ParseInt(r.values.front());
      set = {true, {}, {}, {}, false, r.min_values};
      if (!bound) {
        set.complement = false;
        set.absent_ok = false;
      } else if (r.op == RequirementOp::kGt) {
        set.gt = bound;
      } else {
        set.lt = bound;
      }
      break;
    }
  }
  return set;
}

ValueSet ValueSet::Exactly(std::string value) {
  return {false, {std::move(value)}, {}, {}, false, 0};
}

bool ValueSet::Has(std::string_view value) const {
  bool listed = std::binary_search(values.begin(), values.end(), value);
  if (listed == complement) return false;
  return WithinBounds(*this, value);
}

bool ValueSet::NoValue() const {
  if (!complement) return values.empty();
  return gt && lt && *gt + 1 >= *lt;
}

ValueSet ValueSet::Intersect(const ValueSet& o) const {
  ValueSet out;
  out.gt = Tighter(gt, o.gt, true);
  out.lt = Tighter(lt, o.lt, false);
  out.absent_ok = absent_ok && o.absent_ok;
  out.min_values = std::max(min_values, o.min_values);
  out.complement = complement && o.complement;
  if (complement && o.complement) {
    out.values = SetOp(values, o.values, false, false);
  } else if (complement) {
    out.values = SetOp(o.values, values, false, true);
  } else if (o.complement) {
    out.values = SetOp(values, o.values, false, true);
  } else {
    out.values = SetOp(values, o.values, true, false);
  }
  if (!out.complement && (out.gt || out.lt)) {
    std::erase_if(out.values, [&](const std::string& v) { return !WithinBounds(out, v); });
    out.gt.reset();
    out.lt.reset();
  }
  return out;
}

std::string ValueSet::Describe(std::string_view key) const {
  std::string k(key);
  if (!complement)
    return values.empty() ? k + " DoesNotExist" : k + " In [" + Join(values, ",") + "]";
  std::string text = values.empty() ? (absent_ok ? k + " (any)" : k + " Exists")
                                    : k + " NotIn [" + Join(values, ",") + "]";
  if (gt) text += " Gt " + std::to_string(*gt);
  if (lt) text += " Lt " + std::to_string(*lt);
  return text;
}

void Requirements::Add(const Requirement& requirement) {
  Add(requirement.key, ValueSet::From(requirement));
}

void Requirements::Add(const std::vector<Requirement>& list) {
  for (const auto& r : list) Add(r);
}

void Requirements::Add(const std::string& key, const ValueSet& set) {
  auto [it, inserted] = sets_.try_emplace(key, set);
  if (!inserted) it->second = it->second.Intersect(set);
}

void Requirements::Add(const Requirements& other) {
  for (const auto& [key, set] : other.sets_) Add(key, set);
}

bool Requirements::Narrows(const Requirements& other) const {
  for (const auto& [key, theirs] : other.sets_) {
    const ValueSet* ours = Get(key);
    if (ours == nullptr || !(ours->Intersect(theirs) == *ours)) return true;
  }
  return false;
}

bool Requirements::HasMinValues() const {
  return std::any_of(sets_.begin(), sets_.end(),
                     [](const auto& entry) { return entry.second.min_values > 0; });
}

const ValueSet* Requirements::Get(const std::string& key) const {
  auto it = sets_.find(key);
  return it == sets_.end() ? nullptr : &it->second;
}

std::string Requirements::Compatible(const Requirements& incoming,
                                     bool allow_undefined_well_known) const {
  for (const auto& [key, theirs] : incoming.sets_) {
    const ValueSet* ours = Get(key);
    if (ours == nullptr) {
      if (theirs.absent_ok) continue;
      if (allow_undefined_well_known && IsWellKnownLabel(key)) continue;
      return "label " + key + " is not defined by the nodepool";
    }
    ValueSet both = ours->Intersect(theirs);
    if (!both.NoValue()) continue;
    // Two requirements that both accept a missing label agree on "no label".
    if (both.absent_ok) continue;
    return "requirement " + theirs.Describe(key) + " conflicts with " + ours->Describe(key);
  }
  return {};
}

std::string Requirements::Signature() const {
  std::string out;
  for (const auto& [key, set] : sets_) {
    out += key;
    out += set.complement ? '!' : '=';
    out += set.absent_ok ? '?' : '.';
    for (const auto& v : set.values) (out += v) += ',';
    if (set.gt) out += ">" + std::to_string(*set.gt);
    if (set.lt) out += "<" + std::to_string(*set.lt);
    out += "#" + std::to_string(set.min_values) + ";";
  }
  return out;
}

std::string Requirements::Describe() const {
  std::string out;
  for (const auto& [key, set] : sets_) out += (out.empty() ? "" : ", ") + set.Describe(key);
  return out;
}

std::vector<Requirement> Requirements::ToList() const {
  std::vector<Requirement> out;
  for (const auto& [key, s] : sets_) {
    if (!s.complement) {
      auto op = s.values.empty() ? RequirementOp::kDoesNotExist : RequirementOp::kIn;
      out.push_back({key, op, s.values, s.min_values});
      continue;
    }
    if (!s.values.empty()) out.push_back({key, RequirementOp::kNotIn, s.values, s.min_values});
    if (s.gt) out.push_back({key, RequirementOp::kGt, {std::to_string(*s.gt)}, s.min_values});
    if (s.lt) out.push_back({key, RequirementOp::kLt, {std::to_string(*s.lt)}, s.min_values});
    bool implied = s.gt || s.lt;
    if (!s.absent_ok && !implied) out.push_back({key, RequirementOp::kExists, {}, s.min_values});
  }
  return out;
}

bool IsWellKnownLabel(std::string_view key) {
  static constexpr std::string_view kKeys[] = {
      label::kZone,
      "topology.kubernetes.io/region",
      label::kInstanceType,
      label::kArch,
      label::kOs,
      label::kCapacityType,
      label::kNodePool,
      label::kHostname,
      "node.kubernetes.io/windows-build",
      "karpenter.k8s.aws/capacity-reservation-id",
  };
  if (key.starts_with("karpenter.k8s.aws/instance-")) return true;
  return std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys);
}

std::string RestrictedLabel(std::string_view key) {
  if (key != label::kHostname && IsWellKnownLabel(key)) return {};
  const std::size_t slash = key.find('/');
  const std::string_view domain = slash == std::string_view::npos ? "" : key.substr(0, slash);
  auto within = [&](std::string_view parent) {
    return domain == parent || (domain.size() > parent.size() && domain.ends_with(parent) &&
                                domain[domain.size() - parent.size() - 1] == '.');
  };
  static constexpr std::string_view kExceptions[] = {"node-role.kubernetes.io", "kops.k8s.io",
                                                     "node-restriction.kubernetes.io",
                                                     "node.kubernetes.io"};
  for (std::string_view allowed : kExceptions) {
    if (within(allowed)) return {};
  }
  static constexpr std::string_view kRestricted[] = {"kubernetes.io", "k8s.io", "karpenter.sh",
                                                     "karpenter.k8s.aws"};
  bool restricted = key == label::kHostname;
  for (std::string_view parent : kRestricted) restricted = restricted || within(parent);
  if (!restricted) return {};
  return "label " + std::string(key) +
         " is restricted; select a well-known label or a custom label outside the domains "
         "kubernetes.io, k8s.io, karpenter.sh and karpenter.k8s.aws";
}

std::string PodRequirementError(const Pod& pod) {
  const PodConstraints& c = *pod.constraints;
  for (const auto& [key, value] : c.node_selector) {
    if (std::string why = RestrictedLabel(key); !why.empty()) return why;
  }
  for (const auto* terms : {&c.node_affinity_required, &c.node_affinity_preferred}) {
    for (const NodeSelectorTerm& term : *terms) {
      for (const Requirement& r : term.requirements) {
        if (std::string why = RestrictedLabel(r.key); !why.empty()) return why;
      }
    }
  }
  return {};
}

bool Tolerates(const std::vector<Toleration>& tolerations, const Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(), [&](const Toleration& t) {
    if (t.effect && *t.effect != taint.effect) return false;
    if (t.key.empty()) return t.op_exists;
    if (t.key != taint.key) return false;
    return t.op_exists || t.value == taint.value;
  });
}

}  // namespace tenon::core

namespace tenon {

bool SelectorMatches(const LabelSelector& selector, const Labels& labels) {
  for (const auto& [key, value] : selector.match_labels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const auto& r : selector.match_expressions) {
    auto it = labels.find(r.key);
    std::optional<std::string_view> value;
    if (it != labels.end()) value = it->second;
    if (!core::ValueSet::From(r).Allows(value)) return false;
  }
  return true;
}

}  // namespace tenon
