// tenon audit: every disruption decision with its inputs, looked up through the decision index.
#include <algorithm>
#include <cassert>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "log/codec.h"
#include "replay/index.h"
#include "replay/replay.h"

namespace tenon::replay {
namespace {

// The NodeClaims a node belonged to: every lifecycle decision naming the node names its claim.
// A name that is itself a NodeClaim's counts too (the simulator names nodes after claims).
std::vector<std::string> ClaimsOfNode(const log::EventLog& log, const std::string& node,
                                      std::uint64_t& read) {
  std::set<std::string> claims;
  for (std::uint64_t id : IdsUnder(log, log::IndexTerm(log::IndexKind::kNode, node))) {
    auto record = log.ReadDecision(id);
    if (!record) continue;
    ++read;
    Decision d = log::DecodeDecision(record->payload);
    if (const auto* l = std::get_if<LifecycleDecision>(&d.body); l && !l->nodeclaim.empty()) {
      claims.insert(l->nodeclaim);
    }
  }
  claims.insert(node);
  return {claims.begin(), claims.end()};
}

bool Mentions(const DisruptionDecision& d, const std::vector<std::string>& claims) {
  auto named = [&](const std::string& name) {
    return std::find(claims.begin(), claims.end(), name) != claims.end();
  };
  return std::any_of(d.nodeclaims.begin(), d.nodeclaims.end(), named) ||
         std::any_of(d.candidates.begin(), d.candidates.end(),
                     [&](const DisruptionCandidate& c) { return named(c.nodeclaim); });
}

bool InPool(const DisruptionDecision& d, const std::string& pool) {
  return std::any_of(d.candidates.begin(), d.candidates.end(),
                     [&](const DisruptionCandidate& c) { return c.nodepool == pool; }) ||
         std::any_of(d.budgets.begin(), d.budgets.end(),
                     [&](const BudgetState& b) { return b.nodepool == pool; });
}

bool Matches(const Decision& decision, const AuditQuery& query,
             const std::vector<std::string>& claims) {
  const auto* d = std::get_if<DisruptionDecision>(&decision.body);
  if (d == nullptr) return false;
  if (query.since && decision.at < *query.since) return false;
  if (query.until && decision.at > *query.until) return false;
  if (query.method && d->method != *query.method) return false;
  if (!query.nodepool.empty() && !InPool(*d, query.nodepool)) return false;
  return query.node.empty() || Mentions(*d, claims);
}

// The ids to read: those under the most selective term the query has.
std::vector<std::uint64_t> CandidateIds(const log::EventLog& log, const AuditQuery& query,
                                        const std::vector<std::string>& claims) {
  std::set<std::uint64_t> ids;
  if (!query.node.empty()) {
    for (const auto& claim : claims) {
      for (auto id : IdsUnder(log, log::IndexTerm(log::IndexKind::kNodeClaim, claim)))
        ids.insert(id);
    }
    return {ids.begin(), ids.end()};
  }
  if (!query.nodepool.empty())
    return IdsUnder(log, log::IndexTerm(log::IndexKind::kNodePool, query.nodepool));
  if (query.method) {
    return IdsUnder(log, log::IndexTerm(log::IndexKind::kMethod, Name(*query.method)));
  }
  if (query.since || query.until) {
    std::vector<std::uint64_t> out;
    const std::string to = query.until
                               ? log::TimeTerm(*query.until + Duration{1})
                               : std::string(1, static_cast<char>(log::IndexKind::kTime) + 1);
    log.ScanDecisionIndex(log::TimeTerm(query.since.value_or(Instant{})), to,
                          [&](std::uint64_t id) {
                            out.push_back(id);
                            return true;
                          });
    std::sort(out.begin(), out.end());
    return out;
  }
  return IdsUnder(log, log::IndexTerm(log::IndexKind::kKind, "disruption"));
}

// A candidate line is shown when the query names no node or pool, or names its own.
bool Acted(const DisruptionDecision& d, const DisruptionCandidate& c) {
  return std::find(d.nodeclaims.begin(), d.nodeclaims.end(), c.nodeclaim) != d.nodeclaims.end();
}

bool Shown(const DisruptionCandidate& c, const AuditQuery& query, const AuditResult& result) {
  if (!query.node.empty()) {
    return std::find(result.nodeclaims.begin(), result.nodeclaims.end(), c.nodeclaim) !=
           result.nodeclaims.end();
  }
  return query.nodepool.empty() || c.nodepool == query.nodepool;
}

// Which candidates a decision read for `query` keeps: with a node, its NodeClaims'; with a
// NodePool, the pool's (InPool needs them); with neither, all. Shown() never prints another.
log::CandidateFilter KeptCandidates(const AuditQuery& query, const AuditResult& result) {
  if (query.node.empty() && query.nodepool.empty()) return {};
  return [&](std::string_view claim, std::string_view pool) {
    if (!query.nodepool.empty() && pool == query.nodepool) return true;
    return std::find(result.nodeclaims.begin(), result.nodeclaims.end(), claim) !=
           result.nodeclaims.end();
  };
}

// The decisions about the node's NodeClaims, by id, each with those claims' candidates: the
// candidates an index entry carries where there are some (one range read per claim), with the
// pass's head from its kind entry (one point read per pass; a log indexed before heads stored
// the pass trimmed to the claim in the entry itself), else -- an entry without them (a small
// decision, a log indexed before values), or a decision under two of the claims -- the decision
// itself, read and decoded keeping `keep`'s candidates.
std::map<std::uint64_t, Decision> NodeDecisions(const log::EventLog& log, AuditResult& result,
                                                const log::CandidateFilter& keep) {
  std::map<std::uint64_t, Decision> found;
  std::set<std::uint64_t> whole;
  const std::string disruption = log::IndexTerm(log::IndexKind::kKind, "disruption");
  for (const auto& claim : result.nodeclaims) {
    const std::string term = log::IndexTerm(log::IndexKind::kNodeClaim, claim);
    log.ScanDecisionIndexValues(
        term, term + std::string(9, '\xff'), [&](std::uint64_t id, std::string_view value) {
          if (value.empty() || found.contains(id)) {
            whole.insert(id);
            return true;
          }
          ++result.decisions_read;
          auto only = log::DecodeCandidatesOnly(value);
          if (!only) {
            found.emplace(id, log::DecodeDecision(value));
            return true;
          }
          auto head = log.ReadDecisionIndexValue(disruption, id);
          if (!head || head->empty()) {
            whole.insert(id);  // No head: read the pass itself.
            return true;
          }
          found.emplace(id, log::WithHead(log::DecodeDecision(*head), std::move(*only)));
          return true;
        });
  }
  for (std::uint64_t id : whole) {
    auto record = log.ReadDecision(id);
    if (!record) {
      throw log::LogError(log::ErrorKind::kCorruption, id,
                          "log: decision " + std::to_string(id) + " is indexed but missing");
    }
    ++result.decisions_read;
    found.insert_or_assign(id, log::DecodeDecisionKeeping(record->payload, keep));
  }
  return found;
}

// Decisions recorded before tenon kept prices, and forceful ones, carry none.
bool HasPrices(const DisruptionPrices& p) {
  return p.removed.value != 0 || !p.replacements.empty();
}

std::string PricesText(const DisruptionPrices& p) {
  std::string text = "    removes " + DollarsText(p.removed) + "/h";
  for (const auto& r : p.replacements) {
    text += "; replacement " + r.instance_type + " " + r.capacity_type + " in " + r.zone + " at " +
            DollarsText(r.price) + "/h";
  }
  return text + "; saving " + DollarsText(p.saving) + "/h" +
         (p.replacements.empty() ? "" : " at the replacements' first choice") + "\n";
}

// The NodeClaims the replacements of `decision` are: those launched with it (replacing), or
// with the replacing decision before it on the same NodeClaims (replaced, rolled back).
const std::vector<std::string>& ReplacementsOf(const AuditResult& result,
                                               const Decision& decision) {
  static const std::vector<std::string> kNone;
  if (auto it = result.replacements.find(decision.id.value); it != result.replacements.end()) {
    return it->second;
  }
  const auto& d = std::get<DisruptionDecision>(decision.body);
  for (const Decision& earlier : result.decisions) {
    if (earlier.id.value >= decision.id.value) break;
    const auto& e = std::get<DisruptionDecision>(earlier.body);
    if (e.phase != DisruptionPhase::kReplacing || e.nodeclaims != d.nodeclaims) continue;
    if (auto it = result.replacements.find(earlier.id.value); it != result.replacements.end()) {
      return it->second;
    }
  }
  return kNone;
}

// Where the replacements of the replacing decisions among `result` are, by name.
void NameReplacements(const log::EventLog& log, AuditResult& result) {
  for (const Decision& decision : result.decisions) {
    const auto& d = std::get<DisruptionDecision>(decision.body);
    if (d.phase != DisruptionPhase::kReplacing) continue;
    result.replacements[decision.id.value] = LaunchedBy(log, decision.cause);
  }
}

}  // namespace

AuditResult Audit(const log::EventLog& log, const AuditQuery& query) {
  if (!log.HasDecisionIndex()) return AuditByScan(log, query);
  AuditResult result;
  result.used_index = true;
  if (!query.node.empty()) result.nodeclaims = ClaimsOfNode(log, query.node, result.decisions_read);
  const log::CandidateFilter keep = KeptCandidates(query, result);
  // With a NodePool as well, InPool needs every candidate of the pool: read the decisions.
  if (!query.node.empty() && query.nodepool.empty()) {
    for (auto& [id, d] : NodeDecisions(log, result, keep)) {
      if (Matches(d, query, result.nodeclaims)) result.decisions.push_back(std::move(d));
    }
    NameReplacements(log, result);
    return result;
  }
  for (std::uint64_t id : CandidateIds(log, query, result.nodeclaims)) {
    auto record = log.ReadDecision(id);
    // The index and the decisions are written in one batch: an entry without its decision is
    // damage, not a race.
    if (!record) {
      throw log::LogError(log::ErrorKind::kCorruption, id,
                          "log: decision " + std::to_string(id) + " is indexed but missing");
    }
    ++result.decisions_read;
    Decision d = keep ? log::DecodeDecisionKeeping(record->payload, keep)
                      : log::DecodeDecision(record->payload);
    if (Matches(d, query, result.nodeclaims)) result.decisions.push_back(std::move(d));
  }
  NameReplacements(log, result);
  return result;
}

AuditResult AuditByScan(const log::EventLog& log, const AuditQuery& query) {
  AuditResult result;
  std::vector<Decision> all;
  std::set<std::string> claims;
  log.ScanDecisions(1, [&](const log::DecisionRecord& record) {
    ++result.decisions_read;
    Decision d = log::DecodeDecision(record.payload);
    const auto* l = std::get_if<LifecycleDecision>(&d.body);
    if (!query.node.empty() && l != nullptr && l->node_name == query.node &&
        !l->nodeclaim.empty()) {
      claims.insert(l->nodeclaim);
    }
    if (std::holds_alternative<DisruptionDecision>(d.body)) all.push_back(std::move(d));
    return true;
  });
  if (!query.node.empty()) claims.insert(query.node);
  result.nodeclaims.assign(claims.begin(), claims.end());
  for (auto& d : all) {
    if (Matches(d, query, result.nodeclaims)) result.decisions.push_back(std::move(d));
  }
  NameReplacements(log, result);
  return result;
}

std::string AuditText(const AuditResult& result, const AuditQuery& query) {
  std::string text;
  for (const Decision& decision : result.decisions) {
    const auto& d = std::get<DisruptionDecision>(decision.body);
    text += Rfc3339Text(decision.at) + "  decision " + std::to_string(decision.id.value) +
            " (event " + std::to_string(decision.cause.value) + ")  " + Name(d.method) + " " +
            Name(d.phase) + "\n    " + d.reason + "\n";
    if (HasPrices(d.prices)) text += PricesText(d.prices);
    if (!d.nodeclaims.empty()) {
      text += "    acting on:";
      for (const auto& claim : d.nodeclaims) text += " " + claim;
      text += "\n";
    }
    for (const auto& c : d.candidates) {
      if (!Shown(c, query, result)) continue;
      bool selected = Acted(d, c);
      text += "    " + std::string(selected ? "candidate " : "not disrupted ") + c.nodeclaim +
              " (" + c.nodepool +
              "): " + ReadableOutcome(c.outcome, ReplacementsOf(result, decision), result.verbose) +
              "\n";
    }
    if (const auto& names = ReplacementsOf(result, decision); !names.empty()) {
      text += "    replacements:";
      for (const auto& name : names) text += " " + name;
      text += "\n";
    }
    for (const auto& b : d.budgets) {
      if (!query.nodepool.empty() && b.nodepool != query.nodepool) continue;
      text += "    " + BudgetText(b) + "\n";
    }
  }
  text += std::to_string(result.decisions.size()) + " disruption decisions" +
          (result.used_index ? "" : " (no decision index in this log: scanned every decision)") +
          "\n";
  return text;
}

std::string AuditJson(const AuditResult& result, const AuditQuery& query) {
  nlohmann::json out = nlohmann::json::object();
  out["decisions"] = nlohmann::json::array();
  for (const Decision& decision : result.decisions) {
    const auto& d = std::get<DisruptionDecision>(decision.body);
    nlohmann::json j{{"id", decision.id.value},
                     {"cause_seq", decision.cause.value},
                     {"at", Rfc3339Text(decision.at)},
                     {"at_ns", decision.at.value},
                     {"method", Name(d.method)},
                     {"phase", Name(d.phase)},
                     {"reason", d.reason},
                     {"nodeclaims", d.nodeclaims}};
    j["candidates"] = nlohmann::json::array();
    for (const auto& c : d.candidates) {
      if (!Shown(c, query, result)) continue;
      nlohmann::json candidate = {{"nodeclaim", c.nodeclaim},
                                  {"nodepool", c.nodepool},
                                  {"disrupted", Acted(d, c)},
                                  {"outcome", c.outcome}};
      // The outcome's code and what it names, for tools that count blockers by kind.
      if (c.cause != Cause::kNone) candidate["cause"] = CauseName(c.cause);
      if (!c.subject.empty()) candidate["subject"] = c.subject;
      j["candidates"].push_back(std::move(candidate));
    }
    j["replacements"] = nlohmann::json::array();
    for (const auto& r : d.prices.replacements) {
      j["replacements"].push_back({{"instance_type", r.instance_type},
                                   {"zone", r.zone},
                                   {"capacity_type", r.capacity_type},
                                   {"price_micro_usd_hour", r.price.value}});
    }
    if (HasPrices(d.prices)) {
      j["removed_price_micro_usd_hour"] = d.prices.removed.value;
      j["saving_micro_usd_hour"] = d.prices.saving.value;
    }
    j["replacement_nodeclaims"] = ReplacementsOf(result, decision);
    j["budgets"] = nlohmann::json::array();
    for (const auto& b : d.budgets) {
      j["budgets"].push_back({{"nodepool", b.nodepool},
                              {"reason", b.reason},
                              {"allowed", b.allowed},
                              {"detail", b.detail}});
    }
    out["decisions"].push_back(std::move(j));
  }
  out["nodeclaims"] = result.nodeclaims;
  out["used_index"] = result.used_index;
  return out.dump(2) + "\n";
}

}  // namespace tenon::replay
