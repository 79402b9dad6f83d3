// Informers: a paged LIST, then a WATCH from the list's resourceVersion with bookmarks; a broken
// stream resumes from the last resourceVersion seen, a 410 Gone (HTTP or an ERROR event) relists
// and hands over the differences — deletes for objects that vanished included — so the core
// never misses a change and never sees one twice. Each informer runs on a thread of its own and
// delivers batches to a sink; one list's differences are always one batch.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "adapters/kube/client.h"

namespace tenon::kube {

struct Resource {
  std::string group;  // "" for the core group.
  std::string version;
  std::string plural;
  bool namespaced = true;
  // /api/v1/pods, /apis/karpenter.sh/v1/nodepools: every namespace.
  std::string CollectionPath() const;
  // One object (and an optional subresource).
  std::string ObjectPath(const std::string& ns, const std::string& name,
                         const std::string& subresource = "") const;
  std::string Name() const;  // pods, nodepools.karpenter.sh
};

// The resources the core reads, in the order their first lists are handed over.
const std::vector<Resource>& WatchedResources();
const Resource& ResourceNamed(const std::string& plural);

struct Change {
  enum class Type : std::uint8_t { kUpsert, kDelete };
  const Resource* resource = nullptr;
  Type type = Type::kUpsert;
  std::string key;     // namespace/name, or name
  std::string object;  // The object's JSON (upserts only).
};

struct InformerOptions {
  std::int64_t page_size = 500;
  std::chrono::seconds watch_timeout{300};  // Asked of the server; jittered by +-10%.
  std::chrono::milliseconds backoff_base{200};
  std::chrono::milliseconds backoff_max{30'000};
};

struct InformerStats {
  std::int64_t lists = 0;
  std::int64_t relists_gone = 0;  // After a 410.
  std::int64_t watches = 0;
  std::int64_t resumes = 0;  // Watches restarted from the last resourceVersion.
  std::int64_t upserts = 0;
  std::int64_t deletes = 0;
  std::int64_t errors = 0;
};

class Informer {
 public:
  using Sink = std::function<void(std::vector<Change>)>;
  Informer(Client& client, const Resource& resource, Sink sink, InformerOptions options = {});

  // Objects the core already holds (from the log): the first list deletes those that are gone.
  void Seed(const std::vector<std::string>& keys);
  // List and watch until `stop`; returns soon after it is set.
  void Run(const std::atomic<bool>& stop);
  bool synced() const { return synced_.load(); }
  InformerStats stats() const;
  const Resource& resource() const { return resource_; }

 private:
  enum class WatchEnd : std::uint8_t { kResume, kRelist, kStop };
  bool List(const std::atomic<bool>& stop);
  WatchEnd Watch(const std::atomic<bool>& stop);
  void Backoff(int failures, const std::atomic<bool>& stop);

  Client& client_;
  const Resource& resource_;
  Sink sink_;
  InformerOptions options_;
  std::map<std::string, std::string> known_;  // key -> resourceVersion ("" when seeded)
  std::string resource_version_;
  std::atomic<bool> synced_{false};
  mutable std::mutex stats_mu_;
  InformerStats stats_;
};

}  // namespace tenon::kube
