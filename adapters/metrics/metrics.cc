// Every metric family with its help text, the series that exist before anything happens, what
// `tenon run`'s loop reports of itself (lanes, ticks, refused writes), and the exposition.
#include "adapters/metrics/metrics.h"

#include <prometheus/text_serializer.h>

#include <string_view>
#include <utility>
#include <variant>

#include "adapters/metrics/metrics_parts.h"
#include "log/codec.h"
#include "reducers/disruption/methods.h"

namespace tenon::metrics {

using namespace parts;

namespace {

// Ticks are folded about once a second (--tick): fine steps around it, coarse ones for a stall.
const std::vector<double> kTickBuckets = {0.25, 0.5, 0.9, 0.95, 1.0, 1.01, 1.025, 1.05, 1.1,
                                          1.25, 1.5, 2.0, 3.0,  5.0, 10,   30,    60,   120};

// Calls f with each alternative of the variant V, default-constructed, in order.
template <class V, class F, std::size_t... I>
void EachAlternative(F&& f, std::index_sequence<I...>) {
  (f(V(std::in_place_index<I>)), ...);
}
template <class V, class F>
void EachAlternative(F&& f) {
  EachAlternative<V>(f, std::make_index_sequence<std::variant_size_v<V>>{});
}

}  // namespace

Metrics::Families::Families(prometheus::Registry& r)
    : nodeclaims_created(prometheus::BuildCounter()
                             .Name("karpenter_nodeclaims_created_total")
                             .Help("Number of nodeclaims created in total. Labeled by reason "
                                   "(provisioned or the disruption reason), nodepool and "
                                   "min_values_relaxed.")
                             .Register(r)),
      nodeclaims_terminated(prometheus::BuildCounter()
                                .Name("karpenter_nodeclaims_terminated_total")
                                .Help("Number of nodeclaims terminated (finalizer removed) in "
                                      "total. Labeled by nodepool, capacity_type and zone.")
                                .Register(r)),
      nodeclaims_disrupted(prometheus::BuildCounter()
                               .Name("karpenter_nodeclaims_disrupted_total")
                               .Help("Number of nodeclaims disrupted in total. Labeled by "
                                     "reason, nodepool and capacity_type.")
                               .Register(r)),
      nodes_created(prometheus::BuildCounter()
                        .Name("karpenter_nodes_created_total")
                        .Help("Number of nodes created (registered) in total. Labeled by "
                              "nodepool and zone.")
                        .Register(r)),
      nodes_terminated(prometheus::BuildCounter()
                           .Name("karpenter_nodes_terminated_total")
                           .Help("Number of nodes terminated in total. Labeled by nodepool "
                                 "and zone.")
                           .Register(r)),
      nodes_allocatable(prometheus::BuildGauge()
                            .Name("karpenter_nodes_allocatable")
                            .Help("Node allocatable are the resources allocatable by nodes.")
                            .Register(r)),
      nodes_pod_requests(prometheus::BuildGauge()
                             .Name("karpenter_nodes_total_pod_requests")
                             .Help("Node total pod requests are the resources requested by "
                                   "pods bound to nodes, including the DaemonSet pods.")
                             .Register(r)),
      nodes_daemon_requests(prometheus::BuildGauge()
                                .Name("karpenter_nodes_total_daemon_requests")
                                .Help("Node total daemon requests are the resources requested "
                                      "by DaemonSet pods bound to nodes.")
                                .Register(r)),
      nodepools_usage(prometheus::BuildGauge()
                          .Name("karpenter_nodepools_usage")
                          .Help("The amount of resources that have been provisioned for a "
                                "nodepool. Labeled by nodepool name and resource type.")
                          .Register(r)),
      nodepools_limit(prometheus::BuildGauge()
                          .Name("karpenter_nodepools_limit")
                          .Help("Limits specified on the nodepool that restrict the quantity "
                                "of resources provisioned. Labeled by nodepool name and "
                                "resource type.")
                          .Register(r)),
      allowed_disruptions(prometheus::BuildGauge()
                              .Name("karpenter_nodepools_allowed_disruptions")
                              .Help("The number of nodes for a given NodePool that can be "
                                    "concurrently disrupting, as the last disruption pass "
                                    "computed it. Labeled by nodepool and reason.")
                              .Register(r)),
      disruption_decisions(prometheus::BuildCounter()
                               .Name("karpenter_voluntary_disruption_decisions_total")
                               .Help("Number of disruption decisions performed. Labeled by "
                                     "decision, reason and consolidation type.")
                               .Register(r)),
      eligible_nodes(prometheus::BuildGauge()
                         .Name("karpenter_voluntary_disruption_eligible_nodes")
                         .Help("Number of candidates the last disruption pass of a method "
                               "evaluated. Labeled by disruption reason.")
                         .Register(r)),
      evaluation_duration(
          prometheus::BuildHistogram()
              .Name("karpenter_voluntary_disruption_decision_evaluation_duration_seconds")
              .Help("Duration of the fold that ran a disruption pass (the pass dominates it). "
                    "Labeled by reason and consolidation type.")
              .Register(r)),
      consolidation_score(prometheus::BuildHistogram()
                              .Name("karpenter_consolidation_score")
                              .Help("Score of balanced consolidation moves. Labeled by "
                                    "decision, NodePool, and policy.")
                              .Register(r)),
      consolidation_moves(prometheus::BuildCounter()
                              .Name("karpenter_consolidation_moves_total")
                              .Help("Number of balanced consolidation moves. Labeled by "
                                    "decision, NodePool, and policy.")
                              .Register(r)),
      unhealthy_disrupted(prometheus::BuildCounter()
                              .Name("karpenter_nodeclaims_unhealthy_disrupted_total")
                              .Help("Number of nodeclaims deleted by node repair. Labeled by "
                                    "condition, nodepool, capacity_type and image_id.")
                              .Register(r)),
      scheduling_duration(prometheus::BuildHistogram()
                              .Name("karpenter_scheduler_scheduling_duration_seconds")
                              .Help("Duration of the fold that ran a provisioning scheduling "
                                    "simulation (the simulation dominates it).")
                              .Register(r)),
      unschedulable_pods(prometheus::BuildGauge()
                             .Name("karpenter_scheduler_unschedulable_pods_count")
                             .Help("The number of unschedulable Pods.")
                             .Register(r)),
      interruption_received(prometheus::BuildCounter()
                                .Name("karpenter_interruption_received_messages_total")
                                .Help("Count of messages received from the SQS queue. Broken "
                                      "down by message type.")
                                .Register(r)),
      interruption_deleted(prometheus::BuildCounter()
                               .Name("karpenter_interruption_deleted_messages_total")
                               .Help("Count of messages deleted from the SQS queue.")
                               .Register(r)),
      cloud_duration(prometheus::BuildHistogram()
                         .Name("karpenter_cloudprovider_duration_seconds")
                         .Help("Duration of cloud provider method calls. Labeled by the "
                               "controller, method name and provider.")
                         .Register(r)),
      cloud_errors(prometheus::BuildCounter()
                       .Name("karpenter_cloudprovider_errors_total")
                       .Help("Total number of errors returned from CloudProvider calls.")
                       .Register(r)),
      cluster_nodes(prometheus::BuildGauge()
                        .Name("karpenter_cluster_state_node_count")
                        .Help("Current count of nodes in cluster state")
                        .Register(r)),
      cluster_synced(prometheus::BuildGauge()
                         .Name("karpenter_cluster_state_synced")
                         .Help("Returns 1 if cluster state is synced and 0 otherwise.")
                         .Register(r)),
      pods(prometheus::BuildGauge()
               .Name("tenon_pods")
               .Help("Pods in the core's state by state: bound, pending, unschedulable, "
                     "finished (Karpenter's per-pod karpenter_pods_state is not exported).")
               .Register(r)),
      log_append(prometheus::BuildHistogram()
                     .Name("tenon_log_append_duration_seconds")
                     .Help("Duration of one batched append to the log.")
                     .Register(r)),
      log_bytes(prometheus::BuildCounter()
                    .Name("tenon_log_bytes_total")
                    .Help("Bytes of records appended to the log.")
                    .Register(r)),
      log_records(prometheus::BuildCounter()
                      .Name("tenon_log_records_total")
                      .Help("Records (events and outputs) appended to the log.")
                      .Register(r)),
      log_sequence(prometheus::BuildGauge()
                       .Name("tenon_log_sequence")
                       .Help("The highest sequence number the log has acknowledged.")
                       .Register(r)),
      snapshot_age(prometheus::BuildGauge()
                       .Name("tenon_log_snapshot_age_seconds")
                       .Help("Cluster time (Tick) since the newest snapshot this process "
                             "wrote; -1 before the first.")
                       .Register(r)),
      snapshot_sequence(prometheus::BuildGauge()
                            .Name("tenon_log_snapshot_sequence")
                            .Help("Sequence number of the newest snapshot this process wrote.")
                            .Register(r)),
      events(prometheus::BuildCounter()
                 .Name("tenon_events_total")
                 .Help("Events folded by the core (also during recovery), by kind.")
                 .Register(r)),
      commands(prometheus::BuildCounter()
                   .Name("tenon_commands_total")
                   .Help("Commands executed, by kind and result (succeeded, failed, none: the "
                         "result comes later or through another adapter).")
                   .Register(r)),
      decisions(prometheus::BuildCounter()
                    .Name("tenon_decisions_total")
                    .Help("Decisions recorded, by kind (provisioning, lifecycle, disruption).")
                    .Register(r)),
      kube_write_failures(prometheus::BuildCounter()
                              .Name("tenon_kube_write_failures_total")
                              .Help("Writes the Kubernetes API server refused (each also logged "
                                    "as a warning with its HTTP status and message).")
                              .Register(r)),
      lane_depth(prometheus::BuildGauge()
                     .Name("tenon_lane_queue_depth")
                     .Help("Commands handed to a command lane (aws, kube) and not finished, "
                           "plus those parked on the fold thread while its queue is full.")
                     .Register(r)),
      lane_oldest(prometheus::BuildGauge()
                      .Name("tenon_lane_oldest_command_age_seconds")
                      .Help("Age of the oldest unfinished command of a command lane, from "
                            "its issue; 0 when the lane is idle.")
                      .Register(r)),
      lane_stuck(prometheus::BuildGauge()
                     .Name("tenon_lane_stuck")
                     .Help("1 while a command lane is stuck: its oldest command is past the "
                           "lane's deadline or its queue is full; 0 otherwise.")
                     .Register(r)),
      tick_interval(prometheus::BuildHistogram()
                        .Name("tenon_tick_interval_seconds")
                        .Help("Wall time between two clock ticks folded by `tenon run`'s loop "
                              "(--tick apart when the loop keeps up).")
                        .Register(r)),
      node_gauges({&nodes_allocatable, &nodes_pod_requests, &nodes_daemon_requests}),
      pool_gauges{GaugeSet(nodepools_usage), GaugeSet(nodepools_limit)} {}

Metrics::Metrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(registry ? std::move(registry) : std::make_shared<prometheus::Registry>()),
      f_(std::make_unique<Families>(*registry_)) {
  // Series that dashboards expect to exist before anything happens.
  f_->log_sequence.Add({}).Set(0);
  f_->snapshot_age.Add({}).Set(-1);
  f_->cluster_synced.Add({}).Set(0);
  // Every counter series whose labels are known before anything happens starts at 0, so that
  // rate() and increase() count its first increment. Counters labeled by a NodePool, zone or
  // capacity type get their series with their first increment.
  f_->interruption_deleted.Add({});
  f_->kube_write_failures.Add({});
  f_->log_bytes.Add({});
  f_->log_records.Add({});
  EachAlternative<Event>([&](const Event& e) { f_->events.Add({{"kind", log::EventKind(e)}}); });
  EachAlternative<CommandBody>([&](CommandBody body) {
    Command command;
    command.body = std::move(body);
    for (const char* result : {"succeeded", "failed"}) {
      f_->commands.Add({{"kind", log::CommandKind(command)}, {"result", result}});
    }
  });
  for (const char* kind : kDecisionKinds) f_->decisions.Add({{"kind", kind}});
  for (InterruptionKind kind :
       {InterruptionKind::kSpotInterruption, InterruptionKind::kRebalanceRecommendation,
        InterruptionKind::kScheduledChange, InterruptionKind::kStateChange}) {
    f_->interruption_received.Add({{kMessageType, MessageType(kind)}});
  }
  // The voluntary (graceful) methods; those that only ever delete (emptiness) never replace.
  for (const DisruptionMethodInfo& method : DisruptionMethods()) {
    if (!method.graceful()) continue;
    for (const char* decision : {"delete", "replace"}) {
      if (!method.replaces && std::string_view(decision) == "replace") continue;
      f_->disruption_decisions.Add({{kDecision, decision},
                                    {kReason, DisruptionReasonLabel(method.method)},
                                    {kConsolidationType, method.consolidation_type}});
    }
  }
  for (const auto& [controller, method] :
       {std::pair{"nodeclaim.lifecycle", "Create"}, std::pair{"nodeclaim.termination", "Delete"},
        std::pair{"interruption", "DeleteMessage"}}) {
    for (const char* error : {"InsufficientCapacityError", "NodeClaimNotFoundError", ""}) {
      f_->cloud_errors.Add(
          {{kController, controller}, {kMethod, method}, {kProvider, "aws"}, {kError, error}});
    }
  }
}

void Metrics::KubeWriteFailed() {
  f_->kube_write_failures.Add({}).Increment();
}

void Metrics::ObserveLanes(const std::vector<runtime::LaneStatus>& lanes) {
  for (const runtime::LaneStatus& lane : lanes) {
    const prometheus::Labels labels = {{"lane", lane.name}};
    f_->lane_depth.Add(labels).Set(static_cast<double>(lane.queued + lane.parked));
    f_->lane_oldest.Add(labels).Set(Seconds(lane.oldest));
    f_->lane_stuck.Add(labels).Set(lane.stuck() ? 1 : 0);
  }
}

void Metrics::ObserveTickInterval(std::chrono::nanoseconds interval) {
  f_->tick_interval.Add({}, kTickBuckets).Observe(Seconds(interval));
}

Metrics::~Metrics() = default;

std::shared_ptr<prometheus::Registry> Metrics::registry() const {
  return registry_;
}

std::string Metrics::Serialize() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace tenon::metrics
