// The contract of the test Kubernetes API server (tests/kube/apiserver.py): the semantics of the
// real kube-apiserver that the kube adapter relies on, proven over HTTP. Each test starts a fresh
// server on loopback.
#include "tests/kube/apiserver.h"

#include <gtest/gtest.h>

#include <set>

namespace tenon::kube::testing {
namespace {

using std::chrono::milliseconds;

constexpr char kPods[] = "/api/v1/namespaces/default/pods";
constexpr char kNodes[] = "/api/v1/nodes";
constexpr char kNodePools[] = "/apis/karpenter.sh/v1/nodepools";
constexpr char kNodeClaims[] = "/apis/karpenter.sh/v1/nodeclaims";
constexpr char kPdbs[] = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
constexpr char kLeases[] = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";

long Rv(const json& object) {
  return std::stol(object["metadata"]["resourceVersion"].get<std::string>());
}

json Pod(const std::string& name, const std::string& phase = "Running",
         const std::string& node = "node-a") {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"app", "web"}}}}},
          {"spec", {{"nodeName", node}}},
          {"status", {{"phase", phase}}}};
}

json NodeClaim(const std::string& name) {
  return {{"apiVersion", "karpenter.sh/v1"},
          {"kind", "NodeClaim"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"nodeClassRef",
             {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", "default"}}}}}};
}

class KubeApiServer : public ::testing::Test {
 protected:
  std::string WatchPath(const std::string& collection, long rv, const std::string& extra = "") {
    return collection + "?watch=1&resourceVersion=" + std::to_string(rv) + extra;
  }
  // Waits until the server has `count` watches open, so a hook called next reaches them.
  void WaitForOpenWatches(int count) {
    for (int i = 0; i < 100; ++i) {
      if (client_.Get("/_test/stats").Json()["openWatches"] == count) return;
      std::this_thread::sleep_for(milliseconds(20));
    }
    FAIL() << "the server never had " << count << " watches open";
  }
  // Creates a pod, then writes its status (a create ignores status, as the real server does).
  Response CreatePod(const json& pod) {
    const Response created = client_.Post(kPods, pod);
    if (created.status != 201) return created;
    return client_.MergePatch(
        std::string(kPods) + "/" + pod["metadata"]["name"].get<std::string>() + "/status",
        {{"status", pod["status"]}});
  }
  long CurrentRv() {
    return std::stol(client_.Get("/_test/stats").Json()["resourceVersion"].get<std::string>());
  }

  ApiServer server_;
  Client client_{server_.port()};
};

TEST_F(KubeApiServer, CreateSetsMetadataAndResourceVersionsIncrease) {
  const Response node = client_.Post(kNodes, {{"metadata", {{"name", "node-a"}}}});
  ASSERT_EQ(node.status, 201) << node.body;
  const json created = node.Json();
  EXPECT_EQ(created["kind"], "Node");
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE(created["metadata"]["creationTimestamp"].get<std::string>().empty());
  EXPECT_EQ(created["metadata"]["generation"], 1);
  EXPECT_TRUE(created["metadata"]["resourceVersion"].is_string());
  EXPECT_FALSE(created["metadata"].contains("namespace"));  // Nodes are cluster-scoped.

  const json pod = client_.Post(kPods, Pod("web-1")).Json();
  EXPECT_GT(Rv(pod), Rv(created));
  EXPECT_EQ(pod["metadata"]["namespace"], "default");

  const Response again = client_.Post(kPods, Pod("web-1"));
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.Json()["reason"], "AlreadyExists");
  const Response missing = client_.Get(std::string(kPods) + "/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.Json()["kind"], "Status");
  EXPECT_EQ(missing.Json()["reason"], "NotFound");
  // Scope is enforced: no namespaced nodes, no cluster-level path to one pod.
  EXPECT_EQ(client_.Get("/api/v1/namespaces/default/nodes/node-a").status, 404);
  EXPECT_EQ(client_.Get("/api/v1/pods/web-1").status, 404);
  EXPECT_EQ(client_.Get("/api/v1/pods").Json()["items"].size(), 1u);
}

TEST_F(KubeApiServer, ListPagesWithContinueFromOneSnapshot) {
  for (int i = 0; i < 5; ++i)
    ASSERT_EQ(client_.Post(kPods, Pod("p" + std::to_string(i))).status, 201);
  const json first = client_.Get(std::string(kPods) + "?limit=2").Json();
  ASSERT_EQ(first["items"].size(), 2u);
  const std::string list_rv = first["metadata"]["resourceVersion"];
  EXPECT_EQ(first["metadata"]["remainingItemCount"], 3);
  // Changes after the first page do not show in the later pages.
  ASSERT_EQ(client_.Post(kPods, Pod("p9")).status, 201);
  ASSERT_EQ(client_.Delete(std::string(kPods) + "/p4").status, 200);

  std::vector<std::string> names;
  for (const json& item : first["items"]) names.push_back(item["metadata"]["name"]);
  std::string token = first["metadata"]["continue"];
  for (int page = 0; page < 5 && !token.empty(); ++page) {
    const json next = client_.Get(std::string(kPods) + "?limit=2&continue=" + token).Json();
    EXPECT_EQ(next["metadata"]["resourceVersion"], list_rv);
    for (const json& item : next["items"]) names.push_back(item["metadata"]["name"]);
    token = next["metadata"].value("continue", "");
  }
  EXPECT_EQ(names, (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4"}));
  // A fresh list sees the present.
  const json now = client_.Get(kPods).Json();
  EXPECT_GT(std::stol(now["metadata"]["resourceVersion"].get<std::string>()), std::stol(list_rv));
  EXPECT_EQ(now["items"].size(), 5u);
  EXPECT_FALSE(now["metadata"].contains("continue"));
}

TEST_F(KubeApiServer, ListFiltersByLabelAndFieldSelectors) {
  ASSERT_EQ(client_.Post(kPods, Pod("on-a", "Running", "node-a")).status, 201);
  ASSERT_EQ(client_.Post(kPods, Pod("on-b", "Running", "node-b")).status, 201);
  json other = Pod("other");
  other["metadata"]["labels"] = {{"app", "db"}};
  ASSERT_EQ(client_.Post(kPods, other).status, 201);

  const json on_b = client_.Get("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-b").Json();
  ASSERT_EQ(on_b["items"].size(), 1u);
  EXPECT_EQ(on_b["items"][0]["metadata"]["name"], "on-b");
  const json web = client_.Get(std::string(kPods) + "?labelSelector=app%3Dweb").Json();
  EXPECT_EQ(web["items"].size(), 2u);
  const json not_web =
      client_.Get(std::string(kPods) + "?labelSelector=app%20notin%20(web)").Json();
  ASSERT_EQ(not_web["items"].size(), 1u);
  EXPECT_EQ(not_web["items"][0]["metadata"]["name"], "other");

  const Response bad = client_.Get(std::string(kPods) + "?fieldSelector=spec.hostname%3Dx");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.Json()["kind"], "Status");
}

TEST_F(KubeApiServer, WatchFromResourceVersionDeliversLaterChangesInOrder) {
  const json before = client_.Post(kPods, Pod("before")).Json();
  const json a = client_.Post(kPods, Pod("a")).Json();
  Watch watch(server_.port(), WatchPath(kPods, Rv(a)));
  json b = client_.Post(kPods, Pod("b")).Json();
  b["metadata"]["labels"]["tier"] = "front";
  ASSERT_EQ(client_.Put(std::string(kPods) + "/b", b).status, 200);
  ASSERT_EQ(client_.Delete(std::string(kPods) + "/a").status, 200);
  ASSERT_EQ(client_.Post(kNodes, {{"metadata", {{"name", "n"}}}}).status, 201);  // Not a pod.

  const std::vector<std::pair<std::string, std::string>> expected = {
      {"ADDED", "b"}, {"MODIFIED", "b"}, {"DELETED", "a"}};
  long last_rv = Rv(a);
  for (const auto& [type, name] : expected) {
    const std::optional<json> event = watch.NextChange();
    ASSERT_TRUE(event.has_value()) << "missing " << type << " " << name;
    EXPECT_EQ((*event)["type"], type);
    EXPECT_EQ((*event)["object"]["metadata"]["name"], name);
    EXPECT_GT(Rv((*event)["object"]), last_rv);
    last_rv = Rv((*event)["object"]);
  }
  EXPECT_EQ(last_rv + 1, CurrentRv());  // Then came only the node.
  (void)before;
}

TEST_F(KubeApiServer, WatchWithoutResourceVersionStartsWithWhatExists) {
  ASSERT_EQ(client_.Post(kPods, Pod("a")).status, 201);
  ASSERT_EQ(client_.Post(kPods, Pod("b")).status, 201);
  Watch watch(server_.port(), std::string(kPods) + "?watch=1");
  for (const char* name : {"a", "b"}) {
    const std::optional<json> event = watch.NextChange();
    ASSERT_TRUE(event.has_value());
    EXPECT_EQ((*event)["type"], "ADDED");
    EXPECT_EQ((*event)["object"]["metadata"]["name"], name);
  }
  ASSERT_EQ(client_.Delete(std::string(kPods) + "/a").status, 200);
  const std::optional<json> deleted = watch.NextChange();
  ASSERT_TRUE(deleted.has_value());
  EXPECT_EQ((*deleted)["type"], "DELETED");
}

TEST_F(KubeApiServer, SelectorWatchSeesObjectsEnterAndLeaveTheSelection) {
  const json a = client_.Post(kPods, Pod("a")).Json();
  Watch watch(server_.port(), WatchPath(kPods, Rv(a), "&labelSelector=tier%3Dfront"));
  const std::string path = std::string(kPods) + "/a";
  ASSERT_EQ(client_.MergePatch(path, {{"metadata", {{"labels", {{"tier", "front"}}}}}}).status,
            200);
  ASSERT_EQ(client_.MergePatch(path, {{"metadata", {{"annotations", {{"x", "y"}}}}}}).status, 200);
  ASSERT_EQ(client_.MergePatch(path, {{"metadata", {{"labels", {{"tier", nullptr}}}}}}).status,
            200);
  ASSERT_EQ(client_.MergePatch(path, {{"metadata", {{"annotations", {{"x", "z"}}}}}}).status, 200);
  ASSERT_EQ(client_.Delete(path).status, 200);
  for (const char* type : {"ADDED", "MODIFIED", "DELETED"}) {
    const std::optional<json> event = watch.NextChange();
    ASSERT_TRUE(event.has_value()) << "missing " << type;
    EXPECT_EQ((*event)["type"], type);
  }
  EXPECT_FALSE(watch.Next(milliseconds(500)).has_value());  // Changes outside it are not seen.
}

TEST_F(KubeApiServer, WatchSendsBookmarksAndEndsAtTimeout) {
  const json a = client_.Post(kPods, Pod("a")).Json();
  Watch watch(server_.port(),
              WatchPath(kPods, Rv(a), "&allowWatchBookmarks=true&timeoutSeconds=1"));
  const std::optional<json> event = watch.Next();
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ((*event)["type"], "BOOKMARK");
  EXPECT_EQ((*event)["object"]["kind"], "Pod");
  EXPECT_GE(Rv((*event)["object"]), Rv(a));
  CURLcode result = CURLE_ABORTED_BY_CALLBACK;
  ASSERT_TRUE(watch.Ended(milliseconds(3000), &result));
  EXPECT_EQ(result, CURLE_OK);  // A clean end of the chunked stream.

  Watch quiet(server_.port(), WatchPath(kPods, Rv(a), "&timeoutSeconds=1"));
  EXPECT_FALSE(quiet.Next(milliseconds(1500)).has_value());  // No bookmarks unless asked for.
}

TEST_F(KubeApiServer, CompactionExpiresOldResourceVersionsWith410) {
  const json a = client_.Post(kPods, Pod("a")).Json();
  ASSERT_EQ(client_.Post(kPods, Pod("b")).status, 201);
  const json page = client_.Get(std::string(kPods) + "?limit=1").Json();
  ASSERT_EQ(client_.Post("/_test/compact", json::object()).status, 200);
  ASSERT_EQ(client_.Post(kPods, Pod("c")).status, 201);

  // As the real server's watch cache answers: 200, one ERROR event with a 410 Status, the end.
  const Response old_watch = client_.Get(WatchPath(kPods, Rv(a)));
  EXPECT_EQ(old_watch.status, 200);
  const json error = old_watch.Json();
  EXPECT_EQ(error["type"], "ERROR");
  EXPECT_EQ(error["object"]["code"], 410);
  EXPECT_EQ(error["object"]["reason"], "Expired");
  // Told to, it answers HTTP 410 instead, which a client must handle the same way.
  ASSERT_EQ(client_.Post("/_test/config", {{"expiredWatch", "http"}}).status, 200);
  const Response old_watch_http = client_.Get(WatchPath(kPods, Rv(a)));
  EXPECT_EQ(old_watch_http.status, 410);
  EXPECT_EQ(old_watch_http.Json()["code"], 410);
  EXPECT_EQ(client_.Post("/_test/config", {{"expiredWatch", "sometimes"}}).status, 400);
  const Response old_page = client_.Get(
      std::string(kPods) + "?limit=1&continue=" + page["metadata"]["continue"].get<std::string>());
  EXPECT_EQ(old_page.status, 410);

  // A relist gives a resourceVersion to watch from again.
  const json relist = client_.Get(kPods).Json();
  EXPECT_EQ(relist["items"].size(), 3u);
  Watch watch(
      server_.port(),
      WatchPath(kPods, std::stol(relist["metadata"]["resourceVersion"].get<std::string>())));
  ASSERT_EQ(client_.Post(kPods, Pod("d")).status, 201);
  const std::optional<json> event = watch.NextChange();
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ((*event)["object"]["metadata"]["name"], "d");
}

TEST(KubeApiServerHistory, ResourceVersionsOutsideTheWindowAre410) {
  ApiServer server(200, 3);  // Keeps the last three events.
  Client client(server.port());
  std::vector<long> rvs;
  for (int i = 0; i < 5; ++i) {
    const Response created = client.Post(kPods, Pod("p" + std::to_string(i)));
    ASSERT_EQ(created.status, 201);
    rvs.push_back(Rv(created.Json()));
  }
  const Response expired =
      client.Get(std::string(kPods) + "?watch=1&resourceVersion=" + std::to_string(rvs[0]));
  EXPECT_EQ(expired.Json()["type"], "ERROR");
  EXPECT_EQ(expired.Json()["object"]["code"], 410);
  Watch watch(server.port(),
              std::string(kPods) + "?watch=1&resourceVersion=" + std::to_string(rvs[1]));
  for (int i = 2; i < 5; ++i) {
    const std::optional<json> event = watch.NextChange();
    ASSERT_TRUE(event.has_value());
    EXPECT_EQ(Rv((*event)["object"]), rvs[i]);
  }
}

TEST_F(KubeApiServer, OpenWatchGetsErrorEvent410OnCompaction) {
  const json a = client_.Post(kPods, Pod("a")).Json();
  Watch watch(server_.port(), WatchPath(kPods, Rv(a)));
  WaitForOpenWatches(1);
  ASSERT_EQ(client_.Post("/_test/compact", json::object()).status, 200);
  const std::optional<json> event = watch.NextChange();
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ((*event)["type"], "ERROR");
  EXPECT_EQ((*event)["object"]["kind"], "Status");
  EXPECT_EQ((*event)["object"]["code"], 410);
  EXPECT_TRUE(watch.Ended(milliseconds(2000)));
}

TEST_F(KubeApiServer, DroppedWatchConnectionBreaksTheStream) {
  const json a = client_.Post(kPods, Pod("a")).Json();
  Watch watch(server_.port(), WatchPath(kPods, Rv(a)));
  WaitForOpenWatches(1);
  ASSERT_EQ(client_.Post("/_test/drop-watches", json::object()).status, 200);
  CURLcode result = CURLE_OK;
  ASSERT_TRUE(watch.Ended(milliseconds(2000), &result));
  EXPECT_NE(result, CURLE_OK);  // Not a clean end: no terminating chunk.
  // Nothing was lost: a new watch from the same resourceVersion sees what came after.
  ASSERT_EQ(client_.Post(kPods, Pod("b")).status, 201);
  Watch again(server_.port(), WatchPath(kPods, Rv(a)));
  const std::optional<json> event = again.NextChange();
  ASSERT_TRUE(event.has_value());
  EXPECT_EQ((*event)["object"]["metadata"]["name"], "b");
}

TEST_F(KubeApiServer, StaleUpdateConflictsAndPatchesBumpGenerationOnSpecOnly) {
  const json pool = client_
                        .Post(kNodePools, {{"apiVersion", "karpenter.sh/v1"},
                                           {"kind", "NodePool"},
                                           {"metadata", {{"name", "default"}}},
                                           {"spec", {{"weight", 10}}}})
                        .Json();
  json update = pool;
  update["spec"]["weight"] = 20;
  const Response fresh = client_.Put(std::string(kNodePools) + "/default", update);
  ASSERT_EQ(fresh.status, 200) << fresh.body;
  EXPECT_GT(Rv(fresh.Json()), Rv(pool));
  EXPECT_EQ(fresh.Json()["metadata"]["generation"], 2);

  update["spec"]["weight"] = 30;  // Still carries the first resourceVersion.
  const Response stale = client_.Put(std::string(kNodePools) + "/default", update);
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.Json()["reason"], "Conflict");
  update["metadata"].erase("resourceVersion");  // Custom resources need the precondition.
  EXPECT_EQ(client_.Put(std::string(kNodePools) + "/default", update).status, 422);

  const Response stale_patch =
      client_.MergePatch(std::string(kNodePools) + "/default",
                         {{"metadata", {{"resourceVersion", pool["metadata"]["resourceVersion"]}}},
                          {"spec", {{"weight", 5}}}});
  EXPECT_EQ(stale_patch.status, 409);
  const Response labelled = client_.MergePatch(std::string(kNodePools) + "/default",
                                               {{"metadata", {{"labels", {{"team", "a"}}}}}});
  ASSERT_EQ(labelled.status, 200) << labelled.body;
  EXPECT_EQ(labelled.Json()["metadata"]["generation"], 2);  // Metadata is not spec.
  EXPECT_EQ(labelled.Json()["spec"]["weight"], 20);
  // Writing what is already there changes nothing, not even the resourceVersion.
  const Response same = client_.MergePatch(std::string(kNodePools) + "/default",
                                           {{"metadata", {{"labels", {{"team", "a"}}}}}});
  EXPECT_EQ(Rv(same.Json()), Rv(labelled.Json()));
}

TEST_F(KubeApiServer, FinalizersKeepAnObjectUntilTheyAreRemoved) {
  json claim = NodeClaim("claim-1");
  claim["metadata"]["finalizers"] = {"karpenter.sh/termination"};
  const json created = client_.Post(kNodeClaims, claim).Json();
  Watch watch(server_.port(), WatchPath(kNodeClaims, Rv(created)));
  const std::string path = std::string(kNodeClaims) + "/claim-1";

  const Response deleting = client_.Delete(path);
  ASSERT_EQ(deleting.status, 200);
  EXPECT_TRUE(deleting.Json()["metadata"].contains("deletionTimestamp"));
  const json still = client_.Get(path).Json();
  EXPECT_TRUE(still["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(client_.Delete(path).status, 200);  // Deleting again changes nothing.
  EXPECT_EQ(Rv(client_.Get(path).Json()), Rv(still));
  const Response more = client_.MergePatch(
      path, {{"metadata", {{"finalizers", {"karpenter.sh/termination", "extra"}}}}});
  EXPECT_EQ(more.status, 422);  // No new finalizers once deleting.

  ASSERT_EQ(client_.MergePatch(path, {{"metadata", {{"finalizers", nullptr}}}}).status, 200);
  EXPECT_EQ(client_.Get(path).status, 404);
  const std::optional<json> marked = watch.NextChange();
  ASSERT_TRUE(marked.has_value());
  EXPECT_EQ((*marked)["type"], "MODIFIED");
  EXPECT_TRUE((*marked)["object"]["metadata"].contains("deletionTimestamp"));
  const std::optional<json> deleted = watch.NextChange();
  ASSERT_TRUE(deleted.has_value());
  EXPECT_EQ((*deleted)["type"], "DELETED");
}

TEST_F(KubeApiServer, StatusSubresourceIsolatesStatusFromTheMainResource) {
  json claim = NodeClaim("claim-1");
  claim["status"] = {{"providerID", "ignored-on-create"}};
  json current = client_.Post(kNodeClaims, claim).Json();
  const std::string path = std::string(kNodeClaims) + "/claim-1";

  json main_write = current;
  main_write["status"] = {{"providerID", "aws:///us-east-1a/i-1"}};
  current = client_.Put(path, main_write).Json();
  EXPECT_FALSE(current.contains("status"));  // A main write ignores status.

  json status_write = current;
  status_write["status"] = {{"providerID", "aws:///us-east-1a/i-1"}};
  status_write["spec"]["nodeClassRef"]["name"] = "changed";
  const Response status = client_.Put(path + "/status", status_write);
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_EQ(status.Json()["status"]["providerID"], "aws:///us-east-1a/i-1");
  EXPECT_EQ(status.Json()["spec"]["nodeClassRef"]["name"],
            "default");  // Status writes only status.
  EXPECT_EQ(status.Json()["metadata"]["generation"], 1);

  const Response patched = client_.MergePatch(
      path + "/status", {{"status", {{"nodeName", "node-a"}}}, {"spec", nullptr}});
  ASSERT_EQ(patched.status, 200);
  EXPECT_EQ(patched.Json()["status"]["nodeName"], "node-a");
  EXPECT_EQ(patched.Json()["status"]["providerID"], "aws:///us-east-1a/i-1");
  EXPECT_TRUE(patched.Json().contains("spec"));
  // Leases have no status subresource.
  EXPECT_EQ(client_.Get(std::string(kLeases) + "/x/status").status, 404);
}

TEST_F(KubeApiServer, EvictionIsRefusedWhileThePdbAllowsNoDisruption) {
  ASSERT_EQ(CreatePod(Pod("web-1")).status, 200);
  ASSERT_EQ(CreatePod(Pod("web-2")).status, 200);
  ASSERT_EQ(
      client_
          .Post(kPdbs, {{"apiVersion", "policy/v1"},
                        {"kind", "PodDisruptionBudget"},
                        {"metadata", {{"name", "web"}}},
                        {"spec",
                         {{"minAvailable", 2}, {"selector", {{"matchLabels", {{"app", "web"}}}}}}}})
          .status,
      201);
  const json eviction = {{"apiVersion", "policy/v1"},
                         {"kind", "Eviction"},
                         {"metadata", {{"name", "web-1"}, {"namespace", "default"}}}};
  const Response refused = client_.Post(std::string(kPods) + "/web-1/eviction", eviction);
  EXPECT_EQ(refused.status, 429);
  EXPECT_EQ(refused.Json()["reason"], "TooManyRequests");
  EXPECT_EQ(refused.Json()["details"]["causes"][0]["reason"], "DisruptionBudget");
  EXPECT_EQ(client_.Get(std::string(kPods) + "/web-1").status, 200);

  ASSERT_EQ(CreatePod(Pod("web-3")).status, 200);  // Now one may go.
  const Response allowed = client_.Post(std::string(kPods) + "/web-1/eviction", eviction);
  EXPECT_EQ(allowed.status, 201) << allowed.body;
  EXPECT_EQ(client_.Get(std::string(kPods) + "/web-1").status, 404);
  EXPECT_EQ(client_.Post(std::string(kPods) + "/web-2/eviction", eviction).status, 400);  // Name.
  EXPECT_EQ(client_.Post(std::string(kPods) + "/gone/eviction", {{"metadata", {{"name", "gone"}}}})
                .status,
            404);
}

TEST_F(KubeApiServer, EvictionHonoursAPdbStatusSetByTheTest) {
  ASSERT_EQ(CreatePod(Pod("web-1")).status, 200);
  ASSERT_EQ(CreatePod(Pod("web-2")).status, 200);
  ASSERT_EQ(client_.Post(kPods, Pod("web-pending", "Pending")).status, 201);
  json pdb =
      client_
          .Post(kPdbs,
                {{"metadata", {{"name", "web"}}},
                 {"spec",
                  {{"maxUnavailable", 0}, {"selector", {{"matchLabels", {{"app", "web"}}}}}}}})
          .Json();
  pdb["status"] = {{"disruptionsAllowed", 1}, {"currentHealthy", 2}, {"desiredHealthy", 1}};
  ASSERT_EQ(client_.Put(std::string(kPdbs) + "/web/status", pdb).status, 200);

  auto evict = [&](const std::string& name) {
    return client_
        .Post(std::string(kPods) + "/" + name + "/eviction",
              {{"apiVersion", "policy/v1"}, {"kind", "Eviction"}, {"metadata", {{"name", name}}}})
        .status;
  };
  EXPECT_EQ(evict("web-1"), 201);
  EXPECT_EQ(client_.Get(std::string(kPdbs) + "/web").Json()["status"]["disruptionsAllowed"], 0);
  EXPECT_EQ(evict("web-2"), 429);
  EXPECT_EQ(evict("web-pending"), 201);  // A pod that is not running is not protected.

  // An evicted pod with a finalizer is marked for deletion, not removed.
  json held = Pod("held", "Pending");
  held["metadata"]["finalizers"] = {"example.com/hold"};
  ASSERT_EQ(client_.Post(kPods, held).status, 201);
  EXPECT_EQ(evict("held"), 201);
  EXPECT_TRUE(
      client_.Get(std::string(kPods) + "/held").Json()["metadata"].contains("deletionTimestamp"));
}

// A Binding assigns a pending pod to a node once, as kube-scheduler's POST does; a second one,
// or one for a pod being deleted, is a 409 Conflict.
TEST_F(KubeApiServer, BindingAssignsAPodToANodeOnce) {
  ASSERT_EQ(client_.Post(kPods, Pod("web-1", "Pending", "")).status, 201);
  auto bind = [&](const std::string& pod, const std::string& node) {
    return client_.Post(std::string(kPods) + "/" + pod + "/binding",
                        {{"apiVersion", "v1"},
                         {"kind", "Binding"},
                         {"metadata", {{"name", pod}}},
                         {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}});
  };
  const Response bound = bind("web-1", "node-a");
  ASSERT_EQ(bound.status, 201) << bound.body;
  const json pod = client_.Get(std::string(kPods) + "/web-1").Json();
  EXPECT_EQ(pod["spec"]["nodeName"], "node-a");
  EXPECT_EQ(pod["status"]["conditions"][0]["type"], "PodScheduled");
  EXPECT_EQ(pod["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(bind("web-1", "node-b").status, 409);
  EXPECT_EQ(client_.Get(std::string(kPods) + "/web-1").Json()["spec"]["nodeName"], "node-a");
  EXPECT_EQ(bind("gone", "node-a").status, 404);
  EXPECT_EQ(
      client_.Post(std::string(kPods) + "/web-1/binding", {{"metadata", {{"name", "x"}}}}).status,
      400);
  EXPECT_EQ(client_.Get(std::string(kPods) + "/web-1/binding").status, 405);

  json held = Pod("held", "Pending", "");
  held["metadata"]["finalizers"] = {"example.com/hold"};
  ASSERT_EQ(client_.Post(kPods, held).status, 201);
  ASSERT_EQ(client_.Delete(std::string(kPods) + "/held").status, 200);
  EXPECT_EQ(bind("held", "node-a").status, 409);
}

// Deployments are stored, with a status subresource; the e2e stand-in acts on them.
TEST_F(KubeApiServer, DeploymentsHaveAStatusSubresource) {
  const std::string deployments = "/apis/apps/v1/namespaces/default/deployments";
  ASSERT_EQ(client_
                .Post(deployments, {{"apiVersion", "apps/v1"},
                                    {"kind", "Deployment"},
                                    {"metadata", {{"name", "web"}}},
                                    {"spec", {{"replicas", 3}}}})
                .status,
            201);
  EXPECT_EQ(client_.MergePatch(deployments + "/web/status", {{"status", {{"replicas", 3}}}}).status,
            200);
  EXPECT_EQ(client_.Get(deployments + "/web").Json()["status"]["replicas"], 3);
}

TEST_F(KubeApiServer, LeaseUpdatesAreOptimisticallyConcurrent) {
  const json lease =
      client_
          .Post(kLeases, {{"apiVersion", "coordination.k8s.io/v1"},
                          {"kind", "Lease"},
                          {"metadata", {{"name", "tenon"}}},
                          {"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", 15}}}})
          .Json();
  EXPECT_EQ(lease["metadata"]["namespace"], "kube-system");
  json by_b = lease;
  by_b["spec"]["holderIdentity"] = "b";
  json by_c = lease;
  by_c["spec"]["holderIdentity"] = "c";
  const std::string path = std::string(kLeases) + "/tenon";
  EXPECT_EQ(client_.Put(path, by_b).status, 200);
  EXPECT_EQ(client_.Put(path, by_c).status, 409);  // Both read the same version; b won.
  EXPECT_EQ(client_.Get(path).Json()["spec"]["holderIdentity"], "b");
  EXPECT_EQ(client_.Get("/apis/coordination.k8s.io/v1/leases").Json()["items"].size(), 1u);
}

TEST_F(KubeApiServer, RequestsNeedTheBearerTokenAndKeepTheConnection) {
  Client anonymous(server_.port(), "");
  const Response none = anonymous.Get(kPods);
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.Json()["reason"], "Unauthorized");
  Client wrong(server_.port(), "not-the-token");
  EXPECT_EQ(wrong.Post(kPods, Pod("x")).status, 401);
  EXPECT_EQ(wrong.Get(kPods).status, 401);  // Still answering on the same connection.
  EXPECT_EQ(wrong.Get(kPods).connects, 0);

  Client authorised(server_.port());
  const Response first = authorised.Get(kPods);
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.connects, 1);
  const Response second = authorised.Post(kPods, Pod("x"));
  EXPECT_EQ(second.status, 201);
  EXPECT_EQ(second.connects, 0);  // HTTP/1.1 keep-alive.
}

TEST_F(KubeApiServer, BadInputIsAnswered400WithAStatus) {
  const Response not_json = client_.Send("POST", kPods, "{not json");
  EXPECT_EQ(not_json.status, 400);
  EXPECT_EQ(not_json.Json()["kind"], "Status");
  EXPECT_EQ(not_json.Json()["code"], 400);
  json wrong_kind = Pod("x");
  wrong_kind["kind"] = "Node";
  EXPECT_EQ(client_.Post(kPods, wrong_kind).status, 400);
  json wrong_ns = Pod("x");
  wrong_ns["metadata"]["namespace"] = "other";
  EXPECT_EQ(client_.Post(kPods, wrong_ns).status, 400);
  EXPECT_EQ(client_.Post(kPods, json::array()).status, 400);
  EXPECT_EQ(client_.Get(std::string(kPods) + "?limit=x").status, 400);
  EXPECT_EQ(client_.Get(std::string(kPods) + "?continue=garbage").status, 400);
  ASSERT_EQ(client_.Post(kPods, Pod("x")).status, 201);
  EXPECT_EQ(
      client_.Send("PATCH", std::string(kPods) + "/x", "[]", "application/json-patch+json").status,
      415);
  EXPECT_EQ(client_.Get("/apis/example.com/v1/widgets").status, 404);
  EXPECT_EQ(client_.Post("/apis/example.com/v1/widgets", Pod("w")).status, 404);
  const Response after = client_.Get(kPods);  // The error left the connection usable.
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.connects, 0);
}

// The request log records each authenticated API call as an authorizer sees it (verb, group,
// resource with subresource, namespace, name) with the caller's User-Agent; test hooks and
// refused (unauthenticated) calls are not API calls and are not recorded.
TEST_F(KubeApiServer, RequestLogRecordsAuthorizationAttributesOfEachApiCall) {
  client_.set_user_agent("tenon/test");
  ASSERT_EQ(client_.Post(kNodes, {{"metadata", {{"name", "node-a"}}}}).status, 201);
  ASSERT_EQ(client_.Get(std::string(kNodes) + "/node-a").status, 200);
  ASSERT_EQ(client_.Get(kNodes).status, 200);
  ASSERT_EQ(client_.Get(std::string(kNodes) + "?watch=true&timeoutSeconds=0.01").status, 200);
  ASSERT_EQ(
      client_
          .MergePatch(std::string(kNodes) + "/node-a/status", {{"status", {{"phase", "Running"}}}})
          .status,
      200);
  ASSERT_EQ(CreatePod(Pod("web-1")).status, 200);
  const Response lease = client_.Post(kLeases, {{"metadata", {{"name", "tenon-leader-election"}}},
                                                {"spec", {{"holderIdentity", "a"}}}});
  ASSERT_EQ(lease.status, 201) << lease.body;
  ASSERT_EQ(client_.Put(std::string(kLeases) + "/tenon-leader-election", lease.Json()).status, 200);
  ASSERT_EQ(client_
                .Post(std::string(kPods) + "/web-1/eviction",
                      {{"metadata", {{"name", "web-1"}, {"namespace", "default"}}}})
                .status,
            201);
  ASSERT_EQ(client_.Delete(std::string(kNodes) + "/node-a").status, 200);
  EXPECT_EQ(client_.Delete(kNodes).status, 405);  // Not served, but still asked for.
  ASSERT_EQ(client_.Get("/_test/stats").status, 200);
  Client stranger(server_.port(), "wrong-token");
  ASSERT_EQ(stranger.Get(kNodes).status, 401);

  const Response log = client_.Get("/_test/requests");
  ASSERT_EQ(log.status, 200);
  std::vector<std::vector<std::string>> seen;
  for (const json& r : log.Json()) {
    EXPECT_EQ(r["user_agent"], "tenon/test");
    seen.push_back({r["verb"], r["group"], r["resource"], r["namespace"], r["name"]});
  }
  const std::vector<std::vector<std::string>> expected = {
      {"create", "", "nodes", "", ""},
      {"get", "", "nodes", "", "node-a"},
      {"list", "", "nodes", "", ""},
      {"watch", "", "nodes", "", ""},
      {"patch", "", "nodes/status", "", "node-a"},
      {"create", "", "pods", "default", ""},
      {"patch", "", "pods/status", "default", "web-1"},
      {"create", "coordination.k8s.io", "leases", "kube-system", ""},
      {"update", "coordination.k8s.io", "leases", "kube-system", "tenon-leader-election"},
      {"create", "", "pods/eviction", "default", "web-1"},
      {"delete", "", "nodes", "", "node-a"},
      {"deletecollection", "", "nodes", "", ""},
  };
  EXPECT_EQ(seen, expected);
}

}  // namespace
}  // namespace tenon::kube::testing
