// Hand-built states and events for the core's unit tests.
#pragma once

#include <string>
#include <vector>

#include "reducers/core.h"

namespace tenon::testing {

inline constexpr Instant kT0{1'767'225'600'000'000'000};  // 2026-01-01T00:00:00Z

inline InstanceType Type(const std::string& name, std::int64_t vcpu, std::int64_t mem_gib,
                         std::int64_t od_micro, const std::string& arch = "amd64") {
  InstanceType t;
  t.name = name;
  t.arch = arch;
  t.cpu = Millicores{vcpu * 1000};
  t.memory = Bytes{mem_gib * 1024 * kMebibyte.value};
  t.max_enis = 4;
  t.ipv4_per_eni = 15;
  for (const char* zone : {"us-east-1a", "us-east-1b"}) {
    t.offerings.push_back({zone, kCapacityOnDemand, MicroUsdPerHour{od_micro}, true});
    t.offerings.push_back({zone, kCapacitySpot, MicroUsdPerHour{od_micro * 4 / 10}, true});
  }
  return t;
}

inline std::vector<InstanceType> SmallCatalog() {
  return {Type("c5.large", 2, 4, 85'000),      Type("c5.xlarge", 4, 8, 170'000),
          Type("m5.large", 2, 8, 96'000),      Type("m5.xlarge", 4, 16, 192'000),
          Type("m5.4xlarge", 16, 64, 768'000), Type("m6g.large", 2, 8, 77'000, "arm64")};
}

inline NodePool Pool(const std::string& name, std::int32_t weight = 0,
                     std::vector<Requirement> requirements = {}) {
  NodePool pool;
  pool.name = name;
  pool.weight = weight;
  pool.nodeclass = "default";
  pool.requirements = std::move(requirements);
  return pool;
}

inline Pod PendingPod(const std::string& name, std::int64_t cpu_millis, std::int64_t mem_mib,
                      Instant created = kT0) {
  Pod pod;
  pod.ns = "default";
  pod.name = name;
  pod.uid = "uid-" + name;
  pod.requests = {Millicores{cpu_millis}, Bytes{mem_mib * kMebibyte.value}, 0, {}};
  pod.unschedulable = true;
  pod.created = created;
  return pod;
}

// Folds events one by one, numbering them from the state's last sequence number.
class Folder {
 public:
  Output Fold(const Event& event) { return Step(state, Seq{state.last_seq.value + 1}, event); }
  Output FoldAll(const std::vector<Event>& events) {
    Output all;
    for (const auto& e : events) {
      Output out = Fold(e);
      all.commands.insert(all.commands.end(), out.commands.begin(), out.commands.end());
      all.decisions.insert(all.decisions.end(), out.decisions.begin(), out.decisions.end());
    }
    return all;
  }
  // Starts a controller with a catalog, one NodeClass (holding the controller's finalizer, as
  // the cluster shows it once added) and the given pools, at kT0.
  void Start(std::vector<NodePool> pools, std::uint64_t seed = 7) {
    NodeClass nodeclass{"default", "AL2023", "role", true, {}, {}, {},
                        {},        {},       false,  {},   {}, "", {}};
    nodeclass.finalizer = true;
    FoldAll({Tick{kT0}, ControllerStarted{"test", seed, Settings{}},
             CatalogRefreshed{SmallCatalog()}, NodeClassUpserted{nodeclass}});
    for (auto& p : pools) Fold(NodePoolUpserted{std::move(p)});
  }
  State state;
};

template <class T>
std::vector<const T*> CommandsOf(const Output& out) {
  std::vector<const T*> found;
  for (const auto& c : out.commands) {
    if (const auto* body = std::get_if<T>(&c.body)) found.push_back(body);
  }
  return found;
}
// The pointers point into `out`: an Output that dies with the expression would leave them
// dangling (AddressSanitizer found one such test).
template <class T>
std::vector<const T*> CommandsOf(Output&& out) = delete;

// The id of the first command of kind T in `out`.
template <class T>
CommandId IdOf(const Output& out) {
  for (const auto& c : out.commands) {
    if (std::holds_alternative<T>(c.body)) return c.id;
  }
  ADD_FAILURE() << "no such command";
  return CommandId{0};
}

}  // namespace tenon::testing
