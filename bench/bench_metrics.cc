// Metrics::ObserveState at 5,000 nodes and 50,000 pods (the controller calls it at most about
// once a second), beside a bare pass over the same pods summing their requests (the floor any
// per-node pod gauge pays, since State has no per-node index). --quick: 500 nodes, 5,000 pods.
#include <chrono>
#include <cstdio>
#include <cstring>

#include "adapters/metrics/metrics.h"

namespace {

using Clock = std::chrono::steady_clock;

tenon::State MakeState(int nodes, int pods_per_node, int pools) {
  tenon::State state;
  for (int p = 0; p < pools; ++p) {
    tenon::NodePool pool;
    pool.name = "pool-" + std::to_string(p);
    pool.limits.cpu = tenon::Millicores(1'000'000);
    state.cluster.nodepools[pool.name] = pool;
  }
  for (int n = 0; n < nodes; ++n) {
    tenon::Node node;
    node.name = "ip-10-0-" + std::to_string(n) + ".ec2.internal";
    node.labels = {{tenon::label::kNodePool, "pool-" + std::to_string(n % pools)},
                   {tenon::label::kZone, "us-east-1a"},
                   {tenon::label::kInstanceType, "m5.xlarge"}};
    node.allocatable.cpu = tenon::Millicores(3920);
    node.allocatable.memory = tenon::Bytes(14LL << 30);
    node.allocatable.pods = 58;
    tenon::NodeClaim claim;
    claim.name = "claim-" + std::to_string(n);
    claim.nodepool = node.labels.at(tenon::label::kNodePool);
    claim.node_name = node.name;
    claim.allocatable = node.allocatable;
    state.lifecycle.nodeclaims[claim.name] = claim;
    state.lifecycle.claims_by_node.Add(claim.node_name, claim.name);
    for (int i = 0; i < pods_per_node; ++i) {
      tenon::Pod pod;
      pod.ns = "default";
      pod.name = "web-" + std::to_string(n) + "-" + std::to_string(i);
      pod.node_name = node.name;
      pod.phase = tenon::PodPhase::kRunning;
      pod.requests.cpu = tenon::Millicores(250);
      pod.requests.memory = tenon::Bytes(256LL << 20);
      state.cluster.pods.Upsert(pod.ns + "/" + pod.name, pod);
    }
    state.cluster.nodes[node.name] = node;
  }
  return state;
}

double Millis(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int nodes = quick ? 500 : 5000;
  const int rounds = quick ? 3 : 10;
  tenon::State state = MakeState(nodes, 10, 4);
  tenon::metrics::Metrics metrics;

  auto start = Clock::now();
  metrics.ObserveState(state);  // The first call creates every series.
  const double first_ms = Millis(Clock::now() - start);

  start = Clock::now();
  for (int i = 0; i < rounds; ++i) metrics.ObserveState(state);
  const double steady_ms = Millis(Clock::now() - start) / rounds;

  // Baseline: one pass over the pods summing CPU per node, nothing else.
  start = Clock::now();
  std::int64_t sink = 0;
  for (int i = 0; i < rounds; ++i) {
    std::map<std::string, std::int64_t> per_node;
    for (const auto& [key, pod] : state.cluster.pods)
      per_node[pod.node_name] += pod.requests.cpu.value;
    sink += static_cast<std::int64_t>(per_node.size());
  }
  const double baseline_ms = Millis(Clock::now() - start) / rounds;

  std::printf("ObserveState, %d nodes, %zu pods: first %.1f ms, then %.1f ms per call\n", nodes,
              state.cluster.pods.size(), first_ms, steady_ms);
  std::printf("baseline (pods summed per node only): %.1f ms per pass (%lld)\n", baseline_ms,
              static_cast<long long>(sink % 2));
  return steady_ms > 0 ? 0 : 1;
}
