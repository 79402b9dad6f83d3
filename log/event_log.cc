// Opening the log: what is wrong with it is found and said before anything is written.
#include <rocksdb/db.h>

#include <algorithm>

#include "log/creation.h"
#include "log/event_log.h"
#include "log/files.h"
#include "log/store.h"

namespace tenon::log {

using namespace store;  // NOLINT: the store's shared parts, by their short names.

void EventLog::PutSnapshot(Seq seq, std::string_view payload) {
  auto writer = BeginSnapshot(seq);
  writer->Add(payload);
  writer->Commit();
}

namespace {

// Refuses, before RocksDB opens it, a log whose MANIFEST lost a family or a table, or one of
// whose tables is damaged; -> the families its MANIFEST lists.
std::vector<std::string> RefuseLostParts(const std::filesystem::path& dir,
                                         const OpenOptions& options,
                                         const rocksdb::DBOptions& db_options) {
  std::vector<std::string> present;
  Check(rocksdb::DB::ListColumnFamilies(db_options, dir.string(), &present),
        "listing the families of " + dir.string());
  // Every family but the decision index (which a log may predate) is there from the first
  // open on; one missing is a MANIFEST damaged or cut short, and must not be made anew.
  const bool first_open_cut_short = !options.read_only && NothingWritten(dir);
  for (std::size_t f = 0; f < kDecisionIndex && !first_open_cut_short; ++f) {
    if (std::find(present.begin(), present.end(), kFamilyNames[f]) == present.end()) {
      throw LogError(ErrorKind::kCorruption, 0,
                     "log: " + dir.string() + ": its MANIFEST lists no column family '" +
                         kFamilyNames[f] + "' (damaged or cut short); nothing was read or written");
    }
  }
  const TableProbe probe = ProbeTables(dir, db_options, present, !options.read_only);
  if (!probe.lost.empty()) {
    throw LogError(ErrorKind::kCorruption, 0,
                   "log: " + dir.string() + ": its MANIFEST does not list " + probe.lost +
                       ": the MANIFEST is damaged or cut short, and nothing was read or " +
                       "written. `tenon log repair " + dir.string() +
                       "` sets the folder aside and puts their records back");
  }
  if (!probe.damaged.empty()) throw TableDamage(dir, probe.damaged);
  return present;
}

// One open of the log's RocksDB database, tried strictly first.
struct Opening {
  const std::filesystem::path& dir;
  const OpenOptions& options;
  rocksdb::DBOptions db_options;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  std::vector<std::string> present;  // Empty for a log being created.
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;

  rocksdb::Status Try(rocksdb::WALRecoveryMode mode) {
    db_options.wal_recovery_mode = mode;
    return options.read_only
               ? rocksdb::DB::OpenForReadOnly(db_options, dir.string(), families, &handles, &db)
               : rocksdb::DB::Open(db_options, dir.string(), families, &handles, &db);
  }
};

// Strict first: any damage in the write-ahead log fails the open, so we can say which. A
// record cut off at the very end is what a crash leaves: recovered, and said so in `out`.
// Damage anywhere before the end stops the open: records after it would be lost unsaid.
rocksdb::Status OpenRecoveringTornTail(Opening& o, DropLogger& drops, OpenReport& out) {
  rocksdb::Status status = o.Try(rocksdb::WALRecoveryMode::kAbsoluteConsistency);
  if (!status.IsCorruption()) return status;
  const std::string said = drops.Said();
  const std::string strict = said.empty() ? status.ToString() : said;
  const TornTail torn = FindTornTail(o.dir);  // Before a writer's recovery replaces the file.
  status = o.Try(rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords);
  if (status.IsCorruption()) {
    const std::string where = WhereDamaged(o.dir, o.db_options, Families(o.present, false));
    const std::string dir = o.dir.string();
    throw LogError(ErrorKind::kCorruption, 0,
                   "log: " + dir + ": the write-ahead log is damaged before its end (" +
                       (where.empty() ? "" : where + "; ") + strict +
                       "); what follows the damage cannot be read, and " +
                       "nothing was read or written. `tenon log repair " + dir +
                       "` sets the damaged files aside and goes on from the last good record");
  }
  if (status.ok()) {
    out.torn_tail_truncated = true;
    out.message = "log: " + torn.file.string() + " ended in a torn record (" + strict +
                  "), as a crash leaves it: " + std::to_string(torn.bytes) + " bytes from offset " +
                  std::to_string(torn.offset) + " were dropped";
  }
  return status;
}

}  // namespace

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

  Opening opening{dir, options, BaseOptions(options), Families({}, true), {}, {}, nullptr};
  if (std::filesystem::exists(dir / "CURRENT", ec)) {
    opening.present = RefuseLostParts(dir, options, opening.db_options);
    if (options.read_only) opening.families = Families(opening.present, false);
  }
  auto drops = std::make_shared<DropLogger>(options.on_store_warning);
  opening.db_options.info_log = drops;
  const rocksdb::Status status = OpenRecoveringTornTail(opening, *drops, out);
  auto& handles = opening.handles;
  if (status.ok() && options.read_only) handles = InAllFamilies(opening.families, handles);
  if (!options.read_only) ThrowIfInUse(dir, status);
  Check(status, "opening " + dir.string());
  // Only now, with the LOCK held, may a writer touch the folder's files.
  if (!options.read_only) RemovePartialSnapshots(dir);
  auto log = OpenedLog(opening.db, std::move(handles), dir, options, out);
  out.last_seq = log->LastSeq();
  if (out.torn_tail_truncated) {
    out.message += "; the log goes on from sequence number " + std::to_string(out.last_seq.value);
  }
  return log;
}

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
