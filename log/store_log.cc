// The EventLog over RocksDB: appends in group commits, reads, snapshots, truncation.
#include <rocksdb/sst_file_writer.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>

#include "log/store.h"

namespace tenon::log::store {
namespace {

constexpr std::size_t kGroupCommitMax = 1024;  // Callers one group commit may carry.
constexpr const char* kMetaSchemaVersion = "schema_version";
constexpr const char* kMetaWriterVersion = "writer_version";
constexpr const char* kMetaClusterId = "cluster_id";
constexpr const char* kMetaFirstSeq = "first_seq";  // Absent: 1 (never truncated).
// Present when the log was created with the decision index, so every decision is indexed.
constexpr const char* kMetaDecisionIndex = "decision_index";
// Longest index term accepted: terms are names and fixed-size keys, never whole records.
constexpr std::size_t kIndexTermBytesMax = 1024;

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
  std::atomic<Seq> last_seq_{Seq{0}};
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
  return it->Valid() ? SeqFromKey(it->key()) : Seq{0};
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
        w->seqs.push_back(next);
        next = next + 1;
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
  auto payload = Get(kEvents, seq.value);
  if (!payload) return std::nullopt;
  return Record{seq, std::move(*payload)};
}

void RocksEventLog::Scan(Seq from, Seq to, const std::function<bool(const Record&)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}, handles_[kEvents]));
  for (it->Seek(Key(from)); it->Valid(); it->Next()) {
    Seq seq = SeqFromKey(it->key());
    if (to != Seq{0} && seq > to) break;
    Record record{
        seq, Unframe("events", seq.value, it->key().ToStringView(), it->value().ToStringView())};
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
    Check(writer_.Open(file_.string()), "starting snapshot " + std::to_string(seq.value));
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
    Check(writer_.Put(key, value), "writing snapshot " + std::to_string(seq_.value));
    ++parts_;
  }

  void Commit() override {
    if (parts_ == 0) throw LogError(ErrorKind::kInvalid, seq_, "log: a snapshot without parts");
    UmaskGuard umask;
    Check(writer_.Finish(), "finishing snapshot " + std::to_string(seq_.value));
    // A snapshot at this seq written before (a rerun) may have had more parts: drop it first.
    std::string existing;
    if (db_->Get({}, family_, Key(seq_), &existing).ok()) {
      Check(db_->DeleteRange({}, family_, Key(seq_), Key(seq_ + 1)), "replacing a snapshot");
    }
    rocksdb::IngestExternalFileOptions ingest;
    ingest.move_files = true;
    Check(db_->IngestExternalFile(family_, {file_.string()}, ingest),
          "storing snapshot " + std::to_string(seq_.value));
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
      dir_ / ("snapshot-" + std::to_string(seq.value) + ".sst.partial"), seq);
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
  it->SeekForPrev(Key(at == Seq{0} ? Seq{~std::uint64_t{0}} : at));
  Check(it->status(), "seeking a snapshot");
  if (!it->Valid()) return std::nullopt;
  // Landing on a part of an older snapshot: its head sits before it.
  const Seq seq = SnapshotSeqOf(it->key());
  const std::string head = Key(seq);
  if (it->key() != rocksdb::Slice(head)) it->SeekForPrev(head);
  Check(it->status(), "seeking a snapshot");
  if (!it->Valid() || it->key() != rocksdb::Slice(head)) {
    throw LogError(
        ErrorKind::kCorruption, seq,
        "log: snapshot at sequence number " + std::to_string(seq.value) + " has no head");
  }
  Snapshot snapshot{seq, {}};
  for (; it->Valid() && SnapshotSeqOf(it->key()) == seq; it->Next()) {
    const std::uint32_t expected = static_cast<std::uint32_t>(snapshot.parts.size());
    if (expected > 0 && it->key() != rocksdb::Slice(PartKey(seq, expected))) {
      throw LogError(ErrorKind::kCorruption, seq,
                     "log: snapshot at sequence number " + std::to_string(seq.value) +
                         " lacks part " + std::to_string(expected));
    }
    snapshot.parts.push_back(
        Unframe("snapshots", seq.value, it->key().ToStringView(), it->value().ToStringView()));
  }
  Check(it->status(), "reading a snapshot");
  return snapshot;
}

std::optional<std::string> RocksEventLog::SnapshotHead(Seq seq) const {
  return Get(kSnapshots, seq.value);
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
    seqs.push_back(SeqFromKey(it->key()));
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
        "log: truncating through seq " + std::to_string(through.value) + " needs a snapshot there");
  }
  // The new first sequence number is written with the deletions, so a crash leaves either
  // the old log or the truncated one.
  const std::string first = Key(1), end = Key(through + 1);
  rocksdb::WriteBatch batch;
  Check(batch.DeleteRange(handles_[kEvents], first, end), "truncating events");
  Check(batch.DeleteRange(handles_[kSnapshots], Key(0), Key(through)), "truncating snapshots");
  Check(batch.Put(handles_[kMeta], kMetaFirstSeq, std::to_string((through + 1).value)),
        "first seq");
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
  return Seq{first ? std::stoull(*first) : 1};
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

}  // namespace

std::unique_ptr<EventLog> OpenedLog(rocksdb::DB* db,
                                    std::vector<rocksdb::ColumnFamilyHandle*> handles,
                                    const std::filesystem::path& dir, const OpenOptions& options,
                                    OpenReport& report) {
  auto log = std::make_unique<RocksEventLog>(db, std::move(handles), options.read_only, dir);
  log->InitMeta(options, report);
  return log;
}

}  // namespace tenon::log::store
