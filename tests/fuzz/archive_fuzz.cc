// libFuzzer target: `tenon log import` on arbitrary bytes. The last 8 bytes are replaced by the
// XXH3 of the bytes before them, as an intact archive ends, so that mutations reach past the
// checksum into the records (a checksum that does not match is tested in tests/replay). The
// import either makes a log or throws ArchiveError and leaves nothing in its folder; a log it
// made exports an archive of the same records.
#include <unistd.h>
#include <xxhash.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "replay/replay.h"
#include "tests/fuzz/fuzz.h"

namespace {

namespace fs = std::filesystem;

// One folder per process, made once: libFuzzer's workers run side by side. It is removed at
// exit (libFuzzer ends a run with exit()), so the path is never destroyed before that.
const fs::path& Folder() {
  static const fs::path* folder = [] {
    std::string pattern = (fs::temp_directory_path() / "tenon-archive-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) tenon::fuzz::Fail("cannot make a temporary folder");
    auto* made = new fs::path(pattern);
    std::atexit([] {
      std::error_code ignored;
      fs::remove_all(Folder(), ignored);
    });
    return made;
  }();
  return *folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tenon;
  std::string bytes = fuzz::Text(data, size);
  if (bytes.size() >= 8) {
    const std::uint64_t sum = XXH3_64bits(bytes.data(), bytes.size() - 8);
    for (int i = 0; i < 8; ++i) bytes[bytes.size() - 8 + i] = static_cast<char>(sum >> (8 * i));
  }
  const fs::path dir = Folder() / "log";
  const fs::path again = Folder() / "again.tenonlog";
  fs::remove_all(dir);
  std::istringstream in(bytes);
  replay::ArchiveReport imported;
  if (!fuzz::ReturnsOrThrows<replay::ArchiveError>(
          [&] { imported = replay::ImportLog(in, "fuzz", dir); })) {
    if (fs::exists(dir)) fuzz::Fail("a refused archive left a log behind");
    return 0;
  }
  if (imported.bytes != bytes.size()) fuzz::Fail("an archive was imported without its last bytes");
  replay::ArchiveReport exported;
  {
    log::OpenOptions open;
    open.read_only = true;
    open.create_if_missing = false;
    auto log = log::EventLog::Open(dir, open);
    exported = replay::ExportLog(*log, again);
  }
  if (exported.events != imported.events || exported.decisions != imported.decisions ||
      exported.snapshots != imported.snapshots || exported.last_seq != imported.last_seq) {
    fuzz::Fail("the imported log exports other records than the archive held");
  }
  fs::remove_all(dir);
  return 0;
}
