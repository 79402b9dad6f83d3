// The durable event log: a RocksDB store of checksummed records in sequence order.
//
// This layer knows bytes, not events: the Cap'n Proto codec (log/codec.h) turns domain
// values into the payloads stored here. Column families:
//   events     big-endian u64 sequence number -> framed record (inputs and outputs)
//   decisions  big-endian u64 decision id     -> framed record
//   snapshots  big-endian u64 sequence number -> framed record (state after folding that seq)
//   meta       string key                     -> string value (schema/writer version, cluster id)
//   decision_index  term ++ big-endian u64 decision id -> empty (audit's secondary index)
//
// Every stored value is framed as [u8 frame version][u64 XXH3 of (key bytes ++ payload)][payload],
// verified on every read. A mismatch is never skipped: it raises LogError naming the key.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model/units.h"

namespace tenon::log {

// Records are numbered by Seq (model/units.h): 1-based, 0 meaning "none".

// The schema version this build writes into meta. Bump only with a migration note.
// 2: disruption decisions store their candidates' pools and outcomes once each, in `texts`
//    (a build reading 1 would show them empty), and a NodeClaim's index entry only its
//    candidates, the pass's head under the kind entry. A version-1 log opened for writing becomes
//    2, since what this build appends to it an older build cannot read; read-only, it stays 1.
inline constexpr std::uint32_t kSchemaVersion = 2;
// Most records one Append call may carry; larger batches are a caller bug.
inline constexpr std::size_t kAppendBatchMax = 65536;
// Largest payload accepted for one record.
inline constexpr std::size_t kRecordBytesMax = 64u << 20;
// Most parts one snapshot may have.
inline constexpr std::uint32_t kSnapshotPartsMax = 1u << 16;

enum class ErrorKind {
  kIo,          // RocksDB or the filesystem failed.
  kCorruption,  // A record failed its checksum or framing; `seq` names it.
  kVersion,     // The log was written with a newer schema than this build reads.
  kInvalid,     // The caller asked for something impossible (e.g. batch too large).
};

class LogError : public std::runtime_error {
 public:
  LogError(ErrorKind kind, std::uint64_t key, const std::string& what)
      : std::runtime_error(what), kind_(kind), key_(key) {}
  LogError(ErrorKind kind, Seq seq, const std::string& what) : LogError(kind, seq.value, what) {}
  ErrorKind kind() const { return kind_; }
  // The sequence number (or decision id) of the offending record, 0 when not about one record.
  std::uint64_t key() const { return key_; }

 private:
  ErrorKind kind_;
  std::uint64_t key_;
};

struct OpenOptions {
  bool create_if_missing = true;
  bool read_only = false;      // Open for inspection (replay, audit); Append throws.
  std::string writer_version;  // Stored in meta as the last writer.
  std::string cluster_id;      // Stored in meta on creation; checked if non-empty on reopen.
  // Keep writes in the WAL instead of flushing memtables at close. Tests use this to produce
  // logs whose tail lives in the WAL; production leaves it off.
  bool avoid_flush_during_shutdown = false;
  // Appends also go to RocksDB's write-ahead log, so that they survive the process. Off only
  // for a log removed when its process ends (`tenon simulate` without --log): its appends then
  // skip the WAL's write and checksum, and its memtables are flushed when it closes. An append
  // asked to sync still goes through the WAL.
  bool write_ahead_log = true;
  // RocksDB's own warnings and errors for as long as the log is open (what a recovery dropped, a
  // background flush or compaction that failed, writes slowed down), one line each, called on
  // RocksDB's threads. The controller sends them to its log; unset, they are dropped.
  std::function<void(const std::string&)> on_store_warning;
};

// What Open found; callers print `message` when `torn_tail_truncated` is set.
struct OpenReport {
  bool created = false;
  bool torn_tail_truncated = false;
  std::string message;  // Human-readable account of any recovery done at open.
  Seq last_seq{0};
};

struct DecisionRecord {
  std::uint64_t id = 0;
  std::string payload;
  // Index terms (built by the codec, e.g. a NodeClaim's or a node's name, a method, a time):
  // Append writes one decision_index entry per term, in the same batch as the decision, so the
  // index never lags the decisions it indexes. Read back, a record carries none.
  std::vector<std::string> index_terms;
  // Empty, or one value per term (most empty): what an audit query under that term needs of the
  // decision without reading it (log/codec.h, DecisionRecordFor). Stored framed and checked.
  std::vector<std::string> index_values = {};
};

// One atomic unit: event records get consecutive sequence numbers; decisions are written in the
// same RocksDB write batch, so either all of it is in the log or none of it is.
struct AppendBatch {
  std::vector<std::string> events;
  std::vector<DecisionRecord> decisions;
};

struct AppendOptions {
  bool sync = false;  // fsync the WAL before returning (power-loss durability).
};

struct Record {
  Seq seq{0};
  std::string payload;
};

// A snapshot is stored in parts (the codec's head first, then slices of the large collections),
// so that neither writing nor reading one needs the whole state as a single buffer.
struct Snapshot {
  Seq seq{0};
  std::vector<std::string> parts;
};

// Writes one snapshot part by part; nothing is visible until Commit, and then all of it is.
// Dropping a writer without Commit leaves the log as it was.
class SnapshotWriter {
 public:
  virtual ~SnapshotWriter() = default;
  virtual void Add(std::string_view part) = 0;
  virtual void Commit() = 0;
};

class EventLog {
 public:
  // Opens or creates the log in `dir` (created 0700; files inside readable by the owner only).
  // A torn WAL tail is truncated to the last complete write and reported in `report`.
  static std::unique_ptr<EventLog> Open(const std::filesystem::path& dir,
                                        const OpenOptions& options, OpenReport* report = nullptr);
  virtual ~EventLog() = default;

  // Appends a batch; returns the sequence numbers given to batch.events, in order. Thread-safe:
  // concurrent callers are grouped into one RocksDB write (group commit), and a caller returns
  // only once its records are written (and synced, if asked).
  virtual std::vector<Seq> Append(AppendBatch batch, const AppendOptions& options = {}) = 0;

  virtual Seq LastSeq() const = 0;

  // Reads one event record. nullopt if absent; LogError(kCorruption) if it fails its checksum.
  virtual std::optional<Record> Read(Seq seq) const = 0;

  // Calls `fn` for each event record with from <= seq <= to (to = 0: through the last), in order,
  // until `fn` returns false. Throws LogError(kCorruption) naming the first bad record.
  virtual void Scan(Seq from, Seq to, const std::function<bool(const Record&)>& fn) const = 0;

  // Blocks until LastSeq() > after or the timeout passes; returns LastSeq(). Follows the tail.
  virtual Seq WaitForAppend(Seq after, std::chrono::milliseconds timeout) const = 0;

  virtual std::optional<DecisionRecord> ReadDecision(std::uint64_t id) const = 0;
  virtual void ScanDecisions(std::uint64_t from_id,
                             const std::function<bool(const DecisionRecord&)>& fn) const = 0;

  // Whether every decision in this log was indexed as it was written (logs created before the
  // index existed were not: audit scans their decisions instead).
  virtual bool HasDecisionIndex() const = 0;
  // Calls `fn` with the decision id of each index entry whose key lies in [from, to), in key
  // order (for one term: ascending ids), until `fn` returns false.
  virtual void ScanDecisionIndex(std::string_view from, std::string_view to,
                                 const std::function<bool(std::uint64_t id)>& fn) const = 0;
  // The value of one index entry (`term` for decision `id`), or nullopt without the entry.
  virtual std::optional<std::string> ReadDecisionIndexValue(std::string_view term,
                                                            std::uint64_t id) const = 0;
  // The same, with each entry's value (empty for most terms, and for every entry of a log
  // indexed before values were stored).
  virtual void ScanDecisionIndexValues(
      std::string_view from, std::string_view to,
      const std::function<bool(std::uint64_t id, std::string_view value)>& fn) const = 0;

  // Starts the snapshot of the state after folding `seq`. Parts go to a file of their own as they
  // are added (memory stays at one part), which Commit moves into the log atomically.
  virtual std::unique_ptr<SnapshotWriter> BeginSnapshot(Seq seq) = 0;
  // A snapshot of one part.
  void PutSnapshot(Seq seq, std::string_view payload);
  // The newest snapshot whose seq <= at (at = 0: the newest of all).
  virtual std::optional<Snapshot> SnapshotAtOrBelow(Seq at) const = 0;
  virtual std::vector<Seq> SnapshotSeqs() const = 0;
  // The head part of the snapshot at exactly `seq` (what its stored hash is read from, without
  // the megabytes of the rest), nullopt if there is none.
  virtual std::optional<std::string> SnapshotHead(Seq seq) const = 0;

  // Retention: drops every record at or below `through` and every older snapshot. There must be
  // a snapshot at `through` (it becomes where recovery and replay start). Decisions are kept:
  // they are small and the audit trail. Throws LogError(kInvalid) without that snapshot.
  virtual void Truncate(Seq through) = 0;
  // The first record a Scan can return: 1, or one past the last Truncate.
  virtual Seq FirstSeq() const = 0;
  // Bytes the log holds: its live files and what is not flushed yet (retention by size).
  virtual std::uint64_t DiskBytes() const = 0;

  virtual std::uint32_t SchemaVersion() const = 0;
  virtual std::string WriterVersion() const = 0;
  virtual std::string ClusterId() const = 0;

  // Writes a raw value under an event key, bypassing framing: tests use it to plant corruption.
  virtual void PutRawEventForTest(Seq seq, std::string_view raw_value) = 0;
};

}  // namespace tenon::log
