// tenon log export / import: an exported log imports into a fresh folder and replays
// identically, decisions and index included; a damaged or cut archive is refused and leaves no
// log behind.
#include <fstream>

#include "tests/replay/incident.h"

namespace tenon::testing {
namespace {

std::string ReadAll(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteAll(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// Export, import elsewhere, verify: the same records, the same final state, the same answers.
TEST(Archive, ExportImportReplaysIdentically) {
  auto run = RunKept(PdbScenario());
  TempDir elsewhere;
  const auto archive = elsewhere.path() / "incident.tenonlog";
  const auto imported_dir = elsewhere.path() / "imported";
  replay::ArchiveReport exported, imported;
  {
    auto log = run->Open();
    exported = replay::ExportLog(*log, archive);
    EXPECT_EQ(exported.last_seq, log->LastSeq());
    EXPECT_GT(exported.decisions, 0u);
    EXPECT_GT(exported.snapshots, 0u);
  }
  imported = replay::ImportLog(archive, imported_dir);
  EXPECT_EQ(imported.events, exported.events);
  EXPECT_EQ(imported.decisions, exported.decisions);
  EXPECT_EQ(imported.snapshots, exported.snapshots);
  EXPECT_EQ(imported.checksum, exported.checksum);

  auto original = run->Open();
  log::OpenOptions open;
  open.read_only = true;
  open.create_if_missing = false;
  auto copy = log::EventLog::Open(imported_dir, open);
  auto a = replay::Verify(*original);
  auto b = replay::Verify(*copy);
  EXPECT_EQ(b.verdict, replay::Verdict::kIdentical) << b.detail;
  EXPECT_EQ(b.final_hash, a.final_hash);
  EXPECT_EQ(b.events, a.events);
  EXPECT_EQ(b.decisions, a.decisions);
  EXPECT_EQ(b.snapshots_checked, a.snapshots_checked);
  EXPECT_EQ(copy->SnapshotSeqs(), original->SnapshotSeqs());
  // The index was rebuilt: audit answers the same through it.
  EXPECT_TRUE(copy->HasDecisionIndex());
  auto ids = [](const replay::AuditResult& r) {
    std::vector<std::uint64_t> out;
    for (const auto& d : r.decisions) out.push_back(d.id.value);
    return out;
  };
  EXPECT_EQ(ids(replay::Audit(*copy, {.nodepool = "default"})),
            ids(replay::Audit(*original, {.nodepool = "default"})));

  // A second export of the import is byte for byte the first.
  const auto again = elsewhere.path() / "again.tenonlog";
  replay::ExportLog(*copy, again);
  EXPECT_TRUE(ReadAll(again) == ReadAll(archive));
  EXPECT_EQ(copy->ClusterId(), original->ClusterId());

  // The command line does the same, and `replay --verify` on the import says identical.
  const auto cli_dir = elsewhere.path() / "cli";
  auto imp = Tenon("log import " + archive.string() + " -o " + cli_dir.string());
  EXPECT_EQ(imp.exit_code, 0) << imp.out;
  auto verify = Tenon("replay --verify " + cli_dir.string());
  EXPECT_EQ(verify.exit_code, 0) << verify.out;
  EXPECT_NE(verify.out.find("verdict: identical"), std::string::npos) << verify.out;
}

// One flipped byte anywhere, or a cut, is refused, and nothing is left in the target folder.
TEST(Archive, DamageIsRefused) {
  auto run = RunKept(ReplaceScenario());
  TempDir elsewhere;
  const auto archive = elsewhere.path() / "a.tenonlog";
  replay::ExportLog(*run->Open(), archive);
  const std::string good = ReadAll(archive);
  ASSERT_GT(good.size(), 1000u);
  const auto damaged = elsewhere.path() / "damaged.tenonlog";
  for (std::size_t at : {good.size() / 3, good.size() / 2, good.size() - 3}) {
    std::string bytes = good;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x5a);
    WriteAll(damaged, bytes);
    const auto dir = elsewhere.path() / ("flip-" + std::to_string(at));
    EXPECT_THROW(replay::ImportLog(damaged, dir), std::exception) << "byte " << at;
    EXPECT_FALSE(std::filesystem::exists(dir)) << "byte " << at;
  }
  WriteAll(damaged, good.substr(0, good.size() / 2));
  EXPECT_THROW(replay::ImportLog(damaged, elsewhere.path() / "cut"), replay::ArchiveError);
  EXPECT_FALSE(std::filesystem::exists(elsewhere.path() / "cut"));
  // Importing over an existing log is refused.
  EXPECT_THROW(replay::ImportLog(archive, run->log()), replay::ArchiveError);
}

}  // namespace
}  // namespace tenon::testing
