// The codec between the domain model (model/model.h) and Cap'n Proto records.
//
// Encoding is deterministic: the same value always gives the same bytes. Decoding outside
// input (a record read back from disk) never trusts it: malformed bytes raise CodecError.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "log/event_log.h"
#include "model/state.h"

namespace tenon::log {

class CodecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The commands one event produced, and the ids of the decisions it made.
struct OutputRecord {
  tenon::Seq cause{0};
  std::vector<Command> commands;
  std::vector<DecisionId> decision_ids;
  friend bool operator==(const OutputRecord&, const OutputRecord&) = default;
};

using Entry = std::variant<Event, OutputRecord>;

std::string EncodeEvent(const Event& event);
std::string EncodeOutput(tenon::Seq cause, const Output& output);
Entry DecodeEntry(std::string_view bytes);

std::string EncodeDecision(const Decision& decision);
Decision DecodeDecision(std::string_view bytes);
// Whether to decode a disruption candidate, given its NodeClaim and NodePool.
using CandidateFilter = std::function<bool(std::string_view nodeclaim, std::string_view nodepool)>;
// The same, but a disruption decision keeps only the candidates `keep` accepts: an audit query
// about one node or NodePool need not decode the other candidates of a pass over many.
Decision DecodeDecisionKeeping(std::string_view bytes, const CandidateFilter& keep);

// The decision index (the log's decision_index family): the terms a decision is found under.
// A term is its kind's letter and a name ended by NUL (so "web-1" never matches "web-10"), or
// for time the letter and the big-endian nanoseconds.
enum class IndexKind : char {
  kNodeClaim = 'c',  // Lifecycle steps, disruption candidates and targets, planned claims.
  kNode = 'n',       // Lifecycle steps naming the node (how a node name leads to its claim).
  kPod = 'p',        // Provisioning outcomes and the pods of planned claims.
  kNodePool = 'P',   // Planned claims, disruption candidates and budgets.
  kMethod = 'm',     // Disruption method: Emptiness, Drift, SingleNodeConsolidation, ...
  kKind = 'k',       // provisioning | lifecycle | disruption
  kTime = 'T',       // Every decision, by its time.
};
std::string IndexTerm(IndexKind kind, std::string_view name);
std::string TimeTerm(Instant at);
// Every term of one decision, sorted, without repeats.
std::vector<std::string> DecisionIndexTerms(const Decision& decision);
// The record Append stores: the encoded decision with its index terms, and for a disruption
// pass over several candidates, under each NodeClaim's term, that claim's candidates alone
// (EncodeCandidatesOnly), and under its kind term the pass's head (DecisionHead). Logs indexed
// before kept, under each NodeClaim's term, the whole pass trimmed to that claim's candidates;
// audit reads both.
DecisionRecord DecisionRecordFor(const Decision& decision);
// The decision without its disruption candidates.
Decision DecisionHead(const Decision& decision);
// An index value holding a pass's candidates only (its head is under the kind term): a
// disruption decision without a method or phase. DecodeCandidatesOnly reads one back, and is
// nullopt for any other decision.
std::string EncodeCandidatesOnly(const Decision& decision,
                                 const std::vector<DisruptionCandidate>& candidates);
std::optional<std::vector<DisruptionCandidate>> DecodeCandidatesOnly(std::string_view bytes);
// The pass `head` with the candidates of a candidates-only value.
Decision WithHead(Decision head, std::vector<DisruptionCandidate> candidates);
// "provisioning", "lifecycle" or "disruption".
std::string DecisionKind(const Decision& decision);

// A snapshot carries the state and the hash it had when written, in parts: a head with the
// scalars and small collections, then slices of the large ones (catalog, pods, nodes,
// NodeClaims). `sink` gets each part in order and may write it away before the next is made.
void EncodeSnapshot(const State& state, const std::function<void(std::string_view)>& sink);
// Reads the parts EncodeSnapshot made (or the single part an older log holds).
State DecodeSnapshot(const std::vector<std::string>& parts, std::uint64_t* stored_hash);
// The hash a snapshot's state had when written, read from its head part alone.
std::uint64_t SnapshotStoredHash(std::string_view head);

// A short human name for an event kind ("PodUpserted") and a command kind ("LaunchInstance").
std::string EventKind(const Event& event);
std::string CommandKind(const Command& command);

}  // namespace tenon::log
