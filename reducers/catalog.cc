// Allocatable capacity and well-known labels per instance type, computed once per catalog
// refresh. The formulas are those of Karpenter's AWS provider: maximum pods from the ENI limits,
// allocatable as capacity less the VM memory overhead, kube-reserved and the eviction threshold.
#include <algorithm>
#include <array>
#include <cassert>
#include <cctype>

#include "reducers/internal.h"

namespace tenon {
namespace {

constexpr std::int64_t kPodsDefault = 110;
constexpr Bytes kEvictionThreshold{100 * kMebibyte.value};
constexpr Bytes kKubeReservedMemoryBase{255 * kMebibyte.value};
constexpr Bytes kKubeReservedMemoryPerPod{11 * kMebibyte.value};

// kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% above,
// each range truncated to whole millicores as Karpenter does.
Millicores KubeReservedCpu(Millicores cpu) {
  struct Range {
    std::int64_t start, end, per_ten_thousand;
  };
  constexpr std::array<Range, 4> kRanges{
      {{0, 1000, 600}, {1000, 2000, 100}, {2000, 4000, 50}, {4000, std::int64_t{1} << 40, 25}}};
  std::int64_t reserved = 0;
  for (const auto& range : kRanges) {
    if (cpu.value < range.start) break;
    std::int64_t span = std::min(cpu.value, range.end) - range.start;
    reserved += span * range.per_ten_thousand / 10000;
  }
  return Millicores{reserved};
}

std::int64_t MaxPods(const InstanceType& type, const Settings& settings,
                     const NodeClass* nodeclass) {
  std::int64_t pods = kPodsDefault;
  const std::int64_t enis = std::int64_t{type.max_enis} - settings.reserved_enis;
  if (nodeclass && nodeclass->max_pods) {
    pods = *nodeclass->max_pods;
  } else if (enis > 0 && type.ipv4_per_eni > 1) {
    pods = enis * (type.ipv4_per_eni - 1) + 2;
  }
  if (nodeclass && nodeclass->pods_per_core && *nodeclass->pods_per_core > 0) {
    pods = std::min(pods, std::int64_t{*nodeclass->pods_per_core} * (type.cpu.value / 1000));
  }
  return pods;
}

// The extended resources a type's accelerators advertise, by manufacturer.
void AddAccelerators(const InstanceType& type, Resources& allocatable) {
  if (type.gpu_count > 0) {
    const std::string& m = type.gpu_manufacturer;
    const char* name = m == "NVIDIA"   ? resource::kNvidiaGpu
                       : m == "AMD"    ? resource::kAmdGpu
                       : m == "Habana" ? resource::kHabanaGaudi
                                       : nullptr;
    if (name) allocatable.extended[name] = type.gpu_count;
  }
  if (type.accelerator_count > 0) allocatable.extended[resource::kNeuron] = type.accelerator_count;
}

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

Labels DeriveLabels(const InstanceType& type) {
  Labels labels;
  labels[label::kInstanceType] = type.name;
  labels[label::kArch] = type.arch;
  labels[label::kOs] = "linux";
  auto dot = type.name.find('.');
  std::string family = type.name.substr(0, dot);
  labels[label::kInstanceFamily] = family;
  if (dot != std::string::npos) labels[label::kInstanceSize] = type.name.substr(dot + 1);
  auto digit = family.find_first_of("0123456789");
  labels[label::kInstanceCategory] = family.substr(0, digit);
  if (digit != std::string::npos) {
    auto end = family.find_first_not_of("0123456789", digit);
    labels[label::kInstanceGeneration] = family.substr(digit, end - digit);
  }
  labels[label::kInstanceCpu] = std::to_string(type.cpu.value / 1000);
  labels[label::kInstanceMemory] = std::to_string(type.memory.value / kMebibyte.value);
  if (!type.cpu_manufacturer.empty()) {
    labels[label::kInstanceCpuManufacturer] = Lower(type.cpu_manufacturer);
  }
  if (!type.hypervisor.empty()) labels[label::kInstanceHypervisor] = type.hypervisor;
  if (type.gpu_count > 0) {
    labels[label::kInstanceGpuName] = Lower(type.gpu_name);
    labels[label::kInstanceGpuManufacturer] = Lower(type.gpu_manufacturer);
    labels[label::kInstanceGpuCount] = std::to_string(type.gpu_count);
    labels[label::kInstanceGpuMemory] = std::to_string(type.gpu_memory.value / kMebibyte.value);
  }
  if (type.local_nvme_gib > 0)
    labels[label::kInstanceLocalNvme] = std::to_string(type.local_nvme_gib);
  for (const auto& [key, value] : type.labels) labels[key] = value;  // The catalog's own.
  return labels;
}

}  // namespace

Resources Allocatable(const InstanceType& type, const Settings& settings,
                      const NodeClass* nodeclass) {
  assert(type.cpu.value >= 0 && type.memory.value >= 0);
  if (type.allocatable) return *type.allocatable;  // Written by hand in the catalog.
  std::int64_t pods = MaxPods(type, settings, nodeclass);
  std::int64_t memory_mib = type.memory.value / kMebibyte.value;
  std::int64_t overhead_mib = (memory_mib * settings.vm_memory_overhead_permille + 999) / 1000;
  Bytes usable{(memory_mib - overhead_mib) * kMebibyte.value};
  Bytes reserved = kKubeReservedMemoryBase + Bytes{kKubeReservedMemoryPerPod.value * pods};
  Resources allocatable;
  allocatable.cpu = type.cpu - KubeReservedCpu(type.cpu);
  allocatable.memory = std::max(Bytes{0}, usable - reserved - kEvictionThreshold);
  allocatable.pods = pods;
  AddAccelerators(type, allocatable);
  for (const auto& [name, count] : type.extended) {
    allocatable.extended[name] = count;
    // Huge pages are memory set aside: what the node has of them, pods' memory has not.
    if (name.starts_with("hugepages-"))
      allocatable.memory = std::max(Bytes{0}, allocatable.memory - Bytes{count});
  }
  return allocatable;
}

CatalogEntry MakeCatalogEntry(const InstanceType& type, const Settings& settings,
                              const NodeClass* nodeclass) {
  return CatalogEntry{type, Allocatable(type, settings, nodeclass), DeriveLabels(type)};
}

}  // namespace tenon
