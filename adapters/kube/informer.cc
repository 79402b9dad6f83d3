#include "adapters/kube/informer.h"

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <random>
#include <set>
#include <stdexcept>
#include <thread>

namespace tenon::kube {
namespace {

constexpr auto kStopPoll = std::chrono::milliseconds(100);
constexpr int kGoneStatus = 410;

std::string Key(simdjson::dom::element metadata) {
  std::string_view ns;
  std::string_view name;
  if (metadata["namespace"].get(ns) != simdjson::SUCCESS) ns = {};
  if (metadata["name"].get(name) != simdjson::SUCCESS) {
    throw std::runtime_error("object without metadata.name");
  }
  return ns.empty() ? std::string(name) : std::string(ns) + "/" + std::string(name);
}

std::string ResourceVersionOf(simdjson::dom::element object) {
  std::string_view rv;
  if (object["metadata"]["resourceVersion"].get(rv) != simdjson::SUCCESS) return {};
  return std::string(rv);
}

}  // namespace

std::string Resource::CollectionPath() const {
  return (group.empty() ? "/api/" + version : "/apis/" + group + "/" + version) + "/" + plural;
}

std::string Resource::ObjectPath(const std::string& ns, const std::string& name,
                                 const std::string& subresource) const {
  std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced) path += "/namespaces/" + ns;
  path += "/" + plural + "/" + name;
  if (!subresource.empty()) path += "/" + subresource;
  return path;
}

std::string Resource::Name() const {
  return group.empty() ? plural : plural + "." + group;
}

const std::vector<Resource>& WatchedResources() {
  // Configuration first, then what runs on it: a first sync hands the core its NodePools
  // before the pods that want them.
  static const std::vector<Resource> kResources = {
      {"karpenter.k8s.aws", "v1", "ec2nodeclasses", false},
      {"karpenter.sh", "v1", "nodepools", false},
      {"karpenter.sh", "v1alpha1", "nodeoverlays", false},
      {"karpenter.sh", "v1", "nodeclaims", false},
      {"storage.k8s.io", "v1", "storageclasses", false},
      {"storage.k8s.io", "v1", "csinodes", false},
      {"", "v1", "persistentvolumes", false},
      {"", "v1", "persistentvolumeclaims", true},
      {"", "v1", "nodes", false},
      {"apps", "v1", "daemonsets", true},
      {"policy", "v1", "poddisruptionbudgets", true},
      {"", "v1", "pods", true},
  };
  return kResources;
}

const Resource& ResourceNamed(const std::string& plural) {
  for (const auto& r : WatchedResources()) {
    if (r.plural == plural) return r;
  }
  throw std::out_of_range("not a watched resource: " + plural);
}

Informer::Informer(Client& client, const Resource& resource, Sink sink, InformerOptions options)
    : client_(client), resource_(resource), sink_(std::move(sink)), options_(options) {}

void Informer::Seed(const std::vector<std::string>& keys) {
  for (const auto& key : keys) known_.emplace(key, "");
}

InformerStats Informer::stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

void Informer::Backoff(int failures, const std::atomic<bool>& stop) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  auto wait = options_.backoff_base * (1LL << std::min(failures, 16));
  wait = std::min<std::chrono::milliseconds>(wait, options_.backoff_max);
  std::uniform_int_distribution<std::int64_t> jitter(wait.count() / 2, wait.count());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(jitter(rng));
  while (!stop.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        kStopPoll, deadline - std::chrono::steady_clock::now()));
  }
}

// Every page of one list comes from one snapshot; a continue token that expired (410) starts
// the list over. The differences against what the core holds go out as one batch.
bool Informer::List(const std::atomic<bool>& stop) {
  simdjson::dom::parser parser;
  std::vector<Change> batch;
  std::set<std::string> seen;
  std::string token;
  std::string list_rv;
  while (!stop.load()) {
    std::string path = resource_.CollectionPath() + "?limit=" + std::to_string(options_.page_size);
    if (!token.empty()) path += "&continue=" + QueryEscape(token);
    const Response response = client_.Request("GET", path);
    if (response.status == kGoneStatus && !token.empty()) {
      token.clear();  // The snapshot was compacted away: the whole list again.
      batch.clear();
      seen.clear();
      continue;
    }
    if (!response.ok()) {
      spdlog::warn("list {}: {}", resource_.Name(), Describe(response));
      return false;
    }
    simdjson::dom::element list;
    if (parser.parse(response.body).get(list) != simdjson::SUCCESS) {
      spdlog::warn("list {}: the answer is not JSON", resource_.Name());
      return false;
    }
    simdjson::dom::array items;
    if (list["items"].get(items) != simdjson::SUCCESS) items = {};
    for (simdjson::dom::element item : items) {
      std::string key;
      try {
        key = Key(item["metadata"]);
      } catch (const std::exception&) {
        batch.push_back({&resource_, Change::Type::kUpsert, "", simdjson::minify(item)});
        continue;  // The decoder keeps it as a rejected input.
      }
      seen.insert(key);
      const std::string rv = ResourceVersionOf(item);
      auto it = known_.find(key);
      if (it != known_.end() && !it->second.empty() && it->second == rv) continue;
      batch.push_back({&resource_, Change::Type::kUpsert, key, simdjson::minify(item)});
    }
    std::string_view rv;
    if (list["metadata"]["resourceVersion"].get(rv) == simdjson::SUCCESS) list_rv = rv;
    std::string_view next;
    if (list["metadata"]["continue"].get(next) == simdjson::SUCCESS && !next.empty()) {
      token = next;
      continue;
    }
    // Complete: what the core holds but the list lacks was deleted while we were not looking.
    for (auto it = known_.begin(); it != known_.end();) {
      if (!seen.contains(it->first)) {
        batch.push_back({&resource_, Change::Type::kDelete, it->first, ""});
        it = known_.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& change : batch) {
      if (change.type != Change::Type::kUpsert || change.key.empty()) continue;
      simdjson::dom::element object;
      if (parser.parse(change.object).get(object) == simdjson::SUCCESS) {
        known_[change.key] = ResourceVersionOf(object);
      }
    }
    resource_version_ = list_rv;
    {
      std::lock_guard lock(stats_mu_);
      ++stats_.lists;
      for (const auto& c : batch)
        (c.type == Change::Type::kUpsert ? stats_.upserts : stats_.deletes)++;
    }
    sink_(std::move(batch));
    synced_.store(true);
    return true;
  }
  return false;
}

Informer::WatchEnd Informer::Watch(const std::atomic<bool>& stop) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const auto base = options_.watch_timeout.count();
  std::uniform_int_distribution<std::int64_t> spread(base * 9 / 10, base * 11 / 10);
  const std::int64_t timeout_s = std::max<std::int64_t>(1, spread(rng));
  const std::string path =
      resource_.CollectionPath() +
      "?watch=true&allowWatchBookmarks=true&resourceVersion=" + QueryEscape(resource_version_) +
      "&timeoutSeconds=" + std::to_string(timeout_s);
  {
    std::lock_guard lock(stats_mu_);
    ++stats_.watches;
  }
  simdjson::dom::parser parser;
  WatchEnd end = WatchEnd::kResume;
  auto on_line = [&](std::string_view line) {
    simdjson::dom::element event;
    std::string_view type;
    simdjson::dom::element object;
    if (parser.parse(line.data(), line.size()).get(event) != simdjson::SUCCESS ||
        event["type"].get(type) != simdjson::SUCCESS ||
        event["object"].get(object) != simdjson::SUCCESS) {
      spdlog::warn("watch {}: a line that is not a watch event; resuming", resource_.Name());
      return false;
    }
    if (type == "ERROR") {
      std::int64_t code = 0;
      if (object["code"].get(code) == simdjson::SUCCESS && code == kGoneStatus) {
        end = WatchEnd::kRelist;
      } else {
        std::lock_guard lock(stats_mu_);
        ++stats_.errors;
      }
      return false;
    }
    const std::string rv = ResourceVersionOf(object);
    if (type == "BOOKMARK") {
      if (!rv.empty()) resource_version_ = rv;
      return !stop.load();
    }
    std::string key;
    try {
      key = Key(object["metadata"]);
    } catch (const std::exception&) {
      sink_({{&resource_, Change::Type::kUpsert, "", simdjson::minify(object)}});
      if (!rv.empty()) resource_version_ = rv;
      return !stop.load();
    }
    if (type == "DELETED") {
      if (known_.erase(key) > 0) {
        sink_({{&resource_, Change::Type::kDelete, key, ""}});
        std::lock_guard lock(stats_mu_);
        ++stats_.deletes;
      }
    } else {  // ADDED, MODIFIED
      auto& known_rv = known_[key];
      if (known_rv.empty() || known_rv != rv) {
        known_rv = rv;
        sink_({{&resource_, Change::Type::kUpsert, key, simdjson::minify(object)}});
        std::lock_guard lock(stats_mu_);
        ++stats_.upserts;
      }
    }
    if (!rv.empty()) resource_version_ = rv;
    return !stop.load();
  };
  const Response response =
      client_.Stream(path, on_line, std::chrono::seconds(timeout_s + 30), &stop);
  if (stop.load()) return WatchEnd::kStop;
  if (response.status == kGoneStatus) return WatchEnd::kRelist;
  if (end == WatchEnd::kRelist) return end;
  if (response.status != 0 && !response.ok()) {
    spdlog::warn("watch {}: {}", resource_.Name(), Describe(response));
    std::lock_guard lock(stats_mu_);
    ++stats_.errors;
  }
  return WatchEnd::kResume;
}

void Informer::Run(const std::atomic<bool>& stop) {
  int failures = 0;
  bool listed = false;
  while (!stop.load()) {
    if (!listed) {
      if (!List(stop)) {
        Backoff(failures++, stop);
        continue;
      }
      listed = true;
      failures = 0;
    }
    const auto started = std::chrono::steady_clock::now();
    const std::string rv_before = resource_version_;
    const WatchEnd end = Watch(stop);
    if (end == WatchEnd::kStop) break;
    if (end == WatchEnd::kRelist) {
      spdlog::info("watch {}: resourceVersion {} expired (410); relisting", resource_.Name(),
                   rv_before);
      std::lock_guard lock(stats_mu_);
      ++stats_.relists_gone;
      listed = false;
      continue;
    }
    {
      std::lock_guard lock(stats_mu_);
      ++stats_.resumes;
    }
    // A stream that ended at once without progress is a failing server: back off.
    const bool quick = std::chrono::steady_clock::now() - started < std::chrono::seconds(1);
    if (quick && resource_version_ == rv_before) {
      Backoff(failures++, stop);
    } else {
      failures = 0;
    }
  }
}

}  // namespace tenon::kube
