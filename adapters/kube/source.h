// Every informer on a thread of its own, their changes decoded into core events and queued for
// the controller's loop. The first event is WatchesStarted; WatchesSynced follows
// once every resource has been listed and its differences queued, in the order of
// WatchedResources(), so the core reads NodePools before the pods that need them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "adapters/kube/informer.h"
#include "reducers/core.h"

namespace tenon::kube {

class KubeSource {
 public:
  KubeSource(Client& client, InformerOptions options = {});
  ~KubeSource();
  KubeSource(const KubeSource&) = delete;
  KubeSource& operator=(const KubeSource&) = delete;

  // What the core already holds (folded from the log): the first lists delete what is gone.
  void Seed(const State& state);
  void Start();
  void Stop();
  // Events queued since the last call, waiting up to `wait` for the first one.
  std::vector<Event> Drain(std::chrono::milliseconds wait);
  bool synced() const { return announced_.load(); }
  std::vector<InformerStats> stats() const;
  std::int64_t rejected() const { return rejected_.load(); }

 private:
  void Deliver(std::size_t index, std::vector<Change> changes);

  Client& client_;
  std::vector<std::unique_ptr<Informer>> informers_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Event> queue_;
  // Until every informer has listed, changes wait here per resource, so the first sync is
  // handed over in order.
  std::vector<std::vector<Event>> first_sync_;
  std::vector<bool> listed_;
  std::atomic<bool> announced_{false};
  std::atomic<std::int64_t> rejected_{0};
};

}  // namespace tenon::kube
