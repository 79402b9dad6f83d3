// The smallest EC2NodeClass and NodePool a scenario needs, as scenario documents: tests that are
// about something else put them after their Scenario document.
#pragma once

namespace tenon::testing {

// "---" documents of an EC2NodeClass and a NodePool, both named "default", the pool allowing
// every instance type of the catalog.
inline constexpr char kDefaultPoolAndClass[] = R"(---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: r
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
)";

}  // namespace tenon::testing
