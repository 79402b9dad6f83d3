// What-if: `tenon replay LOG --with NODEPOOLS.yaml` (or `--what-if`, this build with the recorded
// configuration). The recorded inputs -- pods arriving, scaling and finishing, DaemonSets,
// PodDisruptionBudgets, catalog refreshes, interruption messages and the cloud's
// out-of-capacity answers -- are read back out of the log into a simulation scenario, which the
// real runtime and core run against the simulated world (adapters/sim) on the same virtual
// timeline, under the other configuration. Both runs are then summed up the same way, from
// their logs, and compared.
//
// A part of its own, above replay/ and the simulator: it needs the simulated world, which the
// other incident tools (log, model and reducers only) do not.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "adapters/sim/report.h"
#include "adapters/sim/scenario.h"
#include "log/event_log.h"

namespace tenon::whatif {

// How long a recorded answer about an offering stands for it: the core keeps an offering that
// answered InsufficientInstanceCapacity out of launches this long, so the recording says
// nothing about an offering further than this from when it was last asked about.
inline constexpr Duration kRecordedAnswerWindow = kUnavailableOfferingTtl;

struct WhatIfOptions {
  std::filesystem::path config;   // NodePools and EC2NodeClasses; empty: the recorded ones.
  std::filesystem::path log_dir;  // Where the what-if run's log goes (absent or empty).
};

// The what-if's launch requests, offering by offering, against the recording.
struct Coverage {
  std::size_t recorded = 0;      // Asked about an offering the recording has an answer for then.
  std::size_t ice_honoured = 0;  // Of those, answered out of capacity as recorded.
  std::size_t from_catalog = 0;  // Not in the recording: answered from the catalog.
  std::map<std::string, std::size_t> uncovered;  // Offering -> requests from the catalog.
};

struct WhatIfResult {
  sim::Scenario scenario;          // The workload read out of the log, with the configuration.
  std::vector<std::string> notes;  // What the recording did not carry over, and why.
  sim::Report recorded;
  sim::Report what_if;
  Coverage coverage;
  std::size_t interruptions = 0;            // Recorded interruption messages replayed.
  std::size_t interruptions_unmatched = 0;  // Of those, with no instance to reach.
  std::size_t by_hand = 0;            // Recorded NodeClaim deletions and terminations by hand.
  std::size_t by_hand_unmatched = 0;  // Of those, with no instance to reach.
  std::size_t nodepool_edits = 0;     // Recorded NodePool edits replayed at their times.
};

// The recorded inputs of `log` as a scenario with the recorded configuration (the first
// version of each NodePool and EC2NodeClass the log holds, and each later NodePool edit as an
// action at its time). `notes` gets what could not be carried over.
sim::Scenario ScenarioFromLog(const log::EventLog& log, std::vector<std::string>& notes);

// NodePools, EC2NodeClasses and NodeOverlays from a YAML file of karpenter.sh/v1 NodePool,
// karpenter.k8s.aws/v1 EC2NodeClass and karpenter.sh/v1alpha1 NodeOverlay documents (several,
// separated by ---), put into `scenario` (its EC2NodeClasses and NodeOverlays stay where the
// file has none). Throws sim::ScenarioError naming the file
// and the problem: bad YAML, another kind, an invalid object, no NodePool, a nodeClassRef to
// no EC2NodeClass.
void ApplyConfiguration(const std::filesystem::path& file, sim::Scenario& scenario);

// The simulate report's figures, computed from a log: cost and node-hours from the NodeClaims
// launched (as `tenon cost` counts them), pod pending times, launches, removals and decisions.
sim::Report ReportFromLog(const log::EventLog& log, const std::string& name);

WhatIfResult WhatIf(const log::EventLog& log, const WhatIfOptions& options);
// Both reports, the coverage of the what-if's requests, the notes and a table of differences.
std::string WhatIfText(const WhatIfResult& result);

}  // namespace tenon::whatif
