// tenon log export / import: one portable, checksummed file holding a whole log.
//
// Layout (integers little-endian):
//   "TENONARC" | u32 archive version | u32 schema version | str cluster id | str writer version
//   then records: u8 kind ('E' event, 'D' decision, 'S' snapshot, 'P' a further part of the
//   snapshot just before it) | u64 key | u32 length | bytes
//   then 'Z' | u64 record count | u64 XXH3 of every byte before it.
// The payloads are the log's own Cap'n Proto records, whose schema only grows, so a later tenon
// reads an archive of an earlier one; decision index terms are not stored but rebuilt on import
// by the importing version.
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t as a member: no allocation.
#include <xxhash.h>

#include <cassert>
#include <fstream>
#include <memory>

#include "log/codec.h"
#include "replay/replay.h"

namespace tenon::replay {
namespace {

constexpr char kMagic[8] = {'T', 'E', 'N', 'O', 'N', 'A', 'R', 'C'};
constexpr std::uint32_t kArchiveVersion = 1;
constexpr std::size_t kStringBytesMax = 4096;
// Events imported per Append (well under kAppendBatchMax with their decisions).
constexpr std::size_t kImportBatchEvents = 4096;

class Writer {
 public:
  explicit Writer(const std::filesystem::path& file)
      : out_(file, std::ios::binary | std::ios::trunc) {
    if (!out_) throw ArchiveError("cannot write " + file.string());
    XXH3_64bits_reset(&hash_);
  }
  void Bytes(std::string_view bytes) {
    XXH3_64bits_update(&hash_, bytes.data(), bytes.size());
    out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    written_ += bytes.size();
  }
  void Int(std::uint64_t v, int width) {
    char b[8];
    for (int i = 0; i < width; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    Bytes(std::string_view(b, static_cast<std::size_t>(width)));
  }
  void Str(std::string_view s) {
    Int(s.size(), 4);
    Bytes(s);
  }
  void Record(char kind, std::uint64_t key, std::string_view payload) {
    Bytes(std::string_view(&kind, 1));
    Int(key, 8);
    Int(payload.size(), 4);
    Bytes(payload);
  }
  std::uint64_t Finish(std::uint64_t records) {
    Bytes("Z");
    Int(records, 8);
    const std::uint64_t sum = XXH3_64bits_digest(&hash_);
    Int(sum, 8);
    out_.flush();
    if (!out_) throw ArchiveError("writing the archive failed");
    return sum;
  }
  std::uint64_t written() const { return written_; }

 private:
  std::ofstream out_;
  XXH3_state_t hash_;
  std::uint64_t written_ = 0;
};

class Reader {
 public:
  explicit Reader(std::istream& in) : in_(in) { XXH3_64bits_reset(&hash_); }
  std::string Bytes(std::size_t n, bool hashed = true) {
    std::string bytes(n, '\0');
    in_.read(bytes.data(), static_cast<std::streamsize>(n));
    if (static_cast<std::size_t>(in_.gcount()) != n) {
      throw ArchiveError("the archive ends early (at byte " + std::to_string(read_) + ")");
    }
    if (hashed) XXH3_64bits_update(&hash_, bytes.data(), n);
    read_ += n;
    return bytes;
  }
  std::uint64_t Int(int width, bool hashed = true) {
    std::string b = Bytes(static_cast<std::size_t>(width), hashed);
    std::uint64_t v = 0;
    for (int i = width - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[i]);
    return v;
  }
  std::string Str() {
    const std::uint64_t n = Int(4);
    if (n > kStringBytesMax) throw ArchiveError("a header string is too long: not an archive?");
    return Bytes(n);
  }
  std::uint64_t Digest() { return XXH3_64bits_digest(&hash_); }
  std::uint64_t read() const { return read_; }

 private:
  std::istream& in_;
  XXH3_state_t hash_;
  std::uint64_t read_ = 0;
};

}  // namespace

ArchiveReport ExportLog(const log::EventLog& log, const std::filesystem::path& file) {
  if (log.FirstSeq() > Seq{1}) {
    throw ArchiveError("the log was truncated by retention (it begins at seq " +
                       std::to_string(log.FirstSeq().value) +
                       "); exporting it is not supported yet");
  }
  Writer out(file);
  out.Bytes(std::string_view(kMagic, sizeof kMagic));
  out.Int(kArchiveVersion, 4);
  out.Int(log.SchemaVersion(), 4);
  out.Str(log.ClusterId());
  out.Str(log.WriterVersion());
  ArchiveReport report;
  log.Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    out.Record('E', r.seq.value, r.payload);
    ++report.events;
    return true;
  });
  log.ScanDecisions(1, [&](const log::DecisionRecord& r) {
    out.Record('D', r.id, r.payload);
    ++report.decisions;
    return true;
  });
  std::uint64_t parts = 0;
  for (Seq seq : log.SnapshotSeqs()) {
    auto snapshot = log.SnapshotAtOrBelow(seq);
    assert(snapshot && snapshot->seq == seq && !snapshot->parts.empty());
    for (std::size_t i = 0; i < snapshot->parts.size(); ++i) {
      out.Record(i == 0 ? 'S' : 'P', seq.value, snapshot->parts[i]);
      ++parts;
    }
    ++report.snapshots;
  }
  report.last_seq = log.LastSeq();
  report.checksum = out.Finish(report.events + report.decisions + parts);
  report.bytes = out.written();
  return report;
}

namespace {

// Appends the events buffered so far (with the decisions they caused) and checks their seqs.
void Flush(log::EventLog& log, log::AppendBatch& batch, Seq first) {
  if (batch.events.empty() && batch.decisions.empty()) return;
  auto seqs = log.Append(std::move(batch));
  if (!seqs.empty() && seqs.front() != first) {
    throw ArchiveError("imported events got seq " + std::to_string(seqs.front().value) +
                       ", expected " + std::to_string(first.value));
  }
  batch = {};
}

// An import makes a new log: it never adds to, or replaces, one already there.
void RequireNewLog(const std::filesystem::path& dir) {
  if (std::filesystem::exists(dir) && !std::filesystem::is_empty(dir)) {
    throw ArchiveError(dir.string() + " is not empty: import makes a new log");
  }
}

struct Header {
  std::string cluster_id;
  std::string writer_version;
};

Header ReadHeader(Reader& in) {
  if (in.Bytes(sizeof kMagic) != std::string(kMagic, sizeof kMagic)) {
    throw ArchiveError("not a tenon log archive");
  }
  const std::uint64_t version = in.Int(4);
  if (version > kArchiveVersion) {
    throw ArchiveError("archive version " + std::to_string(version) +
                       " is newer than this tenon reads (" + std::to_string(kArchiveVersion) + ")");
  }
  const std::uint64_t schema = in.Int(4);
  if (schema > log::kSchemaVersion)
    throw ArchiveError("the archive's schema is newer than this tenon");
  Header header;
  header.cluster_id = in.Str();
  header.writer_version = in.Str();
  return header;
}

ArchiveReport ReadInto(Reader& in, log::EventLog& log) {
  ArchiveReport report;
  log::AppendBatch batch;
  Seq batch_first{1}, expected{1};
  std::unique_ptr<log::SnapshotWriter> snapshot;  // The snapshot whose parts are being read.
  Seq snapshot_seq{0};
  std::uint64_t parts = 0;
  auto commit_snapshot = [&] {
    if (snapshot) snapshot->Commit();
    snapshot.reset();
  };
  for (;;) {
    const std::string kind = in.Bytes(1);
    if (kind != "P") commit_snapshot();
    if (kind == "Z") break;
    const std::uint64_t key = in.Int(8);
    const std::uint64_t length = in.Int(4);
    if (length > log::kRecordBytesMax) throw ArchiveError("a record is larger than any log holds");
    std::string payload = in.Bytes(length);
    if (kind == "E") {
      if (Seq{key} != expected)
        throw ArchiveError("events out of order at seq " + std::to_string(key));
      expected += 1;
      batch.events.push_back(std::move(payload));
      ++report.events;
      if (batch.events.size() == kImportBatchEvents) {
        Flush(log, batch, batch_first);
        batch_first = expected;
      }
    } else if (kind == "D") {
      Flush(log, batch, batch_first);
      batch_first = expected;
      // Decoded to rebuild its index terms as this version defines them (and so checked).
      Decision d = log::DecodeDecision(payload);
      if (d.id.value != key)
        throw ArchiveError("decision " + std::to_string(key) + " has another id");
      batch.decisions.push_back(log::DecisionRecordFor(d));
      ++report.decisions;
    } else if (kind == "S") {
      Flush(log, batch, batch_first);
      batch_first = expected;
      snapshot = log.BeginSnapshot(Seq{key});
      snapshot_seq = Seq{key};
      snapshot->Add(payload);
      ++parts;
      ++report.snapshots;
    } else if (kind == "P") {
      if (!snapshot || Seq{key} != snapshot_seq) {
        throw ArchiveError("a snapshot part at seq " + std::to_string(key) +
                           " follows no snapshot of that seq");
      }
      snapshot->Add(payload);
      ++parts;
    } else {
      throw ArchiveError("unknown record kind at byte " + std::to_string(in.read()));
    }
  }
  Flush(log, batch, batch_first);
  const std::uint64_t count = in.Int(8);
  const std::uint64_t sum = in.Digest();
  const std::uint64_t stored = in.Int(8, false);
  if (count != report.events + report.decisions + parts) {
    throw ArchiveError("the archive says " + std::to_string(count) + " records but holds " +
                       std::to_string(report.events + report.decisions + parts));
  }
  if (sum != stored) throw ArchiveError("checksum mismatch: the archive is damaged");
  report.checksum = stored;
  report.bytes = in.read();
  report.last_seq = log.LastSeq();
  return report;
}

}  // namespace

ArchiveReport ImportLog(const std::filesystem::path& file, const std::filesystem::path& dir) {
  RequireNewLog(dir);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ArchiveError("cannot read " + file.string());
  return ImportLog(in, file.string(), dir);
}

ArchiveReport ImportLog(std::istream& archive, const std::string& name,
                        const std::filesystem::path& dir) {
  RequireNewLog(dir);
  Reader in(archive);
  ArchiveReport report;
  try {
    const Header header = ReadHeader(in);
    // The import keeps the log's identity: its cluster and the version that wrote it.
    log::OpenOptions options;
    options.cluster_id = header.cluster_id;
    options.writer_version = header.writer_version;
    auto log = log::EventLog::Open(dir, options);
    report = ReadInto(in, *log);
  } catch (const std::exception& e) {
    // Nothing half-imported is left behind to be mistaken for the log.
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    throw ArchiveError(name + ": " + e.what());
  }
  return report;
}

}  // namespace tenon::replay
