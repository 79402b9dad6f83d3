// What-if: the recorded inputs of a log re-run under another configuration (whatif/whatif.h).
#include "whatif/whatif.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "adapters/kube/objects.h"
#include "adapters/sim/simulator.h"
#include "log/codec.h"
#include "replay/replay.h"

namespace tenon::whatif {
namespace {

constexpr std::size_t kUncoveredShownMax = 12;  // Offerings listed by name at the most.

// Classifies the what-if's launch requests, offering by offering, against the recorded answers.
class CoverageObserver : public runtime::Observer {
 public:
  explicit CoverageObserver(std::map<std::string, std::vector<Instant>> answers)
      : answers_(std::move(answers)) {}
  void OnFolded(Seq, const Event& event, const Output&, std::chrono::nanoseconds) override {
    if (const auto* tick = std::get_if<Tick>(&event)) now_ = tick->now;
    if (const auto* l = std::get_if<FleetLaunched>(&event)) {
      for (const auto& e : l->errors)
        Asked(OfferingKey(e.instance_type, e.zone, e.capacity_type), true);
      Asked(OfferingKey(l->instance_type, l->zone, l->capacity_type), false);
    }
    if (const auto* f = std::get_if<FleetFailed>(&event)) {
      for (const auto& e : f->errors)
        Asked(OfferingKey(e.instance_type, e.zone, e.capacity_type), true);
    }
  }
  const Coverage& coverage() const { return coverage_; }

 private:
  void Asked(const std::string& offering, bool out_of_capacity) {
    auto it = answers_.find(offering);
    const bool covered =
        it != answers_.end() && std::any_of(it->second.begin(), it->second.end(), [&](Instant at) {
          return std::abs(at.value - now_.value) <= kRecordedAnswerWindow.value;
        });
    if (covered) {
      ++coverage_.recorded;
      coverage_.ice_honoured += out_of_capacity ? 1 : 0;
    } else {
      ++coverage_.from_catalog;
      ++coverage_.uncovered[offering];
    }
  }
  Instant now_;
  std::map<std::string, std::vector<Instant>> answers_;
  Coverage coverage_;
};

// Every offering the recording has an answer about, with when: out of capacity, or launched.
std::map<std::string, std::vector<Instant>> RecordedAnswers(const log::EventLog& log) {
  std::map<std::string, std::vector<Instant>> answers;
  Instant now;
  log.Scan(log.FirstSeq(), Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    const auto* event = std::get_if<Event>(&entry);
    if (event == nullptr) return true;
    if (const auto* tick = std::get_if<Tick>(event)) now = tick->now;
    std::vector<FleetError> errors;
    if (const auto* l = std::get_if<FleetLaunched>(event)) {
      answers[OfferingKey(l->instance_type, l->zone, l->capacity_type)].push_back(now);
      errors = l->errors;
    }
    if (const auto* f = std::get_if<FleetFailed>(event)) errors = f->errors;
    for (const auto& e : errors) {
      answers[OfferingKey(e.instance_type, e.zone, e.capacity_type)].push_back(now);
    }
    return true;
  });
  return answers;
}

// What the world summary would say, from the core's state: launched NodeClaims are the
// instances (their prices the cost), as `tenon cost` counts them.
sim::WorldSummary SummaryOf(const State& state, std::size_t launch_calls) {
  sim::WorldSummary w;
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    if (claim.launched.value == 0) continue;
    ++w.instances;
    w.cost = MicroUsdPerHour{w.cost.value + claim.price.value};
  }
  w.nodes = state.cluster.nodes.size();
  for (const auto& [key, pod] : state.cluster.pods)
    (pod.node_name.empty() ? w.pods_pending : w.pods_bound)++;
  w.launch_calls = launch_calls;
  return w;
}

std::string Text(const char* format, auto... args) {
  char line[512];
  std::snprintf(line, sizeof line, format, args...);
  return line;
}

}  // namespace

void ApplyConfiguration(const std::filesystem::path& file, sim::Scenario& scenario) {
  std::vector<NodePool> pools;
  std::vector<NodeClass> classes;
  std::vector<NodeOverlay> overlays;
  try {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw sim::ScenarioError("cannot read it");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    for (const YAML::Node& doc : kube::LoadDocuments(text)) {
      if (!doc || doc.IsNull()) continue;
      const std::string kind = doc["kind"] ? doc["kind"].as<std::string>() : "";
      if (kind == "NodePool") {
        pools.push_back(kube::ParseNodePool(doc));
      } else if (kind == "EC2NodeClass") {
        classes.push_back(kube::ParseNodeClass(doc));
      } else if (kind == "NodeOverlay") {
        overlays.push_back(kube::ParseNodeOverlay(doc));
      } else {
        throw sim::ScenarioError("a document of kind '" + kind +
                                 "': only karpenter.sh/v1 NodePool, karpenter.k8s.aws/v1 "
                                 "EC2NodeClass and karpenter.sh/v1alpha1 NodeOverlay are read");
      }
    }
  } catch (const YAML::Exception& e) {
    throw sim::ScenarioError(file.string() + ": " + e.what());
  } catch (const kube::ObjectError& e) {
    throw sim::ScenarioError(file.string() + ": " + e.what());
  } catch (const sim::ScenarioError& e) {
    throw sim::ScenarioError(file.string() + ": " + e.what());
  }
  if (pools.empty()) throw sim::ScenarioError(file.string() + ": no NodePool in the file");
  if (!classes.empty()) scenario.nodeclasses = classes;
  if (!overlays.empty()) scenario.overlays = overlays;
  for (const NodePool& pool : pools) {
    const bool known = std::any_of(scenario.nodeclasses.begin(), scenario.nodeclasses.end(),
                                   [&](const NodeClass& c) { return c.name == pool.nodeclass; });
    if (!known) {
      throw sim::ScenarioError(file.string() + ": NodePool " + pool.name +
                               ": nodeClassRef names EC2NodeClass '" + pool.nodeclass +
                               "', which is neither in the file nor in the recording");
    }
  }
  scenario.nodepools = pools;
  scenario.name = file.filename().string();
}

sim::Report ReportFromLog(const log::EventLog& log, const std::string& name) {
  State state;
  std::optional<sim::ReportBuilder> builder;
  std::size_t launch_calls = 0;
  log.Scan(log.FirstSeq(), Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    if (const auto* output = std::get_if<log::OutputRecord>(&entry)) {
      Output out;
      out.commands = output->commands;
      for (const auto& c : out.commands)
        launch_calls += std::holds_alternative<LaunchInstance>(c.body);
      for (DecisionId id : output->decision_ids) {
        if (auto d = log.ReadDecision(id.value))
          out.decisions.push_back(log::DecodeDecision(d->payload));
      }
      if (builder) builder->Observe(out);
      return true;
    }
    const Event& event = std::get<Event>(entry);
    Step(state, Seq{record.seq}, event);
    if (const auto* tick = std::get_if<Tick>(&event)) {
      if (!builder) builder.emplace(name, tick->now, kMinute);
      builder->Observe(event);
      builder->Sample(tick->now, SummaryOf(state, launch_calls));
    } else if (builder) {
      builder->Observe(event);
    }
    return true;
  });
  if (!builder) throw sim::ScenarioError("the log holds no Tick");
  return builder->report();
}

WhatIfResult WhatIf(const log::EventLog& log, const WhatIfOptions& options) {
  WhatIfResult result;
  result.scenario = ScenarioFromLog(log, result.notes);
  auto& actions = result.scenario.actions;
  if (!options.config.empty()) {
    ApplyConfiguration(options.config, result.scenario);
    // The file's NodePools stand for the whole run: edits of the recorded ones do not apply.
    const auto edits = std::erase_if(
        actions, [](const sim::Action& a) { return a.kind == sim::Action::Kind::kApplyNodePool; });
    if (edits > 0) {
      result.notes.push_back(std::to_string(edits) +
                             " NodePool edits recorded during the run: not applied, the file's "
                             "NodePools stand for the whole run");
    }
  } else {
    result.scenario.name = "what-if (this build, recorded configuration)";
  }
  for (const auto& a : actions) {
    result.interruptions += a.kind == sim::Action::Kind::kInterruptOffering;
    result.by_hand += a.kind == sim::Action::Kind::kDeleteNodeClaimOfOffering ||
                      a.kind == sim::Action::Kind::kTerminateInstanceOfOffering;
    result.nodepool_edits += a.kind == sim::Action::Kind::kApplyNodePool;
  }
  CoverageObserver coverage(RecordedAnswers(log));
  sim::SimulateOptions run;
  run.log_dir = options.log_dir;
  run.observer = &coverage;
  const sim::SimulateReport simulated = sim::Simulate(result.scenario, run);
  result.interruptions_unmatched = simulated.interruptions_unmatched;
  result.by_hand_unmatched = simulated.by_hand_unmatched;
  result.coverage = coverage.coverage();
  result.recorded = ReportFromLog(log, "recorded");
  log::OpenOptions open;
  open.read_only = true;
  open.create_if_missing = false;
  auto what_if_log = log::EventLog::Open(options.log_dir, open);
  result.what_if = ReportFromLog(*what_if_log, result.scenario.name);
  return result;
}

std::string WhatIfText(const WhatIfResult& r) {
  const sim::Scenario& s = r.scenario;
  std::string out = "what-if: " + s.name + " on the recorded inputs, " + ClockText(s.start) +
                    " to " + ClockText(s.start + s.duration) + "\n";
  out += Text(
      "  inputs: %zu deployment steps, %zu jobs, %zu DaemonSets, %zu PDBs, %zu "
      "interruption messages (%zu found no instance), %zu windows out of capacity\n",
      s.workloads.size(), s.jobs.size(), s.daemonsets.size(), s.budgets.size(), r.interruptions,
      r.interruptions_unmatched, s.cloud.capacity_windows.size());
  out += Text(
      "  by hand: %zu NodeClaim deletions and instance terminations (%zu found no instance), "
      "%zu NodePool edits\n",
      r.by_hand, r.by_hand_unmatched, r.nodepool_edits);
  out += Text(
      "  launch requests per offering: %zu answered as recorded (%zu out of capacity), "
      "%zu not in the recording, answered from the catalog\n",
      r.coverage.recorded, r.coverage.ice_honoured, r.coverage.from_catalog);
  std::size_t shown = 0;
  for (const auto& [offering, n] : r.coverage.uncovered) {
    if (shown++ == kUncoveredShownMax) {
      out += Text("    ... and %zu more offerings\n",
                  r.coverage.uncovered.size() - kUncoveredShownMax);
      break;
    }
    out += Text("    %-40s %zu requests not in the recording, answered from the catalog\n",
                offering.c_str(), n);
  }
  for (const auto& note : r.notes) out += "  note: " + note + "\n";
  out += sim::FormatReport(r.recorded) + sim::FormatReport(r.what_if);
  return out + sim::FormatComparison(r.recorded, r.what_if);
}

}  // namespace tenon::whatif
