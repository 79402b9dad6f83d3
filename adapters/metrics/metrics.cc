#include "adapters/metrics/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cctype>
#include <functional>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>

#include "log/codec.h"
#include "reducers/disruption/methods.h"

namespace tenon::metrics {
namespace {

using prometheus::Labels;

// Karpenter's label names (sigs.k8s.io/karpenter pkg/metrics and its controllers).
constexpr const char* kNodePool = "nodepool";
constexpr const char* kReason = "reason";
constexpr const char* kResourceType = "resource_type";
constexpr const char* kCapacityType = "capacity_type";
constexpr const char* kZone = "zone";
constexpr const char* kMinValuesRelaxed = "min_values_relaxed";
constexpr const char* kNodeName = "node_name";
constexpr const char* kController = "controller";
constexpr const char* kMethod = "method";
constexpr const char* kProvider = "provider";
constexpr const char* kError = "error";
constexpr const char* kDecision = "decision";
constexpr const char* kConsolidationType = "consolidation_type";
constexpr const char* kMessageType = "message_type";

// Karpenter's DurationBuckets: controller-runtime's plus larger values for singletons.
const std::vector<double> kDurationBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
    0.8,   0.9,  1.0,   1.25, 1.5, 1.75, 2.0, 2.5,  3.0, 3.5,  4.0, 4.5,  5,   6,   7,
    8,     9,    10,    15,   20,  25,   30,  40,   50,  60,   120, 150,  300, 450, 600};
// Ticks are folded about once a second (--tick): fine steps around it, coarse ones for a stall.
const std::vector<double> kTickBuckets = {0.25, 0.5, 0.9, 0.95, 1.0, 1.01, 1.025, 1.05, 1.1,
                                          1.25, 1.5, 2.0, 3.0,  5.0, 10,   30,    60,   120};
// Log appends are fast: microseconds to tens of milliseconds with fsync.
const std::vector<double> kAppendBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                            0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1.0};

double Seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

// A gauge family whose series come and go with the cluster: each ObserveState sets what exists
// now, then Sweep removes the series not set since the last sweep. Series are found by a
// caller-built key (cheap to compare); their labels are built only when a series is new.
class GaugeSet {
 public:
  explicit GaugeSet(prometheus::Family<prometheus::Gauge>& family) : family_(family) {}
  template <class MakeLabels>
  void Set(const std::string& key, MakeLabels&& make_labels, double value) {
    auto [it, fresh] = live_.try_emplace(key);
    if (fresh) it->second.gauge = &family_.Add(make_labels());
    it->second.gauge->Set(value);
    it->second.round = round_;
  }
  void Set(const Labels& labels, double value) {
    std::string key;
    for (const auto& [k, v] : labels) key += k + '\0' + v + '\0';
    Set(
        key, [&] { return labels; }, value);
  }
  void Sweep() {
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second.round == round_) {
        ++it;
        continue;
      }
      family_.Remove(it->second.gauge);
      it = live_.erase(it);
    }
    ++round_;
  }

 private:
  struct Entry {
    prometheus::Gauge* gauge = nullptr;
    std::uint64_t round = 0;
  };
  prometheus::Family<prometheus::Gauge>& family_;
  // Only looked up and swept, never iterated into an output: the order does not matter.
  std::unordered_map<std::string, Entry> live_;
  std::uint64_t round_ = 1;
};

// The per-node gauge families (allocatable, pod requests, daemon requests): one entry per
// node, found by one lookup per ObserveState, holding that node's series in each family. At
// 5,000 nodes this keeps a call to a few milliseconds beside the pass over pods.
class NodeGauges {
 public:
  static constexpr int kFamilies = 3;
  explicit NodeGauges(std::array<prometheus::Family<prometheus::Gauge>*, kFamilies> families)
      : families_(families) {}

  // The series of one node, created on first sight; `base` holds its labels but resource_type.
  struct Node {
    struct Series {
      std::string resource;
      prometheus::Gauge* gauge = nullptr;
      std::uint64_t round = 0;
    };
    std::vector<Series> series[kFamilies];
    std::uint64_t round = 0;
    Labels base;
  };
  Node& Find(const std::string& key, const std::function<Labels()>& make_base) {
    auto [it, fresh] = nodes_.try_emplace(key);
    if (fresh) it->second.base = make_base();
    it->second.round = round_;
    return it->second;
  }
  void Set(Node& node, int family, const std::string& resource, double value) {
    auto& list = node.series[family];
    auto it = std::find_if(list.begin(), list.end(),
                           [&](const Node::Series& s) { return s.resource == resource; });
    if (it == list.end()) {
      Labels labels = node.base;
      labels["resource_type"] = resource;
      list.push_back({resource, &families_[family]->Add(labels), 0});
      it = list.end() - 1;
    }
    it->gauge->Set(value);
    it->round = round_;
  }
  // Removes the series of nodes gone, and of resources a node no longer has.
  void Sweep() {
    for (auto it = nodes_.begin(); it != nodes_.end();) {
      for (int f = 0; f < kFamilies; ++f) {
        std::erase_if(it->second.series[f], [&](const Node::Series& s) {
          if (s.round == round_) return false;
          families_[f]->Remove(s.gauge);
          return true;
        });
      }
      it = it->second.round == round_ ? std::next(it) : nodes_.erase(it);
    }
    ++round_;
  }

 private:
  std::array<prometheus::Family<prometheus::Gauge>*, kFamilies> families_;
  // Only looked up and swept, never iterated into an output: the order does not matter.
  std::unordered_map<std::string, Node> nodes_;
  std::uint64_t round_ = 1;
};

// Calls f(resource_type, value) for every resource of `r` under Karpenter's resource_type
// names: cpu in cores, memory in bytes, pods, then extended resources by name.
template <class F>
void ForEachResource(const Resources& r, F&& f) {
  f("cpu", static_cast<double>(r.cpu.value) / 1000.0);
  f("memory", static_cast<double>(r.memory.value));
  f("pods", static_cast<double>(r.pods));
  for (const auto& [name, value] : r.extended) f(name, static_cast<double>(value));
}

// into += r, without the temporaries of operator+ (this runs once per pod).
void AddTo(Resources& into, const Resources& r) {
  into.cpu += r.cpu;
  into.memory += r.memory;
  into.pods += r.pods;
  for (const auto& [name, value] : r.extended) into.extended[name] += value;
}

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Karpenter's consolidation_type label: empty, single, multi; "" for the other methods.
std::string ConsolidationType(DisruptionMethod method) {
  return MethodInfo(method).consolidation_type;
}

// Karpenter AWS's interruption message kinds, the message_type label.
std::string MessageType(InterruptionKind kind) {
  switch (kind) {
    case InterruptionKind::kSpotInterruption:
      return "spot_interrupted";
    case InterruptionKind::kRebalanceRecommendation:
      return "rebalance_recommendation";
    case InterruptionKind::kScheduledChange:
      return "scheduled_change";
    case InterruptionKind::kStateChange:
      return "state_change";
  }
  return "unknown";
}

// What a command's results say about it: the runtime hands back the events it returned.
std::string CommandResult(CommandId id, const std::vector<Event>& results) {
  for (const Event& e : results) {
    if (const auto* ok = std::get_if<CommandSucceeded>(&e); ok && ok->command == id) {
      return "succeeded";
    }
    if (const auto* ok = std::get_if<FleetLaunched>(&e); ok && ok->command == id) {
      return "succeeded";
    }
    if (const auto* bad = std::get_if<CommandFailed>(&e); bad && bad->command == id) {
      return "failed";
    }
    if (const auto* bad = std::get_if<FleetFailed>(&e); bad && bad->command == id) {
      return "failed";
    }
  }
  return "none";  // The result comes later through another adapter, or never.
}

// Karpenter's error label values for cloud provider calls; "" is its "unknown" value.
std::string CloudErrorLabel(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInsufficientCapacity:
      return "InsufficientCapacityError";
    case ErrorCode::kNotFound:
      return "NodeClaimNotFoundError";
    case ErrorCode::kThrottled:
    case ErrorCode::kUnauthorized:
    case ErrorCode::kInvalid:
    case ErrorCode::kTransient:
    case ErrorCode::kDisruptionBudget:
      return "";
  }
  return "";
}

// Calls f with each alternative of the variant V, default-constructed, in order.
template <class V, class F, std::size_t... I>
void EachAlternative(F&& f, std::index_sequence<I...>) {
  (f(V(std::in_place_index<I>)), ...);
}
template <class V, class F>
void EachAlternative(F&& f) {
  EachAlternative<V>(f, std::make_index_sequence<std::variant_size_v<V>>{});
}

constexpr const char* kDecisionKinds[] = {"provisioning", "lifecycle", "disruption"};
static_assert(std::size(kDecisionKinds) == std::variant_size_v<DecisionBody>);

}  // namespace

std::string DisruptionReasonLabel(DisruptionMethod method) {
  return Lower(MethodInfo(method).reason);
}

struct Metrics::Families {
  explicit Families(prometheus::Registry& r)
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

  prometheus::Family<prometheus::Counter>& nodeclaims_created;
  prometheus::Family<prometheus::Counter>& nodeclaims_terminated;
  prometheus::Family<prometheus::Counter>& nodeclaims_disrupted;
  prometheus::Family<prometheus::Counter>& nodes_created;
  prometheus::Family<prometheus::Counter>& nodes_terminated;
  prometheus::Family<prometheus::Gauge>& nodes_allocatable;
  prometheus::Family<prometheus::Gauge>& nodes_pod_requests;
  prometheus::Family<prometheus::Gauge>& nodes_daemon_requests;
  prometheus::Family<prometheus::Gauge>& nodepools_usage;
  prometheus::Family<prometheus::Gauge>& nodepools_limit;
  prometheus::Family<prometheus::Gauge>& allowed_disruptions;
  prometheus::Family<prometheus::Counter>& disruption_decisions;
  prometheus::Family<prometheus::Gauge>& eligible_nodes;
  prometheus::Family<prometheus::Histogram>& evaluation_duration;
  prometheus::Family<prometheus::Histogram>& scheduling_duration;
  prometheus::Family<prometheus::Gauge>& unschedulable_pods;
  prometheus::Family<prometheus::Counter>& interruption_received;
  prometheus::Family<prometheus::Counter>& interruption_deleted;
  prometheus::Family<prometheus::Histogram>& cloud_duration;
  prometheus::Family<prometheus::Counter>& cloud_errors;
  prometheus::Family<prometheus::Gauge>& cluster_nodes;
  prometheus::Family<prometheus::Gauge>& cluster_synced;
  prometheus::Family<prometheus::Gauge>& pods;
  prometheus::Family<prometheus::Histogram>& log_append;
  prometheus::Family<prometheus::Counter>& log_bytes;
  prometheus::Family<prometheus::Counter>& log_records;
  prometheus::Family<prometheus::Gauge>& log_sequence;
  prometheus::Family<prometheus::Gauge>& snapshot_age;
  prometheus::Family<prometheus::Gauge>& snapshot_sequence;
  prometheus::Family<prometheus::Counter>& events;
  prometheus::Family<prometheus::Counter>& commands;
  prometheus::Family<prometheus::Counter>& decisions;
  prometheus::Family<prometheus::Counter>& kube_write_failures;
  prometheus::Family<prometheus::Gauge>& lane_depth;
  prometheus::Family<prometheus::Gauge>& lane_oldest;
  prometheus::Family<prometheus::Gauge>& lane_stuck;
  prometheus::Family<prometheus::Histogram>& tick_interval;
  // allocatable, pod requests, daemon requests; usage, limit.
  NodeGauges node_gauges;
  GaugeSet pool_gauges[2];
};

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

void Metrics::OnAppend(std::size_t records, std::size_t bytes, std::chrono::nanoseconds latency,
                       log::Seq last) {
  f_->log_append.Add({}, kAppendBuckets).Observe(Seconds(latency));
  f_->log_bytes.Add({}).Increment(static_cast<double>(bytes));
  f_->log_records.Add({}).Increment(static_cast<double>(records));
  f_->log_sequence.Add({}).Set(static_cast<double>(last));
}

void Metrics::OnEvent(Seq /*seq*/, const Event& event) {
  f_->events.Add({{"kind", log::EventKind(event)}}).Increment();
  if (const auto* tick = std::get_if<Tick>(&event)) now_ = tick->now;
  if (const auto* launched = std::get_if<FleetLaunched>(&event)) {
    ClaimLabels& claim = claims_[launched->nodeclaim];
    claim.capacity_type = launched->capacity_type;
    claim.zone = launched->zone;
  }
  if (const auto* message = std::get_if<InterruptionReceived>(&event)) {
    f_->interruption_received.Add({{kMessageType, MessageType(message->kind)}}).Increment();
  }
}

void Metrics::OnOutput(Seq /*cause*/, const Output& output) {
  for (const Command& command : output.commands) CountCommand(command, output);
  for (const Decision& decision : output.decisions) CountDecision(decision);
}

void Metrics::CountCommand(const Command& command, const Output& output) {
  const auto* create = std::get_if<CreateNodeClaim>(&command.body);
  if (create == nullptr) return;
  // A claim created in the same output as a disruption's "replacing" decision replaces the
  // disrupted nodes; Karpenter labels those with the disruption reason.
  std::string reason = "provisioned";
  bool planned = false;  // By a provisioning decision of the same output.
  for (const Decision& d : output.decisions) {
    const auto* disruption = std::get_if<DisruptionDecision>(&d.body);
    if (disruption != nullptr && disruption->phase == DisruptionPhase::kReplacing) {
      reason = DisruptionReasonLabel(disruption->method);
    }
    if (const auto* p = std::get_if<ProvisioningDecision>(&d.body)) {
      for (const ClaimPlan& plan : p->new_claims)
        planned = planned || plan.nodeclaim == create->claim.name;
    }
  }
  if (planned) reason = "provisioned";
  claims_[create->claim.name].nodepool = create->claim.nodepool;
  f_->nodeclaims_created
      .Add({{kReason, reason}, {kNodePool, create->claim.nodepool}, {kMinValuesRelaxed, "false"}})
      .Increment();
}

void Metrics::CountDecision(const Decision& decision) {
  f_->decisions.Add({{"kind", kDecisionKinds[decision.body.index()]}}).Increment();
  if (const auto* lifecycle = std::get_if<LifecycleDecision>(&decision.body)) {
    CountLifecycle(*lifecycle);
  }
  if (const auto* disruption = std::get_if<DisruptionDecision>(&decision.body)) {
    CountDisruption(*disruption);
  }
}

void Metrics::CountLifecycle(const LifecycleDecision& lifecycle) {
  if (lifecycle.nodeclaim.empty()) return;  // A leaked instance: no NodeClaim, no NodePool.
  ClaimLabels& claim = claims_[lifecycle.nodeclaim];
  if (!lifecycle.node_name.empty()) claim.node_name = lifecycle.node_name;
  if (lifecycle.transition == Transition::kRegistered) {
    f_->nodes_created.Add({{kNodePool, claim.nodepool}, {kZone, claim.zone}}).Increment();
  }
  if (lifecycle.transition == Transition::kFinalized) {
    f_->nodeclaims_terminated
        .Add({{kNodePool, claim.nodepool},
              {kCapacityType, claim.capacity_type},
              {kZone, claim.zone}})
        .Increment();
    if (!claim.node_name.empty()) {
      f_->nodes_terminated.Add({{kNodePool, claim.nodepool}, {kZone, claim.zone}}).Increment();
    }
    claims_.erase(lifecycle.nodeclaim);
  }
}

void Metrics::CountDisruption(const DisruptionDecision& disruption) {
  const std::string reason = DisruptionReasonLabel(disruption.method);
  for (const BudgetState& budget : disruption.budgets) {
    f_->allowed_disruptions
        .Add({{kNodePool, budget.nodepool},
              {kReason, budget.reason.empty() ? "all" : Lower(budget.reason)}})
        .Set(static_cast<double>(budget.allowed));
  }
  if (disruption.phase == DisruptionPhase::kProposed ||
      disruption.phase == DisruptionPhase::kBlocked) {
    f_->eligible_nodes.Add({{kReason, reason}})
        .Set(static_cast<double>(disruption.candidates.size()));
    return;
  }
  // Replacing and executed start the disruption of their NodeClaims, once each.
  if (disruption.phase != DisruptionPhase::kReplacing &&
      disruption.phase != DisruptionPhase::kExecuted) {
    return;
  }
  if (MethodInfo(disruption.method).graceful()) {
    f_->disruption_decisions
        .Add({{kDecision, disruption.phase == DisruptionPhase::kReplacing ? "replace" : "delete"},
              {kReason, reason},
              {kConsolidationType, ConsolidationType(disruption.method)}})
        .Increment();
  }
  for (const std::string& name : disruption.nodeclaims) {
    const ClaimLabels& claim = claims_[name];
    f_->nodeclaims_disrupted
        .Add({{kReason, reason}, {kNodePool, claim.nodepool}, {kCapacityType, claim.capacity_type}})
        .Increment();
  }
}

void Metrics::OnExecuted(const Command& command, const std::vector<Event>& results,
                         std::chrono::nanoseconds took) {
  const std::string result = CommandResult(command.id, results);
  f_->commands.Add({{"kind", log::CommandKind(command)}, {"result", result}}).Increment();
  if (std::holds_alternative<DeleteQueueMessage>(command.body) && result != "failed") {
    f_->interruption_deleted.Add({}).Increment();
  }
  ObserveCloudProvider(command, results, took);
}

// Karpenter's CloudProvider.Create and Delete are tenon's LaunchInstances and
// TerminateInstance; the interruption queue's DeleteMessage is labeled likewise.
void Metrics::ObserveCloudProvider(const Command& command, const std::vector<Event>& results,
                                   std::chrono::nanoseconds took) {
  std::string controller;
  std::string method;
  if (std::holds_alternative<LaunchInstances>(command.body)) {
    controller = "nodeclaim.lifecycle";
    method = "Create";
  } else if (std::holds_alternative<TerminateInstance>(command.body)) {
    controller = "nodeclaim.termination";
    method = "Delete";
  } else if (std::holds_alternative<DeleteQueueMessage>(command.body)) {
    controller = "interruption";
    method = "DeleteMessage";
  } else {
    return;
  }
  const Labels labels = {{kController, controller}, {kMethod, method}, {kProvider, "aws"}};
  f_->cloud_duration.Add(labels, kDurationBuckets).Observe(Seconds(took));
  for (const Event& e : results) {
    std::optional<std::string> error;
    if (const auto* failed = std::get_if<CommandFailed>(&e);
        failed && failed->command == command.id) {
      error = CloudErrorLabel(failed->code);
    }
    if (const auto* failed = std::get_if<FleetFailed>(&e);
        failed && failed->command == command.id) {
      bool capacity = !failed->errors.empty();
      for (const auto& fe : failed->errors) {
        capacity = capacity && fe.code == ErrorCode::kInsufficientCapacity;
      }
      error = capacity ? "InsufficientCapacityError" : "";
    }
    if (!error) continue;
    Labels with_error = labels;
    with_error[kError] = *error;
    f_->cloud_errors.Add(with_error).Increment();
  }
}

void Metrics::OnSnapshot(log::Seq seq) {
  snapshot_at_ = now_;
  f_->snapshot_sequence.Add({}).Set(static_cast<double>(seq));
}

void Metrics::OnFolded(Seq /*seq*/, const Event& /*event*/, const Output& output,
                       std::chrono::nanoseconds took) {
  bool provisioned = false;
  std::set<DisruptionMethod> passes;  // Methods whose pass ran in this fold.
  for (const Decision& d : output.decisions) {
    provisioned = provisioned || std::holds_alternative<ProvisioningDecision>(d.body);
    const auto* disruption = std::get_if<DisruptionDecision>(&d.body);
    if (disruption != nullptr && (disruption->phase == DisruptionPhase::kProposed ||
                                  disruption->phase == DisruptionPhase::kBlocked)) {
      passes.insert(disruption->method);
    }
  }
  if (provisioned) {
    f_->scheduling_duration.Add({{kController, "provisioner"}}, kDurationBuckets)
        .Observe(Seconds(took));
  }
  for (DisruptionMethod method : passes) {
    f_->evaluation_duration
        .Add({{kReason, DisruptionReasonLabel(method)},
              {kConsolidationType, ConsolidationType(method)}},
             kDurationBuckets)
        .Observe(Seconds(took));
  }
}

void Metrics::ObserveState(const State& state) {
  ObservePods(state);
  ObserveNodes(state);
  ObservePools(state);
  f_->cluster_nodes.Add({}).Set(static_cast<double>(state.nodes.size()));
  f_->cluster_synced.Add({}).Set(state.watches_synced ? 1 : 0);
  f_->snapshot_age.Add({}).Set(
      snapshot_at_.value < 0 ? -1.0 : static_cast<double>((state.now - snapshot_at_).value) / 1e9);
}

// One pass over pods: the requests bound to each node (all pods, and DaemonSet pods) and the
// pod counts by state.
void Metrics::ObservePods(const State& state) {
  node_requests_.clear();
  double bound = 0, pending = 0, unschedulable = 0, finished = 0;
  for (const auto& [key, pod] : state.pods) {
    if (pod.phase == PodPhase::kSucceeded || pod.phase == PodPhase::kFailed) {
      ++finished;
      continue;
    }
    if (pod.node_name.empty()) {
      ++(pod.unschedulable ? unschedulable : pending);
      continue;
    }
    ++bound;
    auto& [pods, daemons] = node_requests_[pod.node_name];
    AddTo(pods, pod.requests);
    if (pod.owner_kind == "DaemonSet") AddTo(daemons, pod.requests);
  }
  f_->pods.Add({{"state", "bound"}}).Set(bound);
  f_->pods.Add({{"state", "pending"}}).Set(pending);
  f_->pods.Add({{"state", "unschedulable"}}).Set(unschedulable);
  f_->pods.Add({{"state", "finished"}}).Set(finished);
  f_->unschedulable_pods.Add({{kController, "provisioner"}}).Set(unschedulable);
}

// Per node: Karpenter labels node gauges with the node, its pool and well-known labels.
void Metrics::ObserveNodes(const State& state) {
  static const Resources kNone;
  for (const auto& [name, node] : state.nodes) {
    auto label = [&](const char* key) {
      auto it = node.labels.find(key);
      return it == node.labels.end() ? std::string() : it->second.str();
    };
    const std::string values[] = {label(label::kNodePool),     label(label::kCapacityType),
                                  label(label::kInstanceType), label(label::kZone),
                                  label(label::kArch),         name};
    // The key holds every label value, so a node relabeled gets new series.
    std::string node_key;
    for (const auto& v : values) node_key.append(v).push_back('\0');
    auto& series = f_->node_gauges.Find(node_key, [&] {
      return Labels{{kNodeName, name},          {kNodePool, values[0]},
                    {kCapacityType, values[1]}, {"instance_type", values[2]},
                    {kZone, values[3]},         {"arch", values[4]}};
    });
    auto found = node_requests_.find(name);
    const Resources* resources[] = {&node.allocatable,
                                    found == node_requests_.end() ? &kNone : &found->second.first,
                                    found == node_requests_.end() ? &kNone : &found->second.second};
    for (int i = 0; i < NodeGauges::kFamilies; ++i) {
      ForEachResource(*resources[i], [&](const std::string& resource, double value) {
        f_->node_gauges.Set(series, i, resource, value);
      });
    }
  }
  f_->node_gauges.Sweep();
}

// Per pool: usage as the sum of its claims' allocatable (with a node count), and its limits.
void Metrics::ObservePools(const State& state) {
  std::map<std::string, Resources> usage;
  std::map<std::string, std::int64_t> nodes;
  for (const auto& [name, claim] : state.nodeclaims) {
    AddTo(usage[claim.nodepool], claim.allocatable);
    ++nodes[claim.nodepool];
    // Refresh what counters are labeled with (after a restart the log's early events were not
    // seen by this process).
    ClaimLabels& labels = claims_[name];
    labels.nodepool = claim.nodepool;
    if (!claim.capacity_type.empty()) labels.capacity_type = claim.capacity_type;
    if (!claim.zone.empty()) labels.zone = claim.zone;
    if (!claim.node_name.empty()) labels.node_name = claim.node_name;
  }
  // Claims gone from the state were counted by now (their Finalized decision came first).
  std::erase_if(claims_,
                [&](const auto& entry) { return !state.nodeclaims.contains(entry.first); });
  for (const auto& [name, pool] : state.nodepools) {
    auto set = [&](int i, const std::string& resource, double value) {
      f_->pool_gauges[i].Set({{kNodePool, name}, {kResourceType, resource}}, value);
    };
    ForEachResource(usage[name], [&](const std::string& r, double v) { set(0, r, v); });
    set(0, "nodes", static_cast<double>(nodes[name]));
    const NodePoolLimits& limits = pool.limits;
    if (limits.cpu) set(1, "cpu", static_cast<double>(limits.cpu->value) / 1000.0);
    if (limits.memory) set(1, "memory", static_cast<double>(limits.memory->value));
    if (limits.nodes) set(1, "nodes", static_cast<double>(*limits.nodes));
    for (const auto& [resource, value] : limits.extended) {
      set(1, resource, static_cast<double>(value));
    }
  }
  for (auto& g : f_->pool_gauges) g.Sweep();
}

}  // namespace tenon::metrics
