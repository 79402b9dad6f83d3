// Storage: v1 PersistentVolumeClaims and PersistentVolumes, storage.k8s.io/v1 StorageClasses
// and CSINodes (how many volumes each node's drivers attach).
#include "adapters/kube/objects.h"

#include "adapters/kube/objects_parts.h"

namespace tenon::kube {

using namespace parts;

PersistentVolumeClaim ParsePersistentVolumeClaim(const YAML::Node& object) {
  return ParseNamed<PersistentVolumeClaim>(
      object, "PersistentVolumeClaim", [&](PersistentVolumeClaim& pvc) {
        const auto& meta = object["metadata"];
        pvc.ns = meta["namespace"] ? Str(meta["namespace"], "namespace") : "default";
        const auto& spec = object["spec"];
        if (spec && spec["storageClassName"]) {
          pvc.storage_class = Str(spec["storageClassName"], "storageClassName");
        }
        if (spec && spec["volumeName"]) pvc.volume_name = Str(spec["volumeName"], "volumeName");
      });
}

PersistentVolume ParsePersistentVolume(const YAML::Node& object) {
  return ParseNamed<PersistentVolume>(object, "PersistentVolume", [&](PersistentVolume& pv) {
    const auto& spec = object["spec"];
    if (spec && spec["csi"] && spec["csi"]["driver"]) {
      pv.csi_driver = Str(spec["csi"]["driver"], "csi.driver");
    }
    if (spec && spec["nodeAffinity"] && spec["nodeAffinity"]["required"]) {
      pv.node_affinity = ParseTerms(spec["nodeAffinity"]["required"]["nodeSelectorTerms"]);
    }
    // A local or hostPath volume lives and dies with its node: its hostname affinity says where
    // it was, not where a rescheduled pod can go, and is left out (as Karpenter leaves it out).
    if (spec && (spec["local"] || spec["hostPath"])) {
      for (auto& term : pv.node_affinity) {
        std::erase_if(term.requirements,
                      [](const Requirement& r) { return r.key == label::kHostname; });
      }
    }
  });
}

StorageClass ParseStorageClass(const YAML::Node& object) {
  return ParseNamed<StorageClass>(object, "StorageClass", [&](StorageClass& sc) {
    if (object["provisioner"]) sc.provisioner = Str(object["provisioner"], "provisioner");
    sc.wait_for_first_consumer =
        object["volumeBindingMode"] &&
        Str(object["volumeBindingMode"], "volumeBindingMode") == "WaitForFirstConsumer";
    sc.allowed_topologies = ParseTerms(object["allowedTopologies"]);
  });
}

CsiNode ParseCsiNode(const YAML::Node& object) {
  return ParseNamed<CsiNode>(object, "CSINode", [&](CsiNode& csi) {
    if (object["spec"] && object["spec"]["drivers"]) {
      for (const auto& d : object["spec"]["drivers"]) {
        if (d["allocatable"] && d["allocatable"]["count"]) {
          csi.attach_limits[Str(d["name"], "driver.name")] =
              d["allocatable"]["count"].as<std::int64_t>();
        }
      }
    }
  });
}

}  // namespace tenon::kube
