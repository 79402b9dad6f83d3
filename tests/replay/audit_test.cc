// tenon audit on logs of simulated scenarios: the blocker that kept a node (a PDB, named), the
// budget state, the replacement's price and the saving, every filter, and the index answering
// exactly what a full scan of the decisions answers.
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "tests/replay/incident.h"

namespace tenon::testing {
namespace {

// The claim some candidate outcome of `method` names with `text`, or "".
std::string ClaimWith(const Outcome& o, DisruptionMethod method, const std::string& text) {
  for (const auto& [at, d] : o.disruptions) {
    for (const auto& c : d.candidates) {
      if (d.method == method && c.outcome.find(text) != std::string::npos) return c.nodeclaim;
    }
  }
  return {};
}

std::vector<std::uint64_t> Ids(const replay::AuditResult& result) {
  std::vector<std::uint64_t> ids;
  for (const auto& d : result.decisions) ids.push_back(d.id.value);
  return ids;
}

// The node blocked by the PDB is found by its node name, and its record names the PDB; the
// node removed instead shows the executed decision with the budget that allowed it.
TEST(Audit, NamesThePdbThatBlockedANode) {
  auto run = RunKept(PdbScenario());
  const Outcome& o = run->outcome;
  const std::string blocked =
      ClaimWith(o, DisruptionMethod::kSingleNodeConsolidation, "PDB a-pdb allows 0");
  ASSERT_FALSE(blocked.empty()) << Outcomes(o);
  const std::string node = NodeOf(o, blocked);
  ASSERT_FALSE(node.empty());
  auto log = run->Open();
  ASSERT_TRUE(log->HasDecisionIndex());

  auto result = replay::Audit(*log, {.node = node});
  EXPECT_TRUE(result.used_index);
  EXPECT_NE(std::find(result.nodeclaims.begin(), result.nodeclaims.end(), blocked),
            result.nodeclaims.end());
  bool named = false;
  for (const auto& decision : result.decisions) {
    const auto& d = std::get<DisruptionDecision>(decision.body);
    EXPECT_TRUE(std::find(d.nodeclaims.begin(), d.nodeclaims.end(), blocked) == d.nodeclaims.end())
        << "the PDB-protected node was disrupted by " << Name(d.method) << " " << Name(d.phase);
    for (const auto& c : d.candidates) {
      named = named || (c.nodeclaim == blocked &&
                        c.outcome.find(": PDB a-pdb allows 0 disruptions") != std::string::npos);
    }
  }
  EXPECT_TRUE(named) << replay::AuditText(result, {.node = node});

  // The text names the PDB on the node's own candidate line, and nobody else's.
  const std::string text = replay::AuditText(result, {.node = node});
  EXPECT_NE(text.find("not disrupted " + blocked + " (default): pod default/a-"), std::string::npos)
      << text;
  EXPECT_NE(text.find("PDB a-pdb allows 0 disruptions"), std::string::npos) << text;

  // The other node went, executed by single-node consolidation within a budget allowing it.
  auto executed = Phase(o, DisruptionMethod::kSingleNodeConsolidation, DisruptionPhase::kExecuted);
  ASSERT_EQ(executed.size(), 1u) << Outcomes(o);
  const std::string removed = executed[0]->nodeclaims.at(0);
  auto gone = replay::Audit(
      *log, {.node = NodeOf(o, removed), .method = DisruptionMethod::kSingleNodeConsolidation});
  auto found = std::find_if(gone.decisions.begin(), gone.decisions.end(), [](const Decision& d) {
    return std::get<DisruptionDecision>(d.body).phase == DisruptionPhase::kExecuted;
  });
  ASSERT_NE(found, gone.decisions.end()) << replay::AuditText(gone, {});
  const auto& budgets = std::get<DisruptionDecision>(found->body).budgets;
  ASSERT_EQ(budgets.size(), 1u);
  EXPECT_EQ(budgets[0].nodepool, "default");
  EXPECT_EQ(budgets[0].reason, "Underutilized");
  EXPECT_GE(budgets[0].allowed, 1);
}

// The command line gives the same answer as JSON, the disrupted flag set only on the claims
// acted on.
TEST(Audit, JsonFromTheCommandLine) {
  auto run = RunKept(PdbScenario());
  const Outcome& o = run->outcome;
  const std::string blocked =
      ClaimWith(o, DisruptionMethod::kSingleNodeConsolidation, "PDB a-pdb allows 0");
  ASSERT_FALSE(blocked.empty());
  auto cli = Tenon("audit " + run->log().string() + " --node " + NodeOf(o, blocked) + " --json");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  auto json = nlohmann::json::parse(cli.out);
  ASSERT_FALSE(json["decisions"].empty());
  bool named = false;
  for (const auto& d : json["decisions"]) {
    for (const auto& c : d["candidates"]) {
      EXPECT_EQ(c["nodeclaim"], blocked);  // Only the queried node's candidate lines.
      EXPECT_FALSE(c["disrupted"].template get<bool>());
      if (c["outcome"].get<std::string>().find("PDB a-pdb") == std::string::npos) continue;
      named = true;
      EXPECT_EQ(c.value("cause", ""), "PodDisruptionBudget") << c.dump();
      EXPECT_EQ(c.value("subject", "").rfind("default/", 0), 0u) << c.dump();
    }
  }
  EXPECT_TRUE(named) << cli.out;
}

// The replacement's type and price and the saving are in the record: m5.xlarge at $0.192/h
// replaced by m5.large at $0.096/h saves $0.096/h.
TEST(Audit, ShowsReplacementPriceAndSaving) {
  auto run = RunKept(ReplaceScenario());
  auto log = run->Open();
  auto result = replay::Audit(*log, {.method = DisruptionMethod::kSingleNodeConsolidation});
  const std::string text = replay::AuditText(result, {});
  EXPECT_NE(text.find("SingleNodeConsolidation replaced"), std::string::npos) << text;
  EXPECT_NE(text.find("replace with one on-demand node (m5.large from $0.0960/h"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("saving at least $0.0960/h"), std::string::npos) << text;
  for (const auto& d : result.decisions) {
    EXPECT_EQ(std::get<DisruptionDecision>(d.body).method,
              DisruptionMethod::kSingleNodeConsolidation);
  }
}

// The JSON carries the replacement and the prices as fields, not only in the reason: the
// m5.xlarge ($0.192/h) replaced by an m5.large ($0.096/h) saves $0.096/h, on the proposal and
// on the validated decision alike.
TEST(Audit, JsonCarriesReplacementPricesAndSaving) {
  auto run = RunKept(ReplaceScenario());
  auto cli = Tenon("audit " + run->log().string() + " --method SingleNodeConsolidation --json");
  ASSERT_EQ(cli.exit_code, 0) << cli.out;
  auto json = nlohmann::json::parse(cli.out);
  std::set<std::string> priced;
  for (const auto& d : json["decisions"]) {
    if (!d.contains("saving_micro_usd_hour")) {
      EXPECT_TRUE(d["replacements"].empty()) << d.dump();
      continue;
    }
    priced.insert(d["phase"].get<std::string>());
    ASSERT_EQ(d["replacements"].size(), 1u) << d.dump();
    const auto& r = d["replacements"][0];
    EXPECT_EQ(r["instance_type"], "m5.large");
    EXPECT_EQ(r["capacity_type"], "on-demand");
    EXPECT_EQ(r["price_micro_usd_hour"], 96'000);
    EXPECT_EQ(d["removed_price_micro_usd_hour"], 192'000);
    EXPECT_EQ(d["saving_micro_usd_hour"].get<std::int64_t>(),
              d["removed_price_micro_usd_hour"].get<std::int64_t>() -
                  r["price_micro_usd_hour"].get<std::int64_t>());
  }
  EXPECT_EQ(priced, (std::set<std::string>{"proposed", "replacing"})) << cli.out;
  auto log = run->Open();
  const std::string text = replay::AuditText(
      replay::Audit(*log, {.method = DisruptionMethod::kSingleNodeConsolidation}), {});
  EXPECT_NE(text.find("removes $0.1920/h; replacement m5.large on-demand in us-east-1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("at $0.0960/h; saving $0.0960/h"), std::string::npos) << text;
}

// A disruption decision as tenon wrote it before decisions carried prices: encoded by
// `capnp encode` with log/tenon.capnp as of commit 1c569f2 (no fields past @17).
std::string OldReplacingDecision() {
  const std::string hex =
      "000000004400000000000000050006000300000000000000280000000000000000b88e0f449d971703000000"
      "00000000000000000000000015000000c20000001d00000052000000210000000e000000290000001f000000"
      "8900000027000000c1000000f201000053696e676c654e6f6465436f6e736f6c69646174696f6e007265706c"
      "6163696e6700000000000000010000006200000064656661756c742d61626300000000000400000000000300"
      "09000000620000000d000000420000000d0000005204000064656661756c742d616263000000000064656661"
      "756c740073656c65637465643a207265706c6163652077697468206f6e65206f6e2d64656d616e64206e6f64"
      "6520286d352e6c617267652066726f6d2024302e303936302f682c2031207479706573292c20736176696e67"
      "206174206c656173742024302e303936302f683b2069747320706f6473206d6f76653a2064656661756c742f"
      "612d30202d3e2023300000000000000004000000010003000100000000000000090000004200000009000000"
      "720000000d000000b201000064656661756c7400556e6465727574696c697a65640000006275646765742030"
      "20286e6f64657320313025292c2030206f662031206e6f64657320616c72656164792064697372757074696e"
      "67000000756e6368616e67656420616674657220313520733b207461696e74696e6720616e64206c61756e63"
      "68696e672031207265706c6163656d656e74287329000000";
  std::string bytes;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return bytes;
}

// A log written before the price fields existed still audits: the decision decodes with no
// prices and no replacement, and the text and JSON show what it has without inventing any.
TEST(Audit, DecisionsWithoutPricesStillAudit) {
  const std::string old = OldReplacingDecision();
  const Decision decoded = log::DecodeDecision(old);
  const auto& d = std::get<DisruptionDecision>(decoded.body);
  EXPECT_EQ(d.phase, DisruptionPhase::kReplacing);
  EXPECT_EQ(d.budgets.size(), 1u);
  EXPECT_EQ(d.prices, DisruptionPrices{});

  TempDir dir;
  auto log = log::EventLog::Open(dir.path() / "log", {});
  log::AppendBatch batch;
  auto record = log::DecisionRecordFor(decoded);
  record.payload = old;
  batch.decisions.push_back(std::move(record));
  batch.events.push_back(log::EncodeEvent(Event{Tick{Minutes(1)}}));
  log->Append(std::move(batch));

  const replay::AuditQuery q{.node = "default-abc"};
  const auto result = replay::Audit(*log, q);
  ASSERT_EQ(result.decisions.size(), 1u);
  EXPECT_EQ(result.decisions[0], decoded);
  const std::string text = replay::AuditText(result, q);
  EXPECT_NE(text.find("SingleNodeConsolidation replacing"), std::string::npos) << text;
  EXPECT_NE(text.find("budget default Underutilized: "), std::string::npos) << text;
  EXPECT_NE(text.find(": 1 allowed"), std::string::npos) << text;
  EXPECT_EQ(text.find("removes "), std::string::npos) << text;
  auto json = nlohmann::json::parse(replay::AuditJson(result, q));
  ASSERT_EQ(json["decisions"].size(), 1u);
  const auto& j = json["decisions"][0];
  EXPECT_TRUE(j["replacements"].empty());
  EXPECT_FALSE(j.contains("saving_micro_usd_hour"));
  EXPECT_FALSE(j.contains("removed_price_micro_usd_hour"));
  EXPECT_EQ(j["budgets"][0]["allowed"], 1);
}

// Rewrites every priced disruption decision of the log at `dir` through `change`.
std::size_t RewritePriced(const std::filesystem::path& dir,
                          const std::function<void(DisruptionDecision&)>& change) {
  auto log = log::EventLog::Open(dir, {});
  log::AppendBatch batch;
  log->ScanDecisions(1, [&](const log::DecisionRecord& record) {
    Decision d = log::DecodeDecision(record.payload);
    auto* x = std::get_if<DisruptionDecision>(&d.body);
    if (x != nullptr && x->prices != DisruptionPrices{}) {
      change(*x);
      batch.decisions.push_back(log::DecisionRecordFor(d));
    }
    return true;
  });
  const std::size_t n = batch.decisions.size();
  log->Append(std::move(batch));
  return n;
}

// A log whose decisions were written without prices, as an earlier version wrote them, still
// verifies as identical against this build, which prices them; a decision that differs in
// anything else still diverges.
TEST(Audit, LogWrittenWithoutPricesStillVerifies) {
  auto run = RunKept(ReplaceScenario());
  ASSERT_GT(RewritePriced(run->log(), [](DisruptionDecision& d) { d.prices = {}; }), 0u);
  auto verify = replay::Verify(*run->Open());
  EXPECT_EQ(verify.verdict, replay::Verdict::kIdentical) << verify.detail;

  auto other = RunKept(ReplaceScenario());
  RewritePriced(other->log(), [](DisruptionDecision& d) {
    d.prices = {};
    d.reason += " (edited)";
  });
  EXPECT_EQ(replay::Verify(*other->Open()).verdict, replay::Verdict::kDiverged);
}

// Every filter, alone and combined, answers through the index exactly what scanning every
// decision answers, and the time window keeps only decisions inside it.
TEST(Audit, IndexAgreesWithAFullScan) {
  auto run = RunKept(PdbScenario());
  const Outcome& o = run->outcome;
  auto log = run->Open();
  ASSERT_GE(o.disruptions.size(), 3u);
  const Instant middle = o.disruptions[o.disruptions.size() / 2].first;
  std::vector<replay::AuditQuery> queries = {
      {},
      {.nodepool = "default"},
      {.nodepool = "none"},
      {.method = DisruptionMethod::kEmptiness},
      {.method = DisruptionMethod::kSingleNodeConsolidation},
      {.since = middle},
      {.until = middle},
      {.since = Minutes(4), .until = Minutes(7)},
      {.nodepool = "default",
       .method = DisruptionMethod::kSingleNodeConsolidation,
       .since = Minutes(5)},
  };
  for (const auto& [claim, instance] : o.nodeclaims) queries.push_back({.node = claim});
  for (const auto& l : o.history) {
    if (!l.node_name.empty()) queries.push_back({.node = l.node_name});
  }
  std::size_t nonempty = 0;
  for (const auto& q : queries) {
    auto indexed = replay::Audit(*log, q);
    auto scanned = replay::AuditByScan(*log, q);
    EXPECT_TRUE(indexed.used_index);
    EXPECT_EQ(Ids(indexed), Ids(scanned))
        << q.node << q.nodepool << (q.method ? Name(*q.method) : "");
    EXPECT_EQ(indexed.nodeclaims, scanned.nodeclaims);
    nonempty += indexed.decisions.empty() ? 0 : 1;
    for (const auto& d : indexed.decisions) {
      EXPECT_TRUE(!q.since || d.at >= *q.since);
      EXPECT_TRUE(!q.until || d.at <= *q.until);
    }
  }
  EXPECT_GT(nonempty, queries.size() / 2);
  EXPECT_TRUE(replay::Audit(*log, {.nodepool = "none"}).decisions.empty());
  EXPECT_EQ(replay::Audit(*log, {}).decisions.size(), o.disruptions.size());
}

// A log of passes over six candidates each (two claims on one node), written with the index's
// trimmed copies, and the same log as an index of the earlier format (terms only) writes it.
// How the index entries of a pass carry it: not at all (indexed before values), each claim's
// entry the whole pass trimmed to the claim (before heads), or the claim's candidates with the
// head under the kind term (now).
enum class IndexValues { kNone, kWholeTrimmed, kCandidatesAndHead };

// Rewrites `record`'s index values as a log written before heads holds them.
void AsWholeTrimmed(log::DecisionRecord& record) {
  const std::string kind = log::IndexTerm(log::IndexKind::kKind, "disruption");
  std::optional<Decision> head;
  for (std::size_t i = 0; i < record.index_terms.size(); ++i) {
    if (record.index_terms[i] == kind) {
      head = log::DecodeDecision(record.index_values[i]);
      record.index_values[i].clear();
    }
  }
  ASSERT_TRUE(head.has_value());
  for (auto& value : record.index_values) {
    if (value.empty()) continue;
    value = log::EncodeDecision(log::WithHead(*head, *log::DecodeCandidatesOnly(value)));
  }
}

void WritePasses(log::EventLog& log, IndexValues values) {
  log::AppendBatch batch;
  std::uint64_t id = 0;
  for (int claim = 0; claim < 8; ++claim) {
    LifecycleDecision l{"c-" + std::to_string(claim), Transition::kRegistered, "",
                        "node-" + std::to_string(claim / 2), ""};
    batch.decisions.push_back(log::DecisionRecordFor({DecisionId{++id}, Seq{id}, Minutes(1), l}));
  }
  for (int pass = 0; pass < 12; ++pass) {
    DisruptionDecision d{DisruptionMethod::kSingleNodeConsolidation,
                         pass % 3 == 0 ? DisruptionPhase::kExecuted : DisruptionPhase::kBlocked,
                         {},
                         {},
                         {},
                         "pass " + std::to_string(pass)};
    for (int i = 0; i < 6; ++i) {
      const int claim = (pass + i) % 8;
      d.candidates.push_back({"c-" + std::to_string(claim), claim < 4 ? "a" : "b",
                              "outcome " + std::to_string(pass * 10 + i), Cause::kNone, ""});
    }
    if (d.phase == DisruptionPhase::kExecuted)
      d.nodeclaims.push_back(d.candidates.front().nodeclaim);
    d.budgets.push_back({"a", "Underutilized", 1, "budget"});
    auto record = log::DecisionRecordFor({DecisionId{++id}, Seq{id}, Minutes(2 + pass), d});
    if (values == IndexValues::kNone) record.index_values.clear();
    if (values == IndexValues::kWholeTrimmed) AsWholeTrimmed(record);
    batch.decisions.push_back(std::move(record));
  }
  batch.events.push_back(log::EncodeEvent(Event{Tick{Minutes(1)}}));
  log.Append(std::move(batch));
}

// A node query answers from the index's candidates and heads the same text and JSON as from
// the decisions themselves, as a scan, as an index without values and as one holding whole
// trimmed passes (logs indexed by earlier versions).
TEST(Audit, TrimmedIndexCopiesAnswerAsTheDecisionsDo) {
  TempDir dir;
  auto with = log::EventLog::Open(dir.path() / "with", {});
  auto without = log::EventLog::Open(dir.path() / "without", {});
  auto trimmed = log::EventLog::Open(dir.path() / "trimmed", {});
  WritePasses(*with, IndexValues::kCandidatesAndHead);
  WritePasses(*without, IndexValues::kNone);
  WritePasses(*trimmed, IndexValues::kWholeTrimmed);
  std::size_t shown = 0;
  for (int node = 0; node < 4; ++node) {
    for (const std::string pool : {"", "a"}) {
      const replay::AuditQuery q{.node = "node-" + std::to_string(node), .nodepool = pool};
      const auto fast = replay::Audit(*with, q);
      const auto old = replay::Audit(*without, q);
      const auto before = replay::Audit(*trimmed, q);
      auto scan = replay::AuditByScan(*with, q);
      scan.used_index = true;  // Only the closing line's note says how the answer was found.
      EXPECT_EQ(replay::AuditText(fast, q), replay::AuditText(old, q));
      EXPECT_EQ(replay::AuditText(fast, q), replay::AuditText(before, q));
      EXPECT_EQ(replay::AuditJson(fast, q), replay::AuditJson(before, q));
      EXPECT_EQ(replay::AuditText(fast, q), replay::AuditText(scan, q));
      EXPECT_EQ(replay::AuditJson(fast, q), replay::AuditJson(scan, q));
      shown += fast.decisions.size();
    }
  }
  EXPECT_GT(shown, 12u);
}

}  // namespace
}  // namespace tenon::testing
