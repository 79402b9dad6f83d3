// Garbage collection's input: the instances tenon launched, listed by tag.
#include "adapters/controller/cloud.h"

#include <spdlog/spdlog.h>

namespace tenon::controller {

void CloudSource::GarbageLoop() {
  aws::AwsConnection connection(options_.aws, aws::ProcessEnv(), {.abort = &abort_});
  aws::Ec2 ec2(connection.client());
  while (Sleep(options_.gc_every)) {
    auto listed = ec2.DescribeInstancesByTags(aws::LaunchedByNodePoolTags(options_.cluster_name));
    if (!listed.ok() && stop_.load()) return;  // Aborted by Stop.
    if (!listed.ok()) {
      spdlog::warn("gc: DescribeInstances: {}: {}", listed.error.aws_code, listed.error.message);
      continue;
    }
    Push({aws::ToInstancesListed(*listed.value)});
  }
}

}  // namespace tenon::controller
