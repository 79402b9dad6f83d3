// Domain <-> Cap'n Proto. One Put/Get pair per type (codec_kube.cc, codec_cloud.cc), the unions
// alternative by alternative (codec_events.cc, codec_commands.cc, and decisions here), the
// snapshot (codec_snapshot.cc). Enum values read from disk are range-checked, never cast
// blindly. This file holds the decisions, the framing and the records' entry points.
#include <cassert>
#include <unordered_map>

#include "log/codec_parts.h"

namespace tenon::log::parts {

// A disruption pass's candidates, their pools and outcomes written once each in the decision's
// `texts` and named by position: a pass over a thousand spot nodes repeats one pool and one
// blocker a thousand times, and a multi-node group's plan (every pod's move) once per member.
// A cause as recorded; a number past the last code is a damaged record.
Cause CauseFrom(std::uint8_t code) {
  if (code > static_cast<std::uint8_t>(kCauseLast)) {
    throw CodecError("decision names cause " + std::to_string(code) + ", past the last known");
  }
  return static_cast<Cause>(code);
}

void PutCandidates(s::Decision::Disruption::Builder g,
                   const std::vector<DisruptionCandidate>& from) {
  // A handful (an index entry's one candidate) is smaller with its texts in place; subjects
  // are always in the table.
  constexpr std::size_t kSharedTextsFrom = 4;
  const bool shared = from.size() >= kSharedTextsFrom;
  auto candidates = g.initCandidates(from.size());
  std::unordered_map<std::string_view, std::uint32_t> refs;  // text -> position + 1
  std::vector<std::string_view> texts;
  auto ref = [&](const std::string& text) {
    auto [it, fresh] = refs.try_emplace(text, static_cast<std::uint32_t>(texts.size() + 1));
    if (fresh) texts.push_back(text);
    return it->second;
  };
  for (unsigned i = 0; i < from.size(); ++i) {
    candidates[i].setNodeClaim(T(from[i].nodeclaim));
    if (shared) {
      candidates[i].setNodePoolText(ref(from[i].nodepool));
      candidates[i].setOutcomeText(ref(from[i].outcome));
    } else {
      candidates[i].setNodePool(T(from[i].nodepool));
      candidates[i].setOutcome(T(from[i].outcome));
    }
    candidates[i].setCause(static_cast<std::uint8_t>(from[i].cause));
    if (!from[i].subject.empty()) candidates[i].setSubjectText(ref(from[i].subject));
  }
  if (texts.empty()) return;
  auto table = g.initTexts(texts.size());
  for (unsigned i = 0; i < texts.size(); ++i) {
    table.set(i, capnp::Text::Reader(texts[i].data(), texts[i].size()));
  }
}

void Put(s::Decision::Builder b, const Decision& d) {
  b.setId(d.id.value);
  b.setCauseSeq(d.cause.value);
  b.setAtNs(d.at.value);
  std::visit(Overloaded{
                 [&](const ProvisioningDecision& p) {
                   auto g = b.initProvisioning();
                   g.setBatchOpenedNs(p.batch_opened.value);
                   PutList(g.initNewClaims(p.new_claims.size()), p.new_claims);
                   PutList(g.initPods(p.pods.size()), p.pods);
                 },
                 [&](const DisruptionDecision& x) {
                   auto g = b.initDisruption();
                   g.setMethod(Name(x.method));
                   g.setPhase(Name(x.phase));
                   PutTexts(g.initNodeClaims(x.nodeclaims.size()), x.nodeclaims);
                   PutCandidates(g, x.candidates);
                   auto budgets = g.initBudgets(x.budgets.size());
                   for (unsigned i = 0; i < x.budgets.size(); ++i) {
                     budgets[i].setNodePool(T(x.budgets[i].nodepool));
                     budgets[i].setReason(T(x.budgets[i].reason));
                     budgets[i].setAllowed(x.budgets[i].allowed);
                     budgets[i].setDetail(T(x.budgets[i].detail));
                   }
                   g.setReason(T(x.reason));
                   g.setRemovedPriceMicroUsdHour(x.prices.removed.value);
                   if (!x.prices.replacements.empty()) {
                     PutList(g.initReplacements(x.prices.replacements.size()),
                             x.prices.replacements);
                   }
                   g.setSavingMicroUsdHour(x.prices.saving.value);
                 },
                 [&](const LifecycleDecision& l) {
                   auto g = b.initLifecycle();
                   g.setNodeClaim(T(l.nodeclaim));
                   g.setTransition(Name(l.transition));
                   g.setReason(T(l.reason));
                   g.setNodeName(T(l.node_name));
                   g.setInstanceId(T(l.instance_id));
                   g.setCause(static_cast<std::uint8_t>(l.cause));
                   g.setSubject(T(l.subject));
                 },
             },
             d.body);
}

// `keep` (may be empty: keep all) picks which of a disruption decision's candidates are decoded;
// the others are never turned into strings, which is most of the work on a pass of many.
// A disruption pass's candidates, those `keep` keeps (all without it).
std::vector<DisruptionCandidate> GetCandidates(s::Decision::Disruption::Reader g,
                                               const CandidateFilter& keep) {
  std::vector<DisruptionCandidate> out;
  // The shared texts, each read once: the reader counts every visit against the record's
  // traversal limit, and a long outcome shared by many candidates would exceed it if each
  // candidate visited it again.
  std::vector<std::string_view> texts;
  texts.reserve(g.getTexts().size());
  for (auto t : g.getTexts()) texts.push_back(View(t));
  // A candidate's pool or outcome: its own field, or the shared text it names.
  auto text = [&](std::uint32_t ref, capnp::Text::Reader own) {
    if (ref == 0) return View(own);
    if (ref > texts.size()) {
      throw CodecError("disruption candidate names text " + std::to_string(ref) + " of " +
                       std::to_string(texts.size()));
    }
    return texts[ref - 1];
  };
  for (auto c : g.getCandidates()) {
    const std::string_view pool = text(c.getNodePoolText(), c.getNodePool());
    if (keep && !keep(View(c.getNodeClaim()), pool)) continue;
    out.push_back({S(c.getNodeClaim()), std::string(pool),
                   std::string(text(c.getOutcomeText(), c.getOutcome())), CauseFrom(c.getCause()),
                   std::string(text(c.getSubjectText(), capnp::Text::Reader()))});
  }
  return out;
}

Decision Get(s::Decision::Reader r, const CandidateFilter& keep) {
  // Ids are handed out from 1; a record with none is damaged or forged and keys nothing.
  if (r.getId() == 0) throw CodecError("a decision without an id (0)");
  Decision d{DecisionId{r.getId()}, tenon::Seq{r.getCauseSeq()}, Instant{r.getAtNs()}, {}};
  switch (r.which()) {
    case s::Decision::PROVISIONING: {
      auto g = r.getProvisioning();
      d.body =
          ProvisioningDecision{Instant{g.getBatchOpenedNs()}, GetList<ClaimPlan>(g.getNewClaims()),
                               GetList<PodOutcome>(g.getPods())};
      return d;
    }
    case s::Decision::DISRUPTION: {
      auto g = r.getDisruption();
      DisruptionDecision x{Named(ParseDisruptionMethod, g.getMethod(), "disruption method"),
                           Named(ParseDisruptionPhase, g.getPhase(), "disruption phase"),
                           GetTexts(g.getNodeClaims()),
                           {},
                           {},
                           S(g.getReason()),
                           {MicroUsdPerHour{g.getRemovedPriceMicroUsdHour()},
                            GetList<OfferingChoice>(g.getReplacements()),
                            MicroUsdPerHour{g.getSavingMicroUsdHour()}}};
      x.candidates = GetCandidates(g, keep);
      for (auto b : g.getBudgets()) {
        x.budgets.push_back(
            {S(b.getNodePool()), S(b.getReason()), b.getAllowed(), S(b.getDetail())});
      }
      d.body = std::move(x);
      return d;
    }
    case s::Decision::LIFECYCLE: {
      auto g = r.getLifecycle();
      d.body = LifecycleDecision{
          S(g.getNodeClaim()),  Named(ParseTransition, g.getTransition(), "lifecycle transition"),
          S(g.getReason()),     S(g.getNodeName()),
          S(g.getInstanceId()), CauseFrom(g.getCause()),
          S(g.getSubject())};
      return d;
    }
    case s::Decision::NONE:
      break;
  }
  throw CodecError("decision record without a body");
}

std::string ToBytes(capnp::MallocMessageBuilder& message) {
  const std::size_t size = capnp::computeSerializedSizeInWords(message) * sizeof(capnp::word);
  std::string bytes(size, '\0');
  kj::ArrayOutputStream out(kj::arrayPtr(reinterpret_cast<kj::byte*>(bytes.data()), size));
  capnp::writeMessage(out, message);
  assert(out.getArray().size() == size);
  return bytes;
}

}  // namespace tenon::log::parts

namespace tenon::log {
using namespace parts;

std::string EncodeEvent(const Event& event) {
  capnp::MallocMessageBuilder message;
  Put(message.initRoot<s::Record>().initEvent(), event);
  return ToBytes(message);
}

std::string EncodeOutput(tenon::Seq cause, const Output& output) {
  capnp::MallocMessageBuilder message;
  auto o = message.initRoot<s::Record>().initOutput();
  o.setCauseSeq(cause.value);
  PutList(o.initCommands(output.commands.size()), output.commands);
  auto ids = o.initDecisionIds(output.decisions.size());
  for (unsigned i = 0; i < output.decisions.size(); ++i) ids.set(i, output.decisions[i].id.value);
  return ToBytes(message);
}

Entry DecodeEntry(std::string_view bytes) {
  return WithReader<s::Record>(bytes, [](s::Record::Reader r) -> Entry {
    switch (r.which()) {
      case s::Record::EVENT:
        return Get(r.getEvent());
      case s::Record::OUTPUT: {
        auto o = r.getOutput();
        OutputRecord out{tenon::Seq{o.getCauseSeq()}, GetList<Command>(o.getCommands()), {}};
        for (auto id : o.getDecisionIds()) out.decision_ids.push_back(DecisionId{id});
        return out;
      }
    }
    throw CodecError("unknown record kind");
  });
}

std::string EncodeDecision(const Decision& decision) {
  capnp::MallocMessageBuilder message;
  Put(message.initRoot<s::Decision>(), decision);
  return ToBytes(message);
}

Decision DecodeDecision(std::string_view bytes) {
  return WithReader<s::Decision>(bytes, [](s::Decision::Reader r) { return Get(r); });
}

std::string EncodeCandidatesOnly(const Decision& decision,
                                 const std::vector<DisruptionCandidate>& candidates) {
  capnp::MallocMessageBuilder message;
  auto b = message.initRoot<s::Decision>();
  b.setId(decision.id.value);
  b.setCauseSeq(decision.cause.value);
  b.setAtNs(decision.at.value);
  PutCandidates(b.initDisruption(), candidates);
  return ToBytes(message);
}

std::optional<std::vector<DisruptionCandidate>> DecodeCandidatesOnly(std::string_view bytes) {
  using Candidates = std::optional<std::vector<DisruptionCandidate>>;
  return WithReader<s::Decision>(bytes, [](s::Decision::Reader r) -> Candidates {
    if (r.which() != s::Decision::DISRUPTION || r.getDisruption().getMethod().size() != 0) {
      return std::nullopt;
    }
    return GetCandidates(r.getDisruption(), {});
  });
}

Decision DecodeDecisionKeeping(std::string_view bytes, const CandidateFilter& keep) {
  return WithReader<s::Decision>(bytes, [&](s::Decision::Reader r) { return Get(r, keep); });
}

}  // namespace tenon::log
