// Two `tenon run` processes against the test API server: one leads and writes, the other waits.
// The leader is paused (SIGSTOP, as a long GC pause or a partition would), the standby takes the
// Lease and carries on, and the old leader, resumed, exits without writing anything more. The
// API server's request log (who wrote what, in order) shows no moment with two writers.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/kube/apiserver.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"

namespace tenon::kube::testing {
namespace {

using std::chrono::milliseconds;
using tenon::testing::TempDir;

constexpr char kLease[] = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/tenon";

bool IsWrite(const json& request) {
  const std::string verb = request["verb"];
  return verb == "create" || verb == "update" || verb == "patch" || verb == "delete";
}

// Requests by `agent` that change something outside the Lease.
std::vector<std::size_t> Writes(const json& requests, const std::string& agent) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    if (r.value("user_agent", "") == agent && IsWrite(r) && r["resource"] != "leases") {
      out.push_back(i);
    }
  }
  return out;
}

std::string Holder(Client& admin) {
  const auto lease = admin.Get(kLease);
  if (lease.status != 200) return "";
  return lease.Json()["spec"].value("holderIdentity", "");
}

using ::tenon::testing::Eventually;

class Tenon {
 public:
  Tenon(const std::string& identity, const std::filesystem::path& kubeconfig,
        const std::filesystem::path& log_dir)
      : child_({TENON_BINARY,
                "run",
                "--kubeconfig",
                kubeconfig.string(),
                "--log-dir",
                log_dir.string(),
                "--identity",
                identity,
                "--lease-namespace",
                "kube-system",
                "--lease-name",
                "tenon",
                "--lease-duration",
                "2s",
                "--renew-deadline",
                "1500ms",
                "--retry-period",
                "200ms",
                "--tick",
                "200ms",
                "--catalog",
                TENON_CATALOG,
                "--cloud-provider",
                "none",
                "--bind-address",
                "127.0.0.1",
                "--metrics-port",
                "0",
                "--health-port",
                "0"},
               {}, false) {}
  tenon::testing::Child& child() { return child_; }

 private:
  tenon::testing::Child child_;
};

TEST(KubeHandOver, PausedLeaderStopsBeforeTheStandbyStartsAndNeverWritesAgain) {
  ApiServer server(/*bookmark_ms=*/200);
  Client admin(server.port());
  ASSERT_EQ(admin
                .Post("/apis/karpenter.k8s.aws/v1/ec2nodeclasses",
                      {{"apiVersion", "karpenter.k8s.aws/v1"},
                       {"kind", "EC2NodeClass"},
                       {"metadata", {{"name", "default"}}},
                       {"spec", {{"role", "KarpenterNodeRole"}}}})
                .status,
            201);
  // Resolved and Ready, as its controller would leave it (this test runs without a cloud).
  auto nodeclass = admin.Get("/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default").Json();
  nodeclass["status"] = {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}};
  ASSERT_EQ(admin.Put("/apis/karpenter.k8s.aws/v1/ec2nodeclasses/default/status", nodeclass).status,
            200);
  ASSERT_EQ(
      admin
          .Post("/apis/karpenter.sh/v1/nodepools",
                {{"apiVersion", "karpenter.sh/v1"},
                 {"kind", "NodePool"},
                 {"metadata", {{"name", "default"}}},
                 {"spec", {{"template", {{"spec", {{"nodeClassRef", {{"name", "default"}}}}}}}}}})
          .status,
      201);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(admin
                  .Post("/api/v1/namespaces/default/pods",
                        {{"apiVersion", "v1"},
                         {"kind", "Pod"},
                         {"metadata", {{"name", "web-" + std::to_string(i)}}},
                         {"spec",
                          {{"containers",
                            {{{"name", "c"},
                              {"image", "nginx"},
                              {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}})
                  .status,
              201);
  }
  TempDir dir;
  const auto kubeconfig = dir.path() / "kubeconfig";
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
                               "clusters: [{name: t, cluster: {server: 'http://127.0.0.1:"
                            << server.port() << "'}}]\nusers: [{name: t, user: {token: " << kToken
                            << "}}]\ncontexts: [{name: t, context: {cluster: t, user: t}}]\n";

  // One log on a shared volume, as deploy/ mounts it: only the leader may open it.
  const auto log_dir = dir.path() / "log";
  Tenon a("a", kubeconfig, log_dir);
  ASSERT_TRUE(Eventually([&] { return Holder(admin) == "a"; }, milliseconds(10000)));
  ASSERT_TRUE(
      Eventually([&] { return !Writes(admin.Get("/_test/requests").Json(), "tenon/a").empty(); },
                 milliseconds(10000)))
      << "the leader acts: NodePool status, NodeClaims for the pending pods";
  Tenon b("b", kubeconfig, log_dir);
  std::this_thread::sleep_for(milliseconds(1500));
  EXPECT_EQ(Holder(admin), "a");
  EXPECT_TRUE(Writes(admin.Get("/_test/requests").Json(), "tenon/b").empty())
      << "a standby writes nothing";

  ASSERT_EQ(::kill(a.child().pid(), SIGSTOP), 0);
  const std::size_t paused_at = admin.Get("/_test/requests").Json().size();
  ASSERT_TRUE(Eventually([&] { return Holder(admin) == "b"; }, milliseconds(10000)));
  // The paused a still holds the log's LOCK: b waits for it, writing nothing meanwhile.
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_TRUE(Writes(admin.Get("/_test/requests").Json(), "tenon/b").empty());
  ASSERT_EQ(::kill(a.child().pid(), SIGCONT), 0);
  const auto a_exit = a.child().WaitExit(milliseconds(10000));
  ASSERT_TRUE(a_exit.has_value()) << "the resumed old leader must stop";
  EXPECT_EQ(*a_exit, 3) << "it exits for lost leadership";
  ASSERT_TRUE(
      Eventually([&] { return !Writes(admin.Get("/_test/requests").Json(), "tenon/b").empty(); },
                 milliseconds(10000)))
      << "the new leader opens the log a let go of, and acts";

  const json requests = admin.Get("/_test/requests").Json();
  const auto writes_a = Writes(requests, "tenon/a");
  const auto writes_b = Writes(requests, "tenon/b");
  ASSERT_FALSE(writes_a.empty());
  ASSERT_FALSE(writes_b.empty());
  EXPECT_LT(writes_a.back(), writes_b.front()) << "no write by a after b began";
  EXPECT_LT(writes_a.back(), paused_at) << "a wrote nothing once paused and resumed";
  for (std::size_t i = paused_at; i < requests.size(); ++i) {
    const auto& r = requests[i];
    if (r.value("user_agent", "") == "tenon/a" && r["resource"] == "leases") {
      EXPECT_FALSE(IsWrite(r)) << "a never wrote the Lease again: " << r.dump();
    }
  }
  // b stops on SIGTERM and hands the Lease back.
  ASSERT_EQ(::kill(b.child().pid(), SIGTERM), 0);
  const auto b_exit = b.child().WaitExit(milliseconds(10000));
  ASSERT_TRUE(b_exit.has_value());
  EXPECT_EQ(*b_exit, 0);
  EXPECT_EQ(Holder(admin), "");
  // One history, two writers one after the other: it replays exactly.
  const std::string verify = std::string(TENON_BINARY) + " replay --verify " + log_dir.string();
  EXPECT_EQ(std::system(verify.c_str()), 0) << verify;
}

}  // namespace
}  // namespace tenon::kube::testing
