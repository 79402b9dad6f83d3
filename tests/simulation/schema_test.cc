// Strict field checking of Kubernetes objects: a misspelt field at any depth is an error naming
// its line, its path and the field meant, while real objects (kubectl dumps with status and
// managedFields, and every object in the examples and conformance cases) load.
#include "adapters/sim/schema.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace tenon::sim {
namespace {

// The message CheckFields throws for `yaml`, or "" when it accepts it.
std::string ErrorOf(const std::string& yaml) {
  try {
    CheckFields(YAML::Load(yaml));
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

// The 1-based line of the first occurrence of `text` in `yaml`.
int LineOf(const std::string& yaml, const std::string& text) {
  const std::size_t at = yaml.find(text);
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(yaml.begin(), yaml.begin() + at, '\n'));
}

std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// --- Misspelt fields -------------------------------------------------------------------------

TEST(CheckFields, MisspeltMetadataField) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: v1
kind: Pod
metadata:
  name: p
  lables: {app: web}
spec:
  containers: [{name: app, image: pause}]
)"),
            "line 5: metadata.lables: unknown field (did you mean 'labels'?)");
}

TEST(CheckFields, MisspeltDeploymentSpecField) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  replicsa: 3
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: pause}]
)"),
            "line 6: spec.replicsa: unknown field (did you mean 'replicas'?)");
}

TEST(CheckFields, MisspeltContainerField) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: pause
        resourcs:
          requests: {cpu: 100m}
)"),
            "line 13: spec.template.spec.containers[0].resourcs: unknown field "
            "(did you mean 'resources'?)");
}

TEST(CheckFields, ListIndexCountsFromZero) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers:
  - {name: init, image: busybox}
  - name: migrate
    image: busybox
    comand: [migrate]
  containers: [{name: app, image: pause}]
)"),
            "line 9: spec.initContainers[1].comand: unknown field (did you mean 'command'?)");
}

TEST(CheckFields, MisspeltNodeAffinityField) {
  EXPECT_EQ(
      ErrorOf(R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpresions:
              - {key: kubernetes.io/arch, operator: In, values: [arm64]}
      containers: [{name: app, image: pause}]
)"),
      "line 13: spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
      "Execution.nodeSelectorTerms[0].matchExpresions: unknown field "
      "(did you mean 'matchExpressions'?)");
}

TEST(CheckFields, MisspeltNodePoolField) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirement:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
)"),
            "line 8: spec.template.spec.requirement: unknown field "
            "(did you mean 'requirements'?)");
}

TEST(CheckFields, MisspeltEC2NodeClassField) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole
  amiSelectorTerm:
  - alias: al2023@latest
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
)"),
            "line 6: spec.amiSelectorTerm: unknown field (did you mean 'amiSelectorTerms'?)");
}

TEST(CheckFields, MisspeltFieldInsideVolumeClaimTemplate) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClasName: gp3
      resources: {requests: {storage: 10Gi}}
)"),
            "line 15: spec.volumeClaimTemplates[0].spec.storageClasName: unknown field "
            "(did you mean 'storageClassName'?)");
}

TEST(CheckFields, NoSuggestionWhenNothingIsClose) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: app, image: pause}]
  frobnicateEverything: true
)"),
            "line 6: spec.frobnicateEverything: unknown field");
}

TEST(CheckFields, ListItemsAreCheckedWithTheirIndex) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: anything}
  data: {a: b}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web}
  spec:
    replicsa: 3
)"),
            "line 12: items[1].spec.replicsa: unknown field (did you mean 'replicas'?)");
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: List\nitem: []\n"),
            "line 3: item: unknown field (did you mean 'items'?)");
}

// Every kind checked rejects a misspelt top-level field, written with or without apiVersion.
TEST(CheckFields, EveryKindIsChecked) {
  const std::vector<std::pair<std::string, std::string>> kinds{
      {"Pod", "v1"},
      {"Deployment", "apps/v1"},
      {"ReplicaSet", "apps/v1"},
      {"StatefulSet", "apps/v1"},
      {"DaemonSet", "apps/v1"},
      {"Job", "batch/v1"},
      {"PodDisruptionBudget", "policy/v1"},
      {"PersistentVolumeClaim", "v1"},
      {"PersistentVolume", "v1"},
      {"StorageClass", "storage.k8s.io/v1"},
      {"CSINode", "storage.k8s.io/v1"},
      {"PriorityClass", "scheduling.k8s.io/v1"},
      {"RuntimeClass", "node.k8s.io/v1"},
      {"Node", "v1"},
      {"NodePool", "karpenter.sh/v1"},
      {"NodeClaim", "karpenter.sh/v1"},
      {"EC2NodeClass", "karpenter.k8s.aws/v1"},
      {"List", "v1"},
  };
  for (const auto& [kind, api_version] : kinds) {
    EXPECT_EQ(ErrorOf("apiVersion: " + api_version + "\nkind: " + kind + "\nmetadta: {name: x}\n"),
              "line 3: metadta: unknown field (did you mean 'metadata'?)")
        << kind;
    EXPECT_EQ(ErrorOf("kind: " + kind + "\nmetadta: {name: x}\n"),
              "line 2: metadta: unknown field (did you mean 'metadata'?)")
        << kind;
  }
}

TEST(CheckFields, KindSpecificTopLevelFields) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: gp3
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: ebs.csi.aws.com
parameters: {type: gp3, encrypted: "true", anyKeyAtAll: x}
reclaimPolicy: Delete
volumeBindingMode: WaitForFirstConsumer
allowVolumeExpansion: true
mountOptions: [debug]
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.kubernetes.io/zone, values: [us-east-1a]}
)"),
            "");
  EXPECT_EQ(ErrorOf(R"(apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
globalDefault: false
description: for the web tier
preemptionPolicy: PreemptLowerPriority
)"),
            "");
  EXPECT_EQ(ErrorOf(R"(apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
overhead: {podFixed: {cpu: 250m, memory: 120Mi}}
scheduling:
  nodeSelector: {sandbox: gvisor}
  tolerations: [{key: sandbox, operator: Exists, effect: NoSchedule}]
)"),
            "");
  EXPECT_EQ(ErrorOf("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: "
                    "high}\nvalu: 1000\n"),
            "line 4: valu: unknown field (did you mean 'value'?)");
  EXPECT_EQ(ErrorOf("apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: s}\n"
                    "provisioner: ebs.csi.aws.com\nvolumeBindingMod: Immediate\n"),
            "line 5: volumeBindingMod: unknown field (did you mean 'volumeBindingMode'?)");
}

TEST(CheckFields, KindsNotReadAndOtherVersionsAreNotChecked) {
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n"), "");
  EXPECT_EQ(ErrorOf("apiVersion: example.com/v1\nkind: Widget\nspec: {anything: 1}\n"), "");
  EXPECT_EQ(ErrorOf("apiVersion: example.com/v1\nkind: Job\nspec: {anything: 1}\n"), "");
  EXPECT_EQ(ErrorOf("apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: p}\n"
                    "spec: {template: {spec: {kubelet: {maxPods: 110}}}}\n"),
            "");
  EXPECT_EQ(ErrorOf("just a string"), "");
  EXPECT_EQ(ErrorOf("apiVersion: v1\nkind: List\n"), "");
  EXPECT_NO_THROW(CheckFields(YAML::Node()));
  const YAML::Node pod = YAML::Load("{kind: Pod}");
  EXPECT_NO_THROW(CheckFields(pod["spec"]));  // A field that is not there.
}

TEST(CheckFields, FreeFormFieldsAreNotChecked) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
  labels: {any/label: x}
  annotations: {any.annotation/at-all: y}
spec:
  weight: 10
  limits: {cpu: "1000", nvidia.com/gpu: "8"}
  template:
    metadata:
      labels: {team: web}
      annotations: {note: x}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      taints: [{key: gpu, value: "true", effect: NoSchedule}]
      startupTaints: [{key: init, effect: NoExecute}]
      requirements:
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5], minValues: 1}
      expireAfter: 720h
      terminationGracePeriod: 48h
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
    budgets:
    - {nodes: 10%, schedule: "0 9 * * mon-fri", duration: 8h, reasons: [Drifted]}
status:
  anythingTheControllerWrites: {deep: {er: true}}
  conditions: [{type: Ready, status: "True", whatever: 1}]
)"),
            "");
}

// --- Real objects load ---------------------------------------------------------------------

// As `kubectl get deployment web -o yaml` prints it.
const std::string kDeploymentDump = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    deployment.kubernetes.io/revision: "3"
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"web","namespace":"shop"},"spec":{"replicas":3}}
  creationTimestamp: "2024-05-02T09:14:27Z"
  generation: 7
  labels:
    app.kubernetes.io/name: web
  managedFields:
  - apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:annotations:
          .: {}
          f:kubectl.kubernetes.io/last-applied-configuration: {}
      f:spec:
        f:progressDeadlineSeconds: {}
        f:replicas: {}
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}:
                .: {}
                f:image: {}
    manager: kubectl-client-side-apply
    operation: Update
    time: "2024-05-02T09:14:27Z"
  - apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:annotations:
          f:deployment.kubernetes.io/revision: {}
      f:status:
        f:availableReplicas: {}
        f:conditions:
          k:{"type":"Available"}:
            .: {}
            f:type: {}
    manager: kube-controller-manager
    operation: Update
    subresource: status
    time: "2024-05-03T11:02:10Z"
  name: web
  namespace: shop
  resourceVersion: "48213377"
  uid: 6f1c2d0e-3b7a-4f55-9a43-2b1b8f0d7c11
spec:
  progressDeadlineSeconds: 600
  replicas: 3
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app: web
  strategy:
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 25%
    type: RollingUpdate
  template:
    metadata:
      annotations:
        kubectl.kubernetes.io/restartedAt: "2024-05-03T11:00:00Z"
      creationTimestamp: null
      labels:
        app: web
    spec:
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - podAffinityTerm:
              labelSelector:
                matchExpressions:
                - key: app
                  operator: In
                  values:
                  - web
              topologyKey: kubernetes.io/hostname
            weight: 100
      containers:
      - env:
        - name: POD_NAME
          valueFrom:
            fieldRef:
              apiVersion: v1
              fieldPath: metadata.name
        - name: MEMORY_LIMIT
          valueFrom:
            resourceFieldRef:
              containerName: web
              divisor: "0"
              resource: limits.memory
        - name: DB_PASSWORD
          valueFrom:
            secretKeyRef:
              key: password
              name: db
        - name: LOG_LEVEL
          value: info
        envFrom:
        - configMapRef:
            name: web-config
        image: registry.example/web:1.4.2
        imagePullPolicy: IfNotPresent
        lifecycle:
          preStop:
            exec:
              command:
              - sleep
              - "5"
        livenessProbe:
          failureThreshold: 3
          httpGet:
            path: /healthz
            port: http
            scheme: HTTP
          initialDelaySeconds: 10
          periodSeconds: 10
          successThreshold: 1
          timeoutSeconds: 1
        name: web
        ports:
        - containerPort: 8080
          name: http
          protocol: TCP
        - containerPort: 9090
          name: metrics
          protocol: TCP
        readinessProbe:
          failureThreshold: 3
          periodSeconds: 5
          successThreshold: 1
          tcpSocket:
            port: 8080
          timeoutSeconds: 1
        resources:
          limits:
            memory: 512Mi
          requests:
            cpu: 250m
            memory: 256Mi
        securityContext:
          allowPrivilegeEscalation: false
          capabilities:
            drop:
            - ALL
          readOnlyRootFilesystem: true
        startupProbe:
          exec:
            command:
            - /bin/ready
          failureThreshold: 30
          periodSeconds: 2
          successThreshold: 1
          timeoutSeconds: 1
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
        volumeMounts:
        - mountPath: /etc/web
          name: config
          readOnly: true
        - mountPath: /tmp
          name: scratch
        - mountPath: /var/run/secrets/tokens
          name: token
        - mountPath: /data
          name: data
      dnsPolicy: ClusterFirst
      imagePullSecrets:
      - name: registry
      nodeSelector:
        kubernetes.io/os: linux
      priorityClassName: web-high
      restartPolicy: Always
      schedulerName: default-scheduler
      securityContext:
        fsGroup: 2000
        runAsNonRoot: true
        seccompProfile:
          type: RuntimeDefault
      serviceAccount: web
      serviceAccountName: web
      terminationGracePeriodSeconds: 30
      tolerations:
      - effect: NoSchedule
        key: workload
        operator: Equal
        value: web
      topologySpreadConstraints:
      - labelSelector:
          matchLabels:
            app: web
        maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: ScheduleAnyway
      volumes:
      - configMap:
          defaultMode: 420
          name: web-config
        name: config
      - emptyDir:
          sizeLimit: 1Gi
        name: scratch
      - name: token
        projected:
          defaultMode: 420
          sources:
          - serviceAccountToken:
              audience: vault
              expirationSeconds: 3600
              path: token
      - name: data
        persistentVolumeClaim:
          claimName: web-data
status:
  availableReplicas: 3
  conditions:
  - lastTransitionTime: "2024-05-02T09:14:27Z"
    lastUpdateTime: "2024-05-02T09:14:27Z"
    message: Deployment has minimum availability.
    reason: MinimumReplicasAvailable
    status: "True"
    type: Available
  - lastTransitionTime: "2024-05-02T09:14:27Z"
    lastUpdateTime: "2024-05-03T11:02:10Z"
    message: ReplicaSet "web-7d9c8b6f5" has successfully progressed.
    reason: NewReplicaSetAvailable
    status: "True"
    type: Progressing
  observedGeneration: 7
  readyReplicas: 3
  replicas: 3
  updatedReplicas: 3
)";

TEST(CheckFields, DeploymentDumpLoads) {
  EXPECT_EQ(ErrorOf(kDeploymentDump), "");
}

// The dump above is walked all the way down: one misspelt field deep inside it is found.
TEST(CheckFields, DeploymentDumpWithOneMisspeltField) {
  const std::string dump = Replaced(kDeploymentDump, "        terminationMessagePolicy: File",
                                    "        terminationMesagePolicy: File");
  EXPECT_EQ(ErrorOf(dump), "line " + std::to_string(LineOf(dump, "terminationMesagePolicy")) +
                               ": spec.template.spec.containers[0].terminationMesagePolicy: "
                               "unknown field (did you mean 'terminationMessagePolicy'?)");
  const std::string probe =
      Replaced(kDeploymentDump, "            scheme: HTTP", "            schema: HTTP");
  EXPECT_EQ(ErrorOf(probe), "line " + std::to_string(LineOf(probe, "schema: HTTP")) +
                                ": spec.template.spec.containers[0].livenessProbe.httpGet."
                                "schema: unknown field (did you mean 'scheme'?)");
  const std::string volume = Replaced(kDeploymentDump, "      - emptyDir:", "      - emptydir:");
  EXPECT_EQ(ErrorOf(volume), "line " + std::to_string(LineOf(volume, "emptydir:")) +
                                 ": spec.template.spec.volumes[1].emptydir: unknown field "
                                 "(did you mean 'emptyDir'?)");
}

// As `kubectl get pod -o yaml` prints a running pod of a ReplicaSet.
const std::string kPodDump = R"(apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubernetes.io/psp: restricted
  creationTimestamp: "2024-05-03T11:01:02Z"
  generateName: web-7d9c8b6f5-
  labels:
    app: web
    pod-template-hash: 7d9c8b6f5
  name: web-7d9c8b6f5-x2k9q
  namespace: shop
  ownerReferences:
  - apiVersion: apps/v1
    blockOwnerDeletion: true
    controller: true
    kind: ReplicaSet
    name: web-7d9c8b6f5
    uid: 0b8c5c2e-7f61-4d8e-9d43-5b6a1d9f2e01
  resourceVersion: "48213101"
  uid: 3c1b2a4d-9e8f-4a7b-8c6d-5e4f3a2b1c0d
spec:
  containers:
  - image: registry.example/web:1.4.2
    imagePullPolicy: IfNotPresent
    name: web
    ports:
    - containerPort: 8080
      name: http
      protocol: TCP
    resizePolicy:
    - resourceName: cpu
      restartPolicy: NotRequired
    resources:
      requests:
        cpu: 250m
        memory: 256Mi
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
    volumeMounts:
    - mountPath: /var/run/secrets/kubernetes.io/serviceaccount
      name: kube-api-access-8z7rq
      readOnly: true
  dnsPolicy: ClusterFirst
  enableServiceLinks: true
  initContainers:
  - command:
    - /bin/agent
    image: registry.example/agent:2
    imagePullPolicy: IfNotPresent
    name: agent
    resources: {}
    restartPolicy: Always
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
  nodeName: ip-10-0-1-23.ec2.internal
  os:
    name: linux
  preemptionPolicy: PreemptLowerPriority
  priority: 1000
  priorityClassName: web-high
  readinessGates:
  - conditionType: target-health.elbv2.k8s.aws/web
  restartPolicy: Always
  schedulerName: default-scheduler
  securityContext: {}
  serviceAccount: default
  serviceAccountName: default
  terminationGracePeriodSeconds: 30
  tolerations:
  - effect: NoExecute
    key: node.kubernetes.io/not-ready
    operator: Exists
    tolerationSeconds: 300
  - effect: NoExecute
    key: node.kubernetes.io/unreachable
    operator: Exists
    tolerationSeconds: 300
  volumes:
  - name: kube-api-access-8z7rq
    projected:
      defaultMode: 420
      sources:
      - serviceAccountToken:
          expirationSeconds: 3607
          path: token
      - configMap:
          items:
          - key: ca.crt
            path: ca.crt
          name: kube-root-ca.crt
      - downwardAPI:
          items:
          - fieldRef:
              apiVersion: v1
              fieldPath: metadata.namespace
            path: namespace
status:
  conditions:
  - lastProbeTime: null
    lastTransitionTime: "2024-05-03T11:01:04Z"
    status: "True"
    type: PodReadyToStartContainers
  - lastProbeTime: null
    lastTransitionTime: "2024-05-03T11:01:02Z"
    status: "True"
    type: PodScheduled
  containerStatuses:
  - containerID: containerd://4b5c6d7e8f
    image: registry.example/web:1.4.2
    imageID: registry.example/web@sha256:0123456789abcdef
    lastState: {}
    name: web
    ready: true
    restartCount: 0
    started: true
    state:
      running:
        startedAt: "2024-05-03T11:01:05Z"
  hostIP: 10.0.1.23
  hostIPs:
  - ip: 10.0.1.23
  phase: Running
  podIP: 10.0.1.57
  podIPs:
  - ip: 10.0.1.57
  qosClass: Burstable
  startTime: "2024-05-03T11:01:02Z"
)";

TEST(CheckFields, PodDumpLoads) {
  EXPECT_EQ(ErrorOf(kPodDump), "");
  const std::string typo =
      Replaced(kPodDump, "    blockOwnerDeletion: true", "    blockOwnerDeleteion: true");
  EXPECT_EQ(ErrorOf(typo),
            "line 15: metadata.ownerReferences[0].blockOwnerDeleteion: unknown "
            "field (did you mean 'blockOwnerDeletion'?)");
}

// As `kubectl get statefulset -o yaml` prints one, its claim templates with their status.
TEST(CheckFields, StatefulSetDumpLoads) {
  EXPECT_EQ(ErrorOf(R"(apiVersion: apps/v1
kind: StatefulSet
metadata:
  creationTimestamp: "2024-04-11T08:00:00Z"
  generation: 2
  name: db
  namespace: shop
  resourceVersion: "48000001"
  uid: 9a8b7c6d-5e4f-3a2b-1c0d-9e8f7a6b5c4d
spec:
  persistentVolumeClaimRetentionPolicy:
    whenDeleted: Retain
    whenScaled: Retain
  podManagementPolicy: OrderedReady
  replicas: 3
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app: db
  serviceName: db
  template:
    metadata:
      creationTimestamp: null
      labels:
        app: db
    spec:
      containers:
      - image: postgres:16
        imagePullPolicy: IfNotPresent
        name: postgres
        resources:
          requests:
            cpu: "1"
            memory: 2Gi
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
        volumeMounts:
        - mountPath: /var/lib/postgresql/data
          name: data
          subPath: pgdata
      dnsPolicy: ClusterFirst
      restartPolicy: Always
      schedulerName: default-scheduler
      securityContext: {}
      terminationGracePeriodSeconds: 30
  updateStrategy:
    rollingUpdate:
      partition: 0
    type: RollingUpdate
  volumeClaimTemplates:
  - apiVersion: v1
    kind: PersistentVolumeClaim
    metadata:
      creationTimestamp: null
      name: data
    spec:
      accessModes:
      - ReadWriteOnce
      resources:
        requests:
          storage: 20Gi
      storageClassName: gp3
      volumeMode: Filesystem
    status:
      phase: Pending
status:
  availableReplicas: 3
  collisionCount: 0
  currentReplicas: 3
  currentRevision: db-5d8f7c9b6
  observedGeneration: 2
  readyReplicas: 3
  replicas: 3
  updateRevision: db-5d8f7c9b6
  updatedReplicas: 3
)"),
            "");
}

// --- Every object of the examples and conformance cases ------------------------------------

// The Kubernetes objects of a YAML document: itself, or those a Scenario or ConformanceCase
// holds (under `objects`, and applied by its `timeline`).
std::vector<YAML::Node> ObjectsOf(const YAML::Node& doc) {
  if (!doc.IsMap()) return {};
  const std::string kind = doc["kind"] ? doc["kind"].as<std::string>() : "";
  if (!kind.empty() && kind != "Scenario" && kind != "ConformanceCase") return {doc};
  std::vector<YAML::Node> objects;
  if (doc["objects"]) {
    for (const auto& o : doc["objects"]) objects.push_back(o);
  }
  if (doc["timeline"]) {
    for (const auto& entry : doc["timeline"]) {
      if (entry.IsMap() && entry["apply"]) objects.push_back(entry["apply"]);
    }
  }
  return objects;
}

TEST(CheckFields, EveryExampleAndConformanceObjectLoads) {
  namespace fs = std::filesystem;
  std::size_t checked = 0;
  std::vector<std::string> failures;
  std::size_t conformance_objects = 0;
  for (const char* folder : {"/examples/scenarios", "/tests/conformance"}) {
    const fs::path root = fs::path(TENON_SOURCE_DIR) / fs::path(folder).relative_path();
    ASSERT_TRUE(fs::is_directory(root)) << root;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".yaml" && ext != ".yml")) continue;
      for (const auto& doc : YAML::LoadAllFromFile(entry.path().string())) {
        for (const auto& object : ObjectsOf(doc)) {
          ++checked;
          if (std::string(folder) == "/tests/conformance") ++conformance_objects;
          try {
            CheckFields(object);
          } catch (const ScenarioError& e) {
            failures.push_back(entry.path().string() + ": " + e.what());
          }
        }
      }
    }
  }
  EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
  // The folders hold hundreds of objects; finding few means they were not reached.
  EXPECT_GT(checked, 500u);
  EXPECT_GT(conformance_objects, 300u);
}

}  // namespace
}  // namespace tenon::sim
