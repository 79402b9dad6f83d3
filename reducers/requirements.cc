// Requirement and toleration matching. The full requirements algebra (intersection,
// minValues, Gt/Lt narrowing) grows here with the scheduler.
#include <algorithm>
#include <charconv>

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

bool Contains(const std::vector<std::string>& values, std::string_view value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// Gt / Lt compare integers; a requirement or label that is not an integer never matches.
bool CompareInt(const Requirement& requirement, std::string_view value) {
  if (requirement.values.size() != 1) return false;
  auto bound = ParseInt(requirement.values.front());
  auto actual = ParseInt(value);
  if (!bound || !actual) return false;
  return requirement.op == RequirementOp::kGt ? *actual > *bound : *actual < *bound;
}

}  // namespace

bool RequirementAllows(const Requirement& requirement, std::optional<std::string_view> value) {
  switch (requirement.op) {
    case RequirementOp::kIn:
      return value && Contains(requirement.values, *value);
    case RequirementOp::kNotIn:
      return !value || !Contains(requirement.values, *value);
    case RequirementOp::kExists:
      return value.has_value();
    case RequirementOp::kDoesNotExist:
      return !value.has_value();
    case RequirementOp::kGt:
    case RequirementOp::kLt:
      return value && CompareInt(requirement, *value);
  }
  return false;
}

bool AllRequirementsAllow(const std::vector<Requirement>& requirements, const LabelLookup& lookup) {
  return std::all_of(requirements.begin(), requirements.end(),
                     [&](const Requirement& r) { return RequirementAllows(r, lookup(r.key)); });
}

std::vector<Requirement> SelectorRequirements(const Labels& node_selector) {
  std::vector<Requirement> out;
  out.reserve(node_selector.size());
  for (const auto& [key, value] : node_selector) {
    out.push_back(Requirement{key, RequirementOp::kIn, {value}, 0});
  }
  return out;
}

bool Tolerates(const std::vector<Toleration>& tolerations, const Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(), [&](const Toleration& t) {
    if (t.effect && *t.effect != taint.effect) return false;
    if (t.key.empty()) return t.op_exists;
    if (t.key != taint.key) return false;
    return t.op_exists || t.value == taint.value;
  });
}

bool ToleratesAll(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints) {
  return std::all_of(taints.begin(), taints.end(), [&](const Taint& taint) {
    return taint.effect == TaintEffect::kPreferNoSchedule || Tolerates(tolerations, taint);
  });
}

}  // namespace tenon::core
