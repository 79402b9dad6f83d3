// The log codec's fixed point, for the targets whose values end up in the log: a value decoded
// (or produced by a parser) encodes to bytes that decode again and encode to the same bytes.
// The encoding is deterministic (log/codec.h), so any difference is a field the codec loses or
// changes on the way through.
#pragma once

#include <string>

#include "log/codec.h"
#include "tests/fuzz/fuzz.h"

namespace tenon::fuzz {

// The bytes of a log entry, as the log writer encodes it.
inline std::string EncodeEntry(const log::Entry& entry) {
  if (const auto* event = std::get_if<Event>(&entry)) return log::EncodeEvent(*event);
  const auto& record = std::get<log::OutputRecord>(entry);
  Output output{record.commands, {}};
  for (DecisionId id : record.decision_ids) {
    Decision decision;  // The output record keeps only the ids of its decisions.
    decision.id = id;
    output.decisions.push_back(decision);
  }
  return log::EncodeOutput(record.cause, output);
}

// Decodes bytes this process encoded; they must decode, whatever value they came from.
template <class Bytes, class Decode>
auto DecodeOwn(const Bytes& bytes, Decode&& decode) {
  try {
    return decode(bytes);
  } catch (const log::CodecError& e) {
    Fail(std::string("the codec cannot decode what it encoded: ") + e.what());
  }
}

inline void CheckEntryRoundTrip(const log::Entry& entry) {
  const std::string once = EncodeEntry(entry);
  const std::string twice = EncodeEntry(DecodeOwn(once, log::DecodeEntry));
  if (once != twice) Fail("an entry encodes differently after a round trip through the codec");
}

inline void CheckDecisionRoundTrip(const Decision& decision) {
  const std::string once = log::EncodeDecision(decision);
  const std::string twice = log::EncodeDecision(DecodeOwn(once, log::DecodeDecision));
  if (once != twice) Fail("a decision encodes differently after a round trip through the codec");
}

}  // namespace tenon::fuzz
