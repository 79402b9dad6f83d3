// Log appends and reads per second, each beside raw RocksDB puts and gets of the same bytes
// (same payload, same column-family options, no sync) measured in the same run. The program
// prints the ratio log / raw for every pair after the runs.
#include <benchmark/benchmark.h>
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <random>

#include "log/event_log.h"

namespace {

constexpr std::size_t kPayloadBytes = 200;
constexpr std::int64_t kPreloaded = 200'000;  // Records present before the read benchmarks.
constexpr int kBatch = 64;

std::filesystem::path TempDir(const char* name) {
  auto dir = std::filesystem::temp_directory_path() /
             (std::string("tenon-bench-") + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

std::string Payload() {
  return std::string(kPayloadBytes, 'p');
}

std::string Key(std::uint64_t n) {
  std::string key(8, '\0');
  for (int i = 7; i >= 0; --i, n >>= 8) key[i] = static_cast<char>(n & 0xff);
  return key;
}

// The baseline: a plain RocksDB with one extra column family, like the log's events family.
struct RawDb {
  explicit RawDb(const char* name) : dir(TempDir(name)) {
    rocksdb::Options options;
    options.create_if_missing = true;
    options.create_missing_column_families = true;
    options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
    rocksdb::ColumnFamilyOptions cf;
    auto supported = rocksdb::GetSupportedCompressions();
    if (std::find(supported.begin(), supported.end(), rocksdb::kLZ4Compression) !=
        supported.end()) {
      cf.compression = rocksdb::kLZ4Compression;
    }
    std::vector<rocksdb::ColumnFamilyDescriptor> families{{"default", cf}, {"events", cf}};
    auto status = rocksdb::DB::Open(options, dir.string(), families, &handles, &db);
    if (!status.ok()) std::abort();
  }
  ~RawDb() {
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
    delete db;
    std::filesystem::remove_all(dir);
  }
  std::filesystem::path dir;
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
};

struct Log {
  explicit Log(const char* name) : dir(TempDir(name)) {
    tenon::log::OpenOptions options;
    options.writer_version = "bench";
    log = tenon::log::EventLog::Open(dir, options);
  }
  ~Log() {
    log.reset();
    std::filesystem::remove_all(dir);
  }
  std::filesystem::path dir;
  std::unique_ptr<tenon::log::EventLog> log;
};

void BM_LogAppend(benchmark::State& state) {
  Log log("append");
  std::string payload = Payload();
  for (auto _ : state) {
    benchmark::DoNotOptimize(log.log->Append(tenon::log::AppendBatch{{payload}, {}}));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_RawRocksPut(benchmark::State& state) {
  RawDb raw("put");
  std::string payload = Payload();
  std::uint64_t n = 0;
  for (auto _ : state) {
    auto status = raw.db->Put({}, raw.handles[1], Key(++n), payload);
    benchmark::DoNotOptimize(status);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_LogAppendBatch64(benchmark::State& state) {
  Log log("append64");
  std::vector<std::string> batch(kBatch, Payload());
  for (auto _ : state) {
    benchmark::DoNotOptimize(log.log->Append(tenon::log::AppendBatch{batch, {}}));
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_RawRocksWriteBatch64(benchmark::State& state) {
  RawDb raw("batch64");
  std::string payload = Payload();
  std::uint64_t n = 0;
  for (auto _ : state) {
    rocksdb::WriteBatch batch;
    for (int i = 0; i < kBatch; ++i) batch.Put(raw.handles[1], Key(++n), payload);
    auto status = raw.db->Write({}, &batch);
    benchmark::DoNotOptimize(status);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

void BM_LogRead(benchmark::State& state) {
  Log log("read");
  std::vector<std::string> batch(1000, Payload());
  for (std::int64_t i = 0; i < kPreloaded; i += 1000) log.log->Append({batch, {}});
  std::mt19937_64 rng(1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(log.log->Read(tenon::Seq{1 + rng() % kPreloaded}));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_RawRocksGet(benchmark::State& state) {
  RawDb raw("get");
  std::string payload = Payload();
  for (std::int64_t i = 1; i <= kPreloaded; i += 1000) {
    rocksdb::WriteBatch batch;
    for (std::int64_t k = i; k < i + 1000; ++k) batch.Put(raw.handles[1], Key(k), payload);
    if (!raw.db->Write({}, &batch).ok()) std::abort();
  }
  std::mt19937_64 rng(1);
  std::string value;
  for (auto _ : state) {
    auto status = raw.db->Get({}, raw.handles[1], Key(1 + rng() % kPreloaded), &value);
    benchmark::DoNotOptimize(status);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_LogAppend);
BENCHMARK(BM_RawRocksPut);
BENCHMARK(BM_LogAppendBatch64);
BENCHMARK(BM_RawRocksWriteBatch64);
BENCHMARK(BM_LogRead);
BENCHMARK(BM_RawRocksGet);

// Keeps each run's items/s so the pairs can be compared after the console output.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) {
      auto it = run.counters.find("items_per_second");
      if (it != run.counters.end()) rates[run.benchmark_name()] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> rates;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const std::pair<const char*, const char*> pairs[] = {
      {"BM_LogAppend", "BM_RawRocksPut"},
      {"BM_LogAppendBatch64", "BM_RawRocksWriteBatch64"},
      {"BM_LogRead", "BM_RawRocksGet"}};
  std::printf("\n%-22s %14s   %-24s %14s   %s\n", "tenon log", "records/s", "raw RocksDB baseline",
              "records/s", "log / raw");
  for (const auto& [ours, raw] : pairs) {
    if (!reporter.rates.contains(ours) || !reporter.rates.contains(raw)) continue;
    double a = reporter.rates[ours], b = reporter.rates[raw];
    std::printf("%-22s %14.0f   %-24s %14.0f   %.2f\n", ours, a, raw, b, a / b);
  }
  benchmark::Shutdown();
  return 0;
}
