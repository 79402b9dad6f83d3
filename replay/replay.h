// Replay: fold a log through the core again and compare with what was recorded.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <istream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "log/event_log.h"
#include "model/timestamp.h"
#include "reducers/core.h"

namespace tenon::replay {

enum class Verdict {
  kIdentical,   // Every output, decision and snapshot hash matched.
  kDiverged,    // The core produced something other than what was recorded.
  kIncomplete,  // The log ends with events whose outputs were never written (a crash, not yet
                // recovered by restarting the writer on this log).
  kCorrupt,     // A record failed its checksum or does not decode.
};

struct VerifyReport {
  Verdict verdict = Verdict::kIdentical;
  Seq first_bad_seq{0};  // The first diverging, incomplete or corrupt sequence number.
  std::string detail;    // What differed, in a sentence.
  std::uint64_t events = 0;
  std::uint64_t outputs = 0;
  std::uint64_t decisions = 0;
  std::uint64_t snapshots_checked = 0;  // Whose stored hash matched the replayed state's.
  std::uint64_t snapshots_decoded = 0;  // Of them, decoded and hashed again as well.
  // Requests a result event recorded (CreateFleet bodies) that the command rendered again.
  std::uint64_t requests_rendered = 0;
  Seq last_seq{0};
  std::uint64_t final_hash = 0;
  std::uint64_t final_hash_from_snapshot = 0;
  Seq newest_snapshot{0};
  Seq first_seq{1};       // Where the log begins (above 1: truncated by retention).
  std::vector<Seq> cuts;  // Where the stretches folded side by side begin (snapshots).
  // The CPU time each stretch took on its thread (decoding its first snapshot, folding and
  // checking), in log order: their sum is the verify's work, the longest its wall time on a
  // machine with a core for every stretch.
  std::vector<std::chrono::nanoseconds> stretch_cpu;
  std::chrono::nanoseconds newest_cpu{0};  // The same for the fold from the newest snapshot.
};

const char* VerdictName(Verdict verdict);

// Folds from zero comparing every recorded output and decision and every snapshot's stored
// hash with the replayed state's, and (beside it) folds from the newest snapshot, and checks both
// folds end in the same state. With `threads` above one (0: one per core, at most 16) the log is
// cut at snapshots into four stretches a thread and at least 64 where it has the snapshots, and
// the stretches are folded side by side, each from the snapshot at its start, decoded and checked
// against its stored hash, which the stretch before has checked against its own fold. The snapshots
// a fold starts from are decoded; the others are decoded too (each must hash to what the replay
// folded) only with `decode_snapshots`. `progress` (optional) is called now and then with about
// how far it has got.
//
// `render` (optional) renders the request a command's effect sends from the command alone (the
// AWS adapter's CreateFleet body of a LaunchInstance; empty for a command it has none for).
// With it, every request a result event recorded (FleetLaunched, FleetFailed) is rendered again
// from its command and must be the same bytes.
using RequestRenderer = std::function<std::string(const Command&)>;
VerifyReport Verify(const log::EventLog& log, const std::function<void(Seq, Seq)>& progress = {},
                    std::size_t threads = 0, bool decode_snapshots = false,
                    const RequestRenderer& render = {});

// The state after folding every event with seq <= `to` (0: all), starting at the newest
// snapshot at or below `to` when `use_snapshot` is set.
State FoldTo(const log::EventLog& log, Seq to, bool use_snapshot);

// The last sequence number folded before the clock passes `until`: the record just before the
// first Tick later than `until` (the last record when none is). 0 when the log's first Tick is
// already later.
Seq SeqAtTime(const log::EventLog& log, Instant until);

// ---- Formatting shared by the incident commands. ----

// "02:14:09" (UTC time of day), "$0.0981" (reducers/core.h) and "2026-01-01T02:14:09Z".
using tenon::ClockText;
using tenon::DollarsText;
using tenon::Rfc3339Text;
// Reads "2026-01-01T02:14:09Z" (or without the Z), or "02:14[:09]" on the UTC day of
// `reference` (the log's first event). nullopt if it is neither, names no real time
// (2026-02-30, 25:00, 02:61) or lies outside the years 1677 to 2262.
std::optional<Instant> ParseTime(const std::string& text, Instant reference);
// The time of the first event in the log (the day "HH:MM" times refer to), 0 if empty.
Instant FirstEventTime(const log::EventLog& log);

// The cluster at one moment as the incident tools count it (timeline, why): launched NodeClaims
// by "nodepool/capacity type", what they cost per hour, and the active pods bound to no node.
struct ClusterSample {
  Instant at;
  std::map<std::string, int> nodes;
  int pending = 0;
  MicroUsdPerHour cost{0};
};
ClusterSample SampleCluster(const State& state);

// A disruption outcome as the core writes it ("replace with ...; its pods move: ns/a -> node,
// ns/b -> #0"): the text before the moves, and each move (pod, destination: a node, or "#k" for
// the k-th replacement).
struct PodMoves {
  std::string text;
  std::vector<std::pair<std::string, std::string>> moves;
};
PodMoves SplitMoves(const std::string& outcome);
// `moves` for reading: "13 pods move: 9 to node i-0036..., 4 to general-pr77x (new)", by
// destination, most first. "#k" is the k-th of `replacements` when it names one, else "a
// replacement". With `verbose`, every pod's own move follows.
std::string MovesText(const std::vector<std::pair<std::string, std::string>>& moves,
                      const std::vector<std::string>& replacements, bool verbose = false);
// A disruption outcome or deletion reason with its moves read that way.
std::string ReadableOutcome(const std::string& outcome,
                            const std::vector<std::string>& replacements, bool verbose = false);
// "budget #1 (nodes 10% of 2): 1 allowed, 0 disrupting" from what the core records; the
// recorded detail as it is when it is not in the core's form.
std::string BudgetText(const BudgetState& budget);
// The NodeClaims the fold of event `cause` launched (a disruption's replacements, a batch's
// claims), from its output record, in order.
std::vector<std::string> LaunchedBy(const log::EventLog& log, Seq cause);

// ---- tenon audit: disruption decisions with their inputs, through the decision index. ----

struct AuditQuery {
  std::string node;      // A node's name; its NodeClaims are found through lifecycle decisions.
  std::string nodepool;  // Decisions with a candidate or budget of this NodePool.
  std::optional<DisruptionMethod> method;  // Any when unset.
  std::optional<Instant> since;            // None: from the first decision.
  std::optional<Instant> until;            // None: through the last (inclusive).
};

struct AuditResult {
  std::vector<Decision> decisions;      // Disruption decisions, in id order.
  std::vector<std::string> nodeclaims;  // The node's NodeClaims, when the query named a node.
  bool used_index = false;              // False: the log predates the index; scanned instead.
  std::uint64_t decisions_read = 0;     // Records read and decoded to answer.
  // The NodeClaims each decision that launched replacements launched, by decision id.
  std::map<std::uint64_t, std::vector<std::string>> replacements;
  bool verbose = false;  // Every pod's move in the text, not only the counts.
};

// Every disruption decision matching every criterion of `query`. With an index, reads only the
// decisions of the most selective criterion; without one, scans every decision. A query naming
// a node or a NodePool decodes only the candidates of its NodeClaims or pool (all the text and
// JSON show), so a node that sat in passes of many candidates costs no more than one of few.
AuditResult Audit(const log::EventLog& log, const AuditQuery& query);
// The same answer by a full scan of the decisions (the baseline bench_audit measures against).
AuditResult AuditByScan(const log::EventLog& log, const AuditQuery& query);
// Plain text: per decision its time, id, cause, method, phase, reason (the simulation result,
// replacement, price and saving), the NodeClaims acted on, each candidate's outcome or blocker
// (only those of the queried node or NodePool when the query names one) and the budgets.
std::string AuditText(const AuditResult& result, const AuditQuery& query);
// The same as one JSON document: {"decisions": [...]}.
std::string AuditJson(const AuditResult& result, const AuditQuery& query);

// ---- tenon log export / import: one portable, checksummed file. ----

class ArchiveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ArchiveReport {
  std::uint64_t events = 0;
  std::uint64_t decisions = 0;
  std::uint64_t snapshots = 0;
  std::uint64_t bytes = 0;
  std::uint64_t checksum = 0;  // XXH3 of the archive's bytes before it.
  Seq last_seq{0};
};

// Writes every event, decision and snapshot of `log` into `file`.
ArchiveReport ExportLog(const log::EventLog& log, const std::filesystem::path& file);
// Makes a new log in `dir` (absent or empty) from `file`: events keep their sequence numbers,
// decisions are indexed as this version indexes them, snapshots are restored. The checksum is
// checked to the last byte; a damaged archive leaves no log behind.
ArchiveReport ImportLog(const std::filesystem::path& file, const std::filesystem::path& dir);
// The same from an open stream; `name` (the archive's file or address) heads its errors.
ArchiveReport ImportLog(std::istream& archive, const std::string& name,
                        const std::filesystem::path& dir);

// ---- tenon cost: node cost split over the pods by their requests. ----

struct CostQuery {
  std::string label;             // Group by this pod label; empty: by namespace.
  std::optional<Instant> since;  // None: from the first Tick.
  std::optional<Instant> until;  // None: through the last.
};

struct CostReport {
  std::map<std::string, double> usd_by_group;  // Namespace or label value -> dollars.
  double idle_usd = 0;                         // What no pod requested.
  double total_usd = 0;                        // Every launched NodeClaim's price over the window.
  double node_hours = 0;
};

// Each launched NodeClaim costs its price for every stretch of the window it is up; its pods
// share that by requests (the mean of CPU and memory fractions of its allocatable), the rest
// is idle. Groups, idle and total add up.
CostReport Cost(const log::EventLog& log, const CostQuery& query);
std::string CostText(const CostReport& report, const CostQuery& query);

// ---- tenon timeline: one self-contained HTML page. ----

struct TimelineReport {
  std::size_t samples = 0;
  std::size_t markers = 0;  // One per decision.
  std::size_t series = 0;   // NodePool x capacity type pairs that ever had a node.
};

// Writes the page: node counts by NodePool and capacity type, pending pods and cost per hour
// sampled over the log (at most 2,000 samples, 10 s apart at the finest), and every decision
// as a marker with its text on hover; wheel zooms, drag pans, "#from=S&to=S" (seconds from the
// start) opens a window. No network is needed to open it.
TimelineReport WriteTimeline(const log::EventLog& log, std::ostream& out);

// ---- tenon explain: the causal chain behind a pod, a node or a NodeClaim. ----

enum class Subject { kPod, kNode, kNodeClaim };

struct ExplainLine {
  Instant at;
  Seq seq{0};        // The event the line cites: what was recorded, or what caused a decision.
  std::string text;  // One plain sentence.
  friend bool operator==(const ExplainLine&, const ExplainLine&) = default;
};

// The chain in log order, through `at` (none: the whole log). A pod ("ns/name"): when it was
// pending, the batch that placed it, the NodePool's choice with its first choice and any
// offering that had no capacity (and until when it is kept out), the launch, registration,
// initialization and binding, and any disruption that moved it. A node: its NodeClaims' chains.
// A NodeClaim: why it was created, each lifecycle step, every disruption decision naming it.
std::vector<ExplainLine> Explain(const log::EventLog& log, Subject subject, const std::string& name,
                                 std::optional<Instant> at);
// "02:14:09  pod default/web-7 pending  (seq 412)" per line.
std::string ExplainText(const std::vector<ExplainLine>& lines);

}  // namespace tenon::replay
