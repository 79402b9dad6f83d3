// Strict field checking of Kubernetes objects, as `kubectl apply --validate=strict` does it: a
// field the API does not define for the object's kind is an error naming its line, its path and
// the known field it is nearest to, so that `resourcs:` under a container is caught rather than
// leaving the container without requests.
//
// The schema is a table of named struct types, each mapping its field names to what lies below
// them: a struct type, a list of a struct type, or anything. Objects also come from
// `kubectl get -o yaml` dumps and from a live API server, so the table is permissive wherever
// the API is: `status` of every kind, labels, annotations, managedFields, resource quantities,
// node selectors, parameters and the inside of each volume source are not checked, and neither
// is any subtree whose content is free-form. A field missing here would reject a real object,
// so a subtree is left unchecked rather than guessed at. The three Karpenter kinds follow the
// CRDs in deploy/base/crds field for field.
#include "adapters/sim/schema.h"

#include "adapters/sim/manifests.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tenon::sim {
namespace {

// One struct type: its name and its fields, each written "name" (anything below it, not
// checked), "name:Type" (a Type) or "name:[Type]" (a list of Type).
struct TypeDef {
  std::string_view name;
  std::vector<std::string_view> fields;
};

// clang-format off
// Object metadata (meta/v1), and the List of objects `kubectl get -o yaml` writes.
std::vector<TypeDef> ObjectTypes() {
  return {
      {"ObjectMeta", {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
                      "generation", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "labels", "annotations",
                      "ownerReferences:[OwnerReference]", "finalizers", "managedFields"}},
      {"OwnerReference", {"apiVersion", "kind", "name", "uid", "controller",
                          "blockOwnerDeletion"}},
      {"LabelSelector", {"matchLabels", "matchExpressions:[LabelSelectorRequirement]"}},
      {"LabelSelectorRequirement", {"key", "operator", "values"}},
      {"List", {"apiVersion", "kind", "metadata", "items"}},
  };
}

// Pods (core/v1).
std::vector<TypeDef> PodTypes() {
  return {
      {"PodTemplateSpec", {"metadata:ObjectMeta", "spec:PodSpec"}},
      {"PodSpec", {"volumes:[Volume]", "initContainers:[Container]", "containers:[Container]",
                   "ephemeralContainers:[EphemeralContainer]", "restartPolicy",
                   "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy",
                   "nodeSelector", "serviceAccountName", "serviceAccount",
                   "automountServiceAccountToken", "nodeName", "hostNetwork", "hostPID",
                   "hostIPC", "shareProcessNamespace", "securityContext:PodSecurityContext",
                   "imagePullSecrets:[LocalObjectReference]", "hostname", "subdomain",
                   "affinity:Affinity", "schedulerName", "tolerations:[Toleration]",
                   "hostAliases:[HostAlias]", "priorityClassName", "priority",
                   "dnsConfig:PodDNSConfig", "readinessGates:[PodReadinessGate]",
                   "runtimeClassName", "enableServiceLinks", "preemptionPolicy", "overhead",
                   "topologySpreadConstraints:[TopologySpreadConstraint]", "setHostnameAsFQDN",
                   "os:PodOS", "hostUsers", "schedulingGates:[PodSchedulingGate]",
                   "resourceClaims:[PodResourceClaim]",
                   // Newer than 1.30: pod-level resources (1.32), hostnameOverride (1.34).
                   "resources:ResourceRequirements", "hostnameOverride"}},
      {"LocalObjectReference", {"name"}},
      {"HostAlias", {"ip", "hostnames"}},
      {"PodDNSConfig", {"nameservers", "searches", "options:[PodDNSConfigOption]"}},
      {"PodDNSConfigOption", {"name", "value"}},
      {"PodReadinessGate", {"conditionType"}},
      {"PodOS", {"name"}},
      {"PodSchedulingGate", {"name"}},
      // `source` is 1.30's form; resourceClaimName and resourceClaimTemplateName replace it in
      // 1.31.
      {"PodResourceClaim", {"name", "source", "resourceClaimName", "resourceClaimTemplateName"}},
      {"PodSecurityContext", {"seLinuxOptions:SELinuxOptions",
                              "windowsOptions:WindowsSecurityContextOptions", "runAsUser",
                              "runAsGroup", "runAsNonRoot", "supplementalGroups",
                              "supplementalGroupsPolicy", "fsGroup", "sysctls:[Sysctl]",
                              "fsGroupChangePolicy", "seccompProfile:SeccompProfile",
                              "appArmorProfile:AppArmorProfile", "seLinuxChangePolicy"}},
      {"SELinuxOptions", {"user", "role", "type", "level"}},
      {"WindowsSecurityContextOptions", {"gmsaCredentialSpecName", "gmsaCredentialSpec",
                                         "runAsUserName", "hostProcess"}},
      {"SeccompProfile", {"type", "localhostProfile"}},
      {"AppArmorProfile", {"type", "localhostProfile"}},
      {"Sysctl", {"name", "value"}},
  };
}

// Containers, and what they run with: probes, lifecycle hooks, security contexts.
std::vector<TypeDef> ContainerTypes() {
  return {
      {"Container", {"name", "image", "command", "args", "workingDir", "ports:[ContainerPort]",
                     "envFrom:[EnvFromSource]", "env:[EnvVar]",
                     "resources:ResourceRequirements", "resizePolicy:[ContainerResizePolicy]",
                     "restartPolicy", "restartPolicyRules", "volumeMounts:[VolumeMount]",
                     "volumeDevices:[VolumeDevice]", "livenessProbe:Probe",
                     "readinessProbe:Probe", "startupProbe:Probe", "lifecycle:Lifecycle",
                     "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy",
                     "securityContext:SecurityContext", "stdin", "stdinOnce", "tty"}},
      // A Container's fields and the container it targets.
      {"EphemeralContainer", {"name", "image", "command", "args", "workingDir",
                              "ports:[ContainerPort]", "envFrom:[EnvFromSource]", "env:[EnvVar]",
                              "resources:ResourceRequirements",
                              "resizePolicy:[ContainerResizePolicy]", "restartPolicy",
                              "restartPolicyRules", "volumeMounts:[VolumeMount]",
                              "volumeDevices:[VolumeDevice]", "livenessProbe:Probe",
                              "readinessProbe:Probe", "startupProbe:Probe", "lifecycle:Lifecycle",
                              "terminationMessagePath", "terminationMessagePolicy",
                              "imagePullPolicy", "securityContext:SecurityContext", "stdin",
                              "stdinOnce", "tty", "targetContainerName"}},
      {"ContainerPort", {"name", "hostPort", "containerPort", "protocol", "hostIP"}},
      {"EnvFromSource", {"prefix", "configMapRef:OptionalRef", "secretRef:OptionalRef"}},
      {"OptionalRef", {"name", "optional"}},
      {"EnvVar", {"name", "value", "valueFrom:EnvVarSource"}},
      {"EnvVarSource", {"fieldRef:ObjectFieldSelector", "resourceFieldRef:ResourceFieldSelector",
                        "configMapKeyRef:KeySelector", "secretKeyRef:KeySelector",
                        "fileKeyRef"}},
      {"ObjectFieldSelector", {"apiVersion", "fieldPath"}},
      {"ResourceFieldSelector", {"containerName", "resource", "divisor"}},
      {"KeySelector", {"name", "key", "optional"}},
      {"ResourceRequirements", {"limits", "requests", "claims:[ResourceClaim]"}},
      {"ResourceClaim", {"name", "request"}},
      {"ContainerResizePolicy", {"resourceName", "restartPolicy"}},
      {"VolumeMount", {"name", "readOnly", "recursiveReadOnly", "mountPath", "subPath",
                       "mountPropagation", "subPathExpr"}},
      {"VolumeDevice", {"name", "devicePath"}},
      {"Probe", {"exec:ExecAction", "httpGet:HTTPGetAction", "tcpSocket:TCPSocketAction",
                 "grpc:GRPCAction", "initialDelaySeconds", "timeoutSeconds", "periodSeconds",
                 "successThreshold", "failureThreshold", "terminationGracePeriodSeconds"}},
      {"Lifecycle", {"postStart:LifecycleHandler", "preStop:LifecycleHandler", "stopSignal"}},
      {"LifecycleHandler", {"exec:ExecAction", "httpGet:HTTPGetAction",
                            "tcpSocket:TCPSocketAction", "sleep:SleepAction"}},
      {"ExecAction", {"command"}},
      {"HTTPGetAction", {"path", "port", "host", "scheme", "httpHeaders:[HTTPHeader]"}},
      {"HTTPHeader", {"name", "value"}},
      {"TCPSocketAction", {"port", "host"}},
      {"GRPCAction", {"port", "service"}},
      {"SleepAction", {"seconds"}},
      {"SecurityContext", {"capabilities:Capabilities", "privileged",
                           "seLinuxOptions:SELinuxOptions",
                           "windowsOptions:WindowsSecurityContextOptions", "runAsUser",
                           "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
                           "allowPrivilegeEscalation", "procMount",
                           "seccompProfile:SeccompProfile", "appArmorProfile:AppArmorProfile"}},
      {"Capabilities", {"add", "drop"}},
  };
}

// Volumes: a name and one source; each source's own fields are not checked.
std::vector<TypeDef> VolumeTypes() {
  return {
      {"Volume", {"name", "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore",
                  "gitRepo", "secret", "nfs", "iscsi", "glusterfs", "persistentVolumeClaim",
                  "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
                  "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk",
                  "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos",
                  "csi", "ephemeral", "image"}},
  };
}

// The constraints on where a pod may go: affinity, tolerations, topology spread.
std::vector<TypeDef> SchedulingTypes() {
  return {
      {"Affinity", {"nodeAffinity:NodeAffinity", "podAffinity:PodAffinity",
                    "podAntiAffinity:PodAffinity"}},
      {"NodeAffinity", {"requiredDuringSchedulingIgnoredDuringExecution:NodeSelector",
                        "preferredDuringSchedulingIgnoredDuringExecution:"
                        "[PreferredSchedulingTerm]"}},
      {"NodeSelector", {"nodeSelectorTerms:[NodeSelectorTerm]"}},
      {"NodeSelectorTerm", {"matchExpressions:[NodeSelectorRequirement]",
                            "matchFields:[NodeSelectorRequirement]"}},
      {"NodeSelectorRequirement", {"key", "operator", "values"}},
      {"PreferredSchedulingTerm", {"weight", "preference:NodeSelectorTerm"}},
      // podAffinity and podAntiAffinity have the same fields.
      {"PodAffinity", {"requiredDuringSchedulingIgnoredDuringExecution:[PodAffinityTerm]",
                       "preferredDuringSchedulingIgnoredDuringExecution:"
                       "[WeightedPodAffinityTerm]"}},
      {"PodAffinityTerm", {"labelSelector:LabelSelector", "namespaces", "topologyKey",
                           "namespaceSelector:LabelSelector", "matchLabelKeys",
                           "mismatchLabelKeys"}},
      {"WeightedPodAffinityTerm", {"weight", "podAffinityTerm:PodAffinityTerm"}},
      {"Toleration", {"key", "operator", "value", "effect", "tolerationSeconds"}},
      {"TopologySpreadConstraint", {"maxSkew", "topologyKey", "whenUnsatisfiable",
                                    "labelSelector:LabelSelector", "minDomains",
                                    "nodeAffinityPolicy", "nodeTaintsPolicy", "matchLabelKeys"}},
  };
}

// Workloads, and the objects their pods' admission and disruption read.
std::vector<TypeDef> WorkloadTypes() {
  return {
      {"Pod", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:PodSpec", "status"}},
      {"Deployment", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:DeploymentSpec",
                      "status"}},
      {"DeploymentSpec", {"replicas", "selector:LabelSelector", "template:PodTemplateSpec",
                          "strategy:DeploymentStrategy", "minReadySeconds",
                          "revisionHistoryLimit", "paused", "progressDeadlineSeconds"}},
      {"DeploymentStrategy", {"type", "rollingUpdate:RollingUpdate"}},
      // A Deployment's and a DaemonSet's rolling update have the same fields.
      {"RollingUpdate", {"maxUnavailable", "maxSurge"}},
      {"ReplicaSet", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:ReplicaSetSpec",
                      "status"}},
      {"ReplicaSetSpec", {"replicas", "minReadySeconds", "selector:LabelSelector",
                          "template:PodTemplateSpec"}},
      {"StatefulSet", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:StatefulSetSpec",
                       "status"}},
      {"StatefulSetSpec", {"replicas", "selector:LabelSelector", "template:PodTemplateSpec",
                           "volumeClaimTemplates:[PersistentVolumeClaim]", "serviceName",
                           "podManagementPolicy", "updateStrategy:StatefulSetUpdateStrategy",
                           "revisionHistoryLimit", "minReadySeconds",
                           "persistentVolumeClaimRetentionPolicy:"
                           "StatefulSetPersistentVolumeClaimRetentionPolicy",
                           "ordinals:StatefulSetOrdinals"}},
      {"StatefulSetUpdateStrategy", {"type", "rollingUpdate:RollingUpdateStatefulSetStrategy"}},
      {"RollingUpdateStatefulSetStrategy", {"partition", "maxUnavailable"}},
      {"StatefulSetPersistentVolumeClaimRetentionPolicy", {"whenDeleted", "whenScaled"}},
      {"StatefulSetOrdinals", {"start"}},
      {"DaemonSet", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:DaemonSetSpec",
                     "status"}},
      {"DaemonSetSpec", {"selector:LabelSelector", "template:PodTemplateSpec",
                         "updateStrategy:DaemonSetUpdateStrategy", "minReadySeconds",
                         "revisionHistoryLimit"}},
      {"DaemonSetUpdateStrategy", {"type", "rollingUpdate:RollingUpdate"}},
      {"Job", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:JobSpec", "status"}},
      {"JobSpec", {"parallelism", "completions", "activeDeadlineSeconds", "podFailurePolicy",
                   "successPolicy", "backoffLimit", "backoffLimitPerIndex", "maxFailedIndexes",
                   "selector:LabelSelector", "manualSelector", "template:PodTemplateSpec",
                   "ttlSecondsAfterFinished", "completionMode", "suspend",
                   "podReplacementPolicy", "managedBy"}},
      {"PodDisruptionBudget", {"apiVersion", "kind", "metadata:ObjectMeta",
                               "spec:PodDisruptionBudgetSpec", "status"}},
      {"PodDisruptionBudgetSpec", {"minAvailable", "maxUnavailable", "selector:LabelSelector",
                                   "unhealthyPodEvictionPolicy"}},
      {"PriorityClass", {"apiVersion", "kind", "metadata:ObjectMeta", "value", "globalDefault",
                         "description", "preemptionPolicy", "status"}},
      {"RuntimeClass", {"apiVersion", "kind", "metadata:ObjectMeta", "handler",
                        "overhead:RuntimeClassOverhead", "scheduling:RuntimeClassScheduling",
                        "status"}},
      {"RuntimeClassOverhead", {"podFixed"}},
      {"RuntimeClassScheduling", {"nodeSelector", "tolerations:[Toleration]"}},
  };
}

// Storage (core/v1 and storage.k8s.io/v1): claims, volumes, their classes and CSI nodes.
std::vector<TypeDef> StorageTypes() {
  return {
      {"PersistentVolumeClaim", {"apiVersion", "kind", "metadata:ObjectMeta",
                                 "spec:PersistentVolumeClaimSpec", "status"}},
      {"PersistentVolumeClaimSpec", {"accessModes", "selector:LabelSelector",
                                     "resources:VolumeResourceRequirements", "volumeName",
                                     "storageClassName", "volumeMode",
                                     "dataSource:TypedLocalObjectReference",
                                     "dataSourceRef:TypedObjectReference",
                                     "volumeAttributesClassName"}},
      {"VolumeResourceRequirements", {"limits", "requests"}},
      {"TypedLocalObjectReference", {"apiGroup", "kind", "name"}},
      {"TypedObjectReference", {"apiGroup", "kind", "name", "namespace"}},
      {"PersistentVolume", {"apiVersion", "kind", "metadata:ObjectMeta",
                            "spec:PersistentVolumeSpec", "status"}},
      {"PersistentVolumeSpec", {"capacity", "accessModes", "claimRef",
                                "persistentVolumeReclaimPolicy", "storageClassName",
                                "mountOptions", "volumeMode", "nodeAffinity:VolumeNodeAffinity",
                                "volumeAttributesClassName",
                                // The volume sources.
                                "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs",
                                "cinder", "csi", "fc", "flexVolume", "flocker",
                                "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local",
                                "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd",
                                "scaleIO", "storageos", "vsphereVolume"}},
      {"VolumeNodeAffinity", {"required:NodeSelector"}},
      {"StorageClass", {"apiVersion", "kind", "metadata:ObjectMeta", "provisioner",
                        "parameters", "reclaimPolicy", "mountOptions", "allowVolumeExpansion",
                        "volumeBindingMode", "allowedTopologies:[TopologySelectorTerm]",
                        "status"}},
      {"TopologySelectorTerm", {"matchLabelExpressions:[TopologySelectorLabelRequirement]"}},
      {"TopologySelectorLabelRequirement", {"key", "values"}},
      {"CSINode", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:CSINodeSpec", "status"}},
      {"CSINodeSpec", {"drivers:[CSINodeDriver]"}},
      {"CSINodeDriver", {"name", "nodeID", "topologyKeys", "allocatable:VolumeNodeResources"}},
      {"VolumeNodeResources", {"count"}},
  };
}

// Nodes (core/v1).
std::vector<TypeDef> NodeTypes() {
  return {
      {"Node", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:NodeSpec", "status"}},
      {"NodeSpec", {"podCIDR", "podCIDRs", "providerID", "unschedulable", "taints:[Taint]",
                    "configSource", "externalID"}},
      {"Taint", {"key", "value", "effect", "timeAdded"}},
  };
}

// Karpenter's own kinds (karpenter.sh/v1 in deploy/base/crds).
std::vector<TypeDef> NodePoolTypes() {
  return {
      {"NodePool", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:NodePoolSpec",
                    "status"}},
      {"NodePoolSpec", {"template:NodeClaimTemplate", "disruption:Disruption", "limits",
                        "weight", "replicas"}},
      {"NodeClaimTemplate", {"metadata:NodeClaimTemplateMetadata",
                             "spec:NodeClaimTemplateSpec"}},
      {"NodeClaimTemplateMetadata", {"labels", "annotations"}},
      {"NodeClaimTemplateSpec", {"nodeClassRef:NodeClassReference", "taints:[Taint]",
                                 "startupTaints:[Taint]",
                                 "requirements:[NodeSelectorRequirementWithMinValues]",
                                 "expireAfter", "terminationGracePeriod"}},
      {"NodeClassReference", {"group", "kind", "name"}},
      {"NodeSelectorRequirementWithMinValues", {"key", "operator", "values", "minValues"}},
      {"Disruption", {"consolidationPolicy", "consolidateAfter", "budgets:[Budget]"}},
      {"Budget", {"nodes", "schedule", "duration", "reasons"}},
      {"NodeClaim", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:NodeClaimSpec",
                     "status"}},
      {"NodeClaimSpec", {"nodeClassRef:NodeClassReference", "taints:[Taint]",
                         "startupTaints:[Taint]",
                         "requirements:[NodeSelectorRequirementWithMinValues]",
                         "resources:NodeClaimResources", "expireAfter",
                         "terminationGracePeriod"}},
      {"NodeClaimResources", {"requests"}},
      {"NodeOverlay", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:NodeOverlaySpec",
                       "status"}},
      {"NodeOverlaySpec", {"requirements:[NodeSelectorRequirement]", "price", "priceAdjustment",
                           "capacity", "weight"}},
  };
}

// The AWS provider's kind (karpenter.k8s.aws/v1 in deploy/base/crds).
std::vector<TypeDef> NodeClassTypes() {
  return {
      {"EC2NodeClass", {"apiVersion", "kind", "metadata:ObjectMeta", "spec:EC2NodeClassSpec",
                        "status"}},
      {"EC2NodeClassSpec", {"kubelet:KubeletConfiguration",
                            "subnetSelectorTerms:[SubnetSelectorTerm]",
                            "securityGroupSelectorTerms:[SecurityGroupSelectorTerm]",
                            "capacityReservationSelectorTerms:[CapacityReservationSelectorTerm]",
                            "associatePublicIPAddress", "amiSelectorTerms:[AMISelectorTerm]",
                            "amiFamily", "userData", "role", "instanceProfile", "tags",
                            "blockDeviceMappings:[BlockDeviceMapping]", "instanceStorePolicy",
                            "detailedMonitoring", "metadataOptions:MetadataOptions",
                            "context"}},
      {"KubeletConfiguration", {"podsPerCore", "maxPods", "systemReserved", "kubeReserved",
                                "evictionHard", "evictionSoft", "evictionSoftGracePeriod",
                                "evictionMaxPodGracePeriod", "imageGCHighThresholdPercent",
                                "imageGCLowThresholdPercent", "cpuCFSQuota", "clusterDNS"}},
      {"SubnetSelectorTerm", {"tags", "id"}},
      {"SecurityGroupSelectorTerm", {"tags", "id", "name"}},
      {"CapacityReservationSelectorTerm", {"tags", "id", "ownerID"}},
      {"AMISelectorTerm", {"alias", "tags", "id", "name", "owner", "ssmParameter"}},
      {"BlockDeviceMapping", {"deviceName", "ebs:BlockDevice", "rootVolume"}},
      {"BlockDevice", {"deleteOnTermination", "encrypted", "iops", "kmsKeyID", "snapshotID",
                       "throughput", "volumeInitializationRate", "volumeSize", "volumeType"}},
      {"MetadataOptions", {"httpEndpoint", "httpProtocolIPv6", "httpPutResponseHopLimit",
                           "httpTokens"}},
  };
}
// clang-format on

// The table, part by part.
std::vector<TypeDef> TypeDefs() {
  using Part = std::vector<TypeDef> (*)();
  constexpr Part kParts[] = {ObjectTypes,     PodTypes,      ContainerTypes, VolumeTypes,
                             SchedulingTypes, WorkloadTypes, StorageTypes,   NodeTypes,
                             NodePoolTypes,   NodeClassTypes};
  std::vector<TypeDef> types;
  for (Part part : kParts) {
    std::vector<TypeDef> defs = part();
    types.insert(types.end(), defs.begin(), defs.end());
  }
  return types;
}

// The kinds checked, each with the apiVersion it is written with and its type in the table.
struct KindDef {
  std::string_view kind;
  std::string_view api_version;
  std::string_view type;
};

constexpr KindDef kKinds[] = {
    {"Pod", "v1", "Pod"},
    {"Deployment", "apps/v1", "Deployment"},
    {"ReplicaSet", "apps/v1", "ReplicaSet"},
    {"StatefulSet", "apps/v1", "StatefulSet"},
    {"DaemonSet", "apps/v1", "DaemonSet"},
    {"Job", "batch/v1", "Job"},
    {"PodDisruptionBudget", "policy/v1", "PodDisruptionBudget"},
    {"PersistentVolumeClaim", "v1", "PersistentVolumeClaim"},
    {"PersistentVolume", "v1", "PersistentVolume"},
    {"StorageClass", "storage.k8s.io/v1", "StorageClass"},
    {"CSINode", "storage.k8s.io/v1", "CSINode"},
    {"PriorityClass", "scheduling.k8s.io/v1", "PriorityClass"},
    {"RuntimeClass", "node.k8s.io/v1", "RuntimeClass"},
    {"Node", "v1", "Node"},
    {"NodePool", "karpenter.sh/v1", "NodePool"},
    {"NodeClaim", "karpenter.sh/v1", "NodeClaim"},
    {"EC2NodeClass", "karpenter.k8s.aws/v1", "EC2NodeClass"},
    {"NodeOverlay", "karpenter.sh/v1alpha1", "NodeOverlay"},
};

// What lies below a field.
struct Child {
  enum class Shape { kAny, kStruct, kList };
  Shape shape = Shape::kAny;
  std::string type;  // The struct type (of each item, for a list).
};

using Fields = std::map<std::string, Child, std::less<>>;
using Schema = std::map<std::string, Fields, std::less<>>;

// The table, parsed once. A field naming a type the table lacks is a mistake in the table.
const Schema& TheSchema() {
  static const Schema schema = [] {
    Schema s;
    for (const auto& def : TypeDefs()) {
      Fields& fields = s[std::string(def.name)];
      for (std::string_view spec : def.fields) {
        const std::size_t colon = spec.find(':');
        Child child;
        if (colon != std::string_view::npos) {
          std::string_view type = spec.substr(colon + 1);
          child.shape = Child::Shape::kStruct;
          if (type.starts_with('[') && type.ends_with(']')) {
            child.shape = Child::Shape::kList;
            type = type.substr(1, type.size() - 2);
          }
          child.type = std::string(type);
        }
        if (!fields.emplace(std::string(spec.substr(0, colon)), child).second) {
          throw std::logic_error("schema: " + std::string(def.name) + " lists '" +
                                 std::string(spec) + "' twice");
        }
      }
    }
    for (const auto& [type, fields] : s) {
      for (const auto& [name, child] : fields) {
        if (child.shape != Child::Shape::kAny && !s.contains(child.type)) {
          throw std::logic_error("schema: " + type + "." + name + " names unknown type " +
                                 child.type);
        }
      }
    }
    return s;
  }();
  return schema;
}

[[noreturn]] void Unknown(const YAML::Node& key, const std::string& path, const Fields& known) {
  std::vector<std::string> names;
  for (const auto& [name, child] : known) names.push_back(name);
  UnknownField(key, path, names);
}

// Checks the map `node` as a `type`, its path in the object being `path` ("" at the top). A
// node of another shape than the type's is left to whatever reads the field.
void Walk(const YAML::Node& node, const std::string& type, const std::string& path) {
  if (!node.IsMap()) return;
  const Fields& fields = TheSchema().at(type);
  for (const auto& kv : node) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
    const std::string field_path = path.empty() ? key : path + "." + key;
    const auto it = fields.find(key);
    if (it == fields.end()) Unknown(kv.first, field_path, fields);
    const Child& child = it->second;
    if (child.shape == Child::Shape::kStruct) {
      Walk(kv.second, child.type, field_path);
    } else if (child.shape == Child::Shape::kList && kv.second.IsSequence()) {
      for (std::size_t i = 0; i < kv.second.size(); ++i) {
        Walk(kv.second[i], child.type, field_path + "[" + std::to_string(i) + "]");
      }
    }
  }
}

std::string ScalarOf(const YAML::Node& node) {
  return node && node.IsScalar() ? node.Scalar() : std::string();
}

void CheckObject(const YAML::Node& object, const std::string& path) {
  if (!object || !object.IsMap()) return;
  const std::string kind = ScalarOf(object["kind"]);
  const std::string api_version = ScalarOf(object["apiVersion"]);
  if (kind == "List" && (api_version.empty() || api_version == "v1")) {
    Walk(object, "List", path);  // Its items are objects of any kind, checked as such.
    const YAML::Node items = object["items"];
    if (!items || !items.IsSequence()) return;
    for (std::size_t i = 0; i < items.size(); ++i) {
      CheckObject(items[i],
                  (path.empty() ? "items" : path + ".items") + "[" + std::to_string(i) + "]");
    }
    return;
  }
  for (const KindDef& k : kKinds) {
    if (k.kind != kind) continue;
    // An object written without apiVersion is read as its kind all the same.
    if (!api_version.empty() && api_version != k.api_version) return;
    Walk(object, std::string(k.type), path);
    return;
  }
}

}  // namespace

void CheckFields(const YAML::Node& object) {
  CheckObject(object, "");
}

}  // namespace tenon::sim
