// The kube adapter against the test API server (tests/kube/apiserver.py): configuration and
// authentication, informers under churn with a forced 410 and dropped connections (nothing
// lost, nothing twice in the log), writers with 409 retries, evictions refused then allowed,
// and leader election.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "adapters/kube/client.h"
#include "adapters/kube/decode.h"
#include "adapters/kube/executor.h"
#include "adapters/kube/leader.h"
#include "adapters/kube/source.h"
#include "adapters/runtime/runtime.h"
#include "log/codec.h"
#include "log/event_log.h"
#include "tests/kube/apiserver.h"
#include "tests/support/temp_dir.h"

namespace tenon::kube {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using tenon::testing::TempDir;
using testing::ApiServer;

constexpr char kPods[] = "/api/v1/namespaces/default/pods";
constexpr char kNodes[] = "/api/v1/nodes";
constexpr char kPdbs[] = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";

ClusterConfig Loopback(int port) {
  ClusterConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(port);
  config.token = testing::kToken;
  return config;
}

json PodJson(const std::string& name, int gen, const std::string& node = "",
             const std::string& app = "web") {
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"labels", {{"app", app}, {"gen", std::to_string(gen)}}}}},
      {"spec",
       {{"containers",
         {{{"name", "c"},
           {"image", "nginx"},
           {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "64Mi"}}}}}}}}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

json NodeJson(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
          {"spec", {{"taints", {{{"key", "a"}, {"effect", "NoSchedule"}}}}}}};
}

// Runs until told to stop: drains the source into a real log through the runtime, as the
// controller does. Its executor refuses everything (no NodePools, so no command is issued).
class NoCommands : public runtime::Executor {
 public:
  std::vector<Event> Execute(const Command& command) override {
    ADD_FAILURE() << "unexpected command " << command.id.value;
    return {CommandFailed{command.id, ErrorCode::kInvalid, "test"}};
  }
};

std::vector<Event> EventsIn(const log::EventLog& log) {
  std::vector<Event> events;
  log.Scan(Seq{1}, log.LastSeq(), [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    if (auto* event = std::get_if<Event>(&entry)) events.push_back(*event);
    return true;
  });
  return events;
}

std::string Gen(const Pod& pod) {
  auto it = pod.labels->find("gen");
  return it == pod.labels->end() ? "" : it->second;
}

TEST(KubeConfig, KubeconfigWithTokenCaAndContexts) {
  TempDir dir;
  const auto path = dir.path() / "config";
  std::ofstream(path) << R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: prod
  cluster: {server: "https://prod.example:6443", certificate-authority-data: "aGVsbG8gY2E="}
- name: dev
  cluster: {server: "https://dev.example:6443", certificate-authority: ca.pem}
users:
- name: alice
  user: {token: "t0k3n"}
- name: bob
  user:
    client-certificate-data: "Y2VydA=="
    client-key-data: "a2V5"
contexts:
- name: dev
  context: {cluster: dev, user: alice}
- name: prod
  context: {cluster: prod, user: bob}
)";
  const ClusterConfig dev = LoadKubeconfig(path.string());
  EXPECT_EQ(dev.server, "https://dev.example:6443");
  EXPECT_EQ(dev.ca_file, (dir.path() / "ca.pem").string());  // Relative to the kubeconfig.
  EXPECT_EQ(dev.token, "t0k3n");
  const ClusterConfig prod = LoadKubeconfig(path.string(), "prod");
  EXPECT_EQ(prod.ca_data, "hello ca");
  EXPECT_EQ(prod.client_cert_data, "cert");
  EXPECT_EQ(prod.client_key_data, "key");
  EXPECT_THROW(LoadKubeconfig(path.string(), "staging"), ConfigError);
}

TEST(KubeConfig, ExecPluginTokenAuthenticates) {
  ApiServer server;
  TempDir dir;
  const auto plugin = dir.path() / "get-token";
  // The plugin sees KUBERNETES_EXEC_INFO and its own env, as `aws eks get-token` would.
  std::ofstream(plugin)
      << "#!/bin/sh\n"
         "case \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) ;; *) exit 3;; esac\n"
         "echo \"$((COUNT=$(cat " +
             (dir.path() / "count").string() + " 2>/dev/null || echo 0)+1))\" > " +
             (dir.path() / "count").string() +
             "\n"
             "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
             "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\","
             "\"expirationTimestamp\":\"2099-01-01T00:00:00Z\"}}' \"$TOKEN\"\n";
  ::chmod(plugin.c_str(), 0755);
  const auto path = dir.path() / "config";
  std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                         "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:" +
                             std::to_string(server.port()) +
                             "'}}]\n"
                             "users:\n- name: u\n  user:\n    exec:\n"
                             "      apiVersion: client.authentication.k8s.io/v1beta1\n"
                             "      command: ./get-token\n"
                             "      env: [{name: TOKEN, value: " +
                             testing::kToken +
                             "}]\n"
                             "contexts: [{name: c, context: {cluster: k, user: u}}]\n";
  Client client(LoadKubeconfig(path.string()));
  EXPECT_EQ(client.Request("GET", kPods).status, 200);
  EXPECT_EQ(client.Request("GET", kNodes).status, 200);
  std::ifstream count(dir.path() / "count");
  int runs = 0;
  count >> runs;
  EXPECT_EQ(runs, 1) << "the credential is cached until it expires";
}

TEST(KubeConfig, InClusterTokenIsReadAgainWhenRotated) {
  ApiServer server;
  TempDir dir;
  std::ofstream(dir.path() / "token") << "stale-token\n";
  std::ofstream(dir.path() / "ca.crt") << "";
  ::setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", std::to_string(server.port()).c_str(), 1);
  ClusterConfig config = InClusterConfig(dir.path().string());
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  EXPECT_EQ(config.server, "https://127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(config.token_file, (dir.path() / "token").string());
  config.server = "http://127.0.0.1:" + std::to_string(server.port());  // The test server is plain.
  config.ca_file.clear();
  Client client(config);
  EXPECT_EQ(client.Request("GET", kPods).status, 401);
  std::ofstream(dir.path() / "token") << testing::kToken << "\n";  // The kubelet rotates it.
  EXPECT_EQ(client.Request("GET", kPods).status, 200) << "a 401 re-reads the token file";
}

TEST(KubeClient, TlsVerificationIsOnByDefault) {
  ClusterConfig config;
  config.server = "https://127.0.0.1:1";
  Client client(config);
  EXPECT_EQ(client.Request("GET", kPods).status, 0);  // Nothing listens; no crash, no throw.
  EXPECT_FALSE(config.insecure_skip_tls_verify);
}

TEST(KubeClient, QpsAndBurstLimitRequests) {
  ApiServer server;
  ClusterConfig config = Loopback(server.port());
  config.qps = 50;
  config.burst = 5;
  Client client(config);
  for (int i = 0; i < 5; ++i) client.Request("GET", kPods);
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) client.Request("GET", kPods);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  // 10 requests past the burst at 50/s need at least ~0.2 s (the bucket refills meanwhile).
  EXPECT_GE(elapsed, milliseconds(150));
}

TEST(KubeDecode, MalformedObjectsAreKeptAsRejectedInput) {
  const auto& nodepools = ResourceNamed("nodepools");
  const std::string bad =
      R"({"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"x"},)"
      R"("spec":{"weight":"heavy","template":{"spec":{"nodeClassRef":{"name":"d"}}}}})";
  auto events = Decode({&nodepools, Change::Type::kUpsert, "x", bad});
  ASSERT_EQ(events.size(), 1u);
  const auto* rejected = std::get_if<InputRejected>(&events[0]);
  ASSERT_NE(rejected, nullptr);
  EXPECT_EQ(rejected->source, "kube/nodepools.karpenter.sh");
  EXPECT_EQ(rejected->payload, bad);
  EXPECT_NE(rejected->reason.find("NodePool x"), std::string::npos) << rejected->reason;

  auto garbage = Decode({&nodepools, Change::Type::kUpsert, "y", "{not json"});
  ASSERT_TRUE(std::holds_alternative<InputRejected>(garbage.at(0)));

  const auto& pods = ResourceNamed("pods");
  json pod = PodJson("p", 1, "node-a");
  pod["metadata"]["namespace"] = "shop";
  pod["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"}}});
  auto ok = Decode({&pods, Change::Type::kUpsert, "shop/p", pod.dump()});
  ASSERT_TRUE(std::holds_alternative<PodUpserted>(ok.at(0)));
  EXPECT_EQ(std::get<PodUpserted>(ok[0]).pod.ns, "shop");
  EXPECT_EQ(std::get<PodUpserted>(ok[0]).pod.node_name, "node-a");
  auto gone = Decode({&pods, Change::Type::kDelete, "shop/p", ""});
  EXPECT_EQ(std::get<PodDeleted>(gone.at(0)), (PodDeleted{"shop", "p"}));
}

// A NodeClaim from the API becomes NodeClaimObserved (for adoption) with what Karpenter
// records on it; Karpenter's hash annotations (with their version) are not taken for tenon's,
// tenon's own object reads back with its hashes; a deleting one also yields
// NodeClaimDeletionRequested.
TEST(KubeDecode, NodeClaimsAreObservedForAdoption) {
  const auto& nodeclaims = ResourceNamed("nodeclaims");
  const std::string karpenter = R"({"apiVersion":"karpenter.sh/v1","kind":"NodeClaim",
    "metadata":{"name":"default-x7k2p","creationTimestamp":"2026-01-01T00:00:00Z",
      "labels":{"karpenter.sh/nodepool":"default","node.kubernetes.io/instance-type":"c5.large",
        "topology.kubernetes.io/zone":"us-east-1b","karpenter.sh/capacity-type":"on-demand"},
      "annotations":{"karpenter.sh/nodepool-hash":"6821555240504101244",
        "karpenter.sh/nodepool-hash-version":"v3"},
      "finalizers":["karpenter.sh/termination"]},
    "spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},
      "requirements":[{"key":"karpenter.sh/capacity-type","operator":"In","values":["on-demand"]}],
      "resources":{"requests":{"cpu":"1500m"}}},
    "status":{"providerID":"aws:///us-east-1b/i-0abc","nodeName":"ip-10-0-1-7","imageID":"ami-1",
      "allocatable":{"cpu":"1930m","memory":"3055Mi"},
      "conditions":[{"type":"Launched","status":"True"},{"type":"Registered","status":"True"},
        {"type":"Initialized","status":"True"}]}})";
  auto events = Decode({&nodeclaims, Change::Type::kUpsert, "default-x7k2p", karpenter});
  ASSERT_EQ(events.size(), 1u);
  const auto* observed = std::get_if<NodeClaimObserved>(&events[0]);
  ASSERT_NE(observed, nullptr) << log::EventKind(events[0]);
  const NodeClaim& claim = observed->claim;
  EXPECT_EQ(claim.nodepool, "default");
  EXPECT_EQ(claim.nodeclass, "default");
  EXPECT_EQ(claim.phase, ClaimPhase::kInitialized);
  EXPECT_EQ(claim.instance_id, "i-0abc");
  EXPECT_EQ(claim.instance_type, "c5.large");
  EXPECT_EQ(claim.zone, "us-east-1b");
  EXPECT_EQ(claim.capacity_type, "on-demand");
  EXPECT_EQ(claim.node_name, "ip-10-0-1-7");
  EXPECT_EQ(claim.requests.cpu, Millicores{1500});
  EXPECT_EQ(claim.allocatable.cpu, Millicores{1930});
  EXPECT_EQ(claim.requirements->size(), 1u);
  EXPECT_EQ(claim.nodepool_hash, 0u) << "Karpenter's hash would read as drift";

  NodeClaim own;
  own.name = "default-1a2b3";
  own.nodepool = "default";
  own.nodeclass = "default";
  own.nodepool_hash = 1234;
  own.nodeclass_hash = 5678;
  json object = NodeClaimObject(own);
  object["metadata"]["deletionTimestamp"] = "2026-01-01T00:10:00Z";
  auto deleting = Decode({&nodeclaims, Change::Type::kUpsert, own.name, object.dump()});
  ASSERT_EQ(deleting.size(), 2u);
  const NodeClaim& back = std::get<NodeClaimObserved>(deleting[0]).claim;
  EXPECT_EQ(back.phase, ClaimPhase::kPending);
  EXPECT_EQ(back.nodepool_hash, 1234u);
  EXPECT_EQ(back.nodeclass_hash, 5678u);
  EXPECT_EQ(std::get<NodeClaimDeletionRequested>(deleting[1]).name, own.name);

  json launched_without_instance = json::parse(karpenter);
  launched_without_instance["status"]["providerID"] = "aws:///us-east-1b/";
  auto rejected = Decode(
      {&nodeclaims, Change::Type::kUpsert, "default-x7k2p", launched_without_instance.dump()});
  ASSERT_TRUE(std::holds_alternative<InputRejected>(rejected.at(0)));
}

// The acceptance test: pods created, relabelled and deleted while the informers list in pages,
// watch, lose their connections and are told 410 Gone. Every change reaches the log at most
// once, in order per object, and the folded state ends equal to the server's.
TEST(KubeInformers, ChurnWithForced410AndDroppedConnectionsLosesNothing) {
  ApiServer server(/*bookmark_ms=*/100);
  testing::Client admin(server.port());
  constexpr int kInitial = 40;
  for (int i = 0; i < kInitial; ++i) {
    ASSERT_EQ(admin.Post(kPods, PodJson("p" + std::to_string(i), 0)).status, 201);
  }
  TempDir dir;
  log::OpenOptions open;
  auto log = log::EventLog::Open(dir.path() / "log", open);
  NoCommands executor;
  runtime::Runtime rt(*log, executor, {});
  rt.Recover();

  Client client(Loopback(server.port()));
  InformerOptions options;
  options.page_size = 7;  // Several pages per list.
  options.watch_timeout = std::chrono::seconds(2);
  options.backoff_base = milliseconds(20);
  KubeSource source(client, options);
  source.Seed(rt.state());
  source.Start();

  // The churn starts once the first lists are in, so the watches are what sees it.
  const auto synced_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!source.synced() && std::chrono::steady_clock::now() < synced_by) {
    rt.Ingest(source.Drain(milliseconds(50)));
  }
  ASSERT_TRUE(source.synced());
  std::atomic<bool> churning{true};
  std::map<std::string, int> gens;  // What the server holds at the end.
  std::set<std::string> deleted;
  for (int i = 0; i < kInitial; ++i) gens["default/p" + std::to_string(i)] = 0;
  std::thread churn([&] {
    testing::Client writer(server.port());
    std::mt19937 rng(7);
    int next = kInitial;
    for (int round = 0; round < 300; ++round) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 2) {
        const std::string name = "p" + std::to_string(next++);
        if (writer.Post(kPods, PodJson(name, 0)).status == 201) gens["default/" + name] = 0;
      } else if (op < 3 && gens.size() > 5) {
        auto it = std::next(gens.begin(), static_cast<long>(rng() % gens.size()));
        const std::string name = it->first.substr(it->first.find('/') + 1);
        if (writer.Delete(std::string(kPods) + "/" + name).status == 200) {
          deleted.insert(it->first);
          gens.erase(it);
        }
      } else if (!gens.empty()) {
        auto it = std::next(gens.begin(), static_cast<long>(rng() % gens.size()));
        const std::string name = it->first.substr(it->first.find('/') + 1);
        const int gen = it->second + 1;
        if (writer
                .MergePatch(std::string(kPods) + "/" + name,
                            {{"metadata", {{"labels", {{"gen", std::to_string(gen)}}}}}})
                .status == 200) {
          it->second = gen;
        }
      }
      if (round == 100) writer.Post("/_test/drop-watches", json::object());
      if (round == 200) writer.Post("/_test/compact", json::object());  // Watches get 410.
      std::this_thread::sleep_for(milliseconds(round % 25 == 0 ? 60 : 4));
    }
    churning = false;
  });
  // The controller's loop: drain, fold, until the churn is over and the state has caught up.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  auto caught_up = [&] {
    if (churning || !source.synced()) return false;
    std::map<std::string, int> have;
    for (const auto& [key, pod] : rt.state().cluster.pods) have[key] = std::stoi(Gen(pod));
    return have == gens;
  };
  while (!caught_up() && std::chrono::steady_clock::now() < deadline) {
    auto events = source.Drain(milliseconds(50));
    if (!events.empty()) rt.Ingest(std::move(events));
  }
  churn.join();
  source.Stop();
  std::map<std::string, int> have;
  for (const auto& [key, pod] : rt.state().cluster.pods) have[key] = std::stoi(Gen(pod));
  EXPECT_EQ(have, gens) << "the folded state is the server's";
  EXPECT_TRUE(rt.state().cluster.watches_synced);

  // In the log: per pod, label generations strictly increase (never the same change twice),
  // and every deleted pod has exactly one PodDeleted.
  std::map<std::string, int> last_gen;
  std::map<std::string, int> deletes;
  std::int64_t upserts = 0;
  for (const auto& event : EventsIn(*log)) {
    if (const auto* up = std::get_if<PodUpserted>(&event)) {
      const std::string key = up->pod.ns + "/" + up->pod.name;
      const int gen = std::stoi(Gen(up->pod));
      auto it = last_gen.find(key);
      if (it != last_gen.end()) {
        EXPECT_GT(gen, it->second) << key << " upserted twice with the same change";
      }
      last_gen[key] = gen;
      ++upserts;
    } else if (const auto* del = std::get_if<PodDeleted>(&event)) {
      ++deletes[del->ns + "/" + del->name];
    }
  }
  for (const auto& key : deleted) EXPECT_EQ(deletes[key], last_gen.contains(key) ? 1 : 0) << key;
  for (const auto& [key, n] : deletes) EXPECT_TRUE(deleted.contains(key)) << key;
  const auto stats = source.stats();
  InformerStats pods{};
  for (std::size_t i = 0; i < WatchedResources().size(); ++i) {
    if (WatchedResources()[i].plural == "pods") pods = stats[i];
  }
  EXPECT_GE(pods.relists_gone, 1) << "the compaction forced a relist";
  EXPECT_GE(pods.resumes, 1) << "the dropped connection was resumed";
  EXPECT_GE(pods.lists, 2);
  EXPECT_GT(upserts, kInitial);
}

// A restart: the core holds objects from its log that were deleted while nobody watched.
TEST(KubeInformers, FirstListDeletesWhatVanishedWhileDown) {
  ApiServer server;
  testing::Client admin(server.port());
  ASSERT_EQ(admin.Post(kPods, PodJson("kept", 0)).status, 201);
  State state;
  for (const char* name : {"kept", "vanished"}) {
    tenon::Pod pod;
    pod.name = name;
    pod.ns = "default";
    state.cluster.pods.Upsert(PodKey(pod.ns, pod.name), pod);
  }
  Client client(Loopback(server.port()));
  KubeSource source(client);
  source.Seed(state);
  source.Start();
  std::vector<Event> events;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!source.synced() && std::chrono::steady_clock::now() < deadline) {
    for (auto& e : source.Drain(milliseconds(50))) events.push_back(std::move(e));
  }
  for (auto& e : source.Drain(milliseconds(0))) events.push_back(std::move(e));
  source.Stop();
  ASSERT_GE(events.size(), 4u);
  EXPECT_TRUE(std::holds_alternative<WatchesStarted>(events.front()));
  EXPECT_TRUE(std::holds_alternative<WatchesSynced>(events.back()));
  int upserted = 0;
  int deleted = 0;
  for (const auto& e : events) {
    if (const auto* up = std::get_if<PodUpserted>(&e)) upserted += up->pod.name == "kept";
    if (const auto* del = std::get_if<PodDeleted>(&e)) deleted += del->name == "vanished";
  }
  EXPECT_EQ(upserted, 1);
  EXPECT_EQ(deleted, 1);
}

class KubeWriters : public ::testing::Test {
 protected:
  KubeWriters()
      : admin_(server_.port()),
        client_(Loopback(server_.port())),
        executor_(client_, {}, [this] { return leader_.load(); }) {}
  ApiServer server_;
  testing::Client admin_;
  Client client_;
  std::atomic<bool> leader_{true};
  KubeExecutor executor_;
  std::uint64_t next_id_ = 1;
  // A Running pod `name` of app=web on node `node`.
  void RunningWebPod(const std::string& name, const std::string& node) {
    ASSERT_EQ(admin_.Post(kPods, PodJson(name, 0, node)).status, 201);
    ASSERT_EQ(admin_
                  .MergePatch(std::string(kPods) + "/" + name + "/status",
                              {{"status", {{"phase", "Running"}}}})
                  .status,
              200);
  }
  // A PodDisruptionBudget `name` over app=web with `spec` (minAvailable or maxUnavailable).
  void WebPdb(const std::string& name, const json& spec) {
    json full = spec;
    full["selector"] = {{"matchLabels", {{"app", "web"}}}};
    ASSERT_EQ(admin_
                  .Post(kPdbs, {{"apiVersion", "policy/v1"},
                                {"kind", "PodDisruptionBudget"},
                                {"metadata", {{"name", name}}},
                                {"spec", full}})
                  .status,
              201);
  }
  std::vector<Event> Run(CommandBody body) {
    return executor_.Execute(Command{CommandId{next_id_++}, Seq{1}, std::move(body)});
  }
};

TEST_F(KubeWriters, ConflictingWriteIsRetriedFromAFreshRead) {
  ASSERT_EQ(admin_.Post(kNodes, NodeJson("n1")).status, 201);
  int calls = 0;
  const auto response = executor_.Update(
      std::string(kNodes) + "/n1", "", [&](const json& node) -> std::optional<json> {
        if (++calls == 1) {
          // Someone else writes between our read and our write.
          EXPECT_EQ(admin_
                        .MergePatch(std::string(kNodes) + "/n1",
                                    {{"metadata", {{"labels", {{"other", "writer"}}}}}})
                        .status,
                    200);
        }
        json labels = node["metadata"]["labels"];
        labels["mine"] = std::to_string(calls);
        return json{{"metadata", {{"labels", labels}}}};
      });
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(executor_.conflicts(), 1);
  const json node = admin_.Get(std::string(kNodes) + "/n1").Json();
  EXPECT_EQ(node["metadata"]["labels"]["other"], "writer") << "the other write was not lost";
  EXPECT_EQ(node["metadata"]["labels"]["mine"], "2");
}

TEST_F(KubeWriters, TaintsAndLabelsKeepWhatOthersWrote) {
  ASSERT_EQ(admin_.Post(kNodes, NodeJson("n1")).status, 201);
  PatchNode patch{"n1",
                  {{"karpenter.sh/registered", "true"}},
                  {"a"},
                  {{"karpenter.sh/disrupted", "", TaintEffect::kNoSchedule}},
                  {}};
  auto events = Run(patch);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<CommandSucceeded>(events[0]));
  const json node = admin_.Get(std::string(kNodes) + "/n1").Json();
  EXPECT_EQ(node["metadata"]["labels"]["karpenter.sh/registered"], "true");
  EXPECT_EQ(node["metadata"]["labels"]["kubernetes.io/hostname"], "n1");
  ASSERT_EQ(node["spec"]["taints"].size(), 1u);
  EXPECT_EQ(node["spec"]["taints"][0]["key"], "karpenter.sh/disrupted");
  auto missing = Run(PatchNode{"nope", {{"x", "y"}}, {}, {}, {}});
  EXPECT_EQ(std::get<CommandFailed>(missing.at(0)).code, ErrorCode::kNotFound);
}

TEST_F(KubeWriters, EvictionRefusedByABudgetThenAllowed) {
  RunningWebPod("web-1", "n1");
  WebPdb("web", {{"minAvailable", 1}});
  auto refused = Run(EvictPod{"default", "web-1", "c1"});
  ASSERT_EQ(refused.size(), 1u);
  const auto* failed = std::get_if<CommandFailed>(&refused[0]);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->code, ErrorCode::kDisruptionBudget);
  EXPECT_NE(failed->message.find("429"), std::string::npos) << failed->message;
  EXPECT_EQ(admin_.Get(std::string(kPods) + "/web-1").status, 200) << "the pod stays";

  // A second replica becomes Running: the budget now allows one disruption.
  RunningWebPod("web-2", "n2");
  auto allowed = Run(EvictPod{"default", "web-1", "c1"});
  EXPECT_TRUE(std::holds_alternative<CommandSucceeded>(allowed.at(0)));
  EXPECT_EQ(admin_.Get(std::string(kPods) + "/web-1").status, 404);
}

// Karpenter's eviction queue: a pod under two PodDisruptionBudgets (the API server answers
// 500 "more than one PodDisruptionBudget") is a refusal to try again later, not an error; a
// pod that is gone is done.
TEST_F(KubeWriters, EvictionUnderTwoBudgetsIsRefusedAndOfAGonePodIsDone) {
  RunningWebPod("web-1", "n1");
  WebPdb("web-a", {{"maxUnavailable", 1}});
  WebPdb("web-b", {{"maxUnavailable", 1}});
  auto refused = Run(EvictPod{"default", "web-1", "c1"});
  ASSERT_EQ(refused.size(), 1u);
  const auto* failed = std::get_if<CommandFailed>(&refused[0]);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->code, ErrorCode::kDisruptionBudget) << failed->message;
  EXPECT_EQ(admin_.Get(std::string(kPods) + "/web-1").status, 200) << "the pod stays";
  auto gone = Run(EvictPod{"default", "nobody", "c1"});
  ASSERT_EQ(gone.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<CommandFailed>(gone[0]));
  EXPECT_EQ(std::get<CommandFailed>(gone[0]).code, ErrorCode::kNotFound);
}

TEST_F(KubeWriters, NodeClaimCreateIsIdempotentAndFinalizerHoldsDeletion) {
  NodeClaim claim;
  claim.name = "default-abc12";
  claim.nodepool = "default";
  claim.nodeclass = "default";
  claim.requirements =
      std::vector<Requirement>{{"karpenter.sh/capacity-type", RequirementOp::kIn, {"spot"}, 0}};
  claim.requests.cpu = Millicores{1500};
  claim.requests.memory = Bytes{2LL << 30};
  // Without its NodePool a NodeClaim is not created: it would have no owner.
  const auto orphan = Run(CreateNodeClaim{claim});
  ASSERT_TRUE(std::holds_alternative<CommandFailed>(orphan.at(0)));
  EXPECT_EQ(std::get<CommandFailed>(orphan.at(0)).code, ErrorCode::kNotFound);
  const auto pool = admin_.Post("/apis/karpenter.sh/v1/nodepools", json::parse(R"({
      "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
      "spec": {"template": {"spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": []}}}})"));
  ASSERT_EQ(pool.status, 201);
  EXPECT_TRUE(std::holds_alternative<CommandSucceeded>(Run(CreateNodeClaim{claim}).at(0)));
  EXPECT_TRUE(std::holds_alternative<CommandSucceeded>(Run(CreateNodeClaim{claim}).at(0)))
      << "a re-driven create finds its own object";
  const std::string path = "/apis/karpenter.sh/v1/nodeclaims/default-abc12";
  json object = admin_.Get(path).Json();
  // Owned by its NodePool as Karpenter's are, so the garbage collector deletes it with the pool.
  ASSERT_EQ(object["metadata"]["ownerReferences"].size(), 1u);
  const json& owner = object["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["apiVersion"], "karpenter.sh/v1");
  EXPECT_EQ(owner["kind"], "NodePool");
  EXPECT_EQ(owner["name"], "default");
  EXPECT_EQ(owner["uid"], pool.Json()["metadata"]["uid"]);
  EXPECT_EQ(owner["blockOwnerDeletion"], true);
  EXPECT_EQ(object["spec"]["resources"]["requests"]["cpu"], "1500m");
  EXPECT_EQ(object["spec"]["resources"]["requests"]["memory"], "2Gi");
  EXPECT_EQ(object["metadata"]["finalizers"][0], "karpenter.sh/termination");

  auto status = Run(ClaimCondition(claim.name, "Launched", true, "", "aws:///us-east-1a/i-1", ""));
  EXPECT_TRUE(std::holds_alternative<CommandSucceeded>(status.at(0)));
  Run(ClaimCondition(claim.name, "Registered", true, "", "", "ip-10-0-0-1"));
  object = admin_.Get(path).Json();
  EXPECT_EQ(object["status"]["providerID"], "aws:///us-east-1a/i-1");
  EXPECT_EQ(object["status"]["nodeName"], "ip-10-0-0-1");
  // Launched and Registered merged by type, and Ready, their root, as on Karpenter's NodeClaims:
  // Unknown while Initialized is missing, True once it is True.
  auto condition = [&](const std::string& type) {
    for (const auto& c : object["status"]["conditions"]) {
      if (c["type"] == type) return c;
    }
    return json();
  };
  EXPECT_EQ(object["status"]["conditions"].size(), 3u) << "conditions merge by type";
  EXPECT_EQ(condition("Ready")["status"], "Unknown");
  EXPECT_EQ(condition("Ready")["reason"], "ReconcilingDependents");
  EXPECT_EQ(condition("Ready")["message"], "Initialized=Unknown");
  Run(ClaimCondition(claim.name, "Initialized", true, "", "", ""));
  object = admin_.Get(path).Json();
  EXPECT_EQ(condition("Ready")["status"], "True");
  Run(ClaimCondition(claim.name, "Registered", false, "", "", ""));
  object = admin_.Get(path).Json();
  EXPECT_EQ(condition("Ready")["status"], "False");
  EXPECT_EQ(condition("Ready")["reason"], "UnhealthyDependents");
  EXPECT_EQ(condition("Ready")["message"], "Registered=False");

  EXPECT_TRUE(std::holds_alternative<CommandSucceeded>(Run(DeleteNodeClaim{claim.name}).at(0)));
  object = admin_.Get(path).Json();
  EXPECT_TRUE(object["metadata"].contains("deletionTimestamp")) << "held by the finalizer";
  ASSERT_EQ(admin_.Post(kNodes, NodeJson("ip-10-0-0-1")).status, 201);
  EXPECT_TRUE(std::holds_alternative<CommandSucceeded>(
      Run(RemoveFinalizer{claim.name, "ip-10-0-0-1"}).at(0)));
  EXPECT_EQ(admin_.Get(path).status, 404);
  EXPECT_EQ(admin_.Get(std::string(kNodes) + "/ip-10-0-0-1").status, 404);
  EXPECT_TRUE(std::holds_alternative<CommandSucceeded>(
      Run(RemoveFinalizer{claim.name, "ip-10-0-0-1"}).at(0)))
      << "removing it again is done already";
}

TEST_F(KubeWriters, EventsCarryKarpentersReasons) {
  EXPECT_TRUE(executor_.RecordEvent({"karpenter.sh/v1", "NodeClaim", "", "default-abc12"}, "Normal",
                                    "DisruptionLaunching", "Launching NodeClaim: Underutilized"));
  const json events = admin_.Get("/api/v1/namespaces/default/events").Json();
  ASSERT_EQ(events["items"].size(), 1u);
  EXPECT_EQ(events["items"][0]["reason"], "DisruptionLaunching");
  EXPECT_EQ(events["items"][0]["involvedObject"]["name"], "default-abc12");
}

// As client-go's recorder under Karpenter: an Event repeated on the same object with the same
// type, reason and message is one Event object whose count and lastTimestamp grow; another
// message, reason or object is an Event of its own.
TEST_F(KubeWriters, RepeatedEventsAreOneEventWithACount) {
  constexpr char kEvents[] = "/api/v1/namespaces/default/events";
  const ObjectRef node{"v1", "Node", "", "ip-10-0-0-1"};
  const std::string blocked = "Cannot disrupt Node: state node is nominated for a pending pod";
  constexpr int kRepeats = 7;
  for (int i = 0; i < kRepeats; ++i) {
    ASSERT_TRUE(executor_.RecordEvent(node, "Normal", "DisruptionBlocked", blocked));
  }
  json items = admin_.Get(kEvents).Json()["items"];
  ASSERT_EQ(items.size(), 1u) << items.dump();
  EXPECT_EQ(items[0]["count"], kRepeats);
  EXPECT_EQ(items[0]["message"], blocked);
  EXPECT_EQ(items[0]["involvedObject"]["name"], "ip-10-0-0-1");
  EXPECT_EQ(items[0]["source"]["component"], "karpenter");
  EXPECT_LE(items[0]["firstTimestamp"].get<std::string>(),
            items[0]["lastTimestamp"].get<std::string>());
  EXPECT_EQ(items[0]["metadata"]["name"].get<std::string>().rfind("ip-10-0-0-1.", 0), 0u);

  // Another message, another reason, another object: three more Events, each counted alone.
  ASSERT_TRUE(executor_.RecordEvent(node, "Normal", "DisruptionBlocked", "Node is being deleted"));
  ASSERT_TRUE(executor_.RecordEvent(node, "Normal", "Unconsolidatable", blocked));
  ASSERT_TRUE(executor_.RecordEvent({"v1", "Node", "", "ip-10-0-0-2"}, "Normal",
                                    "DisruptionBlocked", blocked));
  items = admin_.Get(kEvents).Json()["items"];
  ASSERT_EQ(items.size(), 4u) << items.dump();
  std::map<std::string, int> counts;
  for (const auto& e : items) {
    counts[e["involvedObject"]["name"].get<std::string>() + " " + e["reason"].get<std::string>() +
           ": " + e["message"].get<std::string>()] = e["count"];
  }
  EXPECT_EQ(counts,
            (std::map<std::string, int>{{"ip-10-0-0-1 DisruptionBlocked: " + blocked, kRepeats},
                                        {"ip-10-0-0-1 DisruptionBlocked: Node is being deleted", 1},
                                        {"ip-10-0-0-1 Unconsolidatable: " + blocked, 1},
                                        {"ip-10-0-0-2 DisruptionBlocked: " + blocked, 1}}));

  // An Event the API server has expired is written again, under its name, with the count
  // carried on.
  std::string name;
  for (const auto& e : items) {
    if (e["count"] == kRepeats) name = e["metadata"]["name"];
  }
  ASSERT_EQ(admin_.Delete(std::string(kEvents) + "/" + name).status, 200);
  ASSERT_TRUE(executor_.RecordEvent(node, "Normal", "DisruptionBlocked", blocked));
  const json again = admin_.Get(std::string(kEvents) + "/" + name).Json();
  EXPECT_EQ(again["count"], kRepeats + 1) << again.dump();
  EXPECT_EQ(admin_.Get(kEvents).Json()["items"].size(), 4u);
}

TEST_F(KubeWriters, NothingIsWrittenOnceLeadershipIsLost) {
  leader_ = false;
  NodeClaim claim;
  claim.name = "c";
  EXPECT_THROW(Run(CreateNodeClaim{claim}), LeadershipLost);
  EXPECT_EQ(admin_.Get("/apis/karpenter.sh/v1/nodeclaims/c").status, 404);
}

TEST(KubeLeader, OneLeaderAtATimeAndHandOverAfterTheLeaseExpires) {
  ApiServer server;
  Client client_a(Loopback(server.port()));
  Client client_b(Loopback(server.port()));
  LeaseOptions options;
  options.lease_duration = milliseconds(1500);
  options.renew_deadline = milliseconds(1000);
  options.retry_period = milliseconds(200);
  options.identity = "a";
  LeaderElector a(client_a, options);
  options.identity = "b";
  LeaderElector b(client_b, options);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(a.Acquire(stop));
  EXPECT_TRUE(a.IsLeader());
  std::atomic<bool> a_stop{false};
  std::thread renew_a([&] { a.KeepRenewing(a_stop); });
  // While a renews, b never gets it.
  std::atomic<bool> b_stop{false};
  std::atomic<bool> b_won{false};
  std::thread try_b([&] { b_won = b.Acquire(b_stop); });
  std::this_thread::sleep_for(milliseconds(2500));
  EXPECT_FALSE(b_won.load());
  EXPECT_TRUE(a.IsLeader());
  // a pauses (stops renewing, as a process stopped by SIGSTOP): it must stop counting itself
  // leader before b can take the lease.
  a_stop = true;
  renew_a.join();
  const auto paused = std::chrono::steady_clock::now();
  while (a.IsLeader()) std::this_thread::sleep_for(milliseconds(10));
  const auto a_gave_up = std::chrono::steady_clock::now();
  try_b.join();
  const auto b_took = std::chrono::steady_clock::now();
  EXPECT_TRUE(b_won.load());
  EXPECT_TRUE(b.IsLeader());
  EXPECT_LT(a_gave_up, b_took) << "no moment with two leaders";
  EXPECT_LE(a_gave_up - paused, milliseconds(1100));
  EXPECT_GE(b.transitions(), 1);
  // b releases on shutdown: a takes over at once.
  b.Release();
  EXPECT_FALSE(b.IsLeader());
  const auto release = std::chrono::steady_clock::now();
  ASSERT_TRUE(a.Acquire(stop));
  EXPECT_LT(std::chrono::steady_clock::now() - release, milliseconds(1400));
}

// Runs one of tests/deploy's Python checks on `input` (written to a JSON file).
void ExpectCheckPasses(const std::string& script, const json& input, const std::string& more = "") {
  TempDir dir;
  const auto file = dir.path() / "input.json";
  std::ofstream(file) << input.dump();
  const std::string command = "python3 " + script + " " + file.string() + " " + more;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

// Runs commands through an executor, each expected to succeed.
class Commands {
 public:
  explicit Commands(KubeExecutor& executor) : executor_(executor) {}
  void operator()(CommandBody body) {
    const bool answered = !std::holds_alternative<RecordKubeEvent>(body);  // Best effort.
    auto events = executor_.Execute(Command{CommandId{next_++}, Seq{1}, std::move(body)});
    if (!answered) {
      EXPECT_TRUE(events.empty());
      return;
    }
    ASSERT_FALSE(events.empty());
    const auto* failed = std::get_if<CommandFailed>(&events.front());
    EXPECT_EQ(failed, nullptr) << failed->message;
  }

 private:
  KubeExecutor& executor_;
  std::uint64_t next_ = 1;
};

// Every call the adapter makes — every informer, every writer, the lease — against the test
// server, whose request log is then compared with the rendered ClusterRole and Role
// (tests/deploy/rbac_check.py): the roles grant exactly what the code uses, nothing more.
TEST(KubeRbac, RolesGrantExactlyWhatTheAdapterCalls) {
  ApiServer server;
  testing::Client admin(server.port());
  ASSERT_EQ(admin.Post(kNodes, NodeJson("n1")).status, 201);
  ASSERT_EQ(admin.Post(kPods, PodJson("web-1", 0, "n1")).status, 201);
  ASSERT_EQ(admin.Post(kPods, PodJson("web-2", 0, "n1")).status, 201);
  ASSERT_EQ(admin
                .Post("/apis/karpenter.sh/v1/nodepools",
                      {{"apiVersion", "karpenter.sh/v1"},
                       {"kind", "NodePool"},
                       {"metadata", {{"name", "default"}}},
                       {"spec", {{"template", {{"spec", {{"nodeClassRef", {{"name", "d"}}}}}}}}}})
                .status,
            201);
  ASSERT_EQ(admin
                .Post("/apis/karpenter.k8s.aws/v1/ec2nodeclasses",
                      {{"apiVersion", "karpenter.k8s.aws/v1"},
                       {"kind", "EC2NodeClass"},
                       {"metadata", {{"name", "d"}}},
                       {"spec", {{"role", "r"}}}})
                .status,
            201);
  ASSERT_EQ(admin
                .Post("/apis/karpenter.sh/v1alpha1/nodeoverlays",
                      {{"apiVersion", "karpenter.sh/v1alpha1"},
                       {"kind", "NodeOverlay"},
                       {"metadata", {{"name", "fuse"}}},
                       {"spec", {{"requirements", json::array()}, {"price", "0.5"}}}})
                .status,
            201);
  const std::size_t before = admin.Get("/_test/requests").Json().size();

  Client client(Loopback(server.port()));
  KubeSource source(client);
  source.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!source.synced() && std::chrono::steady_clock::now() < deadline) {
    source.Drain(milliseconds(50));
  }
  // Every informer has listed; wait until each one's watch has reached the server too.
  auto watching = [&] {
    std::set<std::string> watched;
    for (const auto& r : admin.Get("/_test/requests").Json()) {
      if (r["verb"] == "watch") watched.insert(r["resource"].get<std::string>());
    }
    return watched.size() == WatchedResources().size();
  };
  while (!watching() && std::chrono::steady_clock::now() < deadline + std::chrono::seconds(10)) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  source.Stop();
  ASSERT_TRUE(source.synced());

  KubeExecutor executor(client, {}, [] { return true; });
  Commands run(executor);
  NodeClaim claim;
  claim.name = "default-x";
  claim.nodepool = "default";
  claim.nodeclass = "d";
  run(CreateNodeClaim{claim});
  run(ClaimCondition(claim.name, "Launched", true, "", "aws:///z/i-1", ""));
  run(PatchNodePoolStatus{"default", NodePoolStatus{true, 1, {}, true, {}}});
  run(PatchNode{"n1", {{"karpenter.sh/registered", "true"}}, {"a"}, {}, {}});
  run(PatchPodDeletionCost{"default", "web-1", "", -1});
  run(EvictPod{"default", "web-1", claim.name});
  run(DeletePod{"default", "web-2", claim.name});
  run(DeleteNodeClaim{claim.name});
  run(RemoveFinalizer{claim.name, "n1"});
  NodeClassResolution status;
  status.amis = {{"ami-1", "al2023", "amd64", ""}};
  status.subnets = {{"subnet-1", "us-east-1a", "", 100}};
  status.security_groups = {{"sg-1", ""}};
  run(PatchNodeClassStatus{"d", status});
  run(PatchNodeOverlayStatus{"fuse", {false, "Conflict", "conflict with another overlay"}});
  // The EC2NodeClass finalizer, added and removed.
  run(SetNodeClassFinalizer{"d", true});
  run(SetNodeClassFinalizer{"d", false});
  for (int i = 0; i < 2; ++i) {  // create, then patch its count
    run(RecordKubeEvent{{"karpenter.sh/v1", "NodeClaim", "", claim.name},
                        "Normal",
                        "Launched",
                        "Status condition transitioned"});
  }
  LeaseOptions lease;
  lease.identity = "rbac";
  lease.retry_period = milliseconds(50);
  LeaderElector elector(client, lease);
  std::atomic<bool> stop{false};
  ASSERT_TRUE(elector.Acquire(stop));  // get (404), create
  std::thread renew([&] { elector.KeepRenewing(stop); });
  std::this_thread::sleep_for(milliseconds(200));  // get, update
  stop = true;
  renew.join();
  elector.Release();

  const json all = admin.Get("/_test/requests").Json();
  json used = json::array();
  for (std::size_t i = before; i < all.size(); ++i) used.push_back(all[i]);
  ExpectCheckPasses(TENON_RBAC_CHECK, used, TENON_DEPLOY_DIR);
}

// What the writers put into the API — a NodeClaim as created, and the NodeClaim, NodePool and
// EC2NodeClass statuses they patch — is what the CRDs in deploy/ accept (a real API server
// would refuse the write otherwise).
TEST(KubeWriterSchemas, WrittenObjectsPassTheCrdSchemas) {
  ApiServer server;
  testing::Client admin(server.port());
  ASSERT_EQ(admin
                .Post("/apis/karpenter.sh/v1/nodepools", json::parse(R"({
      "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
      "spec": {"template": {"spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "d"},
        "requirements": []}}}})"))
                .status,
            201);
  ASSERT_EQ(admin
                .Post("/apis/karpenter.k8s.aws/v1/ec2nodeclasses", json::parse(R"({
      "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "d"},
      "spec": {"role": "KarpenterNodeRole", "amiSelectorTerms": [{"alias": "al2023@latest"}],
               "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
               "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}]}})"))
                .status,
            201);
  Client client(Loopback(server.port()));
  KubeExecutor executor(client, {}, [] { return true; });
  NodeClaim claim;
  claim.name = "default-x7k2p";
  claim.nodepool = "default";
  claim.nodeclass = "d";
  claim.requirements = std::vector<Requirement>{
      {label::kCapacityType, RequirementOp::kIn, {"spot", "on-demand"}, 0},
      {label::kInstanceType, RequirementOp::kIn, {"m5.large", "m6i.large"}, 2},
      {label::kInstanceGeneration, RequirementOp::kGt, {"4"}, 0}};
  claim.requests.cpu = Millicores{3500};
  claim.requests.memory = Bytes{6LL << 30};
  claim.requests.pods = 4;
  Commands run(executor);
  json objects_not_ready;
  run(CreateNodeClaim{claim});
  // The core explains a launch in prose; the CRD takes only a CamelCase reason, so the prose
  // goes to the condition's message.
  const std::string launched = "m5.2xlarge in us-east-1a (on-demand, 384000 micro-USD/h)";
  PatchNodeClaimStatus launch =
      ClaimCondition(claim.name, "Launched", true, launched, "aws:///us-east-1a/i-0abc", "");
  // And the instance's details, as Karpenter fills a launched NodeClaim in.
  launch.labels = {{label::kInstanceType, "m5.2xlarge"},
                   {label::kZone, "us-east-1a"},
                   {label::kCapacityType, "on-demand"},
                   {label::kArch, "amd64"}};
  launch.image_id = "ami-0123456789abcdef0";
  launch.capacity = {Millicores{8000}, Bytes{32LL << 30}, 58, {}};
  launch.allocatable = {Millicores{7910}, Bytes{30LL << 30}, 58, {}};
  run(launch);
  run(ClaimCondition(claim.name, "Registered", false, "NodeNotFound", "", ""));
  const json written = admin.Get("/apis/karpenter.sh/v1/nodeclaims/default-x7k2p").Json();
  EXPECT_EQ(written["metadata"]["labels"][label::kInstanceType], "m5.2xlarge");
  EXPECT_EQ(written["metadata"]["labels"][label::kZone], "us-east-1a");
  EXPECT_EQ(written["metadata"]["labels"][label::kCapacityType], "on-demand");
  EXPECT_EQ(written["metadata"]["labels"][label::kNodePool], "default") << "kept";
  EXPECT_EQ(written["status"]["imageID"], "ami-0123456789abcdef0");
  EXPECT_EQ(written["status"]["capacity"]["cpu"], "8");
  EXPECT_EQ(written["status"]["allocatable"]["memory"], "30Gi");
  EXPECT_EQ(written["status"]["allocatable"]["pods"], "58");
  for (const json& c : written["status"]["conditions"]) {
    if (c["type"] == "Launched") {
      EXPECT_EQ(c["reason"], "Launched");
      EXPECT_EQ(c["message"], launched);
    }
    if (c["type"] == "Registered") {
      EXPECT_EQ(c["reason"], "NodeNotFound");
      EXPECT_EQ(c["message"], "");
    }
  }
  NodePoolStatus pool_status;
  pool_status.registration_healthy = true;
  pool_status.nodes = 1;
  pool_status.resources.cpu = Millicores{4000};
  pool_status.resources.memory = Bytes{8LL << 30};
  pool_status.validated = true;
  pool_status.nodeclass_unready = "NodeClassNotFound";
  run(PatchNodePoolStatus{"default", pool_status});
  {
    // Karpenter's NodePool readiness: Ready is the root of ValidationSucceeded and
    // NodeClassReady, which says why the EC2NodeClass keeps the pool from being Ready.
    std::map<std::string, json> conditions;
    const json pool = admin.Get("/apis/karpenter.sh/v1/nodepools/default").Json();
    for (const json& c : pool["status"]["conditions"]) conditions[c["type"]] = c;
    EXPECT_EQ(conditions["ValidationSucceeded"]["status"], "True");
    EXPECT_EQ(conditions["NodeClassReady"]["status"], "False");
    EXPECT_EQ(conditions["NodeClassReady"]["reason"], "NodeClassNotFound");
    EXPECT_EQ(conditions["NodeClassReady"]["message"], "NodeClass not found on cluster");
    EXPECT_EQ(conditions["Ready"]["status"], "False");
    EXPECT_EQ(conditions["Ready"]["reason"], "UnhealthyDependents");
    EXPECT_EQ(conditions["NodeRegistrationHealthy"]["status"], "True");
  }
  NodeClassResolution nodeclass_status;
  nodeclass_status.amis = {{"ami-0123456789abcdef0", "al2023-ami", "amd64", ""}};
  nodeclass_status.subnets = {{"subnet-1", "us-east-1a", "use1-az1", 4000}};
  nodeclass_status.security_groups = {{"sg-1", "nodes"}};
  nodeclass_status.instance_profile = "tenon_profile";
  nodeclass_status.reason = "AMINotFound";
  nodeclass_status.message = "no AMI matched: al2023@v20240807";
  auto status_written = executor.Execute(
      Command{CommandId{700}, Seq{1}, PatchNodeClassStatus{"d", nodeclass_status}});
  ASSERT_EQ(status_written, (std::vector<Event>{CommandSucceeded{CommandId{700}}}));
  objects_not_ready = admin.Get("/apis/karpenter.k8s.aws/v1/ec2nodeclasses/d").Json();
  nodeclass_status.reason.clear();
  nodeclass_status.message.clear();
  status_written = executor.Execute(
      Command{CommandId{701}, Seq{1}, PatchNodeClassStatus{"d", nodeclass_status}});
  ASSERT_EQ(status_written, (std::vector<Event>{CommandSucceeded{CommandId{701}}}));

  // A NodeOverlay that lost a conflict: ValidationSucceeded False, and Ready with it.
  ASSERT_EQ(admin
                .Post("/apis/karpenter.sh/v1alpha1/nodeoverlays", json::parse(R"({
      "apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": "a"},
      "spec": {"requirements": [], "price": "0.5"}})"))
                .status,
            201);
  run(PatchNodeOverlayStatus{"a", {false, "Conflict", "conflict with another overlay"}});
  {
    std::map<std::string, json> conditions;
    const json overlay = admin.Get("/apis/karpenter.sh/v1alpha1/nodeoverlays/a").Json();
    for (const json& c : overlay["status"]["conditions"]) conditions[c["type"]] = c;
    EXPECT_EQ(conditions["ValidationSucceeded"]["status"], "False");
    EXPECT_EQ(conditions["ValidationSucceeded"]["reason"], "Conflict");
    EXPECT_EQ(conditions["ValidationSucceeded"]["message"], "conflict with another overlay");
    EXPECT_EQ(conditions["Ready"]["status"], "False");
  }

  json objects = json::array({NodeClaimObject(claim), objects_not_ready});
  for (const char* path :
       {"/apis/karpenter.sh/v1/nodeclaims/default-x7k2p", "/apis/karpenter.sh/v1/nodepools/default",
        "/apis/karpenter.k8s.aws/v1/ec2nodeclasses/d",
        "/apis/karpenter.sh/v1alpha1/nodeoverlays/a"}) {
    json object = admin.Get(path).Json();
    ASSERT_TRUE(object.contains("status")) << path;
    objects.push_back(object);
  }
  ExpectCheckPasses(TENON_VALIDATE_OBJECTS, objects);
}

// A condition's reason is a CamelCase code as the CRDs' pattern has it; anything else is kept
// as the message under the condition's type.
TEST(KubeWriterSchemas, ConditionReasonsAreCodesAndProseIsTheMessage) {
  EXPECT_EQ(ConditionReason("NodeNotFound", "Registered").reason, "NodeNotFound");
  EXPECT_EQ(ConditionReason("NodeNotFound", "Registered").message, "");
  EXPECT_EQ(ConditionReason("Drifted:NodePool", "Drifted").reason, "Drifted:NodePool");
  for (const std::string& text :
       std::vector<std::string>{"", "Launch Failed", "m5.large in us-east-1a (spot)", "_x",
                                "Trailing:", std::string(1025, 'A')}) {
    const ConditionText c = ConditionReason(text, "Launched");
    EXPECT_EQ(c.reason, "Launched") << text;
    EXPECT_EQ(c.message, text) << text;
  }
  // A drift, as the core words it: Karpenter's drift reason, then the particulars.
  const ConditionText drift = ConditionReason(
      "AMIDrift: AMI ami-1 is no longer selected by EC2NodeClass default", "Drifted");
  EXPECT_EQ(drift.reason, "AMIDrift");
  EXPECT_EQ(drift.message, "AMIDrift: AMI ami-1 is no longer selected by EC2NodeClass default");
  EXPECT_EQ(ConditionReason("node ip-1: gone", "Registered").reason, "Registered");
}

// Refused writes are the ones someone must hear of: not a deletion of what is gone, a status
// write to an object deleted since it was read, a conflict (retried) or an eviction a PDB
// refused.
TEST(KubeWriteFailures, RefusedWritesAreWarnedAndCounted) {
  EXPECT_TRUE(IsRefusedWrite("PATCH", "/apis/karpenter.sh/v1/nodeclaims/a/status", 422));
  EXPECT_TRUE(IsRefusedWrite("POST", "/api/v1/namespaces/default/events", 403));
  EXPECT_TRUE(IsRefusedWrite("POST", "/api/v1/namespaces/d/pods/p/eviction", 500));
  EXPECT_FALSE(IsRefusedWrite("POST", "/api/v1/namespaces/d/pods/p/eviction", 429));
  EXPECT_FALSE(IsRefusedWrite("DELETE", "/api/v1/nodes/n", 404));
  EXPECT_FALSE(IsRefusedWrite("PATCH", "/apis/karpenter.sh/v1/nodepools/default/status", 404));
  EXPECT_TRUE(IsRefusedWrite("PATCH", "/api/v1/nodes/n", 404));
  EXPECT_FALSE(IsRefusedWrite("PATCH", "/api/v1/nodes/n", 409));
  EXPECT_FALSE(IsRefusedWrite("GET", "/api/v1/nodes/n", 403));
  EXPECT_FALSE(IsRefusedWrite("PATCH", "/api/v1/nodes/n", 200));

  ApiServer server;
  ClusterConfig config = Loopback(server.port());
  config.token = "not-the-token";  // Every request is refused with 401.
  Client client(config);
  int refused = 0;
  ExecutorOptions options;
  options.on_write_failed = [&refused] { ++refused; };
  KubeExecutor executor(client, options, [] { return true; });
  EXPECT_FALSE(executor.RecordEvent({"v1", "Node", "", "n"}, "Normal", "Reason", "text"));
  EXPECT_EQ(refused, 1);
}

}  // namespace
}  // namespace tenon::kube
