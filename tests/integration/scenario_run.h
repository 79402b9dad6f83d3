// Running a simulator scenario for a test: a scenario with one small on-demand NodePool, the
// world it leaves, every command and decision in its log, and its replay verdict.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "adapters/sim/simulator.h"
#include "log/codec.h"
#include "replay/replay.h"
#include "tests/integration/helpers.h"
#include "tests/support/idle_notes.h"

namespace tenon::testing {

inline const std::string kCatalog =
    (std::filesystem::path(TENON_SOURCE_DIR) / "examples/catalogs/small.json").string();

// A scenario with one on-demand NodePool of m5.large and m5.xlarge; `extra` adds top-level
// keys (workloads, cloud, budgets, actions) and `pool_spec` lines to the pool's template spec.
inline std::string Scenario(const std::string& extra, const std::string& pool_spec = "",
                            const std::string& pool_disruption = "") {
  return R"(name: lifecycle
seed: 7
start: "2026-01-01T00:00:00Z"
tick: 1s
catalog: )" +
         kCatalog +
         R"(
objects:
  - kind: EC2NodeClass
    metadata: {name: default}
    spec: {role: r}
  - kind: NodePool
    metadata: {name: default}
    spec:
      template:
        spec:
          nodeClassRef: {name: default}
          requirements:
            - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
            - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
)" + pool_spec +
         pool_disruption + extra;
}

struct Outcome {
  sim::SimulateReport report;
  std::vector<LifecycleDecision> history;
  std::vector<std::pair<Instant, DisruptionDecision>> disruptions;  // With their times.
  std::uint64_t rejected_inputs = 0;
  std::vector<Command> commands;
  std::map<std::string, sim::SimInstance> instances;
  std::map<std::string, std::string> nodeclaims;
  std::map<std::string, Node> nodes;
  std::map<std::string, Pod> pods;
  std::map<std::string, NodePoolStatus> pool_status;
  std::map<std::string, NodeOverlayStatus> overlay_status;
  replay::Verdict verdict = replay::Verdict::kIdentical;
  std::string verify_detail;
  std::uint64_t idle_skips = 0;  // Ticks that skipped a walk on an idle note (idle_notes.h).

  // The transitions recorded, in order, for one claim ("" = every claim).
  std::vector<Transition> Transitions(const std::string& claim = "") const {
    std::vector<Transition> out;
    for (const auto& d : history) {
      if (claim.empty() || d.nodeclaim == claim) out.push_back(d.transition);
    }
    return out;
  }
  std::size_t Count(Transition transition) const {
    std::size_t n = 0;
    for (const auto& d : history) n += d.transition == transition ? 1 : 0;
    return n;
  }
  const LifecycleDecision* First(Transition transition) const {
    for (const auto& d : history) {
      if (d.transition == transition) return &d;
    }
    return nullptr;
  }
  // The history as text, for failure messages.
  std::string Describe() const {
    std::string text;
    for (const auto& d : history) {
      text += d.nodeclaim + " " + Name(d.transition) + ": " + d.reason + "\n";
    }
    return text;
  }
  std::size_t Bound() const {
    std::size_t n = 0;
    for (const auto& [key, pod] : pods) n += pod.node_name.empty() ? 0 : 1;
    return n;
  }
  template <class T>
  std::vector<const T*> CommandsOf() const {
    std::vector<const T*> out;
    for (const auto& c : commands) {
      if (const T* body = std::get_if<T>(&c.body)) out.push_back(body);
    }
    return out;
  }
};

// Whether the workload pods of `claims` still fit, by CPU, memory and pod count (first fit,
// largest first), into what the other ready nodes have free: a check of consolidation that
// does not use the scheduler it checks. Empty when they fit, else the pod that does not.
inline std::string Unplaceable(const State& state, const std::vector<std::string>& claims) {
  std::set<std::string> leaving;
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) {
    bool candidate = std::find(claims.begin(), claims.end(), name) != claims.end();
    if (candidate || claim.deleting) leaving.insert(claim.node_name);
  }
  std::map<std::string, Resources> room;
  for (const auto& [name, node] : state.cluster.nodes) {
    if (node.ready && !leaving.contains(name)) room[name] = node.allocatable;
  }
  std::vector<const Pod*> moving;
  for (const auto& [key, pod] : state.cluster.pods) {
    if (pod.node_name.empty() || pod.phase == PodPhase::kSucceeded ||
        pod.phase == PodPhase::kFailed)
      continue;
    Resources need = pod.requests;
    need.pods = 1;
    if (auto it = room.find(pod.node_name); it != room.end()) it->second = it->second - need;
    bool workload = pod.owner_kind != "DaemonSet" && pod.owner_kind != "Node";
    if (workload && leaving.contains(pod.node_name) &&
        std::any_of(claims.begin(), claims.end(), [&](const auto& c) {
          auto claim = state.lifecycle.nodeclaims.find(c);
          return claim != state.lifecycle.nodeclaims.end() &&
                 claim->second.node_name == pod.node_name;
        })) {
      moving.push_back(&pod);
    }
  }
  std::sort(moving.begin(), moving.end(),
            [](const Pod* a, const Pod* b) { return a->requests.cpu > b->requests.cpu; });
  for (const Pod* pod : moving) {
    Resources need = pod->requests;
    need.pods = 1;
    auto fit = std::find_if(room.begin(), room.end(), [&](const auto& r) {
      return need.cpu <= r.second.cpu && need.memory <= r.second.memory &&
             need.pods <= r.second.pods;
    });
    if (fit == room.end()) return pod->ns + "/" + pod->name;
    fit->second = fit->second - need;
  }
  return {};
}

// Runs the scenario with its log in `dir` (a fresh temporary folder when null).
// Invariants every run must keep (the simulation tests lean on them): a graceful disruption
// (emptiness, drift, consolidation) never takes more nodes of a pool than the budget it
// recorded allowed, and never a node running a do-not-disrupt pod (but drift of a pool with a
// terminationGracePeriod, Karpenter's eventual disruption, which may); a consolidation never
// deletes nodes whose pods have nowhere to go (checked when the nodes are deleted: at once,
// or once their replacements are up). Returns the violations found.
inline std::vector<std::string> DisruptionViolations(const log::EventLog& log) {
  std::vector<std::string> out;
  log.ScanDecisions(1, [&](const log::DecisionRecord& record) {
    Decision d = log::DecodeDecision(record.payload);
    const auto* x = std::get_if<DisruptionDecision>(&d.body);
    const bool consolidation =
        x != nullptr && (x->method == DisruptionMethod::kSingleNodeConsolidation ||
                         x->method == DisruptionMethod::kMultiNodeConsolidation);
    if (consolidation &&
        (x->phase == DisruptionPhase::kExecuted || x->phase == DisruptionPhase::kReplaced)) {
      // Replacements are up when "replaced" is decided: the state after its event has them.
      State at =
          replay::FoldTo(log, d.cause - (x->phase == DisruptionPhase::kExecuted ? 1 : 0), true);
      if (std::string pod = Unplaceable(at, x->nodeclaims); !pod.empty()) {
        out.push_back(std::string(Name(x->method)) + " deleted " + x->nodeclaims.front() +
                      " but pod " + pod + " fits on no other node");
      }
    }
    // A disruption starts when it is executed, or when its candidates are tainted while
    // replacements launch; the budgets recorded then must have allowed it.
    if (x == nullptr ||
        (x->phase != DisruptionPhase::kExecuted && x->phase != DisruptionPhase::kReplacing))
      return true;
    if (x->method != DisruptionMethod::kEmptiness && x->method != DisruptionMethod::kDrift &&
        x->method != DisruptionMethod::kSoftExpiration && !consolidation) {
      return true;
    }
    State before = replay::FoldTo(log, d.cause - 1, true);
    std::map<std::string, std::int64_t> taken;
    for (const auto& name : x->nodeclaims) {
      auto claim = before.lifecycle.nodeclaims.find(name);
      if (claim == before.lifecycle.nodeclaims.end()) continue;
      taken[claim->second.nodepool]++;
      auto pool = before.cluster.nodepools.find(claim->second.nodepool);
      if (x->method == DisruptionMethod::kDrift && pool != before.cluster.nodepools.end() &&
          pool->second.termination_grace_period) {
        continue;
      }
      for (const auto& [key, pod] : before.cluster.pods) {
        bool protected_now =
            pod.do_not_disrupt &&
            (!pod.do_not_disrupt_for || before.now < pod.created + *pod.do_not_disrupt_for);
        if (pod.node_name == claim->second.node_name && protected_now) {
          out.push_back(std::string(Name(x->method)) + " took " + name +
                        " with do-not-disrupt pod " + key);
        }
      }
    }
    for (const auto& [pool, n] : taken) {
      auto budget = std::find_if(x->budgets.begin(), x->budgets.end(),
                                 [&](const BudgetState& b) { return b.nodepool == pool; });
      if (budget == x->budgets.end() || n > budget->allowed) {
        out.push_back(std::string(Name(x->method)) + " took " + std::to_string(n) + " nodes of " +
                      pool + " beyond its budget");
      }
    }
    return true;
  });
  return out;
}

// Two m5.xlarge: one running a 3500m pod, one left with five 350m pods after a scale-down at
// 5 min. Replacing the second with an m5.large saves $0.096/h, a quarter of the pool's $0.384/h,
// but moves five of the pool's six pods: disruption 6 of 8 (1 per node, 1 per pod), a Balanced
// score of 0.25 / 0.75 = 0.33, under 0.5 (Karpenter's "marginal replace"), where
// WhenEmptyOrUnderutilized replaces it. `policy`: the pool's consolidationPolicy (empty: the
// default); every node may go at once.
inline std::string MarginalReplaceScenario(const std::string& policy) {
  return Scenario(R"(
duration: 12m
workloads:
  - {name: a, replicas: 1, cpu: 3500m, memory: 512Mi}
  - {at: 1m, name: b, replicas: 10, cpu: 350m, memory: 128Mi}
  - {at: 5m, name: b, replicas: 5}
)",
                  "",
                  "      disruption: {" +
                      (policy.empty() ? "" : "consolidationPolicy: " + policy + ", ") +
                      "budgets: [{nodes: \"100%\"}]}\n");
}

// Four web pods on nodes of a pool whose disruption budget allows one node at a time; at 3 min a
// label is added to the pool's template, which drifts every node launched before it.
inline std::string TemplateDriftScenario() {
  return Scenario(R"(
duration: 12m
workloads:
  - {name: web, replicas: 4, cpu: 1500m, memory: 512Mi}
actions:
  - {at: 3m, do: labelNodePool, label: team=web}
)",
                  "", "      disruption: {budgets: [{nodes: \"1\"}]}\n");
}

inline Outcome Simulate(const std::string& yaml, const TempDir* keep = nullptr) {
  TempDir temporary;
  const TempDir& dir = keep != nullptr ? *keep : temporary;
  auto file = dir.path() / "scenario.yaml";
  std::ofstream(file) << yaml;
  auto scenario = sim::LoadScenario(file);
  sim::SimulateOptions options;
  options.log_dir = dir.path() / "log";
  Outcome out;
  out.report = sim::Simulate(scenario, options);

  log::OpenOptions open;
  open.read_only = true;
  open.create_if_missing = false;
  auto log = log::EventLog::Open(options.log_dir, open);
  log->ScanDecisions(1, [&](const log::DecisionRecord& r) {
    Decision d = log::DecodeDecision(r.payload);
    if (const auto* l = std::get_if<LifecycleDecision>(&d.body)) out.history.push_back(*l);
    if (const auto* x = std::get_if<DisruptionDecision>(&d.body)) {
      out.disruptions.push_back({d.at, *x});
    }
    return true;
  });
  log->Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    auto entry = log::DecodeEntry(r.payload);
    if (const auto* o = std::get_if<log::OutputRecord>(&entry)) {
      out.commands.insert(out.commands.end(), o->commands.begin(), o->commands.end());
    }
    return true;
  });
  out.rejected_inputs = replay::FoldTo(*log, Seq{0}, true).rejected_inputs;
  for (const auto& violation : DisruptionViolations(*log)) ADD_FAILURE() << violation;
  auto verify = replay::Verify(*log);
  out.verdict = verify.verdict;
  out.verify_detail = verify.detail;
  if (std::string differed = CompareWithoutIdleNotes(*log, out.idle_skips); !differed.empty()) {
    ADD_FAILURE() << differed;
  }

  sim::World world(scenario, options.log_dir / sim::kWorldFile);
  EXPECT_TRUE(world.Load());
  out.instances = world.instances();
  out.nodeclaims = world.nodeclaims();
  out.nodes = world.nodes();
  out.pods = world.pods();
  out.pool_status = world.pool_status();
  out.overlay_status = world.overlay_status();
  if (std::getenv("TENON_HISTORY") != nullptr) std::printf("%s", out.Describe().c_str());
  return out;
}

// The claim's termination ran to the end and its pods run on the one replacement.
inline void ExpectReplaced(const Outcome& o, const std::string& claim, std::size_t pods) {
  auto mine = o.Transitions(claim);
  ASSERT_FALSE(mine.empty());
  EXPECT_EQ(mine.back(), Transition::kFinalized) << o.Describe();
  EXPECT_FALSE(o.nodeclaims.contains(claim));
  EXPECT_EQ(o.instances.size(), 1u);
  EXPECT_EQ(o.Bound(), pods);
}

// ---- Reading disruption decisions back, for the disruption and consolidation tests. ----

// The scenario starts at 2026-01-01T00:00:00Z, a Thursday.
inline constexpr std::int64_t kMinuteNs = 60 * kSecond.value;
inline Instant Start() {
  using namespace std::chrono;
  return Instant{
      duration_cast<nanoseconds>(sys_days{year{2026} / January / 1}.time_since_epoch()).count()};
}
inline Instant Minutes(std::int64_t m) {
  return Start() + Duration{m * kMinuteNs};
}

// The decisions of one method in one phase, in order.
inline std::vector<const DisruptionDecision*> Phase(const Outcome& o, DisruptionMethod method,
                                                    DisruptionPhase phase) {
  std::vector<const DisruptionDecision*> out;
  for (const auto& [at, d] : o.disruptions) {
    if (d.method == method && d.phase == phase) out.push_back(&d);
  }
  return out;
}

// Every disruption decision as a line: seconds since the start, method, phase, reason and
// each candidate's outcome (what a failing test prints).
inline std::string Outcomes(const Outcome& o) {
  std::string text;
  for (const auto& [at, d] : o.disruptions) {
    text += std::to_string((at.value - Start().value) / kSecond.value) + "s " + Name(d.method) +
            " " + Name(d.phase) + " [" + d.reason + "]";
    for (const auto& c : d.candidates) text += " {" + c.nodeclaim + ": " + c.outcome + "}";
    text += "\n";
  }
  return text;
}

// Whether any candidate of any decision of `method` was recorded with `text` in its outcome.
inline bool Recorded(const Outcome& o, DisruptionMethod method, const std::string& text) {
  for (const auto& [at, d] : o.disruptions) {
    if (d.method != method) continue;
    for (const auto& c : d.candidates) {
      if (c.outcome.find(text) != std::string::npos) return true;
    }
  }
  return false;
}

}  // namespace tenon::testing
