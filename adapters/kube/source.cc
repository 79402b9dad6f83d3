#include "adapters/kube/source.h"

#include <algorithm>

#include "adapters/kube/decode.h"

namespace tenon::kube {
namespace {

template <class Map>
std::vector<std::string> Keys(const Map& map) {
  std::vector<std::string> keys;
  keys.reserve(map.size());
  for (const auto& [key, value] : map) keys.push_back(key);
  return keys;
}

std::vector<std::string> KnownKeys(const State& state, const std::string& plural) {
  if (plural == "pods") return Keys(state.cluster.pods);
  if (plural == "nodes") return Keys(state.cluster.nodes);
  if (plural == "nodepools") return Keys(state.cluster.nodepools);
  if (plural == "nodeoverlays") return Keys(state.cluster.nodeoverlays);
  if (plural == "ec2nodeclasses") return Keys(state.cluster.nodeclasses);
  if (plural == "daemonsets") return Keys(state.cluster.daemonsets);
  if (plural == "poddisruptionbudgets") return Keys(state.cluster.pdbs);
  if (plural == "persistentvolumeclaims") return Keys(state.cluster.pvcs);
  if (plural == "persistentvolumes") return Keys(state.cluster.pvs);
  if (plural == "storageclasses") return Keys(state.cluster.storage_classes);
  if (plural == "csinodes") return Keys(state.cluster.csi_nodes);
  return {};  // NodeClaims: the core's own, never deleted by a relist.
}

}  // namespace

KubeSource::KubeSource(Client& client, InformerOptions options) : client_(client) {
  const auto& resources = WatchedResources();
  first_sync_.resize(resources.size());
  listed_.assign(resources.size(), false);
  for (std::size_t i = 0; i < resources.size(); ++i) {
    informers_.push_back(std::make_unique<Informer>(
        client_, resources[i], [this, i](std::vector<Change> c) { Deliver(i, std::move(c)); },
        options));
  }
  queue_.push_back(WatchesStarted{});
}

KubeSource::~KubeSource() {
  Stop();
}

void KubeSource::Seed(const State& state) {
  for (auto& informer : informers_) informer->Seed(KnownKeys(state, informer->resource().plural));
}

void KubeSource::Start() {
  for (auto& informer : informers_) {
    threads_.emplace_back([this, raw = informer.get()] { raw->Run(stop_); });
  }
}

void KubeSource::Stop() {
  stop_.store(true);
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void KubeSource::Deliver(std::size_t index, std::vector<Change> changes) {
  std::vector<Event> events;
  for (const auto& change : changes) {
    for (auto& event : Decode(change)) {
      if (std::holds_alternative<InputRejected>(event)) ++rejected_;
      events.push_back(std::move(event));
    }
  }
  std::lock_guard lock(mu_);
  if (!announced_.load()) {
    auto& held = first_sync_[index];
    held.insert(held.end(), std::make_move_iterator(events.begin()),
                std::make_move_iterator(events.end()));
    listed_[index] = true;
    if (std::find(listed_.begin(), listed_.end(), false) != listed_.end()) return;
    for (auto& batch : first_sync_) {
      for (auto& e : batch) queue_.push_back(std::move(e));
      batch.clear();
    }
    queue_.push_back(WatchesSynced{});
    announced_.store(true);
  } else {
    for (auto& e : events) queue_.push_back(std::move(e));
  }
  ready_.notify_all();
}

std::vector<Event> KubeSource::Drain(std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  ready_.wait_for(lock, wait, [&] { return !queue_.empty(); });
  std::vector<Event> out(std::make_move_iterator(queue_.begin()),
                         std::make_move_iterator(queue_.end()));
  queue_.clear();
  return out;
}

std::vector<InformerStats> KubeSource::stats() const {
  std::vector<InformerStats> out;
  for (const auto& informer : informers_) out.push_back(informer->stats());
  return out;
}

}  // namespace tenon::kube
