// EC2NodeClass resolution, as Karpenter's nodeclass status controller does it: the selector
// terms of spec.amiSelectorTerms, subnetSelectorTerms and securityGroupSelectorTerms become the
// ids in the NodeClass status (NodeClass::amis, subnets, security_groups), which launches use
// and drift compares running instances against.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "adapters/aws/ec2.h"
#include "adapters/aws/ssm.h"

namespace tenon::aws {

// An amiSelectorTerms entry: an alias (al2023@latest, bottlerocket@v1.20.0, ...) or a selector.
struct AmiTerm {
  std::string alias;
  SelectorTerm term;
};

struct NodeClassTerms {
  std::vector<AmiTerm> amis;
  std::vector<SelectorTerm> subnets;
  std::vector<SelectorTerm> security_groups;
};

// Reads the three selector-term lists of a karpenter.k8s.aws/v1 EC2NodeClass object. Throws
// std::invalid_argument naming the field on a term that is not a map or sets nothing.
NodeClassTerms ParseNodeClassTerms(const YAML::Node& object);

// What the selector terms resolved to, with what the status and launches need beyond the ids:
// each AMI's architecture and each subnet's zone.
struct NodeClassResolution {
  NodeClass nodeclass;  // With amis, subnets and security_groups set (sorted ids).
  std::vector<Image> amis;
  std::vector<Subnet> subnets;
  std::vector<SecurityGroup> security_groups;
};

// A resolution, or why there is none: the reason of the EC2NodeClass condition that is not
// true, as Karpenter's status controller names it (AMINotFound, SubnetsNotFound,
// SecurityGroupsNotFound, InstanceProfileNotFound, InvalidSpec), and the error behind it.
struct NodeClassResolutionResult {
  std::optional<NodeClassResolution> value;
  std::string reason;
  AwsError error;
  bool ok() const { return value.has_value(); }
  static NodeClassResolutionResult Fail(std::string reason, AwsError error) {
    return {std::nullopt, std::move(reason), std::move(error)};
  }
};

// The condition reasons of a resolution that found nothing are the model's (kAmiNotFound...).

// Resolves `terms` for `nodeclass`: aliases through SSM for both architectures (an
// architecture the alias has no parameter for is skipped), other AMI terms through
// DescribeImages keeping the newest image per architecture; subnets and security groups
// through their Describe calls. Fails when any of the three resolves to nothing.
NodeClassResolutionResult ResolveNodeClassDetail(Ec2& ec2, Ssm& ssm, const NodeClass& nodeclass,
                                                 const NodeClassTerms& terms,
                                                 const std::string& kubernetes_version);
// The ids only.
Result<NodeClass> ResolveNodeClass(Ec2& ec2, Ssm& ssm, const NodeClass& nodeclass,
                                   const NodeClassTerms& terms,
                                   const std::string& kubernetes_version);

}  // namespace tenon::aws
