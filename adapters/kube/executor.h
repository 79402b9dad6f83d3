// The Kubernetes side of the runtime's Executor: NodeClaims created and deleted, status
// subresources patched, Nodes labelled, tainted and deleted, finalizers removed, pods evicted
// through policy/v1 Eviction (a 429 comes back as CommandFailed kDisruptionBudget, the core's
// EvictionRefused) or deleted, and Kubernetes Events with Karpenter's reasons.
//
// Every read-modify-write sends a JSON merge patch carrying the resourceVersion it was computed
// from, so the API server refuses it (409) if the object changed in between; the write is then
// recomputed from a fresh read, a bounded number of times. Every write first asks `may_act`
// (the leader elector): once leadership is lost, nothing more is written — the command stays in
// flight in the log and the next leader re-drives it.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "adapters/kube/client.h"
#include "adapters/runtime/runtime.h"

namespace tenon::kube {

class LeadershipLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ExecutorOptions {
  int conflict_attempts_max = 5;
  std::string events_namespace = "default";  // Events about cluster-scoped objects go here.
  std::string component = "karpenter";       // Event source: dashboards filter on it.
  // Called for every write the API server refused (after the warning is logged): the
  // controller counts them in tenon_kube_write_failures_total.
  std::function<void()> on_write_failed;
};

// A status condition as the CRDs accept it: `reason` must be a CamelCase code (the pattern
// ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, at most 1,024 characters). A text that is one stays
// the reason; any other text becomes the message, under `fallback` (the condition's type).
struct ConditionText {
  std::string reason;
  std::string message;
};
ConditionText ConditionReason(const std::string& text, const std::string& fallback);

// Whether the API server refused a write in a way someone should hear of: not a deletion of
// what is already gone, not a status write to an object deleted since it was read (Karpenter's
// status controllers ignore NotFound alike), not a conflict (retried), not an eviction a PDB
// refused (429, an EvictionRefused for the core).
bool IsRefusedWrite(const std::string& method, const std::string& path, int status);

// The closed error set from an API answer.
ErrorCode MapStatus(const Response& response);

// An object an Event is about.
using ObjectRef = KubeObjectRef;

class EventCorrelator;

class KubeExecutor : public runtime::Executor {
 public:
  KubeExecutor(Client& client, ExecutorOptions options, std::function<bool()> may_act);
  ~KubeExecutor() override;

  static bool Owns(const Command& command);
  std::vector<Event> Execute(const Command& command) override;

  // A core/v1 Event (type Normal or Warning), correlated as client-go's recorder does
  // (EventCorrelator, events.h): a repeat updates the Event already written (count, last
  // timestamp) instead of creating another. False when the API refused it; never fatal. An
  // Event the spam filter drops counts as recorded.
  bool RecordEvent(const ObjectRef& object, const std::string& type, const std::string& reason,
                   const std::string& message);

  std::int64_t conflicts() const { return conflicts_; }  // 409s answered by a fresh read.

  // GET `path`, build a merge patch from the current object (nullopt: nothing to change), PATCH
  // it to `path` + `subresource` with the object's resourceVersion as precondition; a 409 reads
  // again. Returns the last answer (the GET's when it failed or nothing needed changing).
  Response Update(
      const std::string& path, const std::string& subresource,
      const std::function<std::optional<nlohmann::json>(const nlohmann::json&)>& mutate);

 private:
  void CheckLeader(const Command* command) const;
  std::vector<Event> Result(const Command& command, const Response& response, bool not_found_ok);
  Response Send(const std::string& method, const std::string& path, const nlohmann::json& body,
                const std::string& content_type = "application/json");

  std::vector<Event> CreateClaim(const Command& command, const CreateNodeClaim& create);
  std::vector<Event> Patch(const Command& command, const PatchNode& patch);
  std::vector<Event> Evict(const Command& command, const EvictPod& evict);
  std::vector<Event> Finalize(const Command& command, const RemoveFinalizer& remove);
  std::vector<Event> ClaimStatus(const Command& command, const PatchNodeClaimStatus& patch);
  std::vector<Event> PoolStatus(const Command& command, const PatchNodePoolStatus& patch);
  // The status subresource of an EC2NodeClass, with its Ready condition.
  std::vector<Event> ClassStatus(const Command& command, const PatchNodeClassStatus& patch);
  std::vector<Event> OverlayStatus(const Command& command, const PatchNodeOverlayStatus& patch);
  std::vector<Event> PodDeletionCost(const Command& command, const PatchPodDeletionCost& patch);
  std::vector<Event> ClassFinalizer(const Command& command, const SetNodeClassFinalizer& set);

  Client& client_;
  ExecutorOptions options_;
  std::function<bool()> may_act_;
  std::int64_t conflicts_ = 0;
  std::mutex events_mu_;  // Guards events_.
  std::unique_ptr<EventCorrelator> events_;
};

// The NodeClaim object the core's CreateNodeClaim stands for.
nlohmann::json NodeClaimObject(const NodeClaim& claim);
// "1500m", "2Gi"-style quantities as the API server writes them back.
std::string CpuQuantity(Millicores cpu);
std::string MemoryQuantity(Bytes memory);

}  // namespace tenon::kube
