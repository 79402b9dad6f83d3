// Private to replay/: reading the decision index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "log/event_log.h"

namespace tenon::replay {

// The ids of the decisions indexed under `term`, ascending (entries are the term and 8 id bytes).
inline std::vector<std::uint64_t> IdsUnder(const log::EventLog& log, const std::string& term) {
  std::vector<std::uint64_t> ids;
  log.ScanDecisionIndex(term, term + std::string(9, '\xff'), [&](std::uint64_t id) {
    ids.push_back(id);
    return true;
  });
  return ids;
}

}  // namespace tenon::replay
