#include "adapters/metrics/logging.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "log/codec.h"
#include "model/timestamp.h"

namespace tenon::metrics {
namespace {

thread_local std::uint64_t current_seq = 0;

// Lists in a decision line are cut after this many items, so a line stays readable.
constexpr std::size_t kListedMax = 5;

const char* LevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    case spdlog::level::err:
      return "error";
    case spdlog::level::critical:  // An error that ends the process.
      return "fatal";
    case spdlog::level::off:
    case spdlog::level::n_levels:
      break;
  }
  return "info";
}

// RFC 3339 in UTC with milliseconds: 2026-01-01T02:00:00.123Z.
std::string Rfc3339(std::chrono::system_clock::time_point time) {
  const auto since = std::chrono::duration_cast<std::chrono::nanoseconds>(time.time_since_epoch());
  return Rfc3339Text(Instant{since.count()}, 3);
}

// Writes each record as one JSON object per line; nlohmann escapes the strings.
class JsonSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit JsonSink(std::ostream& out) : out_(out) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    nlohmann::json line;
    line["level"] = LevelName(msg.level);
    line["time"] = Rfc3339(msg.time);
    line["logger"] = std::string(msg.logger_name.data(), msg.logger_name.size());
    line["message"] = std::string(msg.payload.data(), msg.payload.size());
    if (current_seq != 0) line["seq"] = current_seq;
    // Invalid UTF-8 from outside input is replaced, never a reason to drop the line or throw.
    out_ << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  }
  void flush_() override { out_.flush(); }

 private:
  std::ostream& out_;
};

template <class T>
std::string Listed(const std::vector<T>& items, auto&& text) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < kListedMax; ++i) {
    out += (i ? ", " : "") + text(items[i]);
  }
  if (items.size() > kListedMax) out += ", +" + std::to_string(items.size() - kListedMax) + " more";
  return out;
}

std::string DescribeProvisioning(const ProvisioningDecision& d) {
  std::vector<const PodOutcome*> unplaced;
  for (const auto& p : d.pods) {
    if (p.target.empty()) unplaced.push_back(&p);
  }
  std::string text = "provisioning: " + std::to_string(d.new_claims.size()) +
                     " new NodeClaim(s) [" +
                     Listed(d.new_claims,
                            [](const ClaimPlan& c) {
                              return c.nodeclaim + " in " + c.nodepool + " for " +
                                     std::to_string(c.pods.size()) + " pod(s)";
                            }) +
                     "], " + std::to_string(d.pods.size() - unplaced.size()) + " pod(s) placed";
  if (!unplaced.empty()) {
    text += ", " + std::to_string(unplaced.size()) + " unschedulable [" +
            Listed(unplaced, [](const PodOutcome* p) { return p->pod + ": " + p->reason; }) + "]";
  }
  return text;
}

// What a command acts on, for its log line.
std::string CommandTarget(const Command& command) {
  return std::visit(
      [](const auto& c) -> std::string {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, CreateNodeClaim>) {
          return "nodeclaim " + c.claim.name + " in " + c.claim.nodepool;
        } else if constexpr (std::is_same_v<T, DeleteNodeClaim>) {
          return "nodeclaim " + c.name;
        } else if constexpr (std::is_same_v<T, LaunchInstance>) {
          return "nodeclaim " + c.nodeclaim + ", " + std::to_string(c.overrides.size()) +
                 " override(s)";
        } else if constexpr (std::is_same_v<T, PatchNode>) {
          return "node " + c.node_name;
        } else if constexpr (std::is_same_v<T, EvictPod> || std::is_same_v<T, DeletePod>) {
          return "pod " + c.ns + "/" + c.name + " of nodeclaim " + c.nodeclaim;
        } else if constexpr (std::is_same_v<T, TerminateInstance>) {
          return "instance " + c.instance_id + " of nodeclaim " + c.nodeclaim;
        } else if constexpr (std::is_same_v<T, RemoveFinalizer>) {
          return "nodeclaim " + c.nodeclaim;
        } else if constexpr (std::is_same_v<T, PatchNodePoolStatus>) {
          return "nodepool " + c.nodepool;
        } else if constexpr (std::is_same_v<T, PatchNodeClaimStatus>) {
          return "nodeclaim " + c.nodeclaim + " " + c.condition + "=" +
                 (c.status ? "True" : "False");
        } else if constexpr (std::is_same_v<T, TagInstance>) {
          return "instance " + c.instance_id + " of nodeclaim " + c.nodeclaim;
        } else if constexpr (std::is_same_v<T, PatchPodDeletionCost>) {
          return "pod " + c.ns + "/" + c.name + " pod-deletion-cost " +
                 (c.cost ? std::to_string(*c.cost) : std::string("removed"));
        } else if constexpr (std::is_same_v<T, PatchNodeOverlayStatus>) {
          return "nodeoverlay " + c.overlay + " " +
                 (c.status.valid ? "ValidationSucceeded" : "not valid: " + c.status.reason);
        } else if constexpr (std::is_same_v<T, PatchNodeClassStatus>) {
          return "ec2nodeclass " + c.nodeclass + " " +
                 (c.resolution.reason.empty() ? "Ready" : "not Ready: " + c.resolution.reason);
        } else if constexpr (std::is_same_v<T, SetNodeClassFinalizer>) {
          return "ec2nodeclass " + c.nodeclass + (c.present ? " + " : " - ") +
                 label::kNodeClassFinalizer;
        } else if constexpr (std::is_same_v<T, EnsureInstanceProfile>) {
          return "ec2nodeclass " + c.nodeclass + " role " + c.role;
        } else if constexpr (std::is_same_v<T, DeleteNodeClassResources>) {
          return "ec2nodeclass " + c.nodeclass +
                 (c.instance_profile ? ": launch templates, instance profile"
                                     : ": launch templates");
        } else if constexpr (std::is_same_v<T, RecordKubeEvent>) {
          return c.object.kind + " " + c.object.name + " " + c.reason + ": " + c.message;
        } else {
          static_assert(std::is_same_v<T, DeleteQueueMessage>);
          return "message " + c.message_id;
        }
      },
      command.body);
}

}  // namespace

spdlog::level::level_enum ParseLogLevel(const std::string& level) {
  if (level == "debug") return spdlog::level::debug;
  if (level == "info") return spdlog::level::info;
  if (level == "warn") return spdlog::level::warn;
  if (level == "error") return spdlog::level::err;
  throw std::invalid_argument("LOG_LEVEL: '" + level + "' is not one of debug, info, warn, error");
}

void ConfigureLogging(const std::string& level, bool json, std::ostream* out) {
  const auto parsed = ParseLogLevel(level);  // Throws before anything changes.
  spdlog::sink_ptr sink;
  if (json) {
    sink = std::make_shared<JsonSink>(out != nullptr ? *out : std::cerr);
  } else if (out != nullptr) {
    sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(*out);
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  }
  auto logger = std::make_shared<spdlog::logger>("tenon", std::move(sink));
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

std::uint64_t CurrentSeq() {
  return current_seq;
}

SeqScope::SeqScope(std::uint64_t seq) : previous_(current_seq) {
  current_seq = seq;
}
SeqScope::~SeqScope() {
  current_seq = previous_;
}

std::string DescribeDecision(const Decision& decision) {
  return std::visit(
      [](const auto& d) -> std::string {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, ProvisioningDecision>) {
          return DescribeProvisioning(d);
        } else if constexpr (std::is_same_v<T, LifecycleDecision>) {
          std::string who = d.nodeclaim.empty() ? "instance " + d.instance_id : d.nodeclaim;
          return "lifecycle " + who + " " + Name(d.transition) + ": " + d.reason;
        } else {
          static_assert(std::is_same_v<T, DisruptionDecision>);
          return "disruption " + std::string(Name(d.method)) + " " + Name(d.phase) + " [" +
                 Listed(d.nodeclaims, [](const std::string& s) { return s; }) + "]: " + d.reason;
        }
      },
      decision.body);
}

void DecisionLogger::OnOutput(Seq /*cause*/, const Output& output) {
  for (const Decision& d : output.decisions) {
    SeqScope scope(d.cause.value);
    spdlog::info("decision #{} {}", d.id.value, DescribeDecision(d));
  }
  for (const Command& c : output.commands) {
    SeqScope scope(c.cause.value);
    // Events repeat what the decisions above say: at debug, so they do not double the log.
    const auto level = std::holds_alternative<RecordKubeEvent>(c.body) ? spdlog::level::debug
                                                                       : spdlog::level::info;
    spdlog::log(level, "command {} #{}: {}", log::CommandKind(c), c.id.value, CommandTarget(c));
  }
}

}  // namespace tenon::metrics
