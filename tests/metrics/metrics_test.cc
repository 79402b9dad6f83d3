// Metrics: the counters agree with what the log recorded, the log metrics move, the gauges
// match the state, and label sets of things gone are removed.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "adapters/metrics/metrics.h"
#include "tests/metrics/demo_run.h"
#include "tests/metrics/prom_text.h"

namespace tenon {
namespace {

using testing::Demo;
using testing::Sum;

// What the demo's log holds, counted independently of the metrics.
struct LogCounts {
  std::uint64_t events = 0;
  std::uint64_t commands = 0;
  std::map<std::string, std::uint64_t> commands_by_kind;
  std::map<std::string, std::uint64_t> created_by_pool;
  std::uint64_t decisions = 0;
  std::uint64_t registered = 0;
  std::uint64_t finalized = 0;
  std::uint64_t disrupted = 0;
  std::uint64_t interruptions = 0;
  std::uint64_t ticks = 0;
};

LogCounts CountLog(const log::EventLog& log) {
  LogCounts c;
  log.Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    auto entry = log::DecodeEntry(r.payload);
    if (const auto* e = std::get_if<Event>(&entry)) {
      ++c.events;
      c.interruptions += std::holds_alternative<InterruptionReceived>(*e) ? 1 : 0;
      c.ticks += std::holds_alternative<Tick>(*e) ? 1 : 0;
      return true;
    }
    for (const Command& command : std::get<log::OutputRecord>(entry).commands) {
      ++c.commands;
      ++c.commands_by_kind[log::CommandKind(command)];
      if (const auto* create = std::get_if<CreateNodeClaim>(&command.body)) {
        ++c.created_by_pool[create->claim.nodepool];
      }
    }
    return true;
  });
  log.ScanDecisions(1, [&](const log::DecisionRecord& r) {
    Decision d = log::DecodeDecision(r.payload);
    ++c.decisions;
    if (const auto* l = std::get_if<LifecycleDecision>(&d.body)) {
      c.registered += l->transition == Transition::kRegistered ? 1 : 0;
      c.finalized += l->transition == Transition::kFinalized ? 1 : 0;
    }
    if (const auto* x = std::get_if<DisruptionDecision>(&d.body)) {
      if (x->phase == DisruptionPhase::kExecuted || x->phase == DisruptionPhase::kReplacing)
        c.disrupted += x->nodeclaims.size();
    }
    return true;
  });
  return c;
}

// The Karpenter counters equal the commands and decisions the log holds for the demo.
TEST(Metrics, KarpenterCountersAgreeWithTheLog) {
  const auto& run = Demo();
  const std::string text = run.metrics.Serialize();
  const LogCounts log = CountLog(*run.log);
  ASSERT_GT(log.created_by_pool.size(), 0u);
  std::uint64_t created = 0;
  for (const auto& [pool, n] : log.created_by_pool) {
    EXPECT_EQ(Sum(text, "karpenter_nodeclaims_created_total", {{"nodepool", pool}}), n) << pool;
    created += n;
  }
  EXPECT_EQ(Sum(text, "karpenter_nodeclaims_created_total"), created);
  EXPECT_GT(log.registered, 0u);
  EXPECT_EQ(Sum(text, "karpenter_nodes_created_total"), log.registered);
  EXPECT_GT(log.finalized, 0u);  // The demo shrinks: claims are terminated.
  EXPECT_EQ(Sum(text, "karpenter_nodeclaims_terminated_total"), log.finalized);
  EXPECT_GT(log.disrupted, 0u);
  EXPECT_EQ(Sum(text, "karpenter_nodeclaims_disrupted_total"), log.disrupted);
  EXPECT_GT(Sum(text, "karpenter_voluntary_disruption_decisions_total"), 0);
  EXPECT_EQ(Sum(text, "karpenter_cloudprovider_duration_seconds_count", {{"method", "Create"}}),
            log.commands_by_kind.at("LaunchInstance"));
  EXPECT_GT(Sum(text, "karpenter_scheduler_scheduling_duration_seconds_count",
                {{"controller", "provisioner"}}),
            0);
  EXPECT_EQ(Sum(text, "karpenter_interruption_received_messages_total"),
            static_cast<double>(log.interruptions));
}

// tenon's own counters: every event folded, command executed and decision made is counted,
// and the log metrics match the log.
TEST(Metrics, TenonCountersAgreeWithTheLog) {
  const auto& run = Demo();
  const std::string text = run.metrics.Serialize();
  const LogCounts log = CountLog(*run.log);
  EXPECT_EQ(Sum(text, "tenon_events_total"), log.events);
  EXPECT_GE(log.ticks, 20u * 60u);  // 20 minutes of 1 s ticks.
  EXPECT_EQ(Sum(text, "tenon_events_total", {{"kind", "Tick"}}), log.ticks);
  EXPECT_EQ(Sum(text, "tenon_commands_total"), log.commands);
  for (const auto& [kind, n] : log.commands_by_kind) {
    EXPECT_EQ(Sum(text, "tenon_commands_total", {{"kind", kind}}), n) << kind;
  }
  EXPECT_EQ(Sum(text, "tenon_decisions_total"), log.decisions);
  const double last = static_cast<double>(run.log->LastSeq().value);
  EXPECT_EQ(Sum(text, "tenon_log_sequence"), last);
  EXPECT_EQ(Sum(text, "tenon_log_records_total"), last);  // Every record went through append.
  EXPECT_GT(Sum(text, "tenon_log_bytes_total"), last);
  EXPECT_GT(Sum(text, "tenon_log_append_duration_seconds_count"), 0);
  EXPECT_GT(Sum(text, "tenon_log_snapshot_sequence"), 0);  // 500 events per snapshot.
  EXPECT_GE(Sum(text, "tenon_log_snapshot_age_seconds"), 0);
}

// The gauges describe the final state.
TEST(Metrics, GaugesMatchTheFinalState) {
  const auto& run = Demo();
  const std::string text = run.metrics.Serialize();
  const State& state = run.final_state;
  ASSERT_GT(run.state_rounds, 1000u);
  EXPECT_EQ(Sum(text, "karpenter_cluster_state_node_count"), state.cluster.nodes.size());
  EXPECT_EQ(Sum(text, "karpenter_cluster_state_synced"), 1);
  double cpu = 0;
  for (const auto& [name, node] : state.cluster.nodes) cpu += node.allocatable.cpu.value / 1000.0;
  EXPECT_DOUBLE_EQ(Sum(text, "karpenter_nodes_allocatable", {{"resource_type", "cpu"}}),
                   state.cluster.nodes.empty() ? -1 : cpu);
  std::map<std::string, double> claims;
  for (const auto& [name, claim] : state.lifecycle.nodeclaims) ++claims[claim.nodepool];
  for (const auto& [pool, _] : state.cluster.nodepools) {
    EXPECT_EQ(
        Sum(text, "karpenter_nodepools_usage", {{"nodepool", pool}, {"resource_type", "nodes"}}),
        claims[pool])
        << pool;
  }
  EXPECT_EQ(
      Sum(text, "karpenter_nodepools_limit", {{"nodepool", "general"}, {"resource_type", "cpu"}}),
      200);
  double pods = 0;
  for (const auto& [key, pod] : state.cluster.pods)
    pods += pod.phase == PodPhase::kSucceeded || pod.phase == PodPhase::kFailed ? 0 : 1;
  EXPECT_EQ(Sum(text, "tenon_pods") - Sum(text, "tenon_pods", {{"state", "finished"}}), pods);
}

// A node gone from the state takes its series with it; one still there keeps them.
TEST(Metrics, SeriesOfGoneNodesAreRemoved) {
  metrics::Metrics m;
  State state;
  for (const char* name : {"a", "b"}) {
    Node node;
    node.name = name;
    node.labels.Set(label::kNodePool, "pool");
    node.allocatable.cpu = Millicores(2000);
    node.allocatable.pods = 110;
    state.cluster.nodes[name] = node;
  }
  Pod pod;
  pod.ns = "default";
  pod.name = "p";
  pod.node_name = "a";
  pod.phase = PodPhase::kRunning;
  pod.requests.cpu = Millicores(500);
  state.cluster.pods.Upsert("default/p", pod);
  m.ObserveState(state);
  std::string text = m.Serialize();
  EXPECT_EQ(Sum(text, "karpenter_nodes_allocatable", {{"resource_type", "cpu"}}), 4);
  EXPECT_EQ(Sum(text, "karpenter_nodes_total_pod_requests",
                {{"node_name", "a"}, {"resource_type", "cpu"}}),
            0.5);
  EXPECT_EQ(Sum(text, "tenon_pods", {{"state", "bound"}}), 1);

  state.cluster.nodes.erase("b");
  state.cluster.pods.clear();
  m.ObserveState(state);
  text = m.Serialize();
  EXPECT_EQ(Sum(text, "karpenter_nodes_allocatable", {{"node_name", "b"}}), -1);
  EXPECT_EQ(Sum(text, "karpenter_nodes_allocatable", {{"resource_type", "cpu"}}), 2);
  EXPECT_EQ(Sum(text, "karpenter_nodes_total_pod_requests",
                {{"node_name", "a"}, {"resource_type", "cpu"}}),
            0);
}

// Before anything happens, every counter whose label values are known up front has its series
// at 0, as a Prometheus client registers them, so that rate() and increase() see the first
// increment. Only the counters labeled by a NodePool (with its zone or capacity type) wait for
// their first increment.
TEST(Metrics, CountersStartAtZero) {
  metrics::Metrics m;
  const std::string text = m.Serialize();
  std::set<std::string> counters;  // Every counter family, from its # TYPE line.
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string hash, type, name, kind;
    words >> hash >> type >> name >> kind;
    if (hash == "#" && type == "TYPE" && kind == "counter") counters.insert(name);
  }
  ASSERT_GE(counters.size(), 10u) << text;
  const std::set<std::string> labeled_by_nodepool = {
      "karpenter_nodeclaims_created_total",   "karpenter_nodeclaims_terminated_total",
      "karpenter_nodeclaims_disrupted_total", "karpenter_nodes_created_total",
      "karpenter_nodes_terminated_total",     "karpenter_consolidation_moves_total"};
  const auto samples = testing::ParseSamples(text);
  for (const std::string& family : counters) {
    std::size_t series = 0;
    for (const auto& sample : samples) {
      if (sample.name != family) continue;
      ++series;
      EXPECT_EQ(sample.value, 0) << family;
    }
    if (labeled_by_nodepool.contains(family)) {
      EXPECT_EQ(series, 0u) << family << ": no NodePool is known yet";
    } else {
      EXPECT_GT(series, 0u) << family << " has no series at 0";
    }
  }
  const auto at_zero = [&](const std::string& name,
                           const std::map<std::string, std::string>& labels) {
    for (const auto& sample : samples) {
      if (sample.name == name && sample.labels == labels) return sample.value == 0;
    }
    return false;
  };
  for (const char* name :
       {"tenon_log_bytes_total", "tenon_log_records_total", "tenon_kube_write_failures_total",
        "karpenter_interruption_deleted_messages_total"}) {
    EXPECT_TRUE(at_zero(name, {})) << name;
  }
  // Every event kind, every command kind with both results, every decision kind.
  for (const char* kind : {"Tick", "PodUpserted", "FleetLaunched", "InterruptionReceived",
                           "WatchesStarted", "WatchesSynced", "NodeClaimObserved"}) {
    EXPECT_TRUE(at_zero("tenon_events_total", {{"kind", kind}})) << kind;
  }
  for (const char* kind : {"CreateNodeClaim", "LaunchInstance", "EvictPod", "TerminateInstance",
                           "DeleteQueueMessage"}) {
    for (const char* result : {"succeeded", "failed"}) {
      EXPECT_TRUE(at_zero("tenon_commands_total", {{"kind", kind}, {"result", result}}))
          << kind << " " << result;
    }
  }
  for (const char* kind : {"provisioning", "lifecycle", "disruption"}) {
    EXPECT_TRUE(at_zero("tenon_decisions_total", {{"kind", kind}})) << kind;
  }
  for (const char* type :
       {"spot_interrupted", "rebalance_recommendation", "scheduled_change", "state_change"}) {
    EXPECT_TRUE(at_zero("karpenter_interruption_received_messages_total", {{"message_type", type}}))
        << type;
  }
  const std::string decisions = "karpenter_voluntary_disruption_decisions_total";
  EXPECT_TRUE(at_zero(
      decisions, {{"decision", "delete"}, {"reason", "empty"}, {"consolidation_type", "empty"}}));
  EXPECT_TRUE(at_zero(
      decisions,
      {{"decision", "replace"}, {"reason", "underutilized"}, {"consolidation_type", "single"}}));
  EXPECT_TRUE(at_zero(
      decisions,
      {{"decision", "delete"}, {"reason", "underutilized"}, {"consolidation_type", "multi"}}));
  EXPECT_TRUE(at_zero(
      decisions, {{"decision", "replace"}, {"reason", "drifted"}, {"consolidation_type", ""}}));
  EXPECT_TRUE(at_zero(
      decisions, {{"decision", "replace"}, {"reason", "expired"}, {"consolidation_type", ""}}));
  EXPECT_TRUE(
      at_zero("karpenter_cloudprovider_errors_total", {{"controller", "nodeclaim.lifecycle"},
                                                       {"method", "Create"},
                                                       {"provider", "aws"},
                                                       {"error", "InsufficientCapacityError"}}));
  EXPECT_TRUE(
      at_zero("karpenter_cloudprovider_errors_total", {{"controller", "nodeclaim.termination"},
                                                       {"method", "Delete"},
                                                       {"provider", "aws"},
                                                       {"error", "NodeClaimNotFoundError"}}));
}

// Disruption method names map to Karpenter's reason label values.
// Balanced consolidation's verdicts: a move proposed with its pool's score, and a node held back
// by its pool's score, each counted and observed once with Karpenter's labels.
TEST(Metrics, BalancedScoresAreObserved) {
  metrics::Metrics m;
  DisruptionDecision proposed;
  proposed.method = DisruptionMethod::kSingleNodeConsolidation;
  proposed.phase = DisruptionPhase::kProposed;
  proposed.nodeclaims = {"general-a"};
  proposed.candidates = {
      {"general-a", "general",
       "selected: delete, saving $0.1920/h; NodePool general (Balanced): score 2.81 >= threshold "
       "0.50 (k: 2, savings 12.5% of the NodePool's cost, disruption 4.4% of its disruption "
       "cost); its pods move: default/a-1 -> n2",
       Cause::kNone, ""},
      {"general-b", "general",
       "NodePool general (Balanced): score 0.41 < threshold 0.50 (k: 2, savings 25.0% of the "
       "NodePool's cost, disruption 60.0% of its disruption cost)",
       Cause::kBalancedScore, ""}};
  Output out;
  out.decisions.push_back({DecisionId{1}, Seq{1}, Instant{0}, proposed});
  m.OnOutput(Seq{1}, out);
  const auto samples = testing::ParseSamples(m.Serialize());
  auto value = [&](const std::string& name, const std::string& decision) {
    for (const auto& sample : samples) {
      if (sample.name == name && sample.labels.at("decision") == decision &&
          sample.labels.at("nodepool") == "general" && sample.labels.at("policy") == "Balanced") {
        return sample.value;
      }
    }
    return -1.0;
  };
  EXPECT_EQ(value("karpenter_consolidation_moves_total", "approved"), 1);
  EXPECT_EQ(value("karpenter_consolidation_moves_total", "rejected"), 1);
  EXPECT_DOUBLE_EQ(value("karpenter_consolidation_score_sum", "approved"), 2.81);
  EXPECT_DOUBLE_EQ(value("karpenter_consolidation_score_sum", "rejected"), 0.41);
  EXPECT_EQ(value("karpenter_consolidation_score_count", "rejected"), 1);
}

TEST(Metrics, DisruptionReasonLabels) {
  EXPECT_EQ(metrics::DisruptionReasonLabel(DisruptionMethod::kEmptiness), "empty");
  EXPECT_EQ(metrics::DisruptionReasonLabel(DisruptionMethod::kSingleNodeConsolidation),
            "underutilized");
  EXPECT_EQ(metrics::DisruptionReasonLabel(DisruptionMethod::kMultiNodeConsolidation),
            "underutilized");
  EXPECT_EQ(metrics::DisruptionReasonLabel(DisruptionMethod::kDrift), "drifted");
  EXPECT_EQ(metrics::DisruptionReasonLabel(DisruptionMethod::kExpiration), "expired");
}

}  // namespace
}  // namespace tenon
