// The decision index's terms (log/codec.h): what audit and explain look decisions up by.
#include <algorithm>
#include <cassert>
#include <map>

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
  for (const auto& outcome : d.pods) {
    AddName(terms, IndexKind::kPod, outcome.pod);
    // A pod placed on capacity that exists already: the target names its node (or a claim
    // still without one), which `explain node` looks the batch up by.
    const bool new_claim =
        std::any_of(d.new_claims.begin(), d.new_claims.end(),
                    [&](const ClaimPlan& c) { return c.nodeclaim == outcome.target; });
    if (!new_claim) AddName(terms, IndexKind::kNode, outcome.target);
  }
}

void AddTerms(std::vector<std::string>& terms, const LifecycleDecision& d) {
  AddName(terms, IndexKind::kNodeClaim, d.nodeclaim);
  AddName(terms, IndexKind::kNode, d.node_name);
}

void AddTerms(std::vector<std::string>& terms, const DisruptionDecision& d) {
  AddName(terms, IndexKind::kMethod, Name(d.method));
  for (const auto& claim : d.nodeclaims) AddName(terms, IndexKind::kNodeClaim, claim);
  for (const auto& c : d.candidates) {
    AddName(terms, IndexKind::kNodeClaim, c.nodeclaim);
    AddName(terms, IndexKind::kNodePool, c.nodepool);
  }
  for (const auto& b : d.budgets) AddName(terms, IndexKind::kNodePool, b.nodepool);
}

// A disruption pass over at least this many candidates carries, in each NodeClaim's index entry,
// that claim's candidates, and in its kind entry the pass without candidates (its head): `tenon
// audit --node` then reads one range of the index and one head per pass instead of every pass
// the node sat in (each as large as its candidate list).
constexpr std::size_t kTrimmedFromCandidates = 4;

// The values to store beside `terms` (sorted, one per term; empty: none worth storing).
std::vector<std::string> IndexValues(const Decision& decision,
                                     const std::vector<std::string>& terms) {
  const auto* d = std::get_if<DisruptionDecision>(&decision.body);
  if (d == nullptr || d->candidates.size() < kTrimmedFromCandidates) return {};
  // The candidates by NodeClaim, each claim's in the decision's order.
  std::vector<const DisruptionCandidate*> by_claim;
  by_claim.reserve(d->candidates.size());
  for (const auto& c : d->candidates) by_claim.push_back(&c);
  auto claim_less = [](const DisruptionCandidate* a, const DisruptionCandidate* b) {
    return a->nodeclaim < b->nodeclaim;
  };
  std::stable_sort(by_claim.begin(), by_claim.end(), claim_less);
  // Each claim's value: only its candidates (the head is apart).
  std::vector<DisruptionCandidate> candidates;
  const std::string kind = IndexTerm(IndexKind::kKind, DecisionKind(decision));
  std::vector<std::string> values(terms.size());
  DisruptionCandidate key;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const std::string& term = terms[i];
    if (term == kind) {
      values[i] = EncodeDecision(DecisionHead(decision));
      continue;
    }
    if (term.front() != static_cast<char>(IndexKind::kNodeClaim)) continue;
    key.nodeclaim.assign(term, 1, term.size() - 2);
    auto [from, to] = std::equal_range(by_claim.begin(), by_claim.end(), &key, claim_less);
    candidates.clear();
    for (auto it = from; it != to; ++it) candidates.push_back(**it);
    values[i] = EncodeCandidatesOnly(decision, candidates);
  }
  return values;
}

}  // namespace

std::string IndexTerm(IndexKind kind, std::string_view name) {
  // A NUL inside a name would let one term be a prefix of another. Kubernetes names have none;
  // one decoded from a forged record is indexed up to its first NUL.
  std::string term(1, static_cast<char>(kind));
  term.append(name.substr(0, name.find('\0')));
  term.push_back('\0');
  return term;
}

std::string TimeTerm(Instant at) {
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

Decision DecisionHead(const Decision& decision) {
  Decision head = decision;
  if (auto* d = std::get_if<DisruptionDecision>(&head.body)) d->candidates.clear();
  return head;
}

Decision WithHead(Decision head, std::vector<DisruptionCandidate> candidates) {
  if (!std::holds_alternative<DisruptionDecision>(head.body)) {
    throw CodecError("decision " + std::to_string(head.id.value) +
                     ": an index head is not a disruption pass's");
  }
  std::get<DisruptionDecision>(head.body).candidates = std::move(candidates);
  return head;
}

DecisionRecord DecisionRecordFor(const Decision& decision) {
  assert(decision.id.value != 0);
  // The whole decision first: its encoder's buffers are gone before the index values (as large
  // again, for a disruption pass over every candidate) are built.
  std::string payload = EncodeDecision(decision);
  std::vector<std::string> terms = DecisionIndexTerms(decision);
  std::vector<std::string> values = IndexValues(decision, terms);
  return DecisionRecord{decision.id.value, std::move(payload), std::move(terms), std::move(values)};
}

}  // namespace tenon::log
