// The RocksDB event store behind log/event_log.h.
#include "log/event_log.h"
#include "log/creation.h"
#include "log/files.h"
#include "log/repair.h"

#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack: no allocation per record.
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <exception>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

namespace tenon::log {
namespace {

constexpr std::uint8_t kFrameVersion = 1;
constexpr std::size_t kFrameHeaderBytes = 1 + 8;
constexpr std::size_t kGroupCommitMax = 1024;  // Callers one group commit may carry.
constexpr const char* kMetaSchemaVersion = "schema_version";
constexpr const char* kMetaWriterVersion = "writer_version";
constexpr const char* kMetaClusterId = "cluster_id";
constexpr const char* kMetaFirstSeq = "first_seq";  // Absent: 1 (never truncated).
// Present when the log was created with the decision index, so every decision is indexed.
constexpr const char* kMetaDecisionIndex = "decision_index";
// Longest index term accepted: terms are names and fixed-size keys, never whole records.
constexpr std::size_t kIndexTermBytesMax = 1024;

enum Family : std::size_t {
  kDefault = 0,
  kEvents,
  kDecisions,
  kSnapshots,
  kMeta,
  kDecisionIndex,
  kFamilies
};
constexpr const char* kFamilyNames[kFamilies] = {"default",   "events", "decisions",
                                                 "snapshots", "meta",   "decision_index"};

std::string Key(std::uint64_t n) {
  std::string key(8, '\0');
  for (int i = 7; i >= 0; --i, n >>= 8) key[i] = static_cast<char>(n & 0xff);
  return key;
}

// A snapshot's part i >= 1 is stored under its sequence number's key followed by big-endian i,
// so the parts sort right after their head and before the next snapshot.
constexpr std::size_t kPartKeyBytes = 8 + 4;

std::string PartKey(std::uint64_t seq, std::uint32_t part) {
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

std::uint64_t Checksum(std::string_view key, std::string_view payload) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, key.data(), key.size());
  XXH3_64bits_update(&state, payload.data(), payload.size());
  return XXH3_64bits_digest(&state);
}

// The sequence number a snapshot head or part key belongs to.
std::uint64_t SnapshotSeqOf(const rocksdb::Slice& key) {
  if (key.size() == kPartKeyBytes) return FromKey(rocksdb::Slice(key.data(), 8));
  return FromKey(key);
}

// The frame's header: its version and the checksum of key and payload.
std::string FrameHeader(std::string_view key, std::string_view payload) {
  std::string header;
  header.push_back(static_cast<char>(kFrameVersion));
  std::uint64_t sum = Checksum(key, payload);
  for (int i = 0; i < 8; ++i) header.push_back(static_cast<char>((sum >> (8 * i)) & 0xff));
  return header;
}

// Checks a stored value against its key and returns the payload; never skips a bad record.
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

// Adds key -> FrameHeader(key, payload) + payload to `batch` without building the framed value
// apart, then frees `payload`: the batch holds the only copy from here on.
void PutFramed(rocksdb::WriteBatch& batch, rocksdb::ColumnFamilyHandle* family,
               const std::string& key, std::string& payload) {
  const std::string header = FrameHeader(key, payload);
  const rocksdb::Slice key_slice(key);
  const rocksdb::Slice value_parts[] = {rocksdb::Slice(header), rocksdb::Slice(payload)};
  Check(batch.Put(family, rocksdb::SliceParts(&key_slice, 1), rocksdb::SliceParts(value_parts, 2)),
        "batching a record");
  std::string().swap(payload);
}

// The file system RocksDB writes the log through: every file and folder it creates is for its
// owner only (0600, 0700), whatever the process's umask, including the files its background
// flushes and compactions create. Files it did not create are never touched.
class OwnerOnlyFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  OwnerOnlyFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  static const char* kClassName() { return "TenonOwnerOnlyFileSystem"; }
  const char* Name() const override { return kClassName(); }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    return Owned(f, 0600, target()->NewWritableFile(f, options, r, dbg));
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override {
    return Owned(f, 0600, target()->ReuseWritableFile(f, old, options, r, dbg));
  }
  rocksdb::IOStatus NewRandomRWFile(const std::string& f, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSRandomRWFile>* r,
                                    rocksdb::IODebugContext* dbg) override {
    return Owned(f, 0600, target()->NewRandomRWFile(f, options, r, dbg));
  }
  rocksdb::IOStatus LockFile(const std::string& f, const rocksdb::IOOptions& options,
                             rocksdb::FileLock** lock, rocksdb::IODebugContext* dbg) override {
    return Owned(f, 0600, target()->LockFile(f, options, lock, dbg));
  }
  rocksdb::IOStatus CreateDir(const std::string& d, const rocksdb::IOOptions& options,
                              rocksdb::IODebugContext* dbg) override {
    return Owned(d, 0700, target()->CreateDir(d, options, dbg));
  }

 private:
  static rocksdb::IOStatus Owned(const std::string& path, mode_t mode, rocksdb::IOStatus status) {
    if (status.ok() && ::chmod(path.c_str(), mode) != 0) {
      return rocksdb::IOStatus::IOError("chmod " + path, std::strerror(errno));
    }
    return status;
  }
};

// One Env for every log this process opens, kept for the life of the process (RocksDB's
// background threads use it until the last database closes).
rocksdb::Env* OwnerOnlyEnv() {
  static const std::unique_ptr<rocksdb::Env> env =
      rocksdb::NewCompositeEnv(std::make_shared<OwnerOnlyFileSystem>());
  return env.get();
}

// Throws "is in use" when RocksDB refused the open because another process holds the LOCK.
void ThrowIfInUse(const std::filesystem::path& dir, const rocksdb::Status& status) {
  if (status.IsIOError() && status.ToString().find("lock") != std::string::npos) {
    throw LogError(ErrorKind::kIo, 0,
                   "log: " + dir.string() + " is in use: another process holds its LOCK (" +
                       status.ToString() + ")");
  }
}

// RocksDB's warnings and errors, in place of the LOG file it would write into the log folder:
// passed on to OpenOptions::on_store_warning, and its account of what its write-ahead log
// reader dropped during an open ("FILE: dropping N bytes; Corruption: ..."), which names the
// file and the bytes its Status leaves out, kept for the open's report.
class DropLogger final : public rocksdb::Logger {
 public:
  explicit DropLogger(std::function<void(const std::string&)> forward = {})
      : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL), forward_(std::move(forward)) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    char line[1024];
    std::vsnprintf(line, sizeof line, format, ap);
    // Without RocksDB's "[WARN] [db/db_impl/db_impl_open.cc:982] " in front.
    std::string_view text(line);
    while (text.starts_with('[') && text.find("] ") != std::string_view::npos) {
      text.remove_prefix(text.find("] ") + 2);
    }
    if (forward_) forward_(std::string(text));
    std::lock_guard lock(mutex_);
    if (text.find(": dropping ") != std::string_view::npos && said_.size() < 8) {
      said_.emplace_back(text);
    }
  }
  std::string Said() {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& line : said_) out += (out.empty() ? "" : "; ") + line;
    return out;
  }

 private:
  const std::function<void(const std::string&)> forward_;
  std::mutex mutex_;
  std::vector<std::string> said_;
};

// Where the newest write-ahead log file stops holding complete records: its last record that
// ends a write (RocksDB's log format: 32 KiB blocks of records, each with a 7-byte header,
// or 11 bytes for recycled files: checksum, length, type, [log number]).
struct TornTail {
  std::filesystem::path file;
  std::uint64_t offset = 0;  // Just past the last complete write.
  std::uint64_t bytes = 0;   // What follows it.
};

// One write-ahead log record as the scan below finds it.
struct WalRecord {
  std::size_t offset = 0;  // Where its header starts.
  unsigned type = 0;       // 1 full, 2 first, 3 middle, 4 last; 5 to 8 the recyclable ones.
  std::string_view payload;
};

// Walks the records of one write-ahead log file in order, until `fn` returns false or a header
// is unreadable or runs past the end; returns the offset where the walk stopped (the file's
// size when every record was whole).
std::size_t ScanWal(const std::string& data, const std::function<bool(const WalRecord&)>& fn) {
  constexpr std::size_t kBlock = 32768;
  std::size_t at = 0;
  while (at < data.size()) {
    const std::size_t left_in_block = kBlock - at % kBlock;
    if (left_in_block < 7) {  // A block's trailer: zeros.
      at += left_in_block;
      continue;
    }
    if (at + 7 > data.size()) return at;
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(data[at + i]); };
    const std::size_t length = byte(4) | (byte(5) << 8);
    const unsigned type = byte(6);
    const std::size_t header = type >= 5 ? 11 : 7;  // Recyclable records carry a log number.
    if (type == 0 || type > 8 || at + header + length > data.size()) return at;
    if (!fn({at, type, std::string_view(data).substr(at + header, length)})) return at;
    at += header + length;
  }
  return at;
}

std::string FileBytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TornTail FindTornTail(const std::filesystem::path& dir) {
  TornTail torn;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".log" && entry.path().filename() > torn.file.filename()) {
      torn.file = entry.path();
    }
  }
  if (torn.file.empty()) return torn;
  const std::string data = FileBytes(torn.file);
  ScanWal(data, [&](const WalRecord& r) {
    const bool ends_write = r.type == 1 || r.type == 4 || r.type == 5 || r.type == 8;
    const std::size_t header = r.type >= 5 ? 11 : 7;
    if (ends_write) torn.offset = r.offset + header + r.payload.size();
    return true;
  });
  torn.bytes = data.size() - torn.offset;
  return torn;
}

// The first write in the folder's write-ahead logs that a point-in-time recovery could not
// keep: the first record starting a write numbered past `kept` (RocksDB's sequence number of
// the last write recovered). A record whose header is itself unreadable stops the scan there.
struct Damage {
  std::filesystem::path file;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

Damage FindDamage(const std::filesystem::path& dir, rocksdb::SequenceNumber kept) {
  std::vector<std::filesystem::path> wals;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".log") wals.push_back(entry.path());
  }
  std::sort(wals.begin(), wals.end());  // Numbered with leading zeros: name order is age order.
  for (const auto& wal : wals) {
    const std::string data = FileBytes(wal);
    bool past = false;
    const std::size_t stopped = ScanWal(data, [&](const WalRecord& r) {
      // A write's first fragment begins with its batch header: fixed64 sequence number.
      const bool starts_write = r.type == 1 || r.type == 2 || r.type == 5 || r.type == 6;
      if (!starts_write || r.payload.size() < 8) return true;
      rocksdb::SequenceNumber seq = 0;
      for (int i = 7; i >= 0; --i) seq = seq << 8 | static_cast<unsigned char>(r.payload[i]);
      past = seq > kept;
      return !past;
    });
    if (past || stopped < data.size()) return {wal, stopped, data.size()};
  }
  return {};
}

// A snapshot file left by a crash before its Commit never became part of the log.
void RemovePartialSnapshots(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".partial") std::filesystem::remove(entry.path(), ec);
  }
}

class UmaskGuard {
 public:
  UmaskGuard() : saved_(::umask(077)) {}
  ~UmaskGuard() { ::umask(saved_); }
  UmaskGuard(const UmaskGuard&) = delete;
  UmaskGuard& operator=(const UmaskGuard&) = delete;

 private:
  mode_t saved_;
};

class RocksEventLog final : public EventLog {
 public:
  RocksEventLog(rocksdb::DB* db, std::vector<rocksdb::ColumnFamilyHandle*> handles, bool read_only,
                std::filesystem::path dir)
      : db_(db), handles_(std::move(handles)), read_only_(read_only), dir_(std::move(dir)) {
    last_seq_ = FindLastSeq();
  }

  ~RocksEventLog() override {
    for (auto* handle : handles_) {
      if (handle != nullptr) db_->DestroyColumnFamilyHandle(handle);
    }
    UmaskGuard umask;  // Closing flushes what never went through the WAL (snapshots).
    db_->Close();
    delete db_;
  }

  void InitMeta(const OpenOptions& options, OpenReport& report);

  std::vector<Seq> Append(AppendBatch batch, const AppendOptions& options) override;
  Seq LastSeq() const override { return last_seq_.load(); }
  std::optional<Record> Read(Seq seq) const override;
  void Scan(Seq from, Seq to, const std::function<bool(const Record&)>& fn) const override;
  Seq WaitForAppend(Seq after, std::chrono::milliseconds timeout) const override;
  std::optional<DecisionRecord> ReadDecision(std::uint64_t id) const override;
  void ScanDecisions(std::uint64_t from_id,
                     const std::function<bool(const DecisionRecord&)>& fn) const override;
  std::unique_ptr<SnapshotWriter> BeginSnapshot(Seq seq) override;
  bool HasDecisionIndex() const override { return has_decision_index_; }
  void ScanDecisionIndex(std::string_view from, std::string_view to,
                         const std::function<bool(std::uint64_t id)>& fn) const override;
  std::optional<std::string> ReadDecisionIndexValue(std::string_view term,
                                                    std::uint64_t id) const override;
  void ScanDecisionIndexValues(
      std::string_view from, std::string_view to,
      const std::function<bool(std::uint64_t id, std::string_view value)>& fn) const override;
  std::optional<Snapshot> SnapshotAtOrBelow(Seq at) const override;
  std::vector<Seq> SnapshotSeqs() const override;
  std::optional<std::string> SnapshotHead(Seq seq) const override;
  void Truncate(Seq through) override;
  Seq FirstSeq() const override;
  std::uint64_t DiskBytes() const override;
  std::uint32_t SchemaVersion() const override { return schema_version_; }
  std::string WriterVersion() const override { return writer_version_; }
  std::string ClusterId() const override { return cluster_id_; }
  void PutRawEventForTest(Seq seq, std::string_view raw_value) override;

 private:
  // One caller of Append waiting in the group-commit queue.
  struct Writer {
    AppendBatch* batch = nullptr;
    bool sync = false;
    bool done = false;
    std::vector<Seq> seqs;
    std::exception_ptr error;
    std::condition_variable cv;
  };

  Seq FindLastSeq() const;
  std::optional<std::string> GetMeta(const char* key) const;
  void RequireWritable() const;
  void CommitGroup(std::unique_lock<std::mutex>& lock);
  static std::size_t GroupBytesMax(const std::vector<Writer*>& group, bool decisions);
  void PutDecision(rocksdb::WriteBatch& batch, DecisionRecord& d) const;
  std::optional<std::string> Get(Family family, std::uint64_t n) const;

  rocksdb::DB* db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  bool read_only_;
  std::filesystem::path dir_;
  std::atomic<Seq> last_seq_{0};
  std::uint32_t schema_version_ = kSchemaVersion;
  std::string writer_version_;
  std::string cluster_id_;
  bool has_decision_index_ = false;
  bool write_ahead_log_ = true;  // OpenOptions::write_ahead_log.

  mutable std::mutex mu_;
  mutable std::condition_variable appended_;
  std::deque<Writer*> queue_;
};

Seq RocksEventLog::FindLastSeq() const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}, handles_[kEvents]));
  it->SeekToLast();
  Check(it->status(), "seeking the last event");
  return it->Valid() ? FromKey(it->key()) : 0;
}

std::optional<std::string> RocksEventLog::GetMeta(const char* key) const {
  std::string value;
  auto status = db_->Get({}, handles_[kMeta], key, &value);
  if (status.IsNotFound()) return std::nullopt;
  Check(status, std::string("reading meta ") + key);
  return value;
}

void RocksEventLog::InitMeta(const OpenOptions& options, OpenReport& report) {
  auto schema = GetMeta(kMetaSchemaVersion);
  if (schema) {
    schema_version_ = static_cast<std::uint32_t>(std::stoul(*schema));
    if (schema_version_ > kSchemaVersion) {
      throw LogError(ErrorKind::kVersion, 0,
                     "log: written with schema version " + *schema + ", this build reads up to " +
                         std::to_string(kSchemaVersion));
    }
    cluster_id_ = GetMeta(kMetaClusterId).value_or("");
    has_decision_index_ = GetMeta(kMetaDecisionIndex).has_value();
    writer_version_ = GetMeta(kMetaWriterVersion).value_or("");
    if (!options.cluster_id.empty() && options.cluster_id != cluster_id_) {
      throw LogError(
          ErrorKind::kInvalid, 0,
          "log: belongs to cluster '" + cluster_id_ + "', not '" + options.cluster_id + "'");
    }
  }
  report.created = !schema.has_value();
  if (read_only_) return;
  rocksdb::WriteBatch batch;
  if (schema && schema_version_ < kSchemaVersion) {
    schema_version_ = kSchemaVersion;
    batch.Put(handles_[kMeta], kMetaSchemaVersion, std::to_string(kSchemaVersion));
  }
  if (!schema) {
    cluster_id_ = options.cluster_id;
    batch.Put(handles_[kMeta], kMetaSchemaVersion, std::to_string(kSchemaVersion));
    batch.Put(handles_[kMeta], kMetaClusterId, cluster_id_);
    batch.Put(handles_[kMeta], kMetaDecisionIndex, "1");
    has_decision_index_ = true;
  }
  writer_version_ = options.writer_version;
  write_ahead_log_ = options.write_ahead_log;
  batch.Put(handles_[kMeta], kMetaWriterVersion, writer_version_);
  rocksdb::WriteOptions write;
  write.sync = true;
  Check(db_->Write(write, &batch), "writing meta");
}

void RocksEventLog::RequireWritable() const {
  if (read_only_) throw LogError(ErrorKind::kInvalid, 0, "log: opened read-only");
}

std::vector<Seq> RocksEventLog::Append(AppendBatch batch, const AppendOptions& options) {
  RequireWritable();
  if (batch.events.size() + batch.decisions.size() > kAppendBatchMax) {
    throw LogError(ErrorKind::kInvalid, 0, "log: append batch larger than kAppendBatchMax");
  }
  for (const auto& e : batch.events) {
    if (e.size() > kRecordBytesMax) throw LogError(ErrorKind::kInvalid, 0, "log: record too large");
  }
  for (const auto& d : batch.decisions) {
    for (const auto& term : d.index_terms) {
      if (term.empty() || term.size() > kIndexTermBytesMax) {
        throw LogError(ErrorKind::kInvalid, d.id, "log: decision index term empty or too long");
      }
    }
  }
  Writer self;
  self.batch = &batch;
  self.sync = options.sync;
  std::unique_lock lock(mu_);
  queue_.push_back(&self);
  self.cv.wait(lock, [&] { return self.done || queue_.front() == &self; });
  if (!self.done) CommitGroup(lock);  // This caller leads the group that includes it.
  if (self.error) std::rethrow_exception(self.error);
  return self.seqs;
}

// What a WriteBatch needs at most: its header, and per record a tag, a column family id and
// two lengths (varints of at most 5 bytes each) beside the key and the framed value.
constexpr std::size_t kBatchHeaderBytes = 12;
constexpr std::size_t RecordBytesMax(std::size_t key, std::size_t value) {
  constexpr std::size_t kPutOverheadBytes = 1 + 3 * 5;
  return kPutOverheadBytes + key + kFrameHeaderBytes + value;
}
constexpr std::size_t kSeqKeyBytes = 8;

std::size_t DecisionBytesMax(const DecisionRecord& d) {
  std::size_t bytes = RecordBytesMax(kSeqKeyBytes, d.payload.size());
  for (std::size_t i = 0; i < d.index_terms.size(); ++i) {
    const std::size_t value = d.index_values.empty() ? 0 : d.index_values[i].size();
    bytes += RecordBytesMax(d.index_terms[i].size() + kSeqKeyBytes, value);
  }
  return bytes;
}

// Above this many bytes of decisions (one disruption pass over thousands of candidates, with
// an index value per candidate, is megabytes), a group writes each decision and its index
// entries apart, before its records: the WriteBatch then holds one decision at a time, not all
// of them while the memtable takes its own copy. The records' write still commits the group:
// a crash before it leaves decisions without the output that names them, and recovery, which
// re-derives that output, writes the same decisions again under the same ids.
constexpr std::size_t kDecisionsApartBytes = 1 << 20;

std::size_t RocksEventLog::GroupBytesMax(const std::vector<Writer*>& group, bool decisions) {
  std::size_t bytes = kBatchHeaderBytes;
  for (const Writer* w : group) {
    for (const auto& e : w->batch->events) bytes += RecordBytesMax(kSeqKeyBytes, e.size());
    if (!decisions) continue;
    for (const auto& d : w->batch->decisions) bytes += DecisionBytesMax(d);
  }
  return bytes;
}

// Puts `d` and its index entries into `batch` (freeing its payload and values as they go in).
void RocksEventLog::PutDecision(rocksdb::WriteBatch& batch, DecisionRecord& d) const {
  std::string key = Key(d.id);
  PutFramed(batch, handles_[kDecisions], key, d.payload);
  // An old log opened for writing has no index to keep up (HasDecisionIndex is false).
  if (!has_decision_index_) return;
  assert(d.index_values.empty() || d.index_values.size() == d.index_terms.size());
  for (std::size_t i = 0; i < d.index_terms.size(); ++i) {
    const std::string entry = d.index_terms[i] + key;
    const bool valued = !d.index_values.empty() && !d.index_values[i].empty();
    if (valued) {
      PutFramed(batch, handles_[kDecisionIndex], entry, d.index_values[i]);
    } else {
      Check(batch.Put(handles_[kDecisionIndex], entry, ""), "batching an index entry");
    }
  }
}

// Writes every queued caller (up to kGroupCommitMax) in one RocksDB write (decisions of a large
// group in writes of their own first, see kDecisionsApartBytes). Called by the caller at the
// front of the queue with the lock held; the lock is released around the writes, while the
// group's other callers wait for it and leave their batches alone.
void RocksEventLog::CommitGroup(std::unique_lock<std::mutex>& lock) {
  std::vector<Writer*> group;
  for (auto* w : queue_) {
    if (group.size() == kGroupCommitMax) break;
    group.push_back(w);
  }
  Seq next = last_seq_.load() + 1;
  bool sync = false;
  std::size_t decision_bytes = 0;
  for (const Writer* w : group) {
    sync = sync || w->sync;
    for (const auto& d : w->batch->decisions) decision_bytes += DecisionBytesMax(d);
  }
  const bool apart = decision_bytes > kDecisionsApartBytes;
  lock.unlock();
  rocksdb::WriteOptions write;
  write.sync = sync;  // The WAL is one file: syncing this write syncs the decisions' too.
  write.disableWAL = !write_ahead_log_ && !sync;
  rocksdb::WriteOptions unsynced;  // Decisions written apart: the group's write syncs the WAL.
  unsynced.disableWAL = write.disableWAL;
  rocksdb::Status status;
  for (Writer* w : group) {
    for (auto& d : w->batch->decisions) {
      if (!apart || !status.ok()) break;
      rocksdb::WriteBatch one(kBatchHeaderBytes + DecisionBytesMax(d));
      PutDecision(one, d);
      status = db_->Write(unsynced, &one);
    }
  }
  if (status.ok()) {
    // Sized up front, the batch is allocated once instead of doubling (which left up to half
    // its capacity unused, with the old and the new buffer both live while it grew); each
    // record's own copy is freed once it is in the batch.
    rocksdb::WriteBatch batch(GroupBytesMax(group, !apart));
    for (Writer* w : group) {
      for (auto& payload : w->batch->events) {
        std::string key = Key(next);
        PutFramed(batch, handles_[kEvents], key, payload);
        w->seqs.push_back(next++);
      }
      if (apart) continue;
      for (auto& d : w->batch->decisions) PutDecision(batch, d);
    }
    status = db_->Write(write, &batch);
  }
  lock.lock();
  std::exception_ptr error;
  if (status.ok()) {
    last_seq_ = next - 1;
  } else {
    error = std::make_exception_ptr(
        LogError(ErrorKind::kIo, 0, "log: append failed: " + status.ToString()));
  }
  for (Writer* w : group) {
    assert(queue_.front() == w);
    queue_.pop_front();
    w->done = true;
    w->error = error;
    if (error) w->seqs.clear();
    w->cv.notify_one();
  }
  if (!queue_.empty()) queue_.front()->cv.notify_one();
  appended_.notify_all();
}

std::optional<std::string> RocksEventLog::Get(Family family, std::uint64_t n) const {
  std::string key = Key(n);
  std::string value;
  auto status = db_->Get({}, handles_[family], key, &value);
  if (status.IsNotFound()) return std::nullopt;
  Check(status, std::string("reading ") + kFamilyNames[family] + " " + std::to_string(n));
  return Unframe(kFamilyNames[family], n, key, value);
}

std::optional<Record> RocksEventLog::Read(Seq seq) const {
  auto payload = Get(kEvents, seq);
  if (!payload) return std::nullopt;
  return Record{seq, std::move(*payload)};
}

void RocksEventLog::Scan(Seq from, Seq to, const std::function<bool(const Record&)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}, handles_[kEvents]));
  for (it->Seek(Key(from)); it->Valid(); it->Next()) {
    Seq seq = FromKey(it->key());
    if (to != 0 && seq > to) break;
    Record record{seq,
                  Unframe("events", seq, it->key().ToStringView(), it->value().ToStringView())};
    if (!fn(record)) return;
  }
  Check(it->status(), "scanning events");
}

Seq RocksEventLog::WaitForAppend(Seq after, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  appended_.wait_for(lock, timeout, [&] { return last_seq_.load() > after; });
  return last_seq_.load();
}

std::optional<DecisionRecord> RocksEventLog::ReadDecision(std::uint64_t id) const {
  auto payload = Get(kDecisions, id);
  if (!payload) return std::nullopt;
  return DecisionRecord{id, std::move(*payload), {}, {}};
}

void RocksEventLog::ScanDecisions(std::uint64_t from_id,
                                  const std::function<bool(const DecisionRecord&)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}, handles_[kDecisions]));
  for (it->Seek(Key(from_id)); it->Valid(); it->Next()) {
    std::uint64_t id = FromKey(it->key());
    DecisionRecord record{
        id, Unframe("decisions", id, it->key().ToStringView(), it->value().ToStringView()), {}, {}};
    if (!fn(record)) return;
  }
  Check(it->status(), "scanning decisions");
}

std::optional<std::string> RocksEventLog::ReadDecisionIndexValue(std::string_view term,
                                                                 std::uint64_t id) const {
  if (handles_[kDecisionIndex] == nullptr) return std::nullopt;
  const std::string key = std::string(term) + Key(id);
  std::string value;
  auto status = db_->Get({}, handles_[kDecisionIndex], key, &value);
  if (status.IsNotFound()) return std::nullopt;
  Check(status, "reading a decision index entry");
  if (value.empty()) return value;
  return Unframe("decision_index", id, key, value);
}

void RocksEventLog::ScanDecisionIndex(std::string_view from, std::string_view to,
                                      const std::function<bool(std::uint64_t id)>& fn) const {
  ScanDecisionIndexValues(from, to, [&](std::uint64_t id, std::string_view) { return fn(id); });
}

void RocksEventLog::ScanDecisionIndexValues(
    std::string_view from, std::string_view to,
    const std::function<bool(std::uint64_t id, std::string_view value)>& fn) const {
  if (handles_[kDecisionIndex] == nullptr) return;
  const rocksdb::Slice upper(to.data(), to.size());
  rocksdb::ReadOptions read;
  read.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read, handles_[kDecisionIndex]));
  for (it->Seek(rocksdb::Slice(from.data(), from.size())); it->Valid(); it->Next()) {
    const rocksdb::Slice key = it->key();
    if (key.size() <= 8) {
      throw LogError(ErrorKind::kCorruption, 0, "log: a decision index key is too short");
    }
    const std::uint64_t id = FromKey(rocksdb::Slice(key.data() + key.size() - 8, 8));
    const std::string value =
        it->value().empty()
            ? std::string()
            : Unframe("decision_index", id, key.ToStringView(), it->value().ToStringView());
    if (!fn(id, value)) return;
  }
  Check(it->status(), "scanning the decision index");
}

// Parts are framed into an SST file beside the log as they arrive and the file is ingested at
// Commit: one atomic step, no memtable copy, no write-ahead log, and memory bounded by one part
// (a whole-state value of tens of MB used to be held four times over while it was written).
class RocksSnapshotWriter final : public SnapshotWriter {
 public:
  RocksSnapshotWriter(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
                      const rocksdb::ColumnFamilyOptions& options, std::filesystem::path file,
                      Seq seq)
      : db_(db),
        family_(family),
        writer_({}, rocksdb::Options({}, options), family),
        file_(std::move(file)),
        seq_(seq) {
    UmaskGuard umask;
    Check(writer_.Open(file_.string()), "starting snapshot " + std::to_string(seq));
  }

  ~RocksSnapshotWriter() override {
    if (committed_) return;
    std::error_code ec;
    std::filesystem::remove(file_, ec);
  }

  void Add(std::string_view part) override {
    if (parts_ == kSnapshotPartsMax) {
      throw LogError(ErrorKind::kInvalid, seq_,
                     "log: a snapshot has more than kSnapshotPartsMax parts");
    }
    if (part.size() > kRecordBytesMax) {
      throw LogError(ErrorKind::kInvalid, seq_, "log: snapshot part too large");
    }
    const std::string key = parts_ == 0 ? Key(seq_) : PartKey(seq_, parts_);
    const std::string header = FrameHeader(key, part);
    std::string value;
    value.reserve(header.size() + part.size());
    value.append(header).append(part);
    Check(writer_.Put(key, value), "writing snapshot " + std::to_string(seq_));
    ++parts_;
  }

  void Commit() override {
    if (parts_ == 0) throw LogError(ErrorKind::kInvalid, seq_, "log: a snapshot without parts");
    UmaskGuard umask;
    Check(writer_.Finish(), "finishing snapshot " + std::to_string(seq_));
    // A snapshot at this seq written before (a rerun) may have had more parts: drop it first.
    std::string existing;
    if (db_->Get({}, family_, Key(seq_), &existing).ok()) {
      Check(db_->DeleteRange({}, family_, Key(seq_), Key(seq_ + 1)), "replacing a snapshot");
    }
    rocksdb::IngestExternalFileOptions ingest;
    ingest.move_files = true;
    Check(db_->IngestExternalFile(family_, {file_.string()}, ingest),
          "storing snapshot " + std::to_string(seq_));
    committed_ = true;
    std::error_code ec;
    std::filesystem::remove(file_, ec);  // Moved files may leave the name behind.
  }

 private:
  rocksdb::DB* db_;
  rocksdb::ColumnFamilyHandle* family_;
  rocksdb::SstFileWriter writer_;
  std::filesystem::path file_;
  Seq seq_;
  std::uint32_t parts_ = 0;
  bool committed_ = false;
};

std::unique_ptr<SnapshotWriter> RocksEventLog::BeginSnapshot(Seq seq) {
  RequireWritable();
  rocksdb::ColumnFamilyDescriptor descriptor;
  Check(handles_[kSnapshots]->GetDescriptor(&descriptor), "reading the snapshot options");
  return std::make_unique<RocksSnapshotWriter>(
      db_, handles_[kSnapshots], descriptor.options,
      dir_ / ("snapshot-" + std::to_string(seq) + ".sst.partial"), seq);
}

// Snapshot parts are blocks of hundreds of KB read once: kept out of the block cache, where
// they would evict every index block.
rocksdb::ReadOptions SnapshotReads() {
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  return read;
}

std::optional<Snapshot> RocksEventLog::SnapshotAtOrBelow(Seq at) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(SnapshotReads(), handles_[kSnapshots]));
  it->SeekForPrev(Key(at == 0 ? ~Seq{0} : at));
  Check(it->status(), "seeking a snapshot");
  if (!it->Valid()) return std::nullopt;
  // Landing on a part of an older snapshot: its head sits before it.
  const Seq seq = SnapshotSeqOf(it->key());
  const std::string head = Key(seq);
  if (it->key() != rocksdb::Slice(head)) it->SeekForPrev(head);
  Check(it->status(), "seeking a snapshot");
  if (!it->Valid() || it->key() != rocksdb::Slice(head)) {
    throw LogError(ErrorKind::kCorruption, seq,
                   "log: snapshot at sequence number " + std::to_string(seq) + " has no head");
  }
  Snapshot snapshot{seq, {}};
  for (; it->Valid() && SnapshotSeqOf(it->key()) == seq; it->Next()) {
    const std::uint32_t expected = static_cast<std::uint32_t>(snapshot.parts.size());
    if (expected > 0 && it->key() != rocksdb::Slice(PartKey(seq, expected))) {
      throw LogError(ErrorKind::kCorruption, seq,
                     "log: snapshot at sequence number " + std::to_string(seq) + " lacks part " +
                         std::to_string(expected));
    }
    snapshot.parts.push_back(
        Unframe("snapshots", seq, it->key().ToStringView(), it->value().ToStringView()));
  }
  Check(it->status(), "reading a snapshot");
  return snapshot;
}

std::optional<std::string> RocksEventLog::SnapshotHead(Seq seq) const {
  return Get(kSnapshots, seq);
}

std::vector<Seq> RocksEventLog::SnapshotSeqs() const {
  std::vector<Seq> seqs;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(SnapshotReads(), handles_[kSnapshots]));
  // From each head straight to the next snapshot's: a snapshot's parts are megabytes.
  for (it->SeekToFirst(); it->Valid();) {
    if (it->key().size() == kPartKeyBytes) {
      it->Next();
      continue;
    }
    seqs.push_back(FromKey(it->key()));
    it->Seek(Key(seqs.back() + 1));
  }
  Check(it->status(), "listing snapshots");
  return seqs;
}

void RocksEventLog::Truncate(Seq through) {
  RequireWritable();
  auto snapshot = SnapshotAtOrBelow(through);
  if (!snapshot || snapshot->seq != through) {
    throw LogError(
        ErrorKind::kInvalid, through,
        "log: truncating through seq " + std::to_string(through) + " needs a snapshot there");
  }
  // The new first sequence number is written with the deletions, so a crash leaves either
  // the old log or the truncated one.
  const std::string first = Key(1), end = Key(through + 1);
  rocksdb::WriteBatch batch;
  Check(batch.DeleteRange(handles_[kEvents], first, end), "truncating events");
  Check(batch.DeleteRange(handles_[kSnapshots], Key(0), Key(through)), "truncating snapshots");
  Check(batch.Put(handles_[kMeta], kMetaFirstSeq, std::to_string(through + 1)), "first seq");
  rocksdb::WriteOptions write;
  write.sync = true;
  Check(db_->Write(write, &batch), "truncating the log");
  // Give the space back now rather than at some later compaction.
  UmaskGuard umask;
  const rocksdb::Slice from(first), to(end);
  Check(db_->CompactRange({}, handles_[kEvents], &from, &to), "compacting truncated events");
  const std::string snapshots_end = Key(through);
  const rocksdb::Slice snapshots_to(snapshots_end);
  Check(db_->CompactRange({}, handles_[kSnapshots], nullptr, &snapshots_to),
        "compacting truncated snapshots");
}

Seq RocksEventLog::FirstSeq() const {
  auto first = GetMeta(kMetaFirstSeq);
  return first ? std::stoull(*first) : 1;
}

std::uint64_t RocksEventLog::DiskBytes() const {
  std::uint64_t total = 0;
  for (auto* handle : handles_) {
    if (handle == nullptr) continue;
    for (const auto& property : {rocksdb::DB::Properties::kLiveSstFilesSize,
                                 rocksdb::DB::Properties::kCurSizeAllMemTables}) {
      std::uint64_t bytes = 0;
      if (db_->GetIntProperty(handle, property, &bytes)) total += bytes;
    }
  }
  return total;
}

void RocksEventLog::PutRawEventForTest(Seq seq, std::string_view raw_value) {
  RequireWritable();
  Check(db_->Put({}, handles_[kEvents], Key(seq), raw_value), "planting a raw event");
}

// A controller appends tens of MB an hour at 5,000 nodes: 2 MB memtables flush every minute or
// two, and what the log holds in memory stays a few MB whatever the cluster's size.
constexpr std::size_t kWriteBufferBytes = 2 << 20;
// One block cache for every family: reads are recovery, replay and audit, mostly sequential.
// It holds the SST files' index blocks too (cache_index_and_filter_blocks below).
constexpr std::size_t kBlockCacheBytes = 4 << 20;
// Memtables allocate in blocks of this size (RocksDB's default is write_buffer_size / 8):
// five families, each with an active and perhaps a flushing memtable, most nearly empty, each
// keep a partly used block.
constexpr std::size_t kArenaBlockBytes = 64 << 10;
// The buffer of each file RocksDB writes (the WAL, a flush's or a compaction's output):
// 1 MB by default, grown to when a record is large (a disruption pass's decisions).
constexpr std::size_t kWritableFileBufferBytes = 256 << 10;

rocksdb::Options BaseOptions(const OpenOptions& options) {
  rocksdb::Options db;
  db.env = OwnerOnlyEnv();
  db.create_if_missing = options.create_if_missing;
  db.create_missing_column_families = true;
  // Without the WAL, what the memtables hold is only kept by flushing them at close.
  db.avoid_flush_during_shutdown = options.avoid_flush_during_shutdown && options.write_ahead_log;
  db.keep_log_file_num = 4;
  db.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  // Every family's memtables together, flushed early past this.
  db.db_write_buffer_size = 4 * kWriteBufferBytes;
  db.writable_file_max_buffer_size = kWritableFileBufferBytes;
  // Required by a writer's decision index memtable (a vector); the log has one writer anyway.
  db.allow_concurrent_memtable_write = false;
  return db;
}

// The decision index's keys are terms (a pod's, a NodeClaim's name) followed by a decision id,
// so each flush's entries spread over the whole key range (with the trimmed decisions some
// entries carry as values: hundreds of MB an hour on a churning 1,000-node cluster). Leveled
// compaction would merge every batch of level-0 files into all of level 1, which grows with the
// log: over a 24-hour run at 1,000 nodes that rewrote the index again and again, 75 CPU-seconds
// of a two-core machine against the core's 50 (bench_simulate). Universal compaction merges
// sorted runs of similar size instead, so each entry is rewritten a few times in all (17 CPU-
// seconds over the same run). It merges after this many sorted runs, for a few more runs an
// audit query reads; writes are slowed and stopped only well past it. A log written with
// leveled compaction opens as it is (each of its levels is one sorted run).
// Events and decisions, keyed in order, are moved down without a rewrite and keep the defaults.
constexpr int kIndexSortedRunsToCompact = 16;

void DeferIndexCompactions(rocksdb::ColumnFamilyOptions& cf) {
  cf.compaction_style = rocksdb::kCompactionStyleUniversal;
  cf.level0_file_num_compaction_trigger = kIndexSortedRunsToCompact;
  cf.level0_slowdown_writes_trigger = 3 * kIndexSortedRunsToCompact;
  cf.level0_stop_writes_trigger = 4 * kIndexSortedRunsToCompact;
}

// A writer's decision index memtable. Its keys come in no order, so a skiplist memtable walked
// its levels with a comparison each for every entry: 31% of the log writer's thread on the
// 3-hour bench_simulate. A vector memtable appends them and sorts once, at flush, on RocksDB's
// thread (the writer's appends 2.4 -> 1.2 s, the process 13.5 -> 12.2 CPU-seconds). But every
// read of its unflushed entries sorts a copy of all of them (an audit query reads ~175 entries:
// 6 ms became 670 ms on bench_audit's live log), so only a writable open uses it: the readers
// (`tenon audit`, `explain`, replay) open the log read-only, and a live log's write-ahead log
// is then replayed into a skiplist.
void AppendOnlyIndexMemtable(rocksdb::ColumnFamilyOptions& cf) {
  cf.memtable_factory.reset(new rocksdb::VectorRepFactory());
}

// The families to open: all of them, except that a read-only open of a log written before a
// family existed (which RocksDB cannot create read-only) leaves that one out.
std::vector<rocksdb::ColumnFamilyDescriptor> Families(const std::vector<std::string>& present,
                                                      bool writable) {
  rocksdb::ColumnFamilyOptions cf;
  // The log is append-mostly and read back in order: small memtables (RocksDB's default is
  // 64 MB per family, five families) keep a long-running controller's memory bounded.
  cf.write_buffer_size = kWriteBufferBytes;
  cf.max_write_buffer_number = 2;
  cf.arena_block_size = kArenaBlockBytes;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(kBlockCacheBytes);
  // Without this every open SST file keeps its index block on the heap for as long as it is
  // open, which grows with the log (hundreds of MB at 5,000 nodes); in the cache it is bounded.
  table.cache_index_and_filter_blocks = true;
  table.cache_index_and_filter_blocks_with_high_priority = true;
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  auto supported = rocksdb::GetSupportedCompressions();
  if (std::find(supported.begin(), supported.end(), rocksdb::kLZ4Compression) != supported.end()) {
    cf.compression = rocksdb::kLZ4Compression;
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (std::size_t f = 0; f < kFamilies; ++f) {
    const char* name = kFamilyNames[f];
    bool found =
        present.empty() || std::find(present.begin(), present.end(), name) != present.end();
    if (!found) continue;
    families.emplace_back(name, cf);
    if (f == kDecisionIndex) {
      DeferIndexCompactions(families.back().options);
      if (writable) AppendOnlyIndexMemtable(families.back().options);
    }
  }
  return families;
}

// Handles indexed by Family, nullptr for a family the log does not have.
std::vector<rocksdb::ColumnFamilyHandle*> InAllFamilies(
    const std::vector<rocksdb::ColumnFamilyDescriptor>& opened,
    std::vector<rocksdb::ColumnFamilyHandle*> handles) {
  assert(opened.size() == handles.size());
  std::vector<rocksdb::ColumnFamilyHandle*> all(kFamilies, nullptr);
  for (std::size_t i = 0, f = 0; i < opened.size(); ++i) {
    while (opened[i].name != kFamilyNames[f]) ++f;
    all[f] = handles[i];
  }
  for (std::size_t f = 0; f < kDecisionIndex; ++f) {
    if (all[f] == nullptr) {
      throw LogError(ErrorKind::kCorruption, 0,
                     std::string("log: no column family '") + kFamilyNames[f] + "'");
    }
  }
  return all;
}

// Whether a process (this one included) holds the folder's LOCK, found in /proc/locks: opening
// the LOCK file to ask would, on closing it, drop this process's own lock on it.
bool WriterHolds(const std::filesystem::path& dir) {
  struct stat st {};
  if (::stat((dir / "LOCK").c_str(), &st) != 0) return false;
  char device[32];
  std::snprintf(device, sizeof device, "%02x:%02x:", ::major(st.st_dev), ::minor(st.st_dev));
  const std::string id = device + std::to_string(st.st_ino);
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    // "1: POSIX  ADVISORY  WRITE 4242 08:02:131074 0 EOF"
    std::istringstream fields(line);
    std::string field;
    while (fields >> field) {
      if (field == id) return true;
    }
  }
  return false;
}

// What a look at a log's tables, before it is opened, found wrong ("" when nothing).
struct TableProbe {
  // SST files in the folder that its MANIFEST does not list, whose records the log lacks. A
  // crash during a flush or a compaction leaves unlisted files whose records the log still
  // holds (in the write-ahead log, in the compaction's inputs); a file whose records are
  // nowhere else was dropped from a MANIFEST damaged or cut short, which RocksDB reads as an
  // older state of the log, and a writable open would delete it.
  std::string lost;
  std::vector<std::filesystem::path> lost_tables;  // Their names.
  // RocksDB's account of the first listed table whose blocks fail their checksums (file and
  // offset). Checked only before writing: a reader stops at damage when it reads it, but a
  // writer would go on past damage it never reads (an old decision, an old snapshot).
  std::string damaged;
};

// A live writer's newest files are not listed yet: a log whose LOCK is held is not probed.
// The family a table's records belong to: its properties name it, except in the snapshot
// tables tenon wrote itself before it named the family there (only snapshots are written
// outside RocksDB and ingested).
std::string FamilyOfTable(const rocksdb::SstFileReader& reader) {
  const std::string family = reader.GetTableProperties()->column_family_name;
  return family.empty() ? kFamilyNames[kSnapshots] : family;
}

// Calls `missing(key, value)` for each record of the table at `reader` that the open `db`
// (`handles` in `families`' order) does not hold; returns the iterator's status.
rocksdb::Status ForEachMissing(
    rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyDescriptor>& families,
    const std::vector<rocksdb::ColumnFamilyHandle*>& handles, rocksdb::SstFileReader& reader,
    const std::function<void(rocksdb::ColumnFamilyHandle*, const rocksdb::Slice&,
                             const rocksdb::Slice&)>& missing) {
  const std::string family = FamilyOfTable(reader);
  rocksdb::ColumnFamilyHandle* handle = nullptr;
  for (std::size_t i = 0; i < families.size(); ++i) {
    if (families[i].name == family) handle = handles[i];
  }
  std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(rocksdb::ReadOptions{}));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string value;
    if (handle != nullptr &&
        !db->Get(rocksdb::ReadOptions{}, handle, it->key(), &value).IsNotFound()) {
      continue;
    }
    missing(handle, it->key(), it->value());
  }
  return it->status();
}

TableProbe ProbeTables(const std::filesystem::path& dir, rocksdb::DBOptions db_options,
                       const std::vector<std::string>& present, bool verify_checksums) {
  std::vector<std::filesystem::path> tables;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".sst") tables.push_back(entry.path());
  }
  if (tables.empty() || WriterHolds(dir)) return {};
  const auto families = Families(present, false);
  db_options.info_log = std::make_shared<DropLogger>();
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  if (!rocksdb::DB::OpenForReadOnly(db_options, dir.string(), families, &handles, &db).ok()) {
    return {};  // The open proper says what is wrong.
  }
  TableProbe probe;
  if (verify_checksums) {
    const rocksdb::Status verified = db->VerifyChecksum();
    if (!verified.ok()) probe.damaged = verified.ToString();
  }
  std::vector<rocksdb::LiveFileMetaData> live;
  db->GetLiveFilesMetaData(&live);
  std::set<std::string> listed;
  for (const auto& file : live) listed.insert(std::filesystem::path(file.name).filename());
  // A snapshot is ingested by linking its finished `.partial` file into the folder under a table
  // number and then listing it in the MANIFEST; the `.partial` name goes once that is done. A
  // table still linked to a `.partial` file is an ingestion a crash cut short between the two
  // steps: its snapshot was never acknowledged, and the log without it is whole.
  std::set<std::pair<dev_t, ino_t>> unfinished;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    struct stat st {};
    if (entry.path().extension() == ".partial" && ::stat(entry.path().c_str(), &st) == 0)
      unfinished.emplace(st.st_dev, st.st_ino);
  }
  std::string& lost = probe.lost;
  for (const auto& table : tables) {
    if (listed.contains(table.filename())) continue;
    struct stat st {};
    if (::stat(table.c_str(), &st) == 0 && unfinished.contains({st.st_dev, st.st_ino})) continue;
    rocksdb::SstFileReader reader(rocksdb::Options{});
    // An unfinished flush's output has no footer: it never held a record alone.
    if (!reader.Open(table.string()).ok()) continue;
    std::uint64_t missing = 0;
    std::string first;
    const rocksdb::Status read = ForEachMissing(
        db, families, handles, reader,
        [&](rocksdb::ColumnFamilyHandle*, const rocksdb::Slice& key, const rocksdb::Slice&) {
          if (missing++ == 0) first = key.ToString(true);
        });
    const std::string said = table.filename().string() + " (family " + FamilyOfTable(reader);
    if (!read.ok()) {
      lost += (lost.empty() ? "" : "; ") + said + ", unreadable: " + read.ToString() + ")";
    } else if (missing > 0) {
      lost += (lost.empty() ? "" : "; ") + said + ", " + std::to_string(missing) +
              (missing == 1 ? " record" : " records") + " found nowhere else, the first keyed 0x" +
              first + ")";
    }
    if (!read.ok() || missing > 0) probe.lost_tables.push_back(table.filename());
  }
  for (auto* handle : handles) db->DestroyColumnFamilyHandle(handle);
  db->Close();
  delete db;
  return probe;
}

// A table of the log fails its checksums: no writer goes on, and repair cannot mend it.
LogError TableDamage(const std::filesystem::path& dir, const std::string& damaged) {
  return LogError(ErrorKind::kCorruption, 0,
                  "log: " + dir.string() + ": a table of the log is damaged (" + damaged +
                      "); nothing was written, since a writer never goes on past damage. "
                      "`tenon log repair` mends a damaged write-ahead log or MANIFEST, not a "
                      "table: keep the folder for the record and start tenon on an empty one, "
                      "which rebuilds its state from the cluster");
}

// Where a write-ahead log is damaged and what it costs: "000004.log is damaged at offset X of
// its Y bytes: the records after sequence number N cannot be read". "" when not found.
std::string WhereDamaged(const std::filesystem::path& dir, rocksdb::DBOptions db_options,
                         const std::vector<rocksdb::ColumnFamilyDescriptor>& families) {
  db_options.info_log = std::make_shared<DropLogger>();
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  if (!rocksdb::DB::OpenForReadOnly(db_options, dir.string(), families, &handles, &db).ok()) {
    return "";
  }
  const rocksdb::SequenceNumber kept = db->GetLatestSequenceNumber();
  Seq last = 0;
  for (std::size_t i = 0; i < families.size(); ++i) {
    if (families[i].name != kFamilyNames[kEvents]) continue;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions{}, handles[i]));
    it->SeekToLast();
    if (it->Valid() && it->key().size() == 8) last = FromKey(it->key());
  }
  for (auto* handle : handles) db->DestroyColumnFamilyHandle(handle);
  db->Close();
  delete db;
  const Damage damage = FindDamage(dir, kept);
  if (damage.file.empty()) return "";
  return damage.file.filename().string() + " is damaged at offset " +
         std::to_string(damage.offset) + " of its " + std::to_string(damage.size) +
         " bytes: the records after sequence number " + std::to_string(last) + " cannot be read";
}

}  // namespace

void EventLog::PutSnapshot(Seq seq, std::string_view payload) {
  auto writer = BeginSnapshot(seq);
  writer->Add(payload);
  writer->Commit();
}

std::unique_ptr<EventLog> EventLog::Open(const std::filesystem::path& dir,
                                         const OpenOptions& options, OpenReport* report) {
  OpenReport local;
  OpenReport& out = report ? *report : local;
  out = OpenReport{};
  if (!options.create_if_missing && !std::filesystem::exists(dir / "CURRENT")) {
    throw LogError(ErrorKind::kIo, 0, "log: no log at " + dir.string());
  }
  UmaskGuard umask;
  std::error_code ec;
  RefuseOtherFiles(dir, options.read_only, out);
  std::filesystem::create_directories(dir, ec);  // 0700 under the umask above.
  if (ec)
    throw LogError(ErrorKind::kIo, 0, "log: cannot create " + dir.string() + ": " + ec.message());

  rocksdb::DBOptions db_options = BaseOptions(options);
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyDescriptor> families = Families({}, true);
  std::vector<std::string> present;
  if (std::filesystem::exists(dir / "CURRENT", ec)) {
    Check(rocksdb::DB::ListColumnFamilies(db_options, dir.string(), &present),
          "listing the families of " + dir.string());
    // Every family but the decision index (which a log may predate) is there from the first
    // open on; one missing is a MANIFEST damaged or cut short, and must not be made anew.
    const bool first_open_cut_short = !options.read_only && NothingWritten(dir);
    for (std::size_t f = 0; f < kDecisionIndex && !first_open_cut_short; ++f) {
      if (std::find(present.begin(), present.end(), kFamilyNames[f]) == present.end()) {
        throw LogError(ErrorKind::kCorruption, 0,
                       "log: " + dir.string() + ": its MANIFEST lists no column family '" +
                           kFamilyNames[f] +
                           "' (damaged or cut short); nothing was read or written");
      }
    }
    if (options.read_only) families = Families(present, false);
    const TableProbe probe = ProbeTables(dir, db_options, present, !options.read_only);
    if (!probe.lost.empty()) {
      throw LogError(ErrorKind::kCorruption, 0,
                     "log: " + dir.string() + ": its MANIFEST does not list " + probe.lost +
                         ": the MANIFEST is damaged or cut short, and nothing was read or " +
                         "written. `tenon log repair " + dir.string() +
                         "` sets the folder aside and puts their records back");
    }
    if (!probe.damaged.empty()) throw TableDamage(dir, probe.damaged);
  }
  auto drops = std::make_shared<DropLogger>(options.on_store_warning);
  db_options.info_log = drops;
  auto open = [&](rocksdb::WALRecoveryMode mode) {
    db_options.wal_recovery_mode = mode;
    return options.read_only
               ? rocksdb::DB::OpenForReadOnly(db_options, dir.string(), families, &handles, &db)
               : rocksdb::DB::Open(db_options, dir.string(), families, &handles, &db);
  };
  // Strict first: any damage in the write-ahead log fails the open, so we can say which.
  rocksdb::Status status = open(rocksdb::WALRecoveryMode::kAbsoluteConsistency);
  if (status.IsCorruption()) {
    const std::string said = drops->Said();
    const std::string strict = said.empty() ? status.ToString() : said;
    const TornTail torn = FindTornTail(dir);  // Before a writer's recovery replaces the file.
    // A record cut off at the very end is what a crash leaves: recovered, and said so. Damage
    // anywhere before the end stops the open: records after it would be lost unsaid.
    status = open(rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords);
    if (status.IsCorruption()) {
      const std::string where = WhereDamaged(dir, db_options, Families(present, false));
      throw LogError(ErrorKind::kCorruption, 0,
                     "log: " + dir.string() + ": the write-ahead log is damaged before its end (" +
                         (where.empty() ? "" : where + "; ") + strict +
                         "); what follows the damage cannot be read, and " +
                         "nothing was read or written. `tenon log repair " + dir.string() +
                         "` sets the damaged files aside and goes on from the last good record");
    }
    if (status.ok()) {
      out.torn_tail_truncated = true;
      out.message = "log: " + torn.file.string() + " ended in a torn record (" + strict +
                    "), as a crash leaves it: " + std::to_string(torn.bytes) +
                    " bytes from offset " + std::to_string(torn.offset) + " were dropped";
    }
  }
  if (status.ok() && options.read_only) handles = InAllFamilies(families, std::move(handles));
  if (!options.read_only) ThrowIfInUse(dir, status);
  Check(status, "opening " + dir.string());
  // Only now, with the LOCK held, may a writer touch the folder's files.
  if (!options.read_only) RemovePartialSnapshots(dir);
  auto log = std::make_unique<RocksEventLog>(db, std::move(handles), options.read_only, dir);
  log->InitMeta(options, out);
  out.last_seq = log->LastSeq();
  if (out.torn_tail_truncated) {
    out.message += "; the log goes on from sequence number " + std::to_string(out.last_seq);
  }
  return log;
}

namespace {

// "20261127T234501Z": when a repair ran, for the names of what it leaves.
std::string UtcStamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

// The log folder as it is, into `aside`: SST files are immutable and hard-linked (copied where
// links are not possible), the rest copied.
void SetAside(const std::filesystem::path& dir, const std::filesystem::path& aside) {
  std::filesystem::create_directory(aside);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const auto to = aside / entry.path().filename();
    std::error_code ec;
    if (entry.path().extension() == ".sst") std::filesystem::create_hard_link(entry.path(), to, ec);
    if (entry.path().extension() != ".sst" || ec) std::filesystem::copy_file(entry.path(), to);
  }
}

}  // namespace

RepairReport RepairLog(const std::filesystem::path& dir, const FirstLostDecision& first_lost) {
  if (!std::filesystem::exists(dir / "CURRENT")) {
    throw LogError(ErrorKind::kIo, 0, "log: no log at " + dir.string());
  }
  UmaskGuard umask;
  OpenOptions options;
  options.create_if_missing = false;
  rocksdb::DBOptions db_options = BaseOptions(options);
  auto drops = std::make_shared<DropLogger>();
  db_options.info_log = drops;
  const auto families = Families({}, true);
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  auto close = [&] {
    for (auto* handle : handles) db->DestroyColumnFamilyHandle(handle);
    handles.clear();
    db->Close();
    delete db;
    db = nullptr;
  };
  RepairReport report;
  const std::string stamp = UtcStamp();
  std::vector<std::string> present;
  Check(rocksdb::DB::ListColumnFamilies(db_options, dir.string(), &present),
        "listing the families of " + dir.string());
  const TableProbe probe = ProbeTables(dir, db_options, present, true);
  if (!probe.damaged.empty() && probe.lost.empty()) throw TableDamage(dir, probe.damaged);
  const std::string& lost = probe.lost;
  if (!lost.empty()) {
    // The log as the MANIFEST has it (RocksDB deletes the tables it does not list, whose links
    // in the copy set aside remain), then every record of those tables it lacks, put back.
    report.repaired = true;
    report.manifest_rebuilt = true;
    report.damage = "the MANIFEST does not list " + lost;
    report.aside = dir.parent_path() / (dir.filename().string() + ".damaged-" + stamp);
    SetAside(dir, report.aside);
    db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kAbsoluteConsistency;
    Check(rocksdb::DB::Open(db_options, dir.string(), families, &handles, &db),
          "opening " + dir.string() + " to put back what its MANIFEST lost");
    for (const auto& table : probe.lost_tables) {
      rocksdb::SstFileReader reader(rocksdb::Options{});
      Check(reader.Open((report.aside / table).string()), "reading " + table.string());
      rocksdb::WriteBatch batch;
      Check(ForEachMissing(db, families, handles, reader,
                           [&](rocksdb::ColumnFamilyHandle* handle, const rocksdb::Slice& key,
                               const rocksdb::Slice& value) {
                             if (handle != nullptr) Check(batch.Put(handle, key, value), "");
                           }),
            "reading " + table.string());
      rocksdb::WriteOptions write;
      write.sync = true;
      Check(db->Write(write, &batch), "putting back the records of " + table.string());
    }
    close();
  }
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kAbsoluteConsistency;
  rocksdb::Status status = rocksdb::DB::Open(db_options, dir.string(), families, &handles, &db);
  ThrowIfInUse(dir, status);
  if (status.ok()) {
    if (report.manifest_rebuilt) {
      rocksdb::WriteOptions write;
      write.sync = true;
      Check(db->Put(write, handles[kMeta], "repair." + stamp,
                    "damage: " + report.damage + "; the log as it was: " + report.aside.string()),
            "recording the repair");
    }
    close();
  } else if (!status.IsCorruption()) {
    Check(status, "opening " + dir.string());
  } else {
    report.repaired = true;
    const std::string where = WhereDamaged(dir, db_options, Families(present, false));
    report.damage = (where.empty() ? "" : where + "; ") +
                    (drops->Said().empty() ? status.ToString() : drops->Said());
    report.aside = dir.parent_path() / (dir.filename().string() + ".damaged-" + stamp);
    SetAside(dir, report.aside);
    // Everything up to the damage, nothing after it.
    db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
    Check(rocksdb::DB::Open(db_options, dir.string(), families, &handles, &db),
          "recovering " + dir.string() + " up to the damage");
    rocksdb::WriteOptions write;
    write.sync = true;
    const std::string record =
        "damage: " + report.damage + "; the log as it was: " + report.aside.string();
    Check(db->Put(write, handles[kMeta], "repair." + stamp, record), "recording the repair");
    close();
    std::uint64_t decision = 0;
    {
      auto kept = EventLog::Open(dir, options);
      report.last_seq = kept->LastSeq();
      decision = first_lost(*kept, report.last_seq);
    }
    Check(rocksdb::DB::Open(db_options, dir.string(), families, &handles, &db),
          "reopening " + dir.string());
    rocksdb::WriteBatch batch;
    const std::string end(9, '\xff');
    Check(batch.DeleteRange(handles[kSnapshots], Key(report.last_seq + 1), end),
          "dropping snapshots past the damage");
    Check(batch.DeleteRange(handles[kDecisions], Key(decision), end),
          "dropping decisions past the damage");
    std::unique_ptr<rocksdb::Iterator> index(db->NewIterator({}, handles[kDecisionIndex]));
    for (index->SeekToFirst(); index->Valid(); index->Next()) {
      const rocksdb::Slice key = index->key();
      if (key.size() < 8) continue;
      std::uint64_t id = 0;
      for (std::size_t i = key.size() - 8; i < key.size(); ++i) {
        id = id << 8 | static_cast<unsigned char>(key[i]);
      }
      if (id >= decision)
        Check(batch.Delete(handles[kDecisionIndex], key), "dropping an index entry");
    }
    Check(index->status(), "reading the decision index");
    index.reset();
    Check(db->Write(write, &batch), "dropping what the lost records made");
    close();
  }
  // The log opens strictly now, or the repair did not mend it.
  auto log = EventLog::Open(dir, options);
  report.last_seq = log->LastSeq();
  if (report.repaired) {
    report.report = report.aside / "REPAIR.txt";
    std::ofstream out(report.report);
    out << "tenon log repair of " << dir.string() << " at " << UtcStamp() << "\n"
        << "damage: " << report.damage << "\n"
        << "kept: records " << log->FirstSeq() << " to " << report.last_seq << " (in "
        << dir.string() << ")\n";
    if (report.manifest_rebuilt) {
      out << "the records of the tables the MANIFEST no longer listed were put back; the folder "
          << "as it was, damaged MANIFEST included, is in " << report.aside.string() << "\n";
    } else {
      out << "lost from the log: every record after " << report.last_seq
          << "; the damaged write-ahead log and everything else the folder held are in "
          << report.aside.string() << "\n";
    }
    if (!out) throw LogError(ErrorKind::kIo, 0, "log: cannot write " + report.report.string());
  }
  return report;
}

}  // namespace tenon::log

namespace tenon::log {

std::vector<LogFile> ListLogFiles(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir / "CURRENT")) {
    throw LogError(ErrorKind::kIo, 0, "log: no log at " + dir.string());
  }
  OpenOptions options;
  options.read_only = true;
  rocksdb::DBOptions db_options = BaseOptions(options);
  db_options.info_log = std::make_shared<DropLogger>();
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  std::vector<std::string> present;
  Check(rocksdb::DB::ListColumnFamilies(db_options, dir.string(), &present),
        "listing the families of " + dir.string());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  Check(rocksdb::DB::OpenForReadOnly(db_options, dir.string(), Families(present, false), &handles,
                                     &db),
        "opening " + dir.string());
  std::vector<rocksdb::LiveFileMetaData> live;
  db->GetLiveFilesMetaData(&live);
  for (auto* handle : handles) db->DestroyColumnFamilyHandle(handle);
  db->Close();
  delete db;
  std::vector<LogFile> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    LogFile file;
    file.name = entry.path().filename().string();
    file.bytes = entry.file_size();
    const std::string ext = entry.path().extension().string();
    if (ext == ".sst") {
      file.kind = "unlisted table";
      for (const auto& table : live) {
        if (std::filesystem::path(table.name).filename() != file.name) continue;
        file.kind = "table";
        file.family = table.column_family_name;
      }
    } else if (ext == ".log") {
      file.kind = "write-ahead log";
    } else if (ext == ".partial") {
      file.kind = "snapshot being written";
    } else {
      file.kind = "other";
      for (const char* name : {"MANIFEST", "CURRENT", "OPTIONS", "LOCK", "IDENTITY"}) {
        if (file.name.starts_with(name)) file.kind = name;
      }
    }
    files.push_back(std::move(file));
  }
  std::sort(files.begin(), files.end(),
            [](const LogFile& a, const LogFile& b) { return a.name < b.name; });
  return files;
}

}  // namespace tenon::log
