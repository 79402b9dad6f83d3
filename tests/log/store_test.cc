// The RocksDB event store: round trips, group commit, torn-tail truncation, corruption that is
// named and never skipped, owner-only files, and a randomized comparison with an in-memory model.
#include <gtest/gtest.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/utilities/options_util.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "log/event_log.h"
#include "log/files.h"
#include "log/repair.h"
#include "tests/integration/helpers.h"

namespace tenon::testing {
namespace {

using log::AppendBatch;
using log::ErrorKind;
using log::EventLog;
using log::LogError;
using log::OpenOptions;
using log::OpenReport;

std::unique_ptr<EventLog> Open(const std::filesystem::path& dir, OpenReport* report = nullptr,
                               bool keep_wal = false) {
  OpenOptions options;
  options.writer_version = "test";
  options.cluster_id = "c1";
  options.avoid_flush_during_shutdown = keep_wal;
  return EventLog::Open(dir, options, report);
}

AppendBatch Events(std::vector<std::string> events) {
  return AppendBatch{std::move(events), {}};
}

ErrorKind KindOf(const std::function<void()>& fn, std::uint64_t* key = nullptr) {
  try {
    fn();
  } catch (const LogError& e) {
    if (key) *key = e.key();
    return e.kind();
  }
  ADD_FAILURE() << "no LogError thrown";
  return ErrorKind::kIo;
}

// Appends, reads, scans, decisions, snapshots and meta survive a reopen.
TEST(Store, RoundTripsAndPersists) {
  TempDir dir;
  {
    OpenReport report;
    auto log = Open(dir.path(), &report);
    EXPECT_TRUE(report.created);
    EXPECT_EQ(log->Append(Events({"a", "b", "c"})), (std::vector<Seq>{Seq{1}, Seq{2}, Seq{3}}));
    EXPECT_EQ(log->Append(AppendBatch{{"d"}, {{7, "decision seven", {}}}}),
              (std::vector<Seq>{Seq{4}}));
    EXPECT_TRUE(log->Append(AppendBatch{{}, {{8, "eight", {}}}}).empty());
    log->PutSnapshot(Seq{2}, "state@2");
    log->PutSnapshot(Seq{4}, "state@4");
  }
  OpenReport report;
  auto log = Open(dir.path(), &report);
  EXPECT_FALSE(report.created);
  EXPECT_EQ(log->LastSeq(), Seq{4});
  EXPECT_EQ(log->Read(Seq{3})->payload, "c");
  EXPECT_FALSE(log->Read(Seq{5}).has_value());
  std::vector<std::string> seen;
  log->Scan(Seq{2}, Seq{3}, [&](const log::Record& r) {
    seen.push_back(r.payload);
    return true;
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(log->ReadDecision(7)->payload, "decision seven");
  EXPECT_EQ(log->SnapshotAtOrBelow(Seq{3})->parts, (std::vector<std::string>{"state@2"}));
  EXPECT_EQ(log->SnapshotAtOrBelow(Seq{0})->seq, Seq{4});
  EXPECT_FALSE(log->SnapshotAtOrBelow(Seq{1}).has_value());
  EXPECT_EQ(log->SnapshotSeqs(), (std::vector<Seq>{Seq{2}, Seq{4}}));
  EXPECT_EQ(log->SchemaVersion(), log::kSchemaVersion);
  EXPECT_EQ(log->ClusterId(), "c1");
  EXPECT_EQ(log->WriterVersion(), "test");
}

// Limits and misuse are refused with kInvalid; another cluster's log is not opened.
// Decision index entries are written with their decisions and read back by term range, a term
// never matching a longer one it is a prefix of; read-only opens see them too.
TEST(Store, DecisionIndexFindsDecisionsByTerm) {
  TempDir dir;
  {
    auto log = Open(dir.path());
    EXPECT_TRUE(log->HasDecisionIndex());
    std::string web1 = std::string("cweb-1") + '\0', web10 = std::string("cweb-10") + '\0';
    log->Append(AppendBatch{{"e"}, {{3, "three", {web1}}, {5, "five", {web10, web1}}}});
    log->Append(AppendBatch{{}, {{9, "nine", {web10}}}});
    EXPECT_EQ(KindOf([&] {
                log->Append(AppendBatch{{}, {{10, "ten", {""}}}});
              }),
              ErrorKind::kInvalid);
  }
  OpenOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  auto log = EventLog::Open(dir.path(), options);
  EXPECT_TRUE(log->HasDecisionIndex());
  auto ids = [&](const std::string& term) {
    std::vector<std::uint64_t> out;
    log->ScanDecisionIndex(term, term + std::string(9, '\xff'), [&](std::uint64_t id) {
      out.push_back(id);
      return true;
    });
    return out;
  };
  EXPECT_EQ(ids(std::string("cweb-1") + '\0'), (std::vector<std::uint64_t>{3, 5}));
  EXPECT_EQ(ids(std::string("cweb-10") + '\0'), (std::vector<std::uint64_t>{5, 9}));
  EXPECT_TRUE(ids(std::string("cweb-2") + '\0').empty());
  EXPECT_FALSE(log->ReadDecision(10).has_value());
}

// The decision index is compacted after 16 level-0 files, not RocksDB's 4: its keys spread
// over the whole range, so every compaction rewrites all of level 1 (a measured 7.8 s of CPU in
// bench_simulate's 3 h run with the default, 2.2 s with this). The options RocksDB persisted
// for the log say so, and the other families keep the default.
TEST(Store, DecisionIndexCompactsAfterSixteenLevel0Files) {
  TempDir dir;
  Open(dir.path());
  rocksdb::DBOptions db;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  rocksdb::ConfigOptions config;
  ASSERT_TRUE(rocksdb::LoadLatestOptions(config, dir.path().string(), &db, &families).ok());
  std::map<std::string, int> trigger;
  for (const auto& f : families) trigger[f.name] = f.options.level0_file_num_compaction_trigger;
  EXPECT_EQ(trigger["decision_index"], 16);
  EXPECT_EQ(trigger["events"], 4);
  EXPECT_EQ(trigger["decisions"], 4);
}

// Opens the log's RocksDB directly and hands `fn` each column family, to make a log look as an
// older build left it.
template <class Fn>
void WithRawFamilies(const std::filesystem::path& dir, Fn fn) {
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies({}, dir.string(), &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const auto& name : names) families.emplace_back(name, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open({}, dir.string(), families, &handles, &db).ok());
  for (std::size_t i = 0; i < names.size(); ++i) fn(*db, names[i], handles[i]);
  for (auto* handle : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(handle).ok());
  ASSERT_TRUE(db->Close().ok());
  delete db;
}

// A log of schema version 1 (before disruption decisions shared their candidates' texts) reads
// as version 1; opened for writing it becomes the current version, since what this build
// appends to it an older build would misread.
TEST(Store, OlderSchemaIsUpgradedOnlyWhenWritten) {
  TempDir dir;
  Open(dir.path())->Append(AppendBatch{{"e"}, {}});
  WithRawFamilies(dir.path(), [](rocksdb::DB& db, const std::string& name,
                                 rocksdb::ColumnFamilyHandle* handle) {
    if (name == "meta") {
      ASSERT_TRUE(db.Put({}, handle, "schema_version", "1").ok());
    }
  });
  OpenOptions read_only;
  read_only.read_only = true;
  read_only.create_if_missing = false;
  EXPECT_EQ(EventLog::Open(dir.path(), read_only)->SchemaVersion(), 1u);
  EXPECT_EQ(EventLog::Open(dir.path(), read_only)->SchemaVersion(),
            1u);  // Reading changed nothing.
  EXPECT_EQ(Open(dir.path())->SchemaVersion(), log::kSchemaVersion);
  EXPECT_EQ(EventLog::Open(dir.path(), read_only)->SchemaVersion(), log::kSchemaVersion);
  EXPECT_EQ(log::kSchemaVersion, 2u);
}

// A log written before the decision index existed (no decision_index family, no meta key)
// still opens read-only, says it has no index and finds nothing in it; opened for writing, it
// gains the family but still says so, because its older decisions were never indexed.
TEST(Store, LogWithoutTheIndexStillOpens) {
  TempDir dir;
  {
    auto log = Open(dir.path());
    log->Append(AppendBatch{{"e"}, {{3, "three", {std::string("cweb-1") + '\0'}}}});
  }
  // Make it look like an old log: drop the family and the meta key.
  WithRawFamilies(dir.path(), [](rocksdb::DB& db, const std::string& name,
                                 rocksdb::ColumnFamilyHandle* handle) {
    if (name == "decision_index") {
      ASSERT_TRUE(db.DropColumnFamily(handle).ok());
    }
    if (name == "meta") {
      ASSERT_TRUE(db.Delete({}, handle, "decision_index").ok());
    }
  });
  auto scan_all = [](const EventLog& log) {
    std::size_t n = 0;
    log.ScanDecisionIndex(std::string(1, '\0'), std::string(4, '\xff'), [&](std::uint64_t) {
      ++n;
      return true;
    });
    return n;
  };
  {
    OpenOptions options;
    options.read_only = true;
    options.create_if_missing = false;
    auto log = EventLog::Open(dir.path(), options);
    EXPECT_FALSE(log->HasDecisionIndex());
    EXPECT_EQ(scan_all(*log), 0u);
    EXPECT_EQ(log->ReadDecision(3)->payload, "three");
  }
  auto log = Open(dir.path());
  EXPECT_FALSE(log->HasDecisionIndex());
  log->Append(AppendBatch{{"f"}, {{4, "four", {std::string("cweb-1") + '\0'}}}});
  EXPECT_EQ(scan_all(*log), 0u);  // A partial index would answer wrongly: none is kept.
  EXPECT_EQ(log->ReadDecision(4)->payload, "four");
}

TEST(Store, RefusesMisuse) {
  TempDir dir;
  Open(dir.path())->Append(Events({"x"}));
  AppendBatch huge;
  huge.events.resize(log::kAppendBatchMax + 1);
  EXPECT_EQ(KindOf([&] { Open(dir.path())->Append(std::move(huge)); }), ErrorKind::kInvalid);
  OpenOptions read_only;
  read_only.read_only = true;
  auto ro = EventLog::Open(dir.path(), read_only);
  EXPECT_EQ(ro->Read(Seq{1})->payload, "x");
  EXPECT_EQ(KindOf([&] { ro->Append(Events({"y"})); }), ErrorKind::kInvalid);
  ro.reset();
  OpenOptions other;
  other.cluster_id = "c2";
  EXPECT_EQ(KindOf([&] { EventLog::Open(dir.path(), other); }), ErrorKind::kInvalid);
}

// Eight threads appending at once get unique, contiguous sequence numbers, and every record
// reads back as its writer wrote it.
TEST(Store, GroupCommitUnderConcurrency) {
  TempDir dir;
  auto log = Open(dir.path());
  constexpr int kThreads = 8, kAppends = 300;
  std::vector<std::map<Seq, std::string>> written(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAppends; ++i) {
        std::vector<std::string> batch;
        for (int k = 0; k <= i % 3; ++k)
          batch.push_back(std::to_string(t) + ":" + std::to_string(i) + ":" + std::to_string(k));
        auto seqs = log->Append(Events(batch), log::AppendOptions{i % 50 == 0});
        for (std::size_t k = 0; k < seqs.size(); ++k) written[t][seqs[k]] = batch[k];
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<Seq> all;
  for (const auto& w : written) {
    for (const auto& [seq, payload] : w) {
      EXPECT_TRUE(all.insert(seq).second) << "seq " << seq.value << " given twice";
      EXPECT_EQ(log->Read(seq)->payload, payload);
    }
  }
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(*all.begin(), Seq{1});
  EXPECT_EQ(*all.rbegin(), Seq{all.size()});
  EXPECT_EQ(log->LastSeq(), Seq{all.size()});
}

// A reader waiting on the tail wakes when a record is appended.
TEST(Store, WaitForAppendFollowsTheTail) {
  TempDir dir;
  auto log = Open(dir.path());
  log->Append(Events({"first"}));
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    log->Append(Events({"second"}));
  });
  EXPECT_EQ(log->WaitForAppend(Seq{1}, std::chrono::seconds(10)), Seq{2});
  writer.join();
  EXPECT_EQ(log->WaitForAppend(Seq{2}, std::chrono::milliseconds(1)), Seq{2});
}

std::filesystem::path NewestWal(const std::filesystem::path& dir) {
  std::filesystem::path newest;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".log" && entry.file_size() > 0 &&
        (newest.empty() || entry.path().filename() > newest.filename())) {
      newest = entry.path();
    }
  }
  return newest;
}

// A WAL cut in the middle of its last record is truncated to the last complete write at
// reopen, the open says so, earlier records are intact, and appending continues.
TEST(Store, TornWalTailIsTruncatedAndReported) {
  TempDir dir;
  constexpr int kRecords = 200;
  {
    auto log = Open(dir.path(), nullptr, /*keep_wal=*/true);
    for (int i = 1; i <= kRecords; ++i) log->Append(Events({"record " + std::to_string(i)}));
  }
  auto wal = NewestWal(dir.path());
  ASSERT_FALSE(wal.empty()) << "no write-ahead log with data";
  std::filesystem::resize_file(wal, std::filesystem::file_size(wal) - 7);

  OpenReport report;
  std::vector<std::string> warnings;
  OpenOptions options;
  options.avoid_flush_during_shutdown = true;
  options.on_store_warning = [&warnings](const std::string& line) { warnings.push_back(line); };
  auto log = EventLog::Open(dir.path(), options, &report);
  EXPECT_TRUE(report.torn_tail_truncated);
  // RocksDB's own account reaches the caller, not a LOG file in the folder.
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [&](const std::string& line) {
    return line.find(wal.string() + ": dropping ") != std::string::npos;
  })) << ::testing::PrintToString(warnings);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "LOG"));
  EXPECT_NE(report.message.find("torn"), std::string::npos) << report.message;
  EXPECT_NE(
      report.message.find("goes on from sequence number " + std::to_string(log->LastSeq().value)),
      std::string::npos)
      << report.message;
  // The file, where its last complete write ends and how much came after it.
  EXPECT_NE(report.message.find(wal.string() + " ended in a torn record"), std::string::npos)
      << report.message;
  EXPECT_NE(report.message.find(" bytes from offset "), std::string::npos) << report.message;
  EXPECT_GE(log->LastSeq(), Seq{1});
  EXPECT_LT(log->LastSeq(), static_cast<Seq>(kRecords));
  for (Seq s{1}; s <= log->LastSeq(); s += 1) {
    EXPECT_EQ(log->Read(s)->payload, "record " + std::to_string(s.value));
  }
  Seq next = log->LastSeq() + 1;
  EXPECT_EQ(log->Append(Events({"after"})), std::vector<Seq>{next});
}

// The bytes of every write-ahead log file in `dir`.
std::uintmax_t WalBytes(const std::filesystem::path& dir) {
  std::uintmax_t bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".log") bytes += entry.file_size();
  }
  return bytes;
}

// A log opened without the WAL (one removed with its process) writes its appends past the WAL,
// and still hands every record to the next open: its memtables are flushed at close, even when
// the caller asked to keep writes in the WAL instead.
TEST(Store, WithoutTheWalAppendsSkipItAndCloseFlushes) {
  constexpr int kRecords = 200;
  const std::string payload(100, 'x');
  std::uintmax_t wal_bytes[2] = {0, 0};
  for (const bool wal : {true, false}) {
    TempDir dir;
    {
      OpenOptions options;
      options.writer_version = "test";
      options.cluster_id = "c1";
      options.avoid_flush_during_shutdown = true;
      options.write_ahead_log = wal;
      auto log = EventLog::Open(dir.path(), options);
      for (int i = 1; i <= kRecords; ++i) {
        log->Append(AppendBatch{{payload + std::to_string(i)},
                                {{static_cast<std::uint64_t>(i), "decision", {"term"}}}});
      }
      wal_bytes[wal ? 1 : 0] = WalBytes(dir.path());
    }
    auto log = Open(dir.path());
    ASSERT_EQ(log->LastSeq(), static_cast<Seq>(kRecords)) << (wal ? "with" : "without");
    for (Seq s{1}; s <= Seq{kRecords}; s += 1) {
      EXPECT_EQ(log->Read(s)->payload, payload + std::to_string(s.value));
    }
    EXPECT_EQ(log->ReadDecision(kRecords)->payload, "decision");
  }
  EXPECT_GE(wal_bytes[1], std::uintmax_t{kRecords} * payload.size());
  EXPECT_LT(wal_bytes[0], payload.size() * 10) << "appends went through the WAL";
}

// A bad record in the middle is reported with its sequence number by Read and by Scan, which
// delivers every record before it and none after.
TEST(Store, CorruptRecordIsNamedNeverSkipped) {
  TempDir dir;
  auto log = Open(dir.path());
  for (int i = 1; i <= 20; ++i) log->Append(Events({"r" + std::to_string(i)}));
  // A well-formed frame whose checksum does not match, and a value too short to be a frame.
  std::string bad_sum(
      "\x01"
      "12345678"
      "r9",
      11);
  log->PutRawEventForTest(Seq{9}, bad_sum);
  log->PutRawEventForTest(Seq{15}, "\x01");
  for (Seq bad : {Seq{9}, Seq{15}}) {
    std::uint64_t key = 0;
    EXPECT_EQ(KindOf([&] { log->Read(bad); }, &key), ErrorKind::kCorruption);
    EXPECT_EQ(key, bad.value);
  }
  std::vector<Seq> delivered;
  std::uint64_t key = 0;
  try {
    log->Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
      delivered.push_back(r.seq);
      return true;
    });
    ADD_FAILURE() << "scan passed a corrupt record";
  } catch (const LogError& e) {
    key = e.key();
    EXPECT_NE(std::string(e.what()).find("sequence number 9"), std::string::npos) << e.what();
  }
  EXPECT_EQ(key, 9u);
  EXPECT_EQ(delivered.size(), 8u);
}

// A snapshot written in parts reads back whole and in order; one never committed is not there,
// and its half-written file is gone at the next open; an older snapshot's parts are found from
// a seq above it; truncation drops older snapshots with their parts.
TEST(Store, SnapshotsInParts) {
  TempDir dir;
  auto put = [](EventLog& log, Seq seq, const std::vector<std::string>& parts) {
    auto writer = log.BeginSnapshot(seq);
    for (const auto& part : parts) writer->Add(part);
    writer->Commit();
  };
  const std::vector<std::string> three{"head@3", std::string(5000, 'p'), "tail@3"};
  const std::vector<std::string> six{"head@6", "tail@6"};
  {
    auto log = Open(dir.path());
    log->Append(Events({"a", "b", "c", "d", "e", "f", "g"}));
    put(*log, Seq{3}, three);
    put(*log, Seq{6}, six);
    {
      auto abandoned = log->BeginSnapshot(Seq{7});
      abandoned->Add("head@7");
    }
    EXPECT_EQ(log->SnapshotSeqs(), (std::vector<Seq>{Seq{3}, Seq{6}}));
    EXPECT_EQ(log->SnapshotAtOrBelow(Seq{0})->parts, six);
    EXPECT_EQ(log->SnapshotAtOrBelow(Seq{5})->seq, Seq{3});
    EXPECT_EQ(log->SnapshotAtOrBelow(Seq{5})->parts, three);
    put(*log, Seq{6}, {"again@6"});  // Rewritten with fewer parts: the old ones do not linger.
    EXPECT_EQ(log->SnapshotAtOrBelow(Seq{6})->parts, (std::vector<std::string>{"again@6"}));
    // A crash while a snapshot was being written leaves its file behind.
    auto writer = log->BeginSnapshot(Seq{7});
    writer->Add("head@7");
    std::filesystem::copy_file(dir.path() / "snapshot-7.sst.partial", dir.path() / "x.partial");
  }
  {
    auto log = Open(dir.path());
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "x.partial"));
    EXPECT_EQ(log->SnapshotSeqs(), (std::vector<Seq>{Seq{3}, Seq{6}}));
    log->Truncate(Seq{6});
    EXPECT_EQ(log->SnapshotSeqs(), (std::vector<Seq>{Seq{6}}));
    EXPECT_FALSE(log->SnapshotAtOrBelow(Seq{5}).has_value());
  }
}

mode_t ModeOf(const std::filesystem::path& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

// A folder the log creates is 0700 and every file in it is its owner's only (0600), those the
// background flushes and compactions write included, whatever the process's umask.
TEST(Store, FilesAreOwnerOnly) {
  TempDir dir;
  auto path = dir.path() / "log";
  const mode_t umask = ::umask(022);
  {
    auto log = Open(path);
    // Past the memtables' size, so that RocksDB's threads flush files of their own.
    for (int i = 0; i < 40; ++i) log->Append(Events({std::string(256 << 10, 'x')}));
    log->PutSnapshot(Seq{10}, "s");
  }
  ::umask(umask);
  EXPECT_EQ(ModeOf(path), 0700u);
  int files = 0, tables = 0;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    EXPECT_EQ(ModeOf(entry.path()) & 077, 0u) << entry.path() << " is readable by others";
    ++files;
    tables += entry.path().extension() == ".sst";
  }
  EXPECT_GT(files, 3);
  EXPECT_GT(tables, 0);
}

// An empty folder the user made keeps its mode; files in a log folder that are not the log's
// keep theirs, whether the log is opened to write or only to read.
TEST(Store, ModesOfWhatTheLogDidNotCreateAreKept) {
  TempDir dir;
  auto path = dir.path() / "mine";
  std::filesystem::create_directory(path);
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
  Open(path)->Append(Events({"a"}));
  EXPECT_EQ(ModeOf(path), 0755u);
  const auto script = path / "notes.sh";
  std::ofstream(script) << "#!/bin/sh\n";
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  Open(path)->Append(Events({"b"}));
  OpenOptions read;
  read.read_only = true;
  read.create_if_missing = false;
  EXPECT_EQ(EventLog::Open(path, read)->LastSeq(), Seq{2});
  EXPECT_EQ(ModeOf(path), 0755u);
  EXPECT_EQ(ModeOf(script), 0755u);
}

// A folder that holds other files and no log is not taken over: the open fails, saying so,
// and the folder is left exactly as it was.
TEST(Store, AFolderOfOtherFilesIsRefused) {
  TempDir dir;
  const auto script = dir.path() / "deploy.sh";
  std::ofstream(script) << "#!/bin/sh\n";
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  try {
    Open(dir.path());
    ADD_FAILURE() << "opened a folder of other files as a log";
  } catch (const LogError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalid);
    EXPECT_NE(std::string(e.what()).find("holds other files and no log"), std::string::npos)
        << e.what();
  }
  std::vector<std::filesystem::path> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    left.push_back(entry.path());
  }
  EXPECT_EQ(left, std::vector<std::filesystem::path>{script});
  EXPECT_EQ(ModeOf(script), 0755u);
}

// A writer killed while RocksDB was creating the log, before CURRENT named its first
// MANIFEST, leaves RocksDB's files and no record: the next open makes the log anew and says
// so. Anything else beside them keeps the folder refused, untouched.
TEST(Store, ACreationCutShortIsMadeAnew) {
  TempDir dir;
  const auto leave = [&](const char* name, const char* text) {
    std::ofstream(dir.path() / name) << text;
  };
  leave("LOCK", "");
  leave("IDENTITY", "3f1c0a6e-0000-4000-8000-000000000000\n");
  leave("MANIFEST-000001", "partial manifest");
  leave("000001.dbtmp", "MANIFEST-000001\n");
  OpenReport report;
  auto log = Open(dir.path(), &report);
  EXPECT_NE(report.message.find("creation cut short"), std::string::npos) << report.message;
  log->Append(Events({"a"}));
  EXPECT_EQ(log->LastSeq(), Seq{1});
  log.reset();
  EXPECT_EQ(Open(dir.path())->LastSeq(), Seq{1});

  TempDir other;
  std::ofstream(other.path() / "LOCK") << "";
  std::ofstream(other.path() / "MANIFEST-000001") << "partial manifest";
  std::ofstream(other.path() / "notes.txt") << "mine";
  EXPECT_THROW(Open(other.path()), LogError);
  EXPECT_TRUE(std::filesystem::exists(other.path() / "MANIFEST-000001"));
  EXPECT_TRUE(std::filesystem::exists(other.path() / "notes.txt"));
}

// Killed after RocksDB made the database but before tenon's column families were added, the
// log holds no record: the next open adds them. The same MANIFEST beside a record written is
// damage, and refused.
TEST(Store, AFirstOpenCutShortBeforeTheFamiliesGoesOn) {
  const auto bare_database = [](const std::filesystem::path& path, bool with_a_record) {
    rocksdb::Options options;
    options.create_if_missing = true;
    rocksdb::DB* db = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(options, path.string(), &db).ok());
    if (with_a_record) {
      ASSERT_TRUE(db->Put(rocksdb::WriteOptions{}, "k", "v").ok());
    }
    ASSERT_TRUE(db->Close().ok());
    delete db;
  };
  TempDir cut;
  bare_database(cut.path(), false);
  auto log = Open(cut.path());
  log->Append(Events({"a", "b"}));
  EXPECT_EQ(log->LastSeq(), Seq{2});

  TempDir damaged;
  bare_database(damaged.path(), true);
  try {
    Open(damaged.path());
    ADD_FAILURE() << "opened a log whose MANIFEST lost its families";
  } catch (const LogError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCorruption);
    EXPECT_NE(std::string(e.what()).find("lists no column family"), std::string::npos) << e.what();
  }
}

// A second writer is refused while the first holds the LOCK, with a message that says so, and
// touches nothing: a snapshot the first writer is still writing (its .partial file) survives.
TEST(Store, ASecondWriterIsRefusedAndHarmsNothing) {
  TempDir dir;
  auto log = Open(dir.path());
  log->Append(Events({"a", "b"}));
  auto snapshot = log->BeginSnapshot(Seq{2});
  snapshot->Add("part one");
  try {
    Open(dir.path());
    ADD_FAILURE() << "a second writer opened a log in use";
  } catch (const LogError& e) {
    EXPECT_NE(std::string(e.what()).find("is in use"), std::string::npos) << e.what();
  }
  snapshot->Add("part two");
  snapshot->Commit();
  EXPECT_EQ(log->SnapshotSeqs(), (std::vector<Seq>{Seq{2}}));
}

// Thousands of random appends, reads, scans, snapshots and reopens agree with a std::map model.
// The folder's files with their sizes.
std::map<std::string, std::uintmax_t> FileSizes(const std::filesystem::path& dir) {
  std::map<std::string, std::uintmax_t> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) out[entry.path().filename()] = entry.file_size();
  }
  return out;
}

std::filesystem::path Manifest(const std::filesystem::path& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().starts_with("MANIFEST-")) return entry.path();
  }
  return {};
}

// A MANIFEST cut short reads to RocksDB as an older state of the log, in which the tables it no
// longer lists do not exist, though they hold records nothing else does (their write-ahead log
// is gone). Every open refuses it, naming them, and deletes nothing; `tenon log repair` rebuilds
// the MANIFEST from the folder's files, and every record comes back.
TEST(Store, AManifestCutShortIsRefusedAndRepaired) {
  TempDir base;
  const auto dir = base.path() / "log";
  std::filesystem::path manifest;
  std::uintmax_t early = 0;
  {
    auto log = Open(dir);
    for (int i = 1; i <= 100; ++i) log->Append(Events({"record " + std::to_string(i)}));
    log->PutSnapshot(Seq{50}, "state@50");
    manifest = Manifest(dir);
    early = std::filesystem::file_size(manifest);
    for (int i = 101; i <= 200; ++i) log->Append(Events({"record " + std::to_string(i)}));
    log->PutSnapshot(Seq{150}, "state@150");
  }
  ASSERT_GT(std::filesystem::file_size(manifest), early);
  std::filesystem::resize_file(manifest, early);
  const auto before = FileSizes(dir);
  for (bool read_only : {true, false}) {
    OpenOptions options;
    options.read_only = read_only;
    options.create_if_missing = false;
    try {
      EventLog::Open(dir, options);
      ADD_FAILURE() << "a MANIFEST cut short was opened, read_only=" << read_only;
    } catch (const LogError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kCorruption);
      const std::string what = e.what();
      EXPECT_NE(what.find("its MANIFEST does not list"), std::string::npos) << what;
      // Snapshot 150's table; the records went on in the write-ahead log, which still holds them.
      EXPECT_NE(what.find(".sst (family snapshots, 1 record found nowhere else, the first keyed "
                          "0x0000000000000096)"),
                std::string::npos)
          << what;
    }
  }
  EXPECT_EQ(FileSizes(dir), before);

  const auto report = log::RepairLog(dir, [](const EventLog&, Seq) { return 1; });
  EXPECT_TRUE(report.repaired);
  EXPECT_TRUE(report.manifest_rebuilt);
  EXPECT_EQ(std::filesystem::file_size(report.aside / manifest.filename()), early);
  auto log = Open(dir);
  EXPECT_EQ(log->LastSeq(), Seq{200});
  for (Seq s{1}; s <= Seq{200}; s += 1)
    EXPECT_EQ(log->Read(s)->payload, "record " + std::to_string(s.value));
  EXPECT_EQ(log->SnapshotSeqs(), (std::vector<Seq>{Seq{50}, Seq{150}}));
}

// A crash during a flush or a compaction leaves a table the MANIFEST does not list, whose
// records the log holds elsewhere: that is no damage, and the log opens.
TEST(Store, AnUnlistedTableOfRecordsTheLogHoldsIsALeftover) {
  TempDir dir;
  {
    auto log = Open(dir.path());
    for (int i = 1; i <= 100; ++i) log->Append(Events({"record " + std::to_string(i)}));
    log->PutSnapshot(Seq{100}, "state@100");
  }
  std::filesystem::path snapshots;
  for (const auto& file : log::ListLogFiles(dir.path())) {
    if (file.family == "snapshots") snapshots = dir.path() / file.name;
  }
  ASSERT_FALSE(snapshots.empty());
  std::filesystem::copy_file(snapshots, dir.path() / "999999.sst");
  const auto kinds = log::ListLogFiles(dir.path());
  EXPECT_TRUE(std::any_of(kinds.begin(), kinds.end(), [](const log::LogFile& f) {
    return f.name == "999999.sst" && f.kind == "unlisted table";
  }));
  auto log = Open(dir.path());
  EXPECT_EQ(log->LastSeq(), Seq{100});
}

// A snapshot is ingested by linking its finished file into the folder as a table, then listing
// the table in the MANIFEST. A crash between the two leaves a table of records the log holds
// nowhere else, still linked to its `.partial` name: a snapshot never acknowledged, which the
// log opens without. The same table without that link is a MANIFEST cut short, and refused.
TEST(Store, AnIngestionCutShortIsALeftover) {
  TempDir base;
  std::filesystem::path table = base.path() / "snapshot-80.sst";
  {
    auto log = Open(base.path() / "with");
    for (int i = 1; i <= 100; ++i) log->Append(Events({"record " + std::to_string(i)}));
    log->PutSnapshot(Seq{80}, "state@80");
  }
  for (const auto& file : log::ListLogFiles(base.path() / "with")) {
    if (file.family == "snapshots")
      std::filesystem::copy_file(base.path() / "with" / file.name, table);
  }
  ASSERT_TRUE(std::filesystem::exists(table));
  for (bool linked : {true, false}) {
    const auto dir = base.path() / (linked ? "linked" : "unlinked");
    {
      auto log = Open(dir);
      for (int i = 1; i <= 100; ++i) log->Append(Events({"record " + std::to_string(i)}));
    }
    std::filesystem::copy_file(table, dir / "999999.sst");
    if (linked)
      std::filesystem::create_hard_link(dir / "999999.sst", dir / "snapshot-80.sst.partial");
    if (!linked) {
      EXPECT_THROW(Open(dir), LogError);
      continue;
    }
    auto log = Open(dir);
    EXPECT_EQ(log->LastSeq(), Seq{100});
    EXPECT_TRUE(log->SnapshotSeqs().empty());
    EXPECT_FALSE(std::filesystem::exists(dir / "snapshot-80.sst.partial"));
  }
}

TEST(Store, RandomizedAgainstModel) {
  std::mt19937_64 rng(TestSeed());
  TempDir dir;
  auto log = Open(dir.path());
  std::map<Seq, std::string> events;
  std::map<std::uint64_t, std::string> decisions;
  std::map<Seq, std::string> snapshots;
  std::uint64_t next_decision = 1;
  auto pick = [&](std::uint64_t n) { return n == 0 ? 0 : rng() % n; };
  for (int op = 0; op < 4000; ++op) {
    switch (pick(10)) {
      case 0:
      case 1:
      case 2:
      case 3: {  // Append a batch.
        AppendBatch batch;
        for (std::uint64_t i = pick(5); i > 0; --i)
          batch.events.push_back(std::string(pick(300), static_cast<char>('a' + pick(26))) +
                                 std::to_string(op));
        for (std::uint64_t i = pick(3); i > 0; --i)
          batch.decisions.push_back({next_decision++, "d" + std::to_string(op), {}});
        auto copy = batch;
        auto seqs = log->Append(std::move(batch), log::AppendOptions{pick(10) == 0});
        ASSERT_EQ(seqs.size(), copy.events.size());
        for (std::size_t i = 0; i < seqs.size(); ++i) {
          ASSERT_EQ(seqs[i], Seq{events.size() + 1});
          events[seqs[i]] = copy.events[i];
        }
        for (const auto& d : copy.decisions) decisions[d.id] = d.payload;
        break;
      }
      case 4: {  // Read one, possibly past the end.
        Seq s{1 + pick(events.size() + 3)};
        auto r = log->Read(s);
        ASSERT_EQ(r.has_value(), events.contains(s));
        if (r) {
          ASSERT_EQ(r->payload, events[s]);
        }
        break;
      }
      case 5: {  // Scan a range.
        Seq from{1 + pick(events.size() + 1)};
        Seq to = pick(2) ? Seq{0} : from + pick(20);
        std::vector<std::string> got, want;
        log->Scan(from, to, [&](const log::Record& r) {
          got.push_back(r.payload);
          return true;
        });
        for (auto it = events.lower_bound(from);
             it != events.end() && (to == Seq{0} || it->first <= to); ++it)
          want.push_back(it->second);
        ASSERT_EQ(got, want);
        break;
      }
      case 6: {  // Snapshot.
        Seq at{pick(events.size() + 1)};
        snapshots[at] = "snap" + std::to_string(op);
        log->PutSnapshot(at, snapshots[at]);
        break;
      }
      case 7: {  // Newest snapshot at or below.
        Seq at{pick(events.size() + 2)};
        auto got = log->SnapshotAtOrBelow(at);
        auto it = at == Seq{0} ? (snapshots.empty() ? snapshots.end() : std::prev(snapshots.end()))
                               : snapshots.upper_bound(at);
        if (at != Seq{0}) it = it == snapshots.begin() ? snapshots.end() : std::prev(it);
        ASSERT_EQ(got.has_value(), it != snapshots.end());
        if (got) {
          ASSERT_EQ(got->parts, (std::vector<std::string>{it->second}));
        }
        break;
      }
      case 8: {  // A decision.
        if (decisions.empty()) break;
        auto it = decisions.begin();
        std::advance(it, pick(decisions.size()));
        ASSERT_EQ(log->ReadDecision(it->first)->payload, it->second);
        break;
      }
      default:  // Close and reopen.
        if (pick(4) == 0) {
          log.reset();
          log = Open(dir.path());
        }
        ASSERT_EQ(log->LastSeq(), Seq{events.size()});
    }
  }
}

}  // namespace
}  // namespace tenon::testing
