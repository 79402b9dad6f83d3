// What the cloud sells, as the core sees it: instance types and their offerings (zone,
// capacity type, price, availability), and the controller's own settings.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/units.h"

namespace tenon {

struct Offering {
  std::string zone;
  std::string capacity_type;
  MicroUsdPerHour price{0};
  bool available = true;
  friend bool operator==(const Offering&, const Offering&) = default;
};

// One instance type as the cloud describes it; allocatable is derived by the core.
struct InstanceType {
  std::string name;
  std::string arch;  // amd64 | arm64
  Millicores cpu{0};
  Bytes memory{0};
  std::int32_t max_enis = 0;
  std::int32_t ipv4_per_eni = 0;
  std::int32_t gpu_count = 0;
  std::string gpu_name;                // e.g. "T4", "A10G"; empty without GPUs.
  std::string gpu_manufacturer;        // e.g. "NVIDIA"
  Bytes gpu_memory{0};                 // Per GPU.
  std::int32_t accelerator_count = 0;  // Inferentia / Trainium devices.
  std::string cpu_manufacturer;        // "Intel", "AMD", "AWS"
  std::string hypervisor;              // "nitro", "xen", or empty for metal.
  std::int64_t local_nvme_gib = 0;
  bool bare_metal = false;
  std::vector<Offering> offerings;
  // What a catalog file may add to AWS's description (a test catalog, as Karpenter's fake cloud
  // provider has one): labels its nodes carry besides the derived ones (their keys are then
  // labels an instance type determines, as well-known as the instance type's own), extended
  // resources its nodes advertise, and allocatable written by hand in place of the computed one.
  Labels labels;
  std::map<std::string, std::int64_t> extended;
  std::optional<Resources> allocatable;
  friend bool operator==(const InstanceType&, const InstanceType&) = default;
};

struct Settings {
  std::string cluster_name = "tenon";
  Duration batch_idle{1 * kSecond};               // BATCH_IDLE_DURATION
  Duration batch_max{10 * kSecond};               // BATCH_MAX_DURATION
  std::int32_t vm_memory_overhead_permille = 75;  // VM_MEMORY_OVERHEAD_PERCENT 0.075
  bool ignore_preferences = false;                // PREFERENCE_POLICY=Ignore
  bool min_values_best_effort = false;            // MIN_VALUES_POLICY=BestEffort
  bool spot_to_spot_consolidation = false;        // FEATURE_GATES SpotToSpotConsolidation
  bool static_capacity = false;                   // FEATURE_GATES StaticCapacity
  bool node_overlay = false;                      // FEATURE_GATES NodeOverlay
  bool node_repair = false;                       // FEATURE_GATES NodeRepair
  bool pod_deletion_cost = false;                 // FEATURE_GATES PodDeletionCostManagement
  // Beyond Karpenter, off by default: a replacement must save at least this much, absolute
  // and as a percent of the price of the nodes it replaces (the larger applies).
  MicroUsdPerHour consolidation_min_savings{0};
  std::int32_t consolidation_min_savings_percent = 0;
  // Beyond Karpenter, off by default: expired nodes go through the budgets and are replaced
  // before they are drained, like drifted ones, instead of being deleted at once.
  bool soft_expiration = false;
  // RESERVED_ENIS: network interfaces kept from pods (the VPC CNI's max-pods formula).
  std::int32_t reserved_enis = 0;
  // Where the nodes find the API server (CLUSTER_ENDPOINT) and its CA bundle (base64): the
  // user data of every launch carries them.
  std::string cluster_endpoint;
  std::string cluster_ca_bundle;
  friend bool operator==(const Settings&, const Settings&) = default;
};

}  // namespace tenon
