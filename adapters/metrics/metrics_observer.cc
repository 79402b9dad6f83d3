// Counters and histograms from what the runtime folds, appends and executes: the
// runtime::Observer callbacks.
#include "adapters/metrics/metrics.h"

#include <cctype>
#include <optional>
#include <set>

#include "adapters/metrics/metrics_parts.h"
#include "log/codec.h"
#include "model/scores.h"
#include "reducers/disruption/methods.h"

namespace tenon::metrics {

using namespace parts;

namespace {

// Karpenter's DurationBuckets: controller-runtime's plus larger values for singletons.
const std::vector<double> kDurationBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
    0.8,   0.9,  1.0,   1.25, 1.5, 1.75, 2.0, 2.5,  3.0, 3.5,  4.0, 4.5,  5,   6,   7,
    8,     9,    10,    15,   20,  25,   30,  40,   50,  60,   120, 150,  300, 450, 600};
// Log appends are fast: microseconds to tens of milliseconds with fsync.
const std::vector<double> kAppendBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                            0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1.0};
// Karpenter's buckets for the Balanced consolidation score.
const std::vector<double> kScoreBuckets = {0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0};

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Karpenter's consolidation_type label: empty, single, multi; "" for the other methods.
std::string ConsolidationType(DisruptionMethod method) {
  return MethodInfo(method).consolidation_type;
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

}  // namespace

std::string parts::MessageType(InterruptionKind kind) {
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

std::string DisruptionReasonLabel(DisruptionMethod method) {
  return Lower(MethodInfo(method).reason);
}

void Metrics::OnAppend(std::size_t records, std::size_t bytes, std::chrono::nanoseconds latency,
                       Seq last) {
  f_->log_append.Add({}, kAppendBuckets).Observe(Seconds(latency));
  f_->log_bytes.Add({}).Increment(static_cast<double>(bytes));
  f_->log_records.Add({}).Increment(static_cast<double>(records));
  f_->log_sequence.Add({}).Set(static_cast<double>(last.value));
}

void Metrics::OnEvent(Seq /*seq*/, const Event& event) {
  f_->events.Add({{"kind", log::EventKind(event)}}).Increment();
  if (const auto* tick = std::get_if<Tick>(&event)) now_ = tick->now;
  if (const auto* launched = std::get_if<FleetLaunched>(&event)) {
    ClaimLabels& claim = claims_[launched->nodeclaim];
    claim.capacity_type = launched->capacity_type;
    claim.zone = launched->zone;
    claim.image_id = launched->image_id;
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
  if (lifecycle.transition == Transition::kDeleting && lifecycle.cause == Cause::kUnhealthy) {
    // Karpenter's node repair: reason "unhealthy", and the condition in snake case
    // (AcceleratedHardwareReady: accelerated_hardware_ready), from "unhealthy: Type=Status ...".
    const std::string& why = lifecycle.reason;
    const std::size_t start = why.find(": ");
    const std::size_t end = why.find('=');
    std::string condition;
    if (start != std::string::npos && end != std::string::npos && end > start) {
      for (char c : why.substr(start + 2, end - start - 2)) {
        if (std::isupper(static_cast<unsigned char>(c)) && !condition.empty()) condition += '_';
        condition += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
    }
    f_->nodeclaims_disrupted
        .Add({{kReason, "unhealthy"},
              {kNodePool, claim.nodepool},
              {kCapacityType, claim.capacity_type}})
        .Increment();
    f_->unhealthy_disrupted
        .Add({{"condition", condition},
              {kNodePool, claim.nodepool},
              {kCapacityType, claim.capacity_type},
              {"image_id", claim.image_id}})
        .Increment();
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

// Balanced consolidation's verdicts, from the candidates' outcomes: a move proposed with its
// pools' scores ("NodePool P (Balanced): score S >= ..."), and each node held back by one
// (cause BalancedScore). A group's text is on each of its candidates: each pool is counted once
// a decision.
void Metrics::CountScores(const DisruptionDecision& disruption) {
  std::set<std::string> seen;
  for (const DisruptionCandidate& c : disruption.candidates) {
    const bool held = c.cause == Cause::kBalancedScore;
    if (!held &&
        (disruption.phase != DisruptionPhase::kProposed || !c.outcome.starts_with("selected: "))) {
      continue;
    }
    for (const OutcomeScore& s : ScoresIn(c.outcome)) {
      if (!seen.insert(held ? c.nodeclaim + "/" + s.nodepool : s.nodepool).second) continue;
      const prometheus::Labels labels{{kDecision, held ? "rejected" : "approved"},
                                      {kNodePool, s.nodepool},
                                      {"policy", "Balanced"}};
      f_->consolidation_score.Add(labels, kScoreBuckets).Observe(s.score);
      f_->consolidation_moves.Add(labels).Increment();
    }
  }
}

void Metrics::CountDisruption(const DisruptionDecision& disruption) {
  CountScores(disruption);
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

// Karpenter's CloudProvider.Create and Delete are tenon's LaunchInstance and
// TerminateInstance; the interruption queue's DeleteMessage is labeled likewise.
void Metrics::ObserveCloudProvider(const Command& command, const std::vector<Event>& results,
                                   std::chrono::nanoseconds took) {
  std::string controller;
  std::string method;
  if (std::holds_alternative<LaunchInstance>(command.body)) {
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

void Metrics::OnSnapshot(Seq seq) {
  snapshot_at_ = now_;
  f_->snapshot_sequence.Add({}).Set(static_cast<double>(seq.value));
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

}  // namespace tenon::metrics
