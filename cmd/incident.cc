// tenon's incident commands: thin flag parsing and printing over replay/.
#include "cmd/incident.h"
#include "cmd/flags.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>

#include "adapters/aws/connection.h"
#include "adapters/aws/executor.h"
#include "adapters/aws/s3.h"
#include "adapters/kube/objects.h"
#include "log/codec.h"
#include "log/event_log.h"
#include "log/files.h"
#include "log/repair.h"
#include "replay/replay.h"
#include "replay/why.h"
#include "whatif/whatif.h"

namespace tenon::cmd {

struct IncidentCommands {
  CLI::App* replay = nullptr;
  std::string replay_dir;
  bool verify = false;
  bool decode_snapshots = false;
  std::uint64_t to = 0;
  std::string until;
  std::string history_claim;
  bool what_if = false;
  std::string with, what_if_log;

  CLI::App* audit = nullptr;
  std::string audit_dir;
  replay::AuditQuery query;
  std::string since_text, until_text, method_text;
  bool json = false;
  bool audit_verbose = false;

  CLI::App* log_export = nullptr;
  CLI::App* log_import = nullptr;
  std::string archive_dir, archive_file;
  CLI::App* log_repair = nullptr;
  std::string repair_dir;
  CLI::App* log_files = nullptr;
  std::string files_dir;

  CLI::App* cost = nullptr;
  std::string cost_dir, cost_by = "namespace", cost_since, cost_until;

  CLI::App* timeline = nullptr;
  std::string timeline_dir, timeline_file;

  CLI::App* explain = nullptr;
  std::string explain_dir, explain_kind, explain_name, explain_at;

  CLI::App* why = nullptr;
  std::string why_dir, why_at, why_window = "10m";
  bool why_json = false;
};

namespace {

std::unique_ptr<log::EventLog> OpenForReading(const std::string& dir) {
  log::OpenOptions open;
  open.create_if_missing = false;
  open.read_only = true;
  log::OpenReport report;
  auto log = log::EventLog::Open(dir, open, &report);
  // A torn tail is read past, and said: the answer holds everything before it.
  if (report.torn_tail_truncated) std::fprintf(stderr, "tenon: %s\n", report.message.c_str());
  return log;
}

std::optional<Instant> TimeFlag(const std::string& flag, const std::string& text,
                                const log::EventLog& log) {
  if (text.empty()) return std::nullopt;  // Not given.
  auto at = replay::ParseTime(text, replay::FirstEventTime(log));
  if (!at)
    throw std::invalid_argument(flag + ": '" + text +
                                "' is not a time such as 2026-01-01T02:14:09Z or 02:14:09 (a "
                                "real date and clock time, between the years 1677 and 2262)");
  return *at;
}

std::string Cpu(Millicores m) {
  char text[32];
  std::snprintf(text, sizeof text, "%" PRId64 ".%03" PRId64, m.value / 1000, m.value % 1000);
  return text;
}

std::string Gib(Bytes b) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fGi", static_cast<double>(b.value) / (1u << 30));
  return text;
}

void PrintPools(const State& state) {
  for (const auto& [name, pool] : state.cluster.nodepools) {
    Resources used;
    std::size_t claims = 0;
    MicroUsdPerHour cost{0};
    for (const auto& [n, c] : state.lifecycle.nodeclaims) {
      if (c.nodepool != name) continue;
      ++claims, cost += c.price;
      used = used + c.allocatable;
    }
    std::string limits;
    if (pool.limits.cpu) limits += " cpu " + Cpu(*pool.limits.cpu);
    if (pool.limits.memory) limits += " memory " + Gib(*pool.limits.memory);
    if (pool.limits.nodes) limits += " nodes " + std::to_string(*pool.limits.nodes);
    std::printf("nodepool %-16s weight %3d  nodeclaims %4zu  cpu %s  memory %s  %s/h  limits:%s\n",
                name.c_str(), pool.weight, claims, Cpu(used.cpu).c_str(), Gib(used.memory).c_str(),
                replay::DollarsText(cost).c_str(), limits.empty() ? " none" : limits.c_str());
  }
}

void PrintState(const State& state) {
  std::printf("state at seq %" PRIu64 ", %s, hash %016" PRIx64 "\n", state.last_seq.value,
              Rfc3339Text(state.now).c_str(), StateHash(state));
  PrintPools(state);
  std::map<std::string, std::vector<std::string>> pods_on;
  std::vector<std::string> pending;
  for (const auto& [key, pod] : state.cluster.pods) {
    if (pod.node_name.empty()) {
      if (pod.phase != PodPhase::kSucceeded && pod.phase != PodPhase::kFailed)
        pending.push_back(key);
    } else {
      pods_on[pod.node_name].push_back(key);
    }
  }
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    const auto& pods = pods_on[claim.node_name];
    std::printf("  %-22s %-12s %-11s %-10s %s/h  node %s (%zu pods)%s%s\n", name.c_str(),
                claim.instance_type.c_str(), claim.zone.c_str(), claim.capacity_type.c_str(),
                replay::DollarsText(claim.price).c_str(),
                claim.node_name.empty() ? "-" : claim.node_name.c_str(),
                claim.node_name.empty() ? 0 : pods.size(), claim.deleting ? "  deleting: " : "",
                claim.deleting_reason.c_str());
    if (claim.node_name.empty()) continue;
    std::string line;
    for (const auto& pod : pods) line += " " + pod;
    if (!line.empty()) std::printf("      pods:%s\n", line.c_str());
  }
  std::printf("pods %zu, pending %zu, commands in flight %zu\n", state.cluster.pods.size(),
              pending.size(), state.inflight.size());
  std::string line;
  for (const auto& pod : pending) line += " " + pod;
  if (!line.empty()) std::printf("pending:%s\n", line.c_str());
}

// Every NodeClaim transition up to `to` (0: all), with its time, cause and the event that led
// to it. `claim` (optional) keeps one NodeClaim's.
void PrintHistory(const log::EventLog& log, Seq to, const std::string& claim) {
  std::printf("nodeclaim history%s%s:\n", claim.empty() ? "" : " of ", claim.c_str());
  // A claim tainted for replacement: its replacements' names, for its planned moves.
  std::map<std::string, std::vector<std::string>> replacements;
  log.ScanDecisions(1, [&](const log::DecisionRecord& record) {
    Decision d = log::DecodeDecision(record.payload);
    if (to != Seq{0} && d.cause > to) return false;
    const auto* l = std::get_if<LifecycleDecision>(&d.body);
    if (l == nullptr || (!claim.empty() && l->nodeclaim != claim)) return true;
    if (l->transition == Transition::kTainted) {
      replacements[l->nodeclaim] = replay::LaunchedBy(log, d.cause);
    }
    const std::string reason = replay::ReadableOutcome(l->reason, replacements[l->nodeclaim]);
    std::printf("  %s  %-22s %-24s %s  (event %" PRIu64 ")\n", replay::ClockText(d.at).c_str(),
                l->nodeclaim.empty() ? l->instance_id.c_str() : l->nodeclaim.c_str(),
                Name(l->transition), reason.c_str(), d.cause.value);
    return true;
  });
}

// A progress bar on stderr, only when it is a terminal, at most once per percent.
std::function<void(Seq, Seq)> ProgressBar() {
  if (::isatty(STDERR_FILENO) == 0) return {};
  return [last = -1](Seq at, Seq end) mutable {
    const int percent = end == Seq{0} ? 100 : static_cast<int>(at.value * 100 / end.value);
    if (percent == last) return;
    last = percent;
    constexpr int kWidth = 40;
    std::string bar(static_cast<std::size_t>(percent * kWidth / 100), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\rverify [%s] %3d%%  seq %" PRIu64 "/%" PRIu64, bar.c_str(), percent,
                 at.value, end.value);
    if (at >= end) std::fprintf(stderr, "\n");
  };
}

int RunVerify(const log::EventLog& log, bool decode_snapshots) {
  // Each recorded CreateFleet body is rendered again from its LaunchInstance alone.
  const replay::RequestRenderer render = [](const Command& command) -> std::string {
    const auto* launch = std::get_if<LaunchInstance>(&command.body);
    return launch == nullptr ? "" : aws::RenderLaunch(*launch).body;
  };
  auto report = replay::Verify(log, ProgressBar(), 0, decode_snapshots, render);
  if (::isatty(STDERR_FILENO) != 0) std::fprintf(stderr, "\n");
  std::printf("replay: %" PRIu64 " events, %" PRIu64 " outputs, %" PRIu64 " decisions, %" PRIu64
              " snapshots checked (%" PRIu64 " decoded); final state %016" PRIx64,
              report.events, report.outputs, report.decisions, report.snapshots_checked,
              report.snapshots_decoded, report.final_hash);
  if (report.newest_snapshot != Seq{0}) {
    std::printf(" (from snapshot %" PRIu64 ": %016" PRIx64 ")", report.newest_snapshot.value,
                report.final_hash_from_snapshot);
  }
  if (!report.cuts.empty()) {
    std::printf("; %zu stretches between snapshots verified side by side", report.cuts.size() + 1);
  }
  if (report.requests_rendered > 0) {
    std::printf("; %" PRIu64 " recorded CreateFleet bodies rendered again, byte for byte",
                report.requests_rendered);
  }
  if (report.first_seq > Seq{1}) {
    std::printf("; the log begins at seq %" PRIu64 " (older records dropped by retention)",
                report.first_seq.value);
  }
  std::printf("\nverdict: %s\n", replay::VerdictName(report.verdict));
  if (report.verdict == replay::Verdict::kIdentical) return 0;
  std::printf("first bad sequence number: %" PRIu64 "\n%s\n", report.first_bad_seq.value,
              report.detail.c_str());
  return report.verdict == replay::Verdict::kIncomplete ? 2 : 1;
}

// The what-if's log goes to --what-if-log, else to a folder in $TMPDIR removed at the end.
int RunWhatIf(const IncidentCommands& c, const log::EventLog& log) {
  whatif::WhatIfOptions options;
  options.config = c.with;
  std::filesystem::path scratch;
  if (c.what_if_log.empty()) {
    scratch =
        std::filesystem::temp_directory_path() / ("tenon-what-if-" + std::to_string(::getpid()));
    std::filesystem::remove_all(scratch);
    options.log_dir = scratch / "log";
  } else {
    options.log_dir = c.what_if_log;
  }
  std::string text;
  try {
    text = whatif::WhatIfText(whatif::WhatIf(log, options));
  } catch (...) {
    if (!scratch.empty()) std::filesystem::remove_all(scratch);
    throw;
  }
  if (!scratch.empty()) std::filesystem::remove_all(scratch);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int RunReplay(const IncidentCommands& c) {
  auto log = OpenForReading(c.replay_dir);
  if (c.verify) return RunVerify(*log, c.decode_snapshots);
  if (c.what_if || !c.with.empty()) return RunWhatIf(c, *log);
  Seq to{c.to};
  if (!c.until.empty()) {
    const Instant until = *TimeFlag("--until", c.until, *log);
    const Seq at = replay::SeqAtTime(*log, until);
    to = to == Seq{0} ? at : std::min(to, at);
    if (to == Seq{0}) {
      std::printf("the log holds nothing at or before %s\n", Rfc3339Text(until).c_str());
      return 1;
    }
  }
  PrintState(replay::FoldTo(*log, to, true));
  PrintHistory(*log, to, c.history_claim);
  return 0;
}

int RunAudit(const IncidentCommands& c) {
  auto log = OpenForReading(c.audit_dir);
  replay::AuditQuery query = c.query;
  query.since = TimeFlag("--since", c.since_text, *log);
  query.until = TimeFlag("--until", c.until_text, *log);
  if (!c.method_text.empty()) query.method = ParseDisruptionMethod(c.method_text);
  auto result = replay::Audit(*log, query);
  result.verbose = c.audit_verbose;
  const std::string text =
      c.json ? replay::AuditJson(result, query) : replay::AuditText(result, query);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int RunExplain(const IncidentCommands& c) {
  auto log = OpenForReading(c.explain_dir);
  const std::optional<Instant> at = TimeFlag("--at", c.explain_at, *log);
  const replay::Subject subject = c.explain_kind == "pod"    ? replay::Subject::kPod
                                  : c.explain_kind == "node" ? replay::Subject::kNode
                                                             : replay::Subject::kNodeClaim;
  auto lines = replay::Explain(*log, subject, c.explain_name, at);
  if (lines.empty()) {
    std::printf("the log records nothing about %s %s%s\n", c.explain_kind.c_str(),
                c.explain_name.c_str(), at ? " by then" : "");
    return 1;
  }
  const std::string text = replay::ExplainText(lines);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int RunWhy(const IncidentCommands& c) {
  auto log = OpenForReading(c.why_dir);
  const std::optional<Instant> at = TimeFlag("--at", c.why_at, *log);
  Duration window{0};
  try {
    window = kube::ParseDuration(c.why_window);
  } catch (const std::exception& e) {
    throw std::invalid_argument("--window: '" + c.why_window +
                                "' is not a duration such as 10m or 1h30m (" + e.what() + ")");
  }
  if (window.value <= 0) throw std::invalid_argument("--window: must be longer than zero");
  const replay::WhyReport report = replay::Why(*log, *at, window);
  const std::string text = c.why_json ? replay::WhyJson(report) : replay::WhyText(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

void PrintArchive(const char* verb, const replay::ArchiveReport& r, const std::string& file) {
  std::printf("%s %s: %" PRIu64 " events (through seq %" PRIu64 "), %" PRIu64 " decisions, %" PRIu64
              " snapshots, %" PRIu64 " bytes, checksum %016" PRIx64 "\n",
              verb, file.c_str(), r.events, r.last_seq.value, r.decisions, r.snapshots, r.bytes,
              r.checksum);
}

// A file in $TMPDIR for an archive on its way to or from S3, removed at the end of the scope.
struct StagedArchive {
  StagedArchive()
      : path(std::filesystem::temp_directory_path() /
             ("tenon-archive-" + std::to_string(::getpid()) + ".tenonlog")) {}
  ~StagedArchive() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
  std::filesystem::path path;
};

[[noreturn]] void S3Failed(const char* what, const std::string& url, const aws::AwsError& e) {
  throw std::runtime_error(std::string(what) + " " + url + " failed: " + e.aws_code + ": " +
                           e.message);
}

int RunExport(const IncidentCommands& c) {
  auto log = OpenForReading(c.archive_dir);
  std::string bucket, key;
  if (!aws::ParseS3Url(c.archive_file, &bucket, &key)) {
    PrintArchive("exported", replay::ExportLog(*log, c.archive_file), c.archive_file);
    return 0;
  }
  StagedArchive staged;
  auto report = replay::ExportLog(*log, staged.path);
  std::ifstream in(staged.path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  aws::AwsConnection connection(aws::AwsSettingsFromEnvironment(aws::ProcessEnv()),
                                aws::ProcessEnv());
  auto put = aws::S3(connection.client()).PutObject(bucket, key, std::move(bytes));
  if (!put.ok()) S3Failed("uploading to", c.archive_file, put.error);
  PrintArchive("exported", report, c.archive_file);
  return 0;
}

int RunImport(const IncidentCommands& c) {
  std::string bucket, key;
  if (!aws::ParseS3Url(c.archive_file, &bucket, &key)) {
    PrintArchive("imported", replay::ImportLog(c.archive_file, c.archive_dir), c.archive_file);
    return 0;
  }
  aws::AwsConnection connection(aws::AwsSettingsFromEnvironment(aws::ProcessEnv()),
                                aws::ProcessEnv());
  auto got = aws::S3(connection.client()).GetObject(bucket, key);
  if (!got.ok()) S3Failed("downloading", c.archive_file, got.error);
  StagedArchive staged;
  std::ofstream(staged.path, std::ios::binary | std::ios::trunc) << *got.value;
  PrintArchive("imported", replay::ImportLog(staged.path, c.archive_dir), c.archive_file);
  return 0;
}

int RunRepair(const IncidentCommands& c) {
  const log::RepairReport r = log::RepairLog(c.repair_dir, [](const log::EventLog& log, Seq last) {
    return replay::FoldTo(log, last, true).next_decision.value;
  });
  if (!r.repaired) {
    std::printf("%s has no damage: nothing changed (last sequence number %" PRIu64 ")\n",
                c.repair_dir.c_str(), r.last_seq.value);
    return 0;
  }
  std::printf(
      "repaired %s\n  damage: %s\n  the log as it was: %s\n  the log goes on after "
      "record %" PRIu64 "; what was lost: %s\n",
      c.repair_dir.c_str(), r.damage.c_str(), r.aside.c_str(), r.last_seq.value, r.report.c_str());
  return 0;
}

int RunFiles(const IncidentCommands& c) {
  std::printf("%-24s %-22s %-15s %s\n", "FILE", "KIND", "FAMILY", "BYTES");
  for (const auto& f : log::ListLogFiles(c.files_dir)) {
    std::printf("%-24s %-22s %-15s %" PRIu64 "\n", f.name.c_str(), f.kind.c_str(),
                f.family.empty() ? "-" : f.family.c_str(), f.bytes);
  }
  return 0;
}

void AddArchive(CLI::App& app, IncidentCommands& c) {
  auto* log_cmd =
      app.add_subcommand("log", "move a log between machines as one file, or repair a damaged one");
  log_cmd->require_subcommand(1);
  c.log_export = log_cmd->add_subcommand("export", "write the whole log into one checksummed file");
  c.log_export->add_option("log", c.archive_dir, "log folder")
      ->required()
      ->check(CLI::ExistingDirectory);
  c.log_export
      ->add_option("-o,--output", c.archive_file, "archive to write (a file or s3://BUCKET/KEY)")
      ->required();
  c.log_import = log_cmd->add_subcommand("import", "make a new log from an archive");
  c.log_import->add_option("archive", c.archive_file, "archive (a file or s3://BUCKET/KEY)")
      ->required();
  c.log_import->add_option("-o,--output", c.archive_dir, "new log folder (absent or empty)")
      ->required();
  // A subcommand of one existing log folder.
  auto on_folder = [&](const char* name, const char* what, std::string& dir) {
    CLI::App* sub = log_cmd->add_subcommand(name, what);
    sub->add_option("log", dir, "log folder")->required()->check(CLI::ExistingDirectory);
    return sub;
  };
  c.log_repair = on_folder("repair",
                           "go on from the last good record of a log damaged before its end, "
                           "setting the log as it was aside (never deleted) with a report of "
                           "what was lost",
                           c.repair_dir);
  c.log_files = on_folder(
      "files",
      "what each file of a log folder is: tables by column family, write-ahead logs, MANIFEST",
      c.files_dir);
}

int RunCost(const IncidentCommands& c) {
  auto log = OpenForReading(c.cost_dir);
  replay::CostQuery query;
  if (c.cost_by.rfind("label=", 0) == 0) {
    query.label = c.cost_by.substr(6);
    if (query.label.empty()) throw std::invalid_argument("--by label= needs a label key");
  } else if (c.cost_by != "namespace") {
    throw std::invalid_argument("--by is namespace or label=KEY, not '" + c.cost_by + "'");
  }
  query.since = TimeFlag("--since", c.cost_since, *log);
  query.until = TimeFlag("--until", c.cost_until, *log);
  const std::string text = replay::CostText(replay::Cost(*log, query), query);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

void AddCost(CLI::App& app, IncidentCommands& c) {
  c.cost = app.add_subcommand("cost", "node cost over the log split by the pods' requests");
  c.cost->add_option("log", c.cost_dir, "log folder")->required()->check(CLI::ExistingDirectory);
  c.cost->add_option("--by", c.cost_by, "namespace (default) or label=KEY");
  c.cost->add_option("--since", c.cost_since, "from this time")->check(NonEmptyTime());
  c.cost->add_option("--until", c.cost_until, "through this time")->check(NonEmptyTime());
}

int RunTimeline(const IncidentCommands& c) {
  auto log = OpenForReading(c.timeline_dir);
  std::ofstream out(c.timeline_file, std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + c.timeline_file);
  auto report = replay::WriteTimeline(*log, out);
  out.close();
  if (!out) throw std::runtime_error("writing " + c.timeline_file + " failed");
  std::printf("timeline %s: %zu samples, %zu series, %zu decisions\n", c.timeline_file.c_str(),
              report.samples, report.series, report.markers);
  return 0;
}

void AddTimeline(CLI::App& app, IncidentCommands& c) {
  c.timeline = app.add_subcommand("timeline", "one self-contained HTML page of the log");
  c.timeline->add_option("log", c.timeline_dir, "log folder")
      ->required()
      ->check(CLI::ExistingDirectory);
  c.timeline->add_option("-o,--output", c.timeline_file, "HTML file to write")->required();
}

void AddReplay(CLI::App& app, IncidentCommands& c) {
  c.replay = app.add_subcommand("replay", "fold a log and print the state, or verify it");
  c.replay->add_option("log", c.replay_dir, "log folder")
      ->required()
      ->check(CLI::ExistingDirectory);
  c.replay->add_flag("--verify", c.verify,
                     "re-fold from zero and from the newest snapshot and compare");
  c.replay->add_flag("--decode-snapshots", c.decode_snapshots,
                     "with --verify: decode every snapshot and check its state, not only its "
                     "stored hash (the snapshots a fold starts from are always decoded)");
  c.replay->add_option("--to", c.to, "stop at this sequence number (default: the last)")
      ->check(PositiveCount())
      ->default_str("");
  c.replay
      ->add_option("--until", c.until,
                   "stop at this time (2026-01-01T02:14:09Z, or 02:14:09 on the log's day)")
      ->check(NonEmptyTime());
  c.replay->add_option("--nodeclaim", c.history_claim, "show only this NodeClaim's history");
  c.replay
      ->add_option("--with", c.with,
                   "what-if: re-run the recorded inputs under the NodePools and "
                   "EC2NodeClasses of this YAML file and compare")
      ->check(CLI::ExistingFile);
  c.replay->add_flag("--what-if", c.what_if,
                     "what-if: re-run the recorded inputs through this build (with --with: "
                     "under that configuration) and compare");
  c.replay->add_option("--what-if-log", c.what_if_log,
                       "keep the what-if run's log in this (new) folder for the other tools");
}

void AddAudit(CLI::App& app, IncidentCommands& c) {
  c.audit = app.add_subcommand("audit", "every disruption decision with its inputs and blockers");
  c.audit->add_option("log", c.audit_dir, "log folder")->required()->check(CLI::ExistingDirectory);
  c.audit->add_option("--node", c.query.node, "decisions about this node (or NodeClaim)");
  c.audit->add_option("--nodepool", c.query.nodepool, "decisions about this NodePool");
  c.audit
      ->add_option("--method", c.method_text,
                   "Emptiness, Drift, MultiNodeConsolidation, SingleNodeConsolidation, ...")
      ->check(MethodName());
  c.audit->add_option("--since", c.since_text, "from this time")->check(NonEmptyTime());
  c.audit->add_option("--until", c.until_text, "through this time")->check(NonEmptyTime());
  c.audit->add_flag("--json", c.json, "one JSON document");
  c.audit->add_flag("--verbose", c.audit_verbose, "every pod's move, not only the counts");
}

void AddExplain(CLI::App& app, IncidentCommands& c) {
  c.explain = app.add_subcommand("explain", "the causal chain behind a pod, node or NodeClaim");
  c.explain->add_option("log", c.explain_dir, "log folder")
      ->required()
      ->check(CLI::ExistingDirectory);
  c.explain->add_option("kind", c.explain_kind, "pod | node | nodeclaim")
      ->required()
      ->check(CLI::IsMember({"pod", "node", "nodeclaim"}));
  c.explain->add_option("name", c.explain_name, "NS/NAME for a pod, else the name")->required();
  c.explain->add_option("--at", c.explain_at, "only what was known at this time")
      ->check(NonEmptyTime());
}

void AddWhy(CLI::App& app, IncidentCommands& c) {
  c.why = app.add_subcommand("why", "what changed around a moment, and the causes of each change");
  c.why->add_option("log", c.why_dir, "log folder")->required()->check(CLI::ExistingDirectory);
  c.why->add_option("--at", c.why_at, "the moment: 2026-01-01T02:14:00Z, or 02:14 on the log's day")
      ->required()
      ->check(NonEmptyTime());
  c.why->add_option("--window", c.why_window, "how much time around it to look at (default 10m)");
  c.why->add_flag("--json", c.why_json, "one JSON document");
}

}  // namespace

std::shared_ptr<IncidentCommands> AddIncidentCommands(CLI::App& app) {
  auto commands = std::make_shared<IncidentCommands>();
  AddReplay(app, *commands);
  AddAudit(app, *commands);
  AddExplain(app, *commands);
  AddWhy(app, *commands);
  AddArchive(app, *commands);
  AddTimeline(app, *commands);
  AddCost(app, *commands);
  return commands;
}

std::optional<int> RunIncidentCommand(const IncidentCommands& commands) {
  if (commands.replay->parsed()) return RunReplay(commands);
  if (commands.audit->parsed()) return RunAudit(commands);
  if (commands.explain->parsed()) return RunExplain(commands);
  if (commands.why->parsed()) return RunWhy(commands);
  if (commands.timeline->parsed()) return RunTimeline(commands);
  if (commands.cost->parsed()) return RunCost(commands);
  if (commands.log_export->parsed()) return RunExport(commands);
  if (commands.log_import->parsed()) return RunImport(commands);
  if (commands.log_repair->parsed()) return RunRepair(commands);
  if (commands.log_files->parsed()) return RunFiles(commands);
  return std::nullopt;
}

}  // namespace tenon::cmd
