// The Balanced consolidation scores a disruption candidate's outcome carries. The core writes
// each pool's score into the outcome of a move it weighed ("NodePool P (Balanced): score 0.75 >=
// threshold 0.50 (k: 2, ...)"); the Events and the metrics read them back from there.
#pragma once

#include <string>
#include <vector>

namespace tenon {

struct OutcomeScore {
  std::string nodepool;
  std::string text;    // From "score" to the closing parenthesis.
  double score = 0.0;  // Infinity for "unbounded".
};

// In the order they appear.
std::vector<OutcomeScore> ScoresIn(const std::string& outcome);

}  // namespace tenon
