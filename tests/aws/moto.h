// Test servers on loopback: moto_server on a free port, the fault-injecting proxy in front of it
// and the recording proxy. Each is started as its own process group and killed (SIGTERM, then
// SIGKILL) at teardown.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "adapters/aws/credentials.h"
#include "adapters/aws/ec2.h"
#include "adapters/aws/http.h"
#include "adapters/aws/iam.h"
#include "tests/support/child_process.h"

namespace tenon::aws::testing {

using tenon::testing::Child;
using tenon::testing::FreePort;

inline constexpr char kMotoServer[] = TENON_MOTO_SERVER;  // Found by tests/CMakeLists.txt.
inline constexpr int kStartupPollsMax = 300;              // x 50 ms = 15 s.

inline void WaitUntilAnswering(int port, const std::string& path) {
  CurlTransport transport(TransportOptions{.connect_timeout_ms = 200, .total_timeout_ms = 1000});
  HttpRequest probe;
  probe.scheme = "http";
  probe.host = "127.0.0.1:" + std::to_string(port);
  probe.path = path;
  for (int i = 0; i < kStartupPollsMax; ++i) {
    if (transport.Send(probe).status != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("server on port " + std::to_string(port) + " never answered");
}

// moto_server on 127.0.0.1 and a free port.
class Moto {
 public:
  Moto()
      : port_(FreePort()),
        child_({kMotoServer, "-p", std::to_string(port_), "-H", "127.0.0.1"}, {}, false) {
    WaitUntilAnswering(port_, "/moto-api/");
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  Child child_;
};

// tests/aws/fault_proxy.py in front of `moto`.
class FaultProxy {
 public:
  explicit FaultProxy(const Moto& moto)
      : child_({"/usr/bin/env", "python3", TENON_FAULT_PROXY, std::to_string(moto.port())}, {},
               true) {
    WaitUntilAnswering(child_.port(), "/__ping");
  }
  int port() const { return child_.port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }

 private:
  Child child_;
};

#ifdef TENON_RECORDING_PROXY
// tests/aws/recording_proxy.py in front of the server on `upstream_port`: it keeps every
// request it forwards, in the format of moto's recorder, for tests/deploy/iam_check.py.
class RecordingProxy {
 public:
  explicit RecordingProxy(int upstream_port)
      : child_({"/usr/bin/env", "python3", TENON_RECORDING_PROXY, std::to_string(upstream_port)},
               {}, true) {
    WaitUntilAnswering(child_.port(), "/__ping");
  }
  int port() const { return child_.port(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port()); }
  // Every request so far, one JSON object per line.
  std::string Recording() const {
    CurlTransport transport;
    HttpRequest r;
    r.scheme = "http";
    r.host = "127.0.0.1:" + std::to_string(port());
    r.path = "/__recording";
    return transport.Send(r).body;
  }

 private:
  Child child_;
};
#endif  // TENON_RECORDING_PROXY

// Hooks that never sleep, with fixed jitter, and the real clock (moto checks nothing of it).
inline ClientHooks FastHooks(std::vector<Duration>* sleeps = nullptr) {
  ClientHooks hooks = RealHooks();
  hooks.sleep = [sleeps](Duration d) {
    if (sleeps != nullptr) sleeps->push_back(d);
  };
  hooks.jitter = [] { return 0.5; };
  return hooks;
}

inline Credentials DummyCredentials() {
  return Credentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "",
                     std::nullopt, "test"};
}

// The body of a call that must succeed; a failure fails the test and gives "".
inline std::string Must(Result<std::string> r) {
  EXPECT_TRUE(r.ok()) << r.error.aws_code << ": " << r.error.message;
  return r.ok() ? *r.value : "";
}

// The text between the first `open` and the `close` after it ("" without `open`).
inline std::string Between(const std::string& text, const std::string& open,
                           const std::string& close) {
  const auto a = text.find(open);
  if (a == std::string::npos) return "";
  const auto b = text.find(close, a + open.size());
  return text.substr(a + open.size(), b - a - open.size());
}

// What an EC2NodeClass discovers, as the examples' EC2NodeClasses do: a VPC with a subnet in
// us-east-1a and us-east-1b, each tagged karpenter.sh/discovery: CLUSTER.
struct Network {
  std::string vpc;
  std::map<std::string, std::string> subnets;  // Zone -> subnet id.
};
inline Network MakeNetwork(AwsClient& client, const std::string& cluster) {
  Network out;
  out.vpc =
      Between(Must(client.Query("ec2", "CreateVpc", kEc2Version, {{"CidrBlock", "10.0.0.0/16"}})),
              "<vpcId>", "</vpcId>");
  int n = 0;
  for (const std::string zone : {"us-east-1a", "us-east-1b"}) {
    const std::string body =
        Must(client.Query("ec2", "CreateSubnet", kEc2Version,
                          {{"VpcId", out.vpc},
                           {"CidrBlock", "10.0." + std::to_string(n++) + ".0/24"},
                           {"AvailabilityZone", zone},
                           {"TagSpecification.1.ResourceType", "subnet"},
                           {"TagSpecification.1.Tag.1.Key", "karpenter.sh/discovery"},
                           {"TagSpecification.1.Tag.1.Value", cluster}}));
    out.subnets[zone] = Between(body, "<subnetId>", "</subnetId>");
  }
  return out;
}

// A security group named `name` in `vpc`, tagged karpenter.sh/discovery: CLUSTER; its id.
inline std::string MakeSecurityGroup(AwsClient& client, const std::string& vpc,
                                     const std::string& name, const std::string& cluster) {
  return Between(Must(client.Query("ec2", "CreateSecurityGroup", kEc2Version,
                                   {{"GroupName", name},
                                    {"GroupDescription", "nodes"},
                                    {"VpcId", vpc},
                                    {"TagSpecification.1.ResourceType", "security-group"},
                                    {"TagSpecification.1.Tag.1.Key", "karpenter.sh/discovery"},
                                    {"TagSpecification.1.Tag.1.Value", cluster}})),
                 "<groupId>", "</groupId>");
}

// An IAM role EC2 instances may assume: a node role.
inline void MakeNodeRole(AwsClient& client, const std::string& name) {
  Must(client.Query(
      "iam", "CreateRole", kIamVersion,
      {{"RoleName", name},
       {"AssumeRolePolicyDocument",
        R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]})"}}));
}

}  // namespace tenon::aws::testing
