// Storage: v1 PersistentVolumeClaims and PersistentVolumes, storage.k8s.io/v1 StorageClasses
// and CSINodes (how many volumes each node's drivers attach).
#include "adapters/kube/objects.h"

#include "adapters/kube/objects_parts.h"

namespace tenon::kube {

using namespace parts;

namespace {

template <class V>
PersistentVolumeClaim ParsePersistentVolumeClaimFrom(const V& object) {
  return ParseNamed<PersistentVolumeClaim>(
      object, "PersistentVolumeClaim", [&](PersistentVolumeClaim& pvc) {
        const V meta = object["metadata"];
        pvc.ns = meta["namespace"] ? Str(meta["namespace"], "namespace") : "default";
        const V spec = object["spec"];
        if (spec && spec["storageClassName"]) {
          pvc.storage_class = Str(spec["storageClassName"], "storageClassName");
        }
        if (spec && spec["volumeName"]) pvc.volume_name = Str(spec["volumeName"], "volumeName");
      });
}

template <class V>
PersistentVolume ParsePersistentVolumeFrom(const V& object) {
  return ParseNamed<PersistentVolume>(object, "PersistentVolume", [&](PersistentVolume& pv) {
    const V spec = object["spec"];
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

template <class V>
StorageClass ParseStorageClassFrom(const V& object) {
  return ParseNamed<StorageClass>(object, "StorageClass", [&](StorageClass& sc) {
    if (object["provisioner"]) sc.provisioner = Str(object["provisioner"], "provisioner");
    sc.wait_for_first_consumer =
        object["volumeBindingMode"] &&
        Str(object["volumeBindingMode"], "volumeBindingMode") == "WaitForFirstConsumer";
    sc.allowed_topologies = ParseTerms(object["allowedTopologies"]);
  });
}

template <class V>
CsiNode ParseCsiNodeFrom(const V& object) {
  return ParseNamed<CsiNode>(object, "CSINode", [&](CsiNode& csi) {
    if (!object["spec"]) return;
    for (const V d : List(object["spec"]["drivers"], "spec.drivers")) {
      if (d["allocatable"] && d["allocatable"]["count"]) {
        csi.attach_limits[Str(d["name"], "driver.name")] =
            Int<std::int64_t>(d["allocatable"]["count"], "driver.allocatable.count");
      }
    }
  });
}

}  // namespace

PersistentVolumeClaim ParsePersistentVolumeClaim(const YAML::Node& object) {
  return ParsePersistentVolumeClaimFrom(YamlValue(object));
}

PersistentVolumeClaim ParsePersistentVolumeClaim(const JsonValue& object) {
  return ParsePersistentVolumeClaimFrom(object);
}

PersistentVolume ParsePersistentVolume(const YAML::Node& object) {
  return ParsePersistentVolumeFrom(YamlValue(object));
}

PersistentVolume ParsePersistentVolume(const JsonValue& object) {
  return ParsePersistentVolumeFrom(object);
}

StorageClass ParseStorageClass(const YAML::Node& object) {
  return ParseStorageClassFrom(YamlValue(object));
}

StorageClass ParseStorageClass(const JsonValue& object) {
  return ParseStorageClassFrom(object);
}

CsiNode ParseCsiNode(const YAML::Node& object) {
  return ParseCsiNodeFrom(YamlValue(object));
}

CsiNode ParseCsiNode(const JsonValue& object) {
  return ParseCsiNodeFrom(object);
}

}  // namespace tenon::kube
