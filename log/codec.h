// The codec between the domain model (reducers/model.h) and Cap'n Proto records.
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

#include "reducers/core.h"

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

// A snapshot carries the state and the hash it had when written, in parts: a head with the
// scalars and small collections, then slices of the large ones (catalog, pods, nodes,
// NodeClaims). `sink` gets each part in order and may write it away before the next is made.
void EncodeSnapshot(const State& state, const std::function<void(std::string_view)>& sink);
// Reads the parts EncodeSnapshot made (or the single part an older log holds).
State DecodeSnapshot(const std::vector<std::string>& parts, std::uint64_t* stored_hash);

// A short human name for an event kind ("PodUpserted") and a command kind ("LaunchInstances").
std::string EventKind(const Event& event);
std::string CommandKind(const Command& command);

}  // namespace tenon::log
