#include "adapters/sim/kubelet.h"

#include <algorithm>
#include <utility>

#include "adapters/sim/kube_scheduler.h"

namespace tenon::sim {
namespace {

constexpr std::int64_t kKibibyte = 1024;
constexpr std::int64_t kMebibyteKib = 1024;

// The AMI's max pods when nothing sets them: each ENI but the primary address of each, plus
// two for host-network pods; 110, the kubelet's default, when the type has no ENI figures.
std::int64_t PodsOfEnis(const InstanceType& type, std::int32_t reserved_enis) {
  const std::int64_t enis = type.max_enis - reserved_enis;
  if (enis <= 0 || type.ipv4_per_eni <= 1) return 110;
  return enis * (type.ipv4_per_eni - 1) + 2;
}

// The bootstrap's kube-reserved CPU: a share of each band of millicores, in ten-thousandths
// (6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of the rest), each
// band's share rounded down on its own.
std::int64_t ReservedMillicores(std::int64_t millicores) {
  const std::pair<std::int64_t, std::int64_t> bands[] = {
      {1000, 600}, {2000, 100}, {4000, 50}, {millicores, 25}};
  std::int64_t reserved = 0;
  std::int64_t below = 0;
  for (const auto& [upto, share] : bands) {
    if (millicores <= below) break;
    const std::int64_t top = std::min(millicores, std::max(upto, below));
    reserved += (top - below) * share / 10000;
    below = top;
  }
  return reserved;
}

}  // namespace

Resources KubeletAllocatable(const InstanceType& type, const NodeClass* nodeclass,
                             std::int32_t reserved_enis) {
  if (type.allocatable) return *type.allocatable;  // The catalog says what the kubelet reports.
  std::int64_t pods = PodsOfEnis(type, reserved_enis);
  if (nodeclass != nullptr && nodeclass->max_pods) pods = *nodeclass->max_pods;
  if (nodeclass != nullptr && nodeclass->pods_per_core && *nodeclass->pods_per_core > 0) {
    pods = std::min<std::int64_t>(pods, *nodeclass->pods_per_core * (type.cpu.value / 1000));
  }
  // MemTotal, in KiB as /proc/meminfo gives it.
  const std::int64_t memory_kib = type.memory.value / kKibibyte;
  const std::int64_t mem_total_kib = memory_kib - memory_kib * kKernelMemoryPermille / 1000;
  // kube-reserved memory: 255 MiB and 11 MiB per pod; eviction at 100 MiB available.
  const std::int64_t held_kib = (255 + 11 * pods + 100) * kMebibyteKib;
  Resources allocatable;
  allocatable.cpu = Millicores{type.cpu.value - ReservedMillicores(type.cpu.value)};
  allocatable.memory = Bytes{std::max<std::int64_t>(0, mem_total_kib - held_kib) * kKibibyte};
  allocatable.pods = pods;
  // The device plugins: NVIDIA's, AMD's and Habana's for their GPUs, AWS Neuron's for
  // Inferentia and Trainium.
  if (type.gpu_count > 0) {
    if (type.gpu_manufacturer == "NVIDIA") allocatable.extended["nvidia.com/gpu"] = type.gpu_count;
    if (type.gpu_manufacturer == "AMD") allocatable.extended["amd.com/gpu"] = type.gpu_count;
    if (type.gpu_manufacturer == "Habana") {
      allocatable.extended["habana.ai/gaudi"] = type.gpu_count;
    }
  }
  if (type.accelerator_count > 0) {
    allocatable.extended["aws.amazon.com/neuron"] = type.accelerator_count;
  }
  // Other device plugins' resources, as the catalog lists them.
  for (const auto& [name, count] : type.extended) allocatable.extended[name] = count;
  return allocatable;
}

void AddOverlaidDevices(const std::vector<NodeOverlay>& overlays, const Labels& labels,
                        Resources& allocatable) {
  std::vector<const NodeOverlay*> ordered;
  for (const NodeOverlay& o : overlays) {
    if (o.invalid.empty() && LabelsMatch(LabelSelector{{}, o.requirements}, labels)) {
      ordered.push_back(&o);
    }
  }
  std::sort(ordered.begin(), ordered.end(), [](const NodeOverlay* a, const NodeOverlay* b) {
    return a->weight != b->weight ? a->weight > b->weight : a->name > b->name;
  });
  std::map<std::string, std::int64_t> devices;
  for (const NodeOverlay* o : ordered) {
    for (const auto& [name, amount] : o->capacity) devices.try_emplace(name, amount);
  }
  for (const auto& [name, amount] : devices) {
    allocatable.extended[name] = amount;
    if (name.starts_with("hugepages-")) {
      allocatable.memory = Bytes{std::max<std::int64_t>(0, allocatable.memory.value - amount)};
    }
  }
}

}  // namespace tenon::sim
