// libFuzzer target: the log's record decoders on arbitrary bytes. The first byte picks what the
// rest is read as: 0 a log entry (event or output), 1 a decision, 2 a snapshot whose parts each
// follow a 4-byte little-endian length. A decoder returns a value or throws CodecError, never
// anything else (Cap'n Proto's own exceptions included); what it returns encodes to bytes that
// decode and encode to the same bytes; a decision's index terms can be built; a snapshot's state
// re-encodes to a snapshot that stores its hash.
#include <algorithm>
#include <cstring>

#include "tests/fuzz/codec_check.h"

namespace {

using namespace tenon;

std::vector<std::string> Parts(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> parts;
  while (size > 0) {
    std::uint32_t length = 0;
    const std::size_t header = std::min<std::size_t>(size, sizeof length);
    std::memcpy(&length, data, header);  // The x86 and the archive's byte order alike.
    data += header;
    size -= header;
    const std::size_t n = std::min<std::size_t>(size, length);
    parts.push_back(fuzz::Text(data, n));
    data += n;
    size -= n;
  }
  return parts;
}

std::vector<std::string> EncodeSnapshotParts(const State& state) {
  std::vector<std::string> parts;
  log::EncodeSnapshot(state, [&](std::string_view part) { parts.emplace_back(part); });
  return parts;
}

void Snapshot(const std::vector<std::string>& parts) {
  State state;
  std::uint64_t stored = 0;
  if (!fuzz::ReturnsOrThrows<log::CodecError>([&] { state = log::DecodeSnapshot(parts, &stored); }))
    return;
  const std::vector<std::string> once = EncodeSnapshotParts(state);
  std::uint64_t stored_again = 0;
  const State again =
      fuzz::DecodeOwn(once, [&](const auto& p) { return log::DecodeSnapshot(p, &stored_again); });
  if (stored_again != StateHash(state))
    fuzz::Fail("a snapshot stores another hash than its state's");
  if (log::SnapshotStoredHash(once.front()) != stored_again) {
    fuzz::Fail("a snapshot's head alone gives another hash");
  }
  if (EncodeSnapshotParts(again) != once) {
    fuzz::Fail("a snapshot encodes differently after a round trip through the codec");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string bytes = fuzz::Text(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      log::Entry entry;
      if (fuzz::ReturnsOrThrows<log::CodecError>([&] { entry = log::DecodeEntry(bytes); })) {
        fuzz::CheckEntryRoundTrip(entry);
      }
      break;
    }
    case 1: {
      Decision decision;
      if (fuzz::ReturnsOrThrows<log::CodecError>([&] { decision = log::DecodeDecision(bytes); })) {
        fuzz::CheckDecisionRoundTrip(decision);
        log::DecisionRecordFor(decision);  // As the archive import indexes a decision it reads.
      }
      break;
    }
    case 2:
      Snapshot(Parts(data + 1, size - 1));
      break;
  }
  return 0;
}
