// User data per AMI family: AL2023's NodeConfig is valid YAML inside MIME, Bottlerocket's TOML
// carries labels and taints, AL2 calls bootstrap.sh with quoted arguments, Custom is verbatim.
#include "adapters/aws/userdata.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace tenon::aws {
namespace {

const ClusterInfo kCluster{"prod", "https://ABC.gr7.us-east-1.eks.amazonaws.com",
                           "Q0FCVU5ETEU=", "10.100.0.0/16", "10.100.0.10"};
const NodeBootstrap kNode{{{"karpenter.sh/nodepool", "default"}, {"team", "a"}},
                          {Taint{"dedicated", "gpu", TaintEffect::kNoSchedule}},
                          110,
                          ""};

TEST(AwsUserData, Al2023NodeConfigInMime) {
  const std::string data = *UserData("AL2023", kCluster, kNode);
  EXPECT_EQ(data.rfind("MIME-Version: 1.0\n", 0), 0u);
  const std::string marker = "Content-Type: application/node.eks.aws\n\n";
  const auto at = data.find(marker);
  ASSERT_NE(at, std::string::npos);
  const std::string yaml =
      data.substr(at + marker.size(), data.find("\n--//--") - at - marker.size());
  const YAML::Node config = YAML::Load(yaml);
  EXPECT_EQ(config["kind"].as<std::string>(), "NodeConfig");
  EXPECT_EQ(config["spec"]["cluster"]["name"].as<std::string>(), "prod");
  EXPECT_EQ(config["spec"]["cluster"]["apiServerEndpoint"].as<std::string>(), kCluster.endpoint);
  EXPECT_EQ(config["spec"]["kubelet"]["config"]["maxPods"].as<int>(), 110);
  EXPECT_EQ(config["spec"]["kubelet"]["flags"][0].as<std::string>(),
            "--node-labels=karpenter.sh/nodepool=default,team=a");
  EXPECT_EQ(config["spec"]["kubelet"]["flags"][1].as<std::string>(),
            "--register-with-taints=dedicated=gpu:NoSchedule");
}

TEST(AwsUserData, BottlerocketToml) {
  NodeBootstrap node = kNode;
  node.custom = "[settings.host-containers.admin]\nenabled = true";
  const std::string data = *UserData("Bottlerocket", kCluster, node);
  EXPECT_EQ(data.rfind("[settings.host-containers.admin]", 0), 0u);
  EXPECT_NE(data.find("cluster-name = \"prod\"\n"), std::string::npos);
  EXPECT_NE(data.find("max-pods = 110\n"), std::string::npos);
  EXPECT_NE(data.find("\"team\" = \"a\"\n"), std::string::npos);
  EXPECT_NE(data.find("\"dedicated\" = [\"gpu:NoSchedule\"]\n"), std::string::npos);
}

TEST(AwsUserData, Al2BootstrapAndCustomAndUnknown) {
  NodeBootstrap node = kNode;
  node.custom = "#!/bin/bash\necho it's mine";
  const std::string al2 = *UserData("AL2", kCluster, node);
  EXPECT_NE(
      al2.find("/etc/eks/bootstrap.sh 'prod' --apiserver-endpoint '" + kCluster.endpoint + "'"),
      std::string::npos);
  EXPECT_NE(al2.find("--max-pods=110'"), std::string::npos);
  EXPECT_LT(al2.find("echo it's mine"), al2.find("bootstrap.sh"));  // The user's part runs first.
  EXPECT_EQ(*UserData("Custom", kCluster, node), node.custom);
  EXPECT_FALSE(UserData("Windows2022", kCluster, node));
}

}  // namespace
}  // namespace tenon::aws
