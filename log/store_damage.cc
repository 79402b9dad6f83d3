// What is wrong with a log folder before RocksDB opens it: a torn or damaged write-ahead log,
// tables its MANIFEST no longer lists, tables that fail their checksums.
#include <rocksdb/sst_file_reader.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "log/store.h"

namespace tenon::log::store {
namespace {

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

}  // namespace

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

namespace {

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

// The family a table's records belong to: its properties name it, except in the snapshot
// tables tenon wrote itself before it named the family there (only snapshots are written
// outside RocksDB and ingested).
std::string FamilyOfTable(const rocksdb::SstFileReader& reader) {
  const std::string family = reader.GetTableProperties()->column_family_name;
  return family.empty() ? kFamilyNames[kSnapshots] : family;
}

}  // namespace

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

LogError TableDamage(const std::filesystem::path& dir, const std::string& damaged) {
  return LogError(ErrorKind::kCorruption, 0,
                  "log: " + dir.string() + ": a table of the log is damaged (" + damaged +
                      "); nothing was written, since a writer never goes on past damage. "
                      "`tenon log repair` mends a damaged write-ahead log or MANIFEST, not a "
                      "table: keep the folder for the record and start tenon on an empty one, "
                      "which rebuilds its state from the cluster");
}

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
  Seq last{0};
  for (std::size_t i = 0; i < families.size(); ++i) {
    if (families[i].name != kFamilyNames[kEvents]) continue;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions{}, handles[i]));
    it->SeekToLast();
    if (it->Valid() && it->key().size() == 8) last = SeqFromKey(it->key());
  }
  for (auto* handle : handles) db->DestroyColumnFamilyHandle(handle);
  db->Close();
  delete db;
  const Damage damage = FindDamage(dir, kept);
  if (damage.file.empty()) return "";
  return damage.file.filename().string() + " is damaged at offset " +
         std::to_string(damage.offset) + " of its " + std::to_string(damage.size) +
         " bytes: the records after sequence number " + std::to_string(last.value) +
         " cannot be read";
}

}  // namespace tenon::log::store
