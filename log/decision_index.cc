// The decision index's terms (log/codec.h): what audit and explain look decisions up by.
#include <algorithm>
#include <cassert>

#include "log/codec.h"

namespace tenon::log {
namespace {

void AddName(std::vector<std::string>& terms, IndexKind kind, const std::string& name) {
  if (!name.empty()) terms.push_back(IndexTerm(kind, name));
}

void AddTerms(std::vector<std::string>& terms, const ProvisioningDecision& d) {
  for (const auto& claim : d.new_claims) {
    AddName(terms, IndexKind::kNodeClaim, claim.nodeclaim);
    AddName(terms, IndexKind::kNodePool, claim.nodepool);
    for (const auto& pod : claim.pods) AddName(terms, IndexKind::kPod, pod);
  }
  for (const auto& outcome : d.pods) AddName(terms, IndexKind::kPod, outcome.pod);
}

void AddTerms(std::vector<std::string>& terms, const LifecycleDecision& d) {
  AddName(terms, IndexKind::kNodeClaim, d.nodeclaim);
  AddName(terms, IndexKind::kNode, d.node_name);
}

void AddTerms(std::vector<std::string>& terms, const DisruptionDecision& d) {
  AddName(terms, IndexKind::kMethod, d.method);
  for (const auto& claim : d.nodeclaims) AddName(terms, IndexKind::kNodeClaim, claim);
  for (const auto& c : d.candidates) {
    AddName(terms, IndexKind::kNodeClaim, c.nodeclaim);
    AddName(terms, IndexKind::kNodePool, c.nodepool);
  }
  for (const auto& b : d.budgets) AddName(terms, IndexKind::kNodePool, b.nodepool);
}

}  // namespace

std::string IndexTerm(IndexKind kind, std::string_view name) {
  // A NUL inside a name would let one term be a prefix of another; Kubernetes names have none.
  assert(name.find('\0') == std::string_view::npos);
  std::string term(1, static_cast<char>(kind));
  term.append(name);
  term.push_back('\0');
  return term;
}

std::string TimeTerm(Nanos at) {
  std::string term(1, static_cast<char>(IndexKind::kTime));
  // Times before the epoch do not occur (they come from Tick events); clamp rather than wrap.
  auto n = static_cast<std::uint64_t>(std::max<std::int64_t>(at.value, 0));
  for (int shift = 56; shift >= 0; shift -= 8)
    term.push_back(static_cast<char>((n >> shift) & 0xff));
  return term;
}

std::string DecisionKind(const Decision& decision) {
  static constexpr const char* kNames[] = {"provisioning", "lifecycle", "disruption"};
  static_assert(std::variant_size_v<DecisionBody> == 3);
  return kNames[decision.body.index()];
}

std::vector<std::string> DecisionIndexTerms(const Decision& decision) {
  std::vector<std::string> terms{TimeTerm(decision.at),
                                 IndexTerm(IndexKind::kKind, DecisionKind(decision))};
  std::visit([&](const auto& body) { AddTerms(terms, body); }, decision.body);
  std::sort(terms.begin(), terms.end());
  terms.erase(std::unique(terms.begin(), terms.end()), terms.end());
  return terms;
}

DecisionRecord DecisionRecordFor(const Decision& decision) {
  assert(decision.id.value != 0);
  return DecisionRecord{decision.id.value, EncodeDecision(decision), DecisionIndexTerms(decision)};
}

}  // namespace tenon::log
