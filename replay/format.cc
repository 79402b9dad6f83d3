// Times, prices and time parsing shared by tenon's incident commands.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <limits>
#include <sstream>
#include <string_view>

#include "log/codec.h"
#include "model/timestamp.h"
#include "replay/replay.h"

namespace tenon::replay {

namespace {

// Whether `text` has `shape`, digit for digit ('d' in a shape is a digit).
bool HasShape(std::string_view text, std::string_view shape) {
  if (text.size() != shape.size()) return false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (shape[i] == 'd' ? !digit : text[i] != shape[i]) return false;
  }
  return true;
}

}  // namespace

std::optional<Instant> ParseTime(const std::string& text, Instant reference) {
  // Each shape the flags take, made a full RFC 3339 time; a time of day is on the day of
  // `reference`.
  const std::string day = Rfc3339Text(reference).substr(0, 11);  // "2026-01-01T"
  std::string full;
  if (HasShape(text, "dddd-dd-ddTdd:dd:ddZ")) {
    full = text;
  } else if (HasShape(text, "dddd-dd-ddTdd:dd:dd")) {
    full = text + "Z";
  } else if (HasShape(text, "dd:dd:dd")) {
    full = day + text + "Z";
  } else if (HasShape(text, "dd:dd")) {
    full = day + text + ":00Z";
  } else {
    return std::nullopt;
  }
  const std::optional<Instant> at = ParseRfc3339(full);
  // A leap second (":60") is RFC 3339's, not a time a flag names.
  if (!at || full[17] == '6') return std::nullopt;
  return at;
}

Instant FirstEventTime(const log::EventLog& log) {
  // Decisions carry their time; the first one is as good a day as the first Tick.
  Instant at;
  log.ScanDecisions(1, [&](const log::DecisionRecord& record) {
    at = log::DecodeDecision(record.payload).at;
    return false;
  });
  return at;
}

ClusterSample SampleCluster(const State& state) {
  ClusterSample s;
  s.at = state.now;
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (claim.launched.value == 0) continue;
    s.nodes[claim.nodepool + "/" + claim.capacity_type]++;
    s.cost += claim.price;
  }
  for (const auto& [key, pod] : state.cluster.pods) {
    const bool done = pod.phase == PodPhase::kSucceeded || pod.phase == PodPhase::kFailed;
    if (pod.node_name.empty() && !done) ++s.pending;
  }
  return s;
}

PodMoves SplitMoves(const std::string& outcome) {
  constexpr std::string_view kMarker = "; its pods move: ";
  PodMoves out;
  const auto at = outcome.find(kMarker);
  out.text = outcome.substr(0, at);
  if (at == std::string::npos) return out;
  std::string_view rest = std::string_view(outcome).substr(at + kMarker.size());
  while (!rest.empty()) {
    const auto comma = rest.find(", ");
    const std::string_view move = rest.substr(0, comma);
    const auto arrow = move.find(" -> ");
    if (arrow != std::string_view::npos) {
      out.moves.emplace_back(std::string(move.substr(0, arrow)),
                             std::string(move.substr(arrow + 4)));
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 2);
  }
  return out;
}

std::string MovesText(const std::vector<std::pair<std::string, std::string>>& moves,
                      const std::vector<std::string>& replacements, bool verbose) {
  auto name = [&](const std::string& target) -> std::string {
    if (!target.starts_with('#')) return "node " + target;
    const std::size_t k = std::strtoul(target.c_str() + 1, nullptr, 10);
    return k < replacements.size() ? replacements[k] + " (new)" : "a replacement";
  };
  std::vector<std::pair<std::string, std::int64_t>> to;  // Destination, pods; first seen first.
  for (const auto& [pod, target] : moves) {
    const std::string where = name(target);
    auto it = std::find_if(to.begin(), to.end(), [&](const auto& e) { return e.first == where; });
    if (it == to.end()) it = to.insert(to.end(), {where, 0});
    ++it->second;
  }
  std::stable_sort(to.begin(), to.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text =
      std::to_string(moves.size()) + (moves.size() == 1 ? " pod moves: " : " pods move: ");
  for (std::size_t i = 0; i < to.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(to[i].second) + " to " + to[i].first;
  }
  if (verbose) {
    text += " (";
    for (std::size_t i = 0; i < moves.size(); ++i) {
      text += (i ? ", " : "") + moves[i].first + " -> " + name(moves[i].second);
    }
    text += ")";
  }
  return text;
}

std::string ReadableOutcome(const std::string& outcome,
                            const std::vector<std::string>& replacements, bool verbose) {
  PodMoves split = SplitMoves(outcome);
  // The candidate's own saving is the worst case; the decision's prices give the first choice.
  if (auto at = split.text.find("saving at least $"); at != std::string::npos) {
    const auto end = split.text.find("/h", at);
    if (end != std::string::npos) split.text.insert(end + 2, " whatever type it launches as");
  }
  if (split.moves.empty()) return split.text;
  return split.text + "; " + MovesText(split.moves, replacements, verbose);
}

std::string BudgetText(const BudgetState& b) {
  // The core's detail: "budget 0 (nodes 10%[, schedule ...]), 1 of 2 nodes already disrupting".
  const std::string head = "budget " + b.nodepool + (b.reason.empty() ? "" : " " + b.reason) + ": ";
  unsigned index = 0, disrupting = 0, total = 0;
  int used = 0;
  const auto open = b.detail.find(" (nodes ");
  const auto tail = b.detail.rfind("), ");
  if (std::sscanf(b.detail.c_str(), "budget %u (nodes %n", &index, &used) != 1 || used == 0 ||
      open == std::string::npos || tail == std::string::npos || tail < open ||
      std::sscanf(b.detail.c_str() + tail + 3, "%u of %u nodes already disrupting", &disrupting,
                  &total) != 2) {
    return head + std::to_string(b.allowed) + " allowed" +
           (b.detail.empty() ? "" : " (" + b.detail + ")");
  }
  const std::string nodes = b.detail.substr(open + 8, tail - open - 8);  // "10%[, schedule ...]"
  const auto comma = nodes.find(", ");
  return head + "budget #" + std::to_string(index + 1) + " (nodes " + nodes.substr(0, comma) +
         " of " + std::to_string(total) + (comma == std::string::npos ? "" : nodes.substr(comma)) +
         "): " + std::to_string(b.allowed) + " allowed, " + std::to_string(disrupting) +
         " disrupting";
}

std::vector<std::string> LaunchedBy(const log::EventLog& log, Seq cause) {
  // The output of an event follows it, after at most the events folded while it was written.
  constexpr std::uint64_t kLookAhead = 4096;
  std::vector<std::string> claims;
  log.Scan(cause + 1, Seq{cause.value + kLookAhead}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    const auto* output = std::get_if<log::OutputRecord>(&entry);
    if (output == nullptr || output->cause != cause) return true;
    for (const Command& c : output->commands) {
      if (const auto* launch = std::get_if<LaunchInstance>(&c.body)) {
        claims.push_back(launch->nodeclaim);
      }
    }
    return false;
  });
  return claims;
}

}  // namespace tenon::replay
