// The parts of the RocksDB store behind log/event_log.h that its files share: the column
// families, the framing of records, the options and file system every open uses, and what an
// open finds wrong before RocksDB is asked. Private to log/.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/write_batch.h>
#include <sys/stat.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "log/event_log.h"

namespace tenon::log::store {

constexpr std::uint8_t kFrameVersion = 1;
constexpr std::size_t kFrameHeaderBytes = 1 + 8;
// A snapshot's part i >= 1 is stored under its sequence number's key followed by big-endian i,
// so the parts sort right after their head and before the next snapshot.
constexpr std::size_t kPartKeyBytes = 8 + 4;

enum Family : std::size_t {
  kDefault = 0,
  kEvents,
  kDecisions,
  kSnapshots,
  kMeta,
  kDecisionIndex,
  kFamilies
};
inline constexpr const char* kFamilyNames[kFamilies] = {"default",   "events", "decisions",
                                                        "snapshots", "meta",   "decision_index"};

// ---- Records (store_records.cc) ----

// A sequence number or decision id as an 8-byte big-endian key: keys sort in number order.
std::string Key(std::uint64_t n);
inline std::string Key(Seq seq) {
  return Key(seq.value);
}
std::string PartKey(Seq seq, std::uint32_t part);
std::uint64_t FromKey(const rocksdb::Slice& key);
inline Seq SeqFromKey(const rocksdb::Slice& key) {
  return Seq{FromKey(key)};
}
// The sequence number a snapshot head or part key belongs to.
Seq SnapshotSeqOf(const rocksdb::Slice& key);
// The frame's header: its version and the checksum of key and payload.
std::string FrameHeader(std::string_view key, std::string_view payload);
// Checks a stored value against its key and returns the payload; never skips a bad record.
std::string Unframe(const char* family, std::uint64_t n, std::string_view key,
                    std::string_view value);
// Throws LogError (kIo) naming `what` when `status` is not ok.
void Check(const rocksdb::Status& status, const std::string& what);
// Adds key -> FrameHeader(key, payload) + payload to `batch` without building the framed value
// apart, then frees `payload`: the batch holds the only copy from here on.
void PutFramed(rocksdb::WriteBatch& batch, rocksdb::ColumnFamilyHandle* family,
               const std::string& key, std::string& payload);

// ---- Options and files (store_options.cc) ----

// Every log this process opens goes through one file system that makes what RocksDB creates
// its owner's only (0600 files, 0700 folders), whatever the umask.
rocksdb::Env* OwnerOnlyEnv();
// Throws "is in use" when RocksDB refused the open because another process holds the LOCK.
void ThrowIfInUse(const std::filesystem::path& dir, const rocksdb::Status& status);
// A snapshot file left by a crash before its Commit never became part of the log.
void RemovePartialSnapshots(const std::filesystem::path& dir);
rocksdb::Options BaseOptions(const OpenOptions& options);
// The families to open: all of them, except that a read-only open of a log written before a
// family existed (which RocksDB cannot create read-only) leaves that one out.
std::vector<rocksdb::ColumnFamilyDescriptor> Families(const std::vector<std::string>& present,
                                                      bool writable);
// Handles indexed by Family, nullptr for a family the log does not have.
std::vector<rocksdb::ColumnFamilyHandle*> InAllFamilies(
    const std::vector<rocksdb::ColumnFamilyDescriptor>& opened,
    std::vector<rocksdb::ColumnFamilyHandle*> handles);

class UmaskGuard {
 public:
  UmaskGuard() : saved_(::umask(077)) {}
  ~UmaskGuard() { ::umask(saved_); }
  UmaskGuard(const UmaskGuard&) = delete;
  UmaskGuard& operator=(const UmaskGuard&) = delete;

 private:
  mode_t saved_;
};

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

// ---- What is wrong with a log before it opens (store_damage.cc) ----

// Where the newest write-ahead log file stops holding complete records: its last record that
// ends a write (RocksDB's log format: 32 KiB blocks of records, each with a 7-byte header,
// or 11 bytes for recycled files: checksum, length, type, [log number]).
struct TornTail {
  std::filesystem::path file;
  std::uint64_t offset = 0;  // Just past the last complete write.
  std::uint64_t bytes = 0;   // What follows it.
};

TornTail FindTornTail(const std::filesystem::path& dir);

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
TableProbe ProbeTables(const std::filesystem::path& dir, rocksdb::DBOptions db_options,
                       const std::vector<std::string>& present, bool verify_checksums);
// Calls `missing(key, value)` for each record of the table at `reader` that the open `db`
// (`handles` in `families`' order) does not hold; returns the iterator's status.
rocksdb::Status ForEachMissing(
    rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyDescriptor>& families,
    const std::vector<rocksdb::ColumnFamilyHandle*>& handles, rocksdb::SstFileReader& reader,
    const std::function<void(rocksdb::ColumnFamilyHandle*, const rocksdb::Slice&,
                             const rocksdb::Slice&)>& missing);
// A table of the log fails its checksums: no writer goes on, and repair cannot mend it.
LogError TableDamage(const std::filesystem::path& dir, const std::string& damaged);
// Where a write-ahead log is damaged and what it costs: "000004.log is damaged at offset X of
// its Y bytes: the records after sequence number N cannot be read". "" when not found.
std::string WhereDamaged(const std::filesystem::path& dir, rocksdb::DBOptions db_options,
                         const std::vector<rocksdb::ColumnFamilyDescriptor>& families);

// ---- The store (store_log.cc) ----

// The EventLog over an open RocksDB `db` (handles indexed by Family): reads or writes its meta
// as `options` say, and says in `report` whether it was created.
std::unique_ptr<EventLog> OpenedLog(rocksdb::DB* db,
                                    std::vector<rocksdb::ColumnFamilyHandle*> handles,
                                    const std::filesystem::path& dir, const OpenOptions& options,
                                    OpenReport& report);

}  // namespace tenon::log::store
