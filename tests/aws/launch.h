// A LaunchInstance as the core issues it, for the tests that run the AWS adapter's threads:
// the EC2NodeClass's latest NodeClassResolved among the events the adapter published, folded
// into a state, and core::FillLaunch choosing each override's subnet and AMI from it.
#pragma once

#include <string>
#include <vector>

#include "reducers/internal.h"

namespace tenon::aws::testing {

// One m5.large in us-east-1a, on demand, for `claim` with `nodeclass` (AL2023). `state` needs
// the catalog (m5.large); it keeps the resolutions seen.
inline LaunchInstance CoreLaunch(State& state, const std::vector<Event>& published,
                                 const std::string& cluster, const std::string& claim,
                                 const std::string& nodeclass) {
  for (const Event& e : published) {
    if (const auto* r = std::get_if<NodeClassResolved>(&e)) {
      state.nodeclass.resolutions[r->nodeclass] = r->resolution;
    }
  }
  state.settings.cluster_name = cluster;
  state.settings.cluster_endpoint = "https://" + cluster + ".example";
  state.settings.cluster_ca_bundle = "Y2E=";
  NodeClass& nc = state.cluster.nodeclasses[nodeclass];
  nc.name = nodeclass;
  nc.ami_family = "AL2023";
  LaunchInstance launch{claim,
                        "default",
                        nodeclass,
                        claim,
                        "on-demand",
                        {{"m5.large", "us-east-1a", "on-demand", MicroUsdPerHour{96000}, "", ""}},
                        {{"karpenter.sh/nodepool", "default"},
                         {"karpenter.sh/nodeclaim", claim},
                         {"karpenter.k8s.aws/ec2nodeclass", nodeclass},
                         {"kubernetes.io/cluster/" + cluster, "owned"}},
                        "lowest-price",
                        {}};
  core::FillLaunch(state, launch);
  return launch;
}

}  // namespace tenon::aws::testing
