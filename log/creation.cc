// A log's creation cut short (log/creation.h).
#include "log/creation.h"

#include <fcntl.h>
#include <unistd.h>

#include <regex>

namespace tenon::log {
namespace {

// Whether `dir` holds only what RocksDB writes while it creates a database, before CURRENT
// names its first MANIFEST: a creation cut short (a crash, a kill), which cannot hold a record
// yet, since nothing is appended before the open returns.
bool CreationCutShort(const std::filesystem::path& dir) {
  static const std::regex kLeftover(
      R"(LOCK|IDENTITY|LOG(\.old\.\d+)?|MANIFEST-\d+|OPTIONS-\d+|\d+\.dbtmp)");
  bool any = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file() ||
        !std::regex_match(entry.path().filename().string(), kLeftover)) {
      return false;
    }
    any = true;
  }
  return any;
}

// Removes what a creation cut short left, unless a process holds its LOCK (a creation still
// going on): that is a log in use.
void ClearCreationLeftovers(const std::filesystem::path& dir) {
  const std::filesystem::path lock = dir / "LOCK";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    struct flock hold {};
    hold.l_type = F_WRLCK;
    hold.l_whence = SEEK_SET;
    const bool held_elsewhere = ::fcntl(fd, F_SETLK, &hold) != 0;
    ::close(fd);
    if (held_elsewhere) {
      throw LogError(ErrorKind::kIo, 0,
                     "log: " + dir.string() + " is being created by another process");
    }
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::filesystem::remove(entry.path());
  }
}

}  // namespace

bool NothingWritten(const std::filesystem::path& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".sst" || (ext == ".log" && entry.file_size() > 0)) return false;
  }
  return true;
}

void RefuseOtherFiles(const std::filesystem::path& dir, bool read_only, OpenReport& out) {
  std::error_code ec;
  if (std::filesystem::exists(dir / "CURRENT", ec) || !std::filesystem::exists(dir, ec) ||
      std::filesystem::is_empty(dir, ec)) {
    return;
  }
  if (read_only || !CreationCutShort(dir)) {
    // Not a log, and not tenon's to take over: its files stay as they are.
    throw LogError(ErrorKind::kInvalid, 0,
                   "log: " + dir.string() +
                       " is a folder that holds other files and no log; give a new or empty "
                       "folder");
  }
  ClearCreationLeftovers(dir);
  out.message = "log: " + dir.string() + " held a creation cut short, with no record; made anew";
}

}  // namespace tenon::log
