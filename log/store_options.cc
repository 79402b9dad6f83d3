// The options and the file system every open of the log uses.
#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/file_system.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/table.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>

#include "log/store.h"

namespace tenon::log::store {
namespace {

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

}  // namespace

// One Env for every log this process opens, kept for the life of the process (RocksDB's
// background threads use it until the last database closes).
rocksdb::Env* OwnerOnlyEnv() {
  static const std::unique_ptr<rocksdb::Env> env =
      rocksdb::NewCompositeEnv(std::make_shared<OwnerOnlyFileSystem>());
  return env.get();
}

void ThrowIfInUse(const std::filesystem::path& dir, const rocksdb::Status& status) {
  if (status.IsIOError() && status.ToString().find("lock") != std::string::npos) {
    throw LogError(ErrorKind::kIo, 0,
                   "log: " + dir.string() + " is in use: another process holds its LOCK (" +
                       status.ToString() + ")");
  }
}

void RemovePartialSnapshots(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".partial") std::filesystem::remove(entry.path(), ec);
  }
}

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

}  // namespace tenon::log::store
