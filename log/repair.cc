// `tenon log repair`: sets the damaged log aside and goes on from its last good record.
#include "log/repair.h"

#include <rocksdb/db.h>

#include <ctime>
#include <fstream>

#include "log/store.h"

namespace tenon::log {

using namespace store;  // NOLINT: the store's shared parts, by their short names.

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

// One repair's RocksDB handle and what it has found so far.
class Repair {
 public:
  Repair(const std::filesystem::path& dir, const OpenOptions& options)
      : dir_(dir), db_options_(BaseOptions(options)), families_(Families({}, true)) {
    db_options_.info_log = drops_;
  }
  ~Repair() { Close(); }
  Repair(const Repair&) = delete;
  Repair& operator=(const Repair&) = delete;

  const rocksdb::DBOptions& db_options() const { return db_options_; }
  RepairReport& report() { return report_; }

  // The log as the MANIFEST has it (RocksDB deletes the tables it does not list, whose links
  // in the copy set aside remain), then every record of those tables it lacks, put back.
  void PutBackLostTables(const TableProbe& probe) {
    report_.repaired = true;
    report_.manifest_rebuilt = true;
    report_.damage = "the MANIFEST does not list " + probe.lost;
    SetAsideNow();
    Check(OpenDb(rocksdb::WALRecoveryMode::kAbsoluteConsistency),
          "opening " + dir_.string() + " to put back what its MANIFEST lost");
    for (const auto& table : probe.lost_tables) {
      rocksdb::SstFileReader reader(rocksdb::Options{});
      Check(reader.Open((report_.aside / table).string()), "reading " + table.string());
      rocksdb::WriteBatch batch;
      Check(ForEachMissing(db_, families_, handles_, reader,
                           [&](rocksdb::ColumnFamilyHandle* handle, const rocksdb::Slice& key,
                               const rocksdb::Slice& value) {
                             if (handle != nullptr) Check(batch.Put(handle, key, value), "");
                           }),
            "reading " + table.string());
      Check(db_->Write(Synced(), &batch), "putting back the records of " + table.string());
    }
    Close();
  }

  // Opens the log strictly: -> the status, the database left open when it is ok.
  rocksdb::Status OpenStrictly() { return OpenDb(rocksdb::WALRecoveryMode::kAbsoluteConsistency); }

  // Records in the log's meta what was damaged and where the log as it was is kept.
  void RecordRepair() {
    Check(db_->Put(Synced(), handles_[kMeta], "repair." + stamp_,
                   "damage: " + report_.damage + "; the log as it was: " + report_.aside.string()),
          "recording the repair");
  }

  // Everything up to the write-ahead log's damage, nothing after it; -> the last kept record.
  Seq RecoverUpToDamage(const rocksdb::Status& strict, const std::vector<std::string>& present,
                        const OpenOptions& options, const FirstLostDecision& first_lost) {
    report_.repaired = true;
    const std::string where = WhereDamaged(dir_, db_options_, Families(present, false));
    report_.damage = (where.empty() ? "" : where + "; ") +
                     (drops_->Said().empty() ? strict.ToString() : drops_->Said());
    SetAsideNow();
    Check(OpenDb(rocksdb::WALRecoveryMode::kPointInTimeRecovery),
          "recovering " + dir_.string() + " up to the damage");
    RecordRepair();
    Close();
    std::uint64_t decision = 0;
    {
      auto kept = EventLog::Open(dir_, options);
      report_.last_seq = kept->LastSeq();
      decision = first_lost(*kept, report_.last_seq);
    }
    DropWhatLostRecordsMade(decision);
    return report_.last_seq;
  }

  void Close() {
    if (db_ == nullptr) return;
    for (auto* handle : handles_) db_->DestroyColumnFamilyHandle(handle);
    handles_.clear();
    db_->Close();
    delete db_;
    db_ = nullptr;
  }

 private:
  static rocksdb::WriteOptions Synced() {
    rocksdb::WriteOptions write;
    write.sync = true;
    return write;
  }

  rocksdb::Status OpenDb(rocksdb::WALRecoveryMode mode) {
    db_options_.wal_recovery_mode = mode;
    return rocksdb::DB::Open(db_options_, dir_.string(), families_, &handles_, &db_);
  }

  void SetAsideNow() {
    report_.aside = dir_.parent_path() / (dir_.filename().string() + ".damaged-" + stamp_);
    SetAside(dir_, report_.aside);
  }

  // Snapshots past the last kept record, and decisions (with their index entries) from the
  // first lost id on, go with the records that made them.
  void DropWhatLostRecordsMade(std::uint64_t decision) {
    Check(OpenDb(db_options_.wal_recovery_mode), "reopening " + dir_.string());
    rocksdb::WriteBatch batch;
    const std::string end(9, '\xff');
    Check(batch.DeleteRange(handles_[kSnapshots], Key(report_.last_seq + 1), end),
          "dropping snapshots past the damage");
    Check(batch.DeleteRange(handles_[kDecisions], Key(decision), end),
          "dropping decisions past the damage");
    std::unique_ptr<rocksdb::Iterator> index(db_->NewIterator({}, handles_[kDecisionIndex]));
    for (index->SeekToFirst(); index->Valid(); index->Next()) {
      const rocksdb::Slice key = index->key();
      if (key.size() < 8) continue;
      std::uint64_t id = 0;
      for (std::size_t i = key.size() - 8; i < key.size(); ++i) {
        id = id << 8 | static_cast<unsigned char>(key[i]);
      }
      if (id >= decision)
        Check(batch.Delete(handles_[kDecisionIndex], key), "dropping an index entry");
    }
    Check(index->status(), "reading the decision index");
    index.reset();
    Check(db_->Write(Synced(), &batch), "dropping what the lost records made");
    Close();
  }

  const std::filesystem::path& dir_;
  rocksdb::DBOptions db_options_;
  std::shared_ptr<DropLogger> drops_ = std::make_shared<DropLogger>();
  std::vector<rocksdb::ColumnFamilyDescriptor> families_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::DB* db_ = nullptr;
  RepairReport report_;
  const std::string stamp_ = UtcStamp();
};

// REPAIR.txt beside what was set aside: what was damaged, what was kept and what was lost.
void WriteRepairReport(const std::filesystem::path& dir, const EventLog& log,
                       RepairReport& report) {
  report.report = report.aside / "REPAIR.txt";
  std::ofstream out(report.report);
  out << "tenon log repair of " << dir.string() << " at " << UtcStamp() << "\n"
      << "damage: " << report.damage << "\n"
      << "kept: records " << log.FirstSeq().value << " to " << report.last_seq.value << " (in "
      << dir.string() << ")\n";
  if (report.manifest_rebuilt) {
    out << "the records of the tables the MANIFEST no longer listed were put back; the folder "
        << "as it was, damaged MANIFEST included, is in " << report.aside.string() << "\n";
  } else {
    out << "lost from the log: every record after " << report.last_seq.value
        << "; the damaged write-ahead log and everything else the folder held are in "
        << report.aside.string() << "\n";
  }
  if (!out) throw LogError(ErrorKind::kIo, 0, "log: cannot write " + report.report.string());
}

}  // namespace

RepairReport RepairLog(const std::filesystem::path& dir, const FirstLostDecision& first_lost) {
  if (!std::filesystem::exists(dir / "CURRENT")) {
    throw LogError(ErrorKind::kIo, 0, "log: no log at " + dir.string());
  }
  UmaskGuard umask;
  OpenOptions options;
  options.create_if_missing = false;
  Repair repair(dir, options);
  RepairReport& report = repair.report();
  std::vector<std::string> present;
  Check(rocksdb::DB::ListColumnFamilies(repair.db_options(), dir.string(), &present),
        "listing the families of " + dir.string());
  const TableProbe probe = ProbeTables(dir, repair.db_options(), present, true);
  if (!probe.damaged.empty() && probe.lost.empty()) throw TableDamage(dir, probe.damaged);
  if (!probe.lost.empty()) repair.PutBackLostTables(probe);
  const rocksdb::Status status = repair.OpenStrictly();
  ThrowIfInUse(dir, status);
  if (status.ok()) {
    if (report.manifest_rebuilt) repair.RecordRepair();
    repair.Close();
  } else if (!status.IsCorruption()) {
    Check(status, "opening " + dir.string());
  } else {
    repair.RecoverUpToDamage(status, present, options, first_lost);
  }
  // The log opens strictly now, or the repair did not mend it.
  auto log = EventLog::Open(dir, options);
  report.last_seq = log->LastSeq();
  if (report.repaired) WriteRepairReport(dir, *log, report);
  return report;
}

}  // namespace tenon::log
