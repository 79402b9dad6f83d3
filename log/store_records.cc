// How records are stored: keys in number order, each value framed with its version and a
// checksum of key and payload.
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack: no allocation per record.
#include <xxhash.h>

#include "log/store.h"

namespace tenon::log::store {

std::string Key(std::uint64_t n) {
  std::string key(8, '\0');
  for (int i = 7; i >= 0; --i, n >>= 8) key[i] = static_cast<char>(n & 0xff);
  return key;
}

std::string PartKey(Seq seq, std::uint32_t part) {
  std::string key = Key(seq);
  for (int shift = 24; shift >= 0; shift -= 8) key.push_back(static_cast<char>(part >> shift));
  return key;
}

std::uint64_t FromKey(const rocksdb::Slice& key) {
  if (key.size() != 8) throw LogError(ErrorKind::kCorruption, 0, "log: a key is not 8 bytes");
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < 8; ++i) n = (n << 8) | static_cast<unsigned char>(key[i]);
  return n;
}

namespace {

std::uint64_t Checksum(std::string_view key, std::string_view payload) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, key.data(), key.size());
  XXH3_64bits_update(&state, payload.data(), payload.size());
  return XXH3_64bits_digest(&state);
}

}  // namespace

Seq SnapshotSeqOf(const rocksdb::Slice& key) {
  if (key.size() == kPartKeyBytes) return SeqFromKey(rocksdb::Slice(key.data(), 8));
  return SeqFromKey(key);
}

std::string FrameHeader(std::string_view key, std::string_view payload) {
  std::string header;
  header.push_back(static_cast<char>(kFrameVersion));
  std::uint64_t sum = Checksum(key, payload);
  for (int i = 0; i < 8; ++i) header.push_back(static_cast<char>((sum >> (8 * i)) & 0xff));
  return header;
}

std::string Unframe(const char* family, std::uint64_t n, std::string_view key,
                    std::string_view value) {
  auto fail = [&](const std::string& why) {
    return LogError(ErrorKind::kCorruption, n,
                    std::string("log: ") + family + " record at sequence number " +
                        std::to_string(n) + " is corrupt: " + why);
  };
  if (value.size() < kFrameHeaderBytes) throw fail("shorter than its frame header");
  if (static_cast<std::uint8_t>(value[0]) != kFrameVersion) {
    throw fail("unknown frame version " + std::to_string(static_cast<unsigned char>(value[0])));
  }
  std::uint64_t stored = 0;
  for (int i = 7; i >= 0; --i) stored = (stored << 8) | static_cast<unsigned char>(value[1 + i]);
  std::string_view payload = value.substr(kFrameHeaderBytes);
  if (Checksum(key, payload) != stored) throw fail("checksum mismatch");
  return std::string(payload);
}

void Check(const rocksdb::Status& status, const std::string& what) {
  if (!status.ok()) throw LogError(ErrorKind::kIo, 0, "log: " + what + ": " + status.ToString());
}

void PutFramed(rocksdb::WriteBatch& batch, rocksdb::ColumnFamilyHandle* family,
               const std::string& key, std::string& payload) {
  const std::string header = FrameHeader(key, payload);
  const rocksdb::Slice key_slice(key);
  const rocksdb::Slice value_parts[] = {rocksdb::Slice(header), rocksdb::Slice(payload)};
  Check(batch.Put(family, rocksdb::SliceParts(&key_slice, 1), rocksdb::SliceParts(value_parts, 2)),
        "batching a record");
  std::string().swap(payload);
}

}  // namespace tenon::log::store
