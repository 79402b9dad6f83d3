// The AWS side of `tenon run`: adapters on threads of their own that feed the log, and the
// executor for the cloud's commands.
//
//   catalog      DescribeInstanceTypes / offerings / spot prices every 5 min, on-demand prices
//                every 12 h (Pricing API, else the operator's price file) -> CatalogRefreshed
//                when anything changed
//   interruption long polls of the SQS queue -> InterruptionReceived (or InputRejected)
//   gc           DescribeInstances by the cluster's and the NodePool tag every 2 min ->
//                InstancesListed
//   nodeclass    every EC2NodeClass's selector terms resolved every minute (and when one
//                changes): AMIs, subnets, security groups, the instance profile ->
//                NodeClassResolved, from which the core writes the status and its Ready
//                condition (PatchNodeClassStatus); the informer brings the status back.
//                It only reads: the finalizer, a missing instance profile and the cleanup of a
//                deleted EC2NodeClass are the core's commands (SetNodeClassFinalizer,
//                EnsureInstanceProfile, DeleteNodeClassResources)
//
// Each thread owns its AWS connection (the HTTP pieces are not thread-safe). The executor runs
// on the controller's thread with a connection of its own; a launch carries all it needs
// (subnets, AMIs, the launch template's inputs, chosen by the core from NodeClassResolved), so
// the executor reads no state. Each role has its file: cloud_catalog.cc,
// cloud_interruption.cc, cloud_gc.cc, cloud_nodeclass.cc; cloud.cc holds the threads and the
// queue.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "adapters/aws/connection.h"
#include "adapters/aws/ec2.h"
#include "adapters/aws/executor.h"
#include "adapters/aws/nodeclass.h"
#include "adapters/aws/sqs.h"
#include "adapters/kube/client.h"
#include "adapters/kube/executor.h"
#include "reducers/core.h"

namespace tenon::controller {

struct CloudOptions {
  aws::AwsSettings aws;
  std::string cluster_name;
  std::string cluster_endpoint;    // CLUSTER_ENDPOINT, for the nodes' user data.
  std::string cluster_ca_base64;   // The cluster's CA bundle, for the nodes' user data.
  std::string interruption_queue;  // INTERRUPTION_QUEUE: a queue name or URL; empty: none.
  std::string price_file;          // On-demand prices when the Pricing API cannot answer.
  std::string kubernetes_version;  // "1.31"; empty: asked of the API server (/version).
  bool refresh_catalog = true;     // False when the catalog comes from a file (--catalog).
  // Dry run: read, resolve and list, but write no NodeClass status and take no message off
  // the interruption queue (the controller in charge must still see it).
  bool read_only = false;
  std::chrono::milliseconds catalog_every{5 * 60 * 1000};
  std::chrono::milliseconds prices_every{12 * 60 * 60 * 1000};
  std::chrono::milliseconds gc_every{2 * 60 * 1000};
  std::chrono::milliseconds nodeclass_every{60 * 1000};
  std::chrono::milliseconds retry{5000};  // After a failed call.
  std::int32_t poll_wait_seconds = 20;    // SQS long poll.
};

// What NodeClassResolved carries for a resolution, or the reason it failed (pure).
NodeClassResolution ResolutionFor(const aws::NodeClassResolutionResult& resolved,
                                  const std::string& instance_profile);

// "v1.31.2-eks-1234" -> "1.31"; empty when it is not a version.
std::string MinorVersion(const std::string& git_version);

class CloudSource : public runtime::Executor {
 public:
  CloudSource(CloudOptions options, kube::Client& kube, std::function<bool()> may_act);
  ~CloudSource();
  CloudSource(const CloudSource&) = delete;
  CloudSource& operator=(const CloudSource&) = delete;

  void Start();
  void Stop();
  // Events the threads produced since the last call.
  std::vector<Event> Drain();
  // Resolve the NodeClasses again now (one changed).
  void PokeNodeClasses();
  // The cloud's commands (AwsExecutor's) and queue message deletions. A profile made for an
  // EC2NodeClass has it resolved again at once.
  std::vector<Event> Execute(const Command& command) override;

  // For tests and metrics.
  std::int64_t catalogs_published() const { return catalogs_published_.load(); }
  std::int64_t nodeclasses_resolved() const { return nodeclasses_resolved_.load(); }

 private:
  void Push(std::vector<Event> events);
  bool Sleep(std::chrono::milliseconds duration);  // False when stopping.
  void CatalogLoop();
  void InterruptionLoop();
  void GarbageLoop();
  void NodeClassLoop();
  void ResolveAll(aws::AwsConnection& connection);
  std::string KubernetesVersion();

  CloudOptions options_;
  kube::Client& kube_;
  std::function<bool()> may_act_;

  // Stop ends every AWS call in flight: the pollers' (a long poll would hold it for up to
  // poll_wait_seconds) and the executor's (a stalled EC2 call would hold the shutdown for its
  // retries). A message received but not yet handed to the log stays in the queue: nothing
  // deletes it. A NodeClass pass cut short writes no status. A command cut short has no result
  // in the log, and the next start re-drives it.
  aws::AbortSignal abort_;
  // The executor's connection (the AWS lane's worker): launches, terminations, tags,
  // acknowledgements, instance profiles.
  aws::AwsConnection main_;
  aws::Ec2 ec2_;
  aws::Iam iam_;
  std::unique_ptr<aws::AwsConnection> poller_;  // The queue's long polls.
  std::unique_ptr<aws::InterruptionQueue> queue_;
  std::atomic<aws::InterruptionQueue*> queue_ready_{nullptr};  // Set once the URL is known.
  std::unique_ptr<aws::AwsExecutor> executor_;
  // Launch templates known to exist: filled by launches, emptied of those deleted with their
  // EC2NodeClass.
  aws::KnownTemplates templates_;

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Event> events_;
  bool poke_ = false;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::atomic<std::int64_t> catalogs_published_{0};
  std::atomic<std::int64_t> nodeclasses_resolved_{0};
};

}  // namespace tenon::controller
