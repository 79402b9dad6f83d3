#!/usr/bin/env python3
"""Writes the four CustomResourceDefinitions tenon serves, field for field as Karpenter has them
(karpenter.sh/v1 NodePool and NodeClaim, karpenter.sh/v1alpha1 NodeOverlay,
karpenter.k8s.aws/v1 EC2NodeClass), so that a user's existing Karpenter YAML applies unchanged:
the same structure, enums, patterns, defaults, bounds and CEL rules. The fragments the resources
share (requirements, taints, conditions, kubelet settings) are written once here.

Usage: generate.py            rewrite the YAML files beside this script
       generate.py --check    exit 1 if a file differs from what would be written
"""
import argparse
import os
import sys

try:
    import yaml
except ImportError:
    sys.exit("generate.py: needs PyYAML (python3 -m pip install pyyaml, or apt install python3-yaml)")

HERE = os.path.dirname(os.path.abspath(__file__))

QUANTITY = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
            r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
QUALIFIED_NAME = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
                  r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
# Karpenter's own duration patterns, kept byte for byte: the first is an unanchored
# alternation, and being exactly as permissive is what "unchanged YAML works" needs.
DURATION_OR_NEVER = r"^(([0-9]+(s|m|h))+)|(Never)$"
DURATION = r"^([0-9]+(s|m|h))+$"
BUDGET_DURATION = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
BUDGET_NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$"
CRON = r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
EVICTION_QUANTITY = (r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|"
                     r"(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|"
                     r"(\.[0-9]+))))?)$")

DOMAIN = 'x.find("^([^/]+)")'  # The label key's prefix, in CEL.
KUBERNETES_IO_ALLOWED = [
    "beta.kubernetes.io/instance-type", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch", "failure-domain.beta.kubernetes.io/zone",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os",
    "node.kubernetes.io/windows-build"]
KARPENTER_SH_ALLOWED = ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"]
AWS_LABELS = ["karpenter.k8s.aws/ec2nodeclass"] + [
    "karpenter.k8s.aws/instance-" + name for name in (
        "encryption-in-transit-supported", "category", "hypervisor", "family", "generation",
        "local-nvme", "size", "cpu", "cpu-manufacturer", "cpu-sustained-clock-speed-mhz",
        "memory", "ebs-bandwidth", "network-bandwidth", "gpu-name", "gpu-manufacturer",
        "gpu-count", "gpu-memory", "accelerator-name", "accelerator-manufacturer",
        "accelerator-count", "capability-flex")]
EVICTION_SIGNALS = ["memory.available", "nodefs.available", "nodefs.inodesFree",
                    "imagefs.available", "imagefs.inodesFree", "pid.available"]


def quoted(names):
    return "[" + ", ".join('"%s"' % n for n in names) + "]"


def label_rules(var, nodepool_label_allowed):
    """The restricted label domains, as CEL over one key `var` ("self" or "x")."""
    domain = DOMAIN.replace("x", var, 1)
    rules = [
        ('label domain "kubernetes.io" is restricted',
         '%s in %s || %s.endsWith("node.kubernetes.io") || '
         '%s.endsWith("node-restriction.kubernetes.io") || !%s.endsWith("kubernetes.io")'
         % (var, quoted(KUBERNETES_IO_ALLOWED), domain, domain, domain)),
        ('label domain "k8s.io" is restricted',
         '%s.endsWith("kops.k8s.io") || !%s.endsWith("k8s.io")' % (domain, domain)),
        ('label domain "karpenter.sh" is restricted',
         '%s in %s || !%s.endsWith("karpenter.sh")'
         % (var, quoted(KARPENTER_SH_ALLOWED), domain)),
    ]
    if not nodepool_label_allowed:
        rules.append(('label "karpenter.sh/nodepool" is restricted',
                      '%s != "karpenter.sh/nodepool"' % var))
    rules += [
        ('label "kubernetes.io/hostname" is restricted', '%s != "kubernetes.io/hostname"' % var),
        ('label domain "karpenter.k8s.aws" is restricted',
         '%s in %s || !%s.endsWith("karpenter.k8s.aws")' % (var, quoted(AWS_LABELS), domain)),
    ]
    return [{"message": m, "rule": r} for m, r in rules]


def cel(*pairs):
    return [{"message": m, "rule": r} for m, r in pairs]


def string(description, **extra):
    return dict(description=description, type="string", **extra)


def integer(description, fmt="int32", **extra):
    return dict(description=description, type="integer", format=fmt, **extra)


def obj(description, properties, required=None, **extra):
    out = {"description": description, "type": "object", "properties": properties}
    if required:
        out["required"] = required
    out.update(extra)
    return out


def string_map(description, **extra):
    return dict(description=description, type="object",
                additionalProperties={"type": "string"}, **extra)


def quantity_map(description):
    return {"description": description, "type": "object", "additionalProperties": {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": QUANTITY, "x-kubernetes-int-or-string": True}}


def array(description, items, **extra):
    return dict(description=description, type="array", items=items, **extra)


OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
IN_NEEDS_VALUES = ("requirements with operator 'In' must have a value defined",
                   "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)")
GT_LT_NEEDS_ONE_INTEGER = (
    "requirements operator 'Gt' or 'Lt' must have a single positive integer value",
    "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt') ? "
    "(x.values.size() == 1 && int(x.values[0]) >= 0) : true)")


def requirement_item(description, key_rules, min_values):
    """One label requirement: key, operator and values, and minValues where Karpenter has it."""
    properties = {
        "key": string("Label key.", maxLength=316, pattern=QUALIFIED_NAME,
                      **{"x-kubernetes-validations": key_rules}),
        "operator": string("How the key relates to the values.", enum=OPERATORS),
        "values": array("Values; one integer for Gt and Lt, none for Exists and DoesNotExist.",
                        {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE},
                        **{"x-kubernetes-list-type": "atomic"}),
    }
    if min_values:
        properties["minValues"] = dict(description="Least number of distinct values the launch "
                                       "must stay flexible over.", type="integer", minimum=1,
                                       maximum=50)
    return obj(description, dict(sorted(properties.items())), required=["key", "operator"])


def requirements(nodepool):
    key_rules = label_rules("self", nodepool_label_allowed=not nodepool)
    item = requirement_item("A label requirement, optionally asking for a minimum number of "
                            "values.", key_rules, min_values=True)
    return array("Requirements every launched node satisfies.", item, maxItems=100, **{
        "x-kubernetes-validations": cel(
            IN_NEEDS_VALUES, GT_LT_NEEDS_ONE_INTEGER,
            ("requirements with 'minValues' must have at least that many values specified in "
             "the 'values' field",
             "self.all(x, (x.operator == 'In' && has(x.minValues)) ? "
             "x.values.size() >= x.minValues : true)"))})


def taints(description):
    return array(description, obj("A node taint.", {
        "effect": string("What the taint does to pods that do not tolerate it.",
                         enum=["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        "key": string("Taint key.", minLength=1, pattern=QUALIFIED_NAME),
        "timeAdded": string("When a NoExecute taint was added.", format="date-time"),
        "value": string("Taint value.", pattern=QUALIFIED_NAME),
    }, required=["effect", "key"]))


def node_class_ref(immutable):
    ref = obj("The provider-specific class the node is launched with.", {
        "group": string("API group of the class.", pattern="^[^/]*$", **{
            "x-kubernetes-validations": cel(("group may not be empty", "self != ''"))}),
        "kind": string("Kind of the class.", **{
            "x-kubernetes-validations": cel(("kind may not be empty", "self != ''"))}),
        "name": string("Name of the class.", **{
            "x-kubernetes-validations": cel(("name may not be empty", "self != ''"))}),
    }, required=["group", "kind", "name"])
    if immutable:
        ref["x-kubernetes-validations"] = cel(
            ("nodeClassRef.group is immutable", "self.group == oldSelf.group"),
            ("nodeClassRef.kind is immutable", "self.kind == oldSelf.kind"))
    return ref


def claim_spec_properties(nodepool):
    return {
        "expireAfter": string("How long a node lives before it is replaced, or Never.",
                              default="720h", pattern=DURATION_OR_NEVER),
        "nodeClassRef": node_class_ref(immutable=nodepool),
        "requirements": requirements(nodepool),
        "startupTaints": taints("Taints present at startup and removed by something on the "
                                "node; pods need not tolerate them to be provisioned for."),
        "taints": taints("Taints put on the node."),
        "terminationGracePeriod": string(
            "Longest a drain may take before pods are deleted regardless of PDBs and "
            "do-not-disrupt; unset waits for ever.", pattern=DURATION),
    }


def conditions(keyed_by_type=False):
    """keyed_by_type declares the list a map keyed by type, as Karpenter's NodeOverlay has it."""
    keyed = {"x-kubernetes-list-map-keys": ["type"], "x-kubernetes-list-type": "map"}
    return array("Health and readiness signals.", obj("A status condition.", {
        "lastTransitionTime": string("When the status last changed.", format="date-time"),
        "message": string("Human-readable detail.", maxLength=32768),
        "observedGeneration": integer("The generation the condition was computed from.",
                                      fmt="int64", minimum=0),
        "reason": string("CamelCase reason for the last transition.", maxLength=1024,
                         minLength=1, pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
        "status": string("True, False or Unknown.", enum=["True", "False", "Unknown"]),
        "type": string("Condition type.", maxLength=316, pattern=(
            r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
            r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")),
    }, required=["lastTransitionTime", "message", "reason", "status", "type"]),
        **(keyed if keyed_by_type else {}))


def crd(group, kind, plural, columns, schema, short_names=None, subresources=None,
        version="v1"):
    names = {"categories": ["karpenter"], "kind": kind, "listKind": kind + "List",
             "plural": plural, "singular": kind.lower()}
    if short_names:
        names["shortNames"] = short_names
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "%s.%s" % (plural, group),
                     "labels": {"app.kubernetes.io/part-of": "tenon"}},
        "spec": {"group": group, "names": names, "scope": "Cluster", "versions": [{
            "name": version, "served": True, "storage": True,
            "additionalPrinterColumns": columns,
            "schema": {"openAPIV3Schema": schema},
            "subresources": subresources or {"status": {}},
        }]},
    }


def column(name, path, kind="string", priority=None):
    out = {"name": name, "jsonPath": path, "type": kind}
    if priority:
        out["priority"] = priority
    return out


def envelope(description, spec, status):
    return obj(description, {
        "apiVersion": string("Versioned schema of this object."),
        "kind": string("Kind of this object."),
        "metadata": {"type": "object"},
        "spec": spec,
        "status": status,
    }, required=["spec"])


READY = column("Ready", '.status.conditions[?(@.type=="Ready")].status')
AGE = column("Age", ".metadata.creationTimestamp", "date")


def nodepool():
    labels = string_map("Labels put on every node.", maxProperties=100, **{
        "x-kubernetes-validations": [
            {"message": r["message"], "rule": "self.all(x, %s)" % r["rule"]}
            for r in label_rules("x", nodepool_label_allowed=False)]})
    labels["additionalProperties"].update(maxLength=63, pattern=LABEL_VALUE)
    budget = obj("At most `nodes` disrupted at once, for the given reasons, always or from "
                 "each schedule hit for `duration`.", {
                     "duration": string("How long the budget is active after each schedule "
                                        "hit (hours and minutes).", pattern=BUDGET_DURATION),
                     "nodes": string("A node count or a percentage of the pool's nodes.",
                                     default="10%", pattern=BUDGET_NODES),
                     "reasons": array("Disruption reasons the budget applies to; all when "
                                      "unset.", string("A disruption reason.", enum=[
                                          "Underutilized", "Empty", "Drifted"])),
                     "schedule": string("Cron schedule (UTC) when the budget becomes active.",
                                        pattern=CRON),
                 }, required=["nodes"])
    disruption = obj("How and when nodes of this pool may be disrupted.", {
        "budgets": array("Disruption budgets; the most restrictive active one applies.",
                         budget, default=[{"nodes": "10%"}], maxItems=50, **{
                             "x-kubernetes-validations": cel((
                                 "'schedule' must be set with 'duration'",
                                 "self.all(x, has(x.schedule) == has(x.duration))"))}),
        "consolidateAfter": string("How long a node must be consolidatable before it is "
                                   "consolidated, or Never.", pattern=DURATION_OR_NEVER),
        "consolidationPolicy": string("Which nodes consolidation may remove. Balanced "
                                      "consolidates underutilized nodes only when the move's "
                                      "savings outweigh the pods it disrupts.",
                                      default="WhenEmptyOrUnderutilized",
                                      enum=["WhenEmpty", "WhenEmptyOrUnderutilized",
                                            "Balanced"]),
    }, required=["consolidateAfter"], default={"consolidateAfter": "0s"})
    template = obj("What NodeClaims launched for this pool look like.", {
        "metadata": obj("Labels and annotations for the nodes.", {
            "annotations": string_map("Annotations put on every node."),
            "labels": labels,
        }),
        "spec": obj("The NodeClaim template, without resource requests.",
                    claim_spec_properties(nodepool=True),
                    required=["nodeClassRef", "requirements"]),
    }, required=["spec"])
    spec = obj("A pool of nodes tenon may launch for pending pods.", {
        "disruption": disruption,
        "limits": quantity_map("Upper bounds on the pool's total capacity."),
        "replicas": integer("A static NodePool: keep this many nodes whatever the pending pods "
                            "(feature gate StaticCapacity). Consolidation leaves its nodes "
                            "alone; only limits.nodes may be set, and no weight.",
                            fmt="int64", minimum=0),
        "template": template,
        "weight": integer("Priority against other pools; higher is tried first.",
                          minimum=1, maximum=100),
    }, required=["template"], **{"x-kubernetes-validations": cel(
        ("Cannot transition NodePool between static (replicas set) and dynamic (replicas "
         "unset) provisioning modes", "has(self.replicas) == has(oldSelf.replicas)"),
        ("only 'limits.nodes' is supported on static NodePools",
         "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
         "(size(self.limits) == 1 && 'nodes' in self.limits))"),
        ("'weight' is not supported on static NodePools",
         "!has(self.replicas) || !has(self.weight)"))})
    status = obj("Observed state of the pool.", {
        "conditions": conditions(),
        "nodes": integer("Number of nodes the pool has.", fmt="int64"),
        "resources": quantity_map("Capacity the pool has provisioned."),
    })
    columns = [column("NodeClass", ".spec.template.spec.nodeClassRef.name"),
               column("Nodes", ".status.resources.nodes"), READY, AGE,
               column("Weight", ".spec.weight", "integer", 1),
               column("CPU", ".status.resources.cpu", priority=1),
               column("Memory", ".status.resources.memory", priority=1)]
    # kubectl scale nodepool NAME --replicas=N sets a static pool's replicas.
    scale = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.nodes"}
    return crd("karpenter.sh", "NodePool", "nodepools", columns,
               envelope("A Karpenter v1 NodePool.", spec, status),
               subresources={"status": {}, "scale": scale})


def nodeclaim():
    properties = claim_spec_properties(nodepool=False)
    properties["resources"] = obj("Resources the node must offer.", {
        "requests": quantity_map("Least resources the node must have.")})
    spec = obj("The node to launch.", properties, required=["nodeClassRef", "requirements"], **{
        "x-kubernetes-validations": cel(("spec is immutable", "self == oldSelf"))})
    status = obj("Observed state of the claim.", {
        "allocatable": quantity_map("Resources pods may use on the node."),
        "capacity": quantity_map("Resources the node has."),
        "conditions": conditions(),
        "imageID": string("Image the instance runs."),
        "lastPodEventTime": string("When a pod last bound to or left the node.",
                                   format="date-time"),
        "nodeName": string("Name of the registered node."),
        "providerID": string("Cloud provider id of the instance."),
    })
    label = ".metadata.labels.%s"
    columns = [column("Type", label % r"node\.kubernetes\.io/instance-type"),
               column("Capacity", label % r"karpenter\.sh/capacity-type"),
               column("Zone", label % r"topology\.kubernetes\.io/zone"),
               column("Node", ".status.nodeName"), READY, AGE,
               column("ImageID", ".status.imageID", priority=1),
               column("ID", ".status.providerID", priority=1),
               column("NodePool", label % r"karpenter\.sh/nodepool", priority=1),
               column("NodeClass", ".spec.nodeClassRef.name", priority=1),
               column("Drifted", '.status.conditions[?(@.type=="Drifted")].status',
                      priority=1)]
    return crd("karpenter.sh", "NodeClaim", "nodeclaims", columns,
               envelope("A Karpenter v1 NodeClaim.", spec, status))


# The requirement keys Karpenter's NodeOverlay restricts: the karpenter.sh domain (but for
# karpenter.sh/nodepool and capacity-type), kubernetes.io/hostname, and the karpenter.k8s.aws
# domain but for its own list of labels. Unlike NodePool's, no rule on kubernetes.io or k8s.io.
OVERLAY_AWS_LABELS = [
    "karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/instance-encryption-in-transit-supported",
    "karpenter.k8s.aws/nitro-sandbox"] + [
    "karpenter.k8s.aws/instance-" + name for name in (
        "category", "hypervisor", "family", "generation", "local-nvme", "size", "cpu",
        "cpu-manufacturer", "cpu-sustained-clock-speed-mhz", "cpu-burstable", "memory",
        "ebs-bandwidth", "network-bandwidth", "gpu-name", "gpu-manufacturer", "gpu-count",
        "gpu-memory", "accelerator-name", "accelerator-manufacturer", "accelerator-count",
        "capability-flex")]
# An absolute price: an unsigned decimal.
PRICE = r"^\d+(\.\d+)?$"
# A price change: a signed amount, a positive percentage, or a negative one down to -100%.
PRICE_ADJUSTMENT = (r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|"
                    r"(-100%))$")
RESTRICTED_CAPACITY = ["cpu", "memory", "ephemeral-storage", "pods"]


def nodeoverlay():
    kept = ('label domain "karpenter.sh" is restricted',
            'label "kubernetes.io/hostname" is restricted')
    key_rules = [r for r in label_rules("self", nodepool_label_allowed=True)
                 if r["message"] in kept]
    key_rules += cel(('label domain "karpenter.k8s.aws" is restricted',
                      'self in %s || !%s.endsWith("karpenter.k8s.aws")'
                      % (quoted(OVERLAY_AWS_LABELS), DOMAIN.replace("x", "self", 1))))
    item = requirement_item("A label requirement.", key_rules, min_values=False)
    capacity = quantity_map("Resources added to matching instance types, replacing one of the "
                            "same name; cpu, memory, ephemeral-storage and pods are refused.")
    capacity["x-kubernetes-validations"] = cel((
        "invalid resource restricted",
        "self.all(x, !(x in [%s]))" % ", ".join("'%s'" % r for r in RESTRICTED_CAPACITY)))
    spec = obj("Price and capacity changes for the instance types a NodeOverlay matches.", {
        "capacity": capacity,
        "price": string("An absolute price for matching offerings: an unsigned decimal.",
                        pattern=PRICE),
        "priceAdjustment": string("A change to the price of matching offerings: a signed amount "
                                  "(+0.5, -1.2) or a signed percentage (+10%, -15%; at most "
                                  "-100%).", pattern=PRICE_ADJUSTMENT),
        "requirements": array(
            "Which instance types and offerings the overlay applies to, matched against their "
            "labels and the NodePool's template labels; every requirement must hold. Empty "
            "matches everything.", item, maxItems=100, **{
                "x-kubernetes-list-type": "atomic",
                "x-kubernetes-validations": cel(
                    ("requirements with operator 'NotIn' must have a value defined",
                     "self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)"),
                    IN_NEEDS_VALUES, GT_LT_NEEDS_ONE_INTEGER)}),
        "weight": integer("Priority against other overlays; the higher wins. Unset counts as "
                          "0.", minimum=1, maximum=10000),
    }, required=["requirements"], **{"x-kubernetes-validations": cel((
        "cannot set both 'price' and 'priceAdjustment'",
        "!has(self.price) || !has(self.priceAdjustment)"))})
    status = obj("Observed state of the overlay.", {"conditions": conditions(keyed_by_type=True)})
    columns = [READY, AGE, column("Weight", ".spec.weight", "integer", 1)]
    return crd("karpenter.sh", "NodeOverlay", "nodeoverlays", columns,
               envelope("A Karpenter v1alpha1 NodeOverlay: price and capacity changes for the "
                        "instance types it matches (feature gate NodeOverlay).", spec, status),
               short_names=["overlays"], version="v1alpha1")


def tags(description):
    return string_map(description, maxProperties=20, **{"x-kubernetes-validations": cel(
        ("empty tag keys or values aren't supported", "self.all(k, k != '' && self[k] != '')"))})


def exclusive(field, others, where):
    return ("'%s' is mutually exclusive, cannot be set with a combination of other fields in %s"
            % (field, where), "!self.exists(x, has(x.%s) && (%s))"
            % (field, " || ".join("has(x.%s)" % o for o in others)))


def at_least_one(fields):
    return ("expected at least one, got none, %s" % [f for f in fields],
            "self.all(x, %s)" % " || ".join("has(x.%s)" % f for f in fields))


def selector_terms(description, properties, rules, **extra):
    return array(description, obj("One term; its fields are ANDed.", properties),
                 maxItems=30, **extra, **{"x-kubernetes-validations": cel(*rules)})


def kubelet():
    signals = "[%s]" % ",".join("'%s'" % s for s in EVICTION_SIGNALS)

    def eviction(name, value_pattern):
        out = string_map("Eviction thresholds by signal.", **{"x-kubernetes-validations": cel(
            ("valid keys for %s are %s" % (name, signals), "self.all(x, x in %s)" % signals))})
        if value_pattern:
            out["additionalProperties"]["pattern"] = value_pattern
        return out

    def reserved(name):
        out = string_map("Resources held back from pods.", **{"x-kubernetes-validations": cel(
            ("valid keys for %s are ['cpu','memory','ephemeral-storage','pid']" % name,
             "self.all(x, x=='cpu' || x=='memory' || x=='ephemeral-storage' || x=='pid')"),
            ("%s value cannot be a negative resource quantity" % name,
             "self.all(x, !self[x].startsWith('-'))"))})
        out["additionalProperties"]["pattern"] = QUANTITY
        return out

    percent = dict(minimum=0, maximum=100)
    return obj("Kubelet settings for launched nodes.", {
        "clusterDNS": array("Cluster DNS server addresses.", {"type": "string"}),
        "cpuCFSQuota": {"description": "Enforce CPU limits with CFS quota.", "type": "boolean"},
        "evictionHard": eviction("evictionHard", EVICTION_QUANTITY),
        "evictionMaxPodGracePeriod": integer("Longest grace period (seconds) for soft "
                                             "evictions."),
        "evictionSoft": eviction("evictionSoft", EVICTION_QUANTITY),
        "evictionSoftGracePeriod": eviction("evictionSoftGracePeriod", None),
        "imageGCHighThresholdPercent": integer("Disk use above which images are always "
                                               "collected.", **percent),
        "imageGCLowThresholdPercent": integer("Disk use image collection frees down to.",
                                              **percent),
        "kubeReserved": reserved("kubeReserved"),
        "maxPods": integer("Most pods per node.", minimum=0),
        "podsPerCore": integer("Most pods per CPU core (capped by maxPods).", minimum=0),
        "systemReserved": reserved("systemReserved"),
    }, **{"x-kubernetes-validations": cel(
        ("imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
         "has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  "
         "self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true"),
        ("evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
         "has(self.evictionSoft) ? self.evictionSoft.all(e, (e in self.evictionSoftGracePeriod))"
         ":true"),
        ("evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
         "has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, "
         "(e in self.evictionSoft)):true"))})


def block_device_mappings():
    volume_size = (r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|"
                   r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|"
                   r"([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$")
    ebs = obj("The EBS volume.", {
        "deleteOnTermination": {"description": "Delete the volume with the instance.",
                                "type": "boolean"},
        "encrypted": {"description": "Encrypt the volume.", "type": "boolean"},
        "iops": integer("Provisioned IOPS (gp3, io1, io2).", fmt="int64"),
        "kmsKeyID": string("KMS key for encryption."),
        "snapshotID": string("Snapshot to create the volume from."),
        "throughput": integer("Throughput in MiB/s (gp3).", fmt="int64"),
        "volumeInitializationRate": integer("Rate in MiB/s at which a volume from a snapshot "
                                            "is initialised.", minimum=100, maximum=300),
        "volumeSize": string("Size in Gi, G, Ti or T.", pattern=volume_size),
        "volumeType": string("EBS volume type.", enum=["standard", "io1", "io2", "gp2", "sc1",
                                                       "st1", "gp3"]),
    }, **{"x-kubernetes-validations": cel(("snapshotID or volumeSize must be defined",
                                           "has(self.snapshotID) || has(self.volumeSize)"))})
    item = obj("One block device.", {
        "deviceName": string("Device name, e.g. /dev/xvda."),
        "ebs": ebs,
        "rootVolume": {"description": "Mount as the kubelet root directory (at most one).",
                       "type": "boolean"},
    })
    return array("Block devices for launched instances.", item, maxItems=50, **{
        "x-kubernetes-validations": cel((
            "must have only one blockDeviceMappings with rootVolume",
            "self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1"))})


def metadata_options():
    on_off = ["enabled", "disabled"]
    return obj("Instance metadata service settings.", {
        "httpEndpoint": string("Serve instance metadata.", default="enabled", enum=on_off),
        "httpProtocolIPv6": string("Serve instance metadata over IPv6.", default="disabled",
                                   enum=on_off),
        "httpPutResponseHopLimit": integer("Hop limit for metadata PUT responses.",
                                           fmt="int64", default=1, minimum=1, maximum=64),
        "httpTokens": string("Require IMDSv2 session tokens.", default="required",
                             enum=["required", "optional"]),
    }, default={"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": 1, "httpTokens": "required"})


def alias_rule(family, alias):
    return ("if set, amiFamily must be '%s' or 'Custom' when using an %s alias" % (family, family),
            "!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && "
            "x.alias.find('^[^@]+') == '%s') ? (self.amiFamily == 'Custom' || "
            "self.amiFamily == '%s') : true)" % (alias, family))


FAMILIES = [("AL2", "al2"), ("AL2023", "al2023"), ("Bottlerocket", "bottlerocket"),
            ("Windows2019", "windows2019"), ("Windows2022", "windows2022")]


def ami_selector_terms():
    aliases = [a for _, a in FAMILIES]
    alias = string("An EKS-optimised AMI as family@version, e.g. al2023@latest.", maxLength=30,
                   **{"x-kubernetes-validations": cel(
                       ("'alias' is improperly formatted, must match the format "
                        "'family@version'", "self.matches('^[a-zA-Z0-9]*@.*$')"),
                       ("family is not supported, must be one of the following: %s"
                        % ", ".join("'%s'" % a for a in aliases),
                        "self.find('^[^@]+') in [%s]" % ",".join("'%s'" % a for a in aliases)))})
    fields = ["alias", "id", "name", "owner", "ssmParameter", "tags"]
    return selector_terms("AMIs to launch; terms are ORed.", {
        "alias": alias,
        "id": string("AMI id.", pattern="ami-[0-9a-z]+"),
        "name": string("AMI name (not the Name tag)."),
        "owner": string("AMI owner: an account id, self, amazon or aws-marketplace."),
        "ssmParameter": string("SSM parameter whose value is an AMI id."),
        "tags": tags("AMI tags; '*' matches any value."),
    }, [at_least_one(["tags", "id", "name", "alias", "ssmParameter"]),
        exclusive("id", [f for f in fields if f != "id"], "amiSelectorTerms"),
        exclusive("alias", [f for f in fields if f != "alias"], "amiSelectorTerms"),
        ("'alias' is mutually exclusive, cannot be set with a combination of other "
         "amiSelectorTerms", "!(self.exists(x, has(x.alias)) && self.size() != 1)")],
        minItems=1)


def ec2nodeclass_spec():
    restricted_tags = ["karpenter.sh/nodepool", "karpenter.sh/nodeclaim",
                       "karpenter.k8s.aws/ec2nodeclass"]
    tag_rules = [("empty tag keys aren't supported", "self.all(k, k != '')"),
                 ("tag contains a restricted tag matching kubernetes.io/cluster/",
                  "self.all(k, !k.startsWith('kubernetes.io/cluster') )")]
    tag_rules += [("tag contains a restricted tag matching %s" % t, "self.all(k, k != '%s')" % t)
                  for t in restricted_tags + ["karpenter.sh/managed-by"]]
    spec = obj("AWS settings for launched nodes.", {
        "amiFamily": string("Bootstrap format and default block devices; optional with an "
                            "alias.", enum=["AL2", "AL2023", "Bottlerocket", "Custom",
                                            "Windows2019", "Windows2022"]),
        "amiSelectorTerms": ami_selector_terms(),
        "associatePublicIPAddress": {"description": "Give instances a public IP address.",
                                     "type": "boolean"},
        "blockDeviceMappings": block_device_mappings(),
        "capacityReservationSelectorTerms": selector_terms(
            "On-demand capacity reservations (ODCRs, capacity blocks) to launch into; terms "
            "are ORed.", {
                "id": string("Capacity reservation id.", pattern="^cr-[0-9a-z]+$"),
                "ownerID": string("Account that owns the reservation.", pattern="^[0-9]{12}$"),
                "tags": tags("Reservation tags; '*' matches any value."),
                "instanceMatchCriteria": string("Not supported by tenon yet: refused.",
                                                enum=["open", "targeted"]),
            }, [at_least_one(["tags", "id"]),
                exclusive("id", ["tags", "ownerID"], "capacityReservationSelectorTerms"),
                ("instanceMatchCriteria is not supported by tenon yet: select capacity "
                 "reservations by id or tags", "self.all(x, !has(x.instanceMatchCriteria))")]),
        "context": string("EC2 Fleet context (a reserved EC2 field)."),
        "detailedMonitoring": {"description": "Enable detailed CloudWatch monitoring.",
                               "type": "boolean"},
        "instanceProfile": string("Existing instance profile for nodes (instead of role).", **{
            "x-kubernetes-validations": cel(("instanceProfile cannot be empty",
                                             "self != ''"))}),
        "instanceStorePolicy": string("How instance-store disks are used.", enum=["RAID0"]),
        "kubelet": kubelet(),
        "metadataOptions": metadata_options(),
        "role": string("IAM role for nodes; an instance profile is made for it.", **{
            "x-kubernetes-validations": cel(("role cannot be empty", "self != ''"),
                                            ("immutable field changed", "self == oldSelf"))}),
        "securityGroupSelectorTerms": selector_terms(
            "Security groups for instances; terms are ORed.", {
                "id": string("Security group id.", pattern="sg-[0-9a-z]+"),
                "name": string("Security group name (not the Name tag)."),
                "tags": tags("Security group tags; '*' matches any value."),
            }, [("securityGroupSelectorTerms cannot be empty", "self.size() != 0"),
                at_least_one(["tags", "id", "name"]),
                exclusive("id", ["tags", "name"], "securityGroupSelectorTerms"),
                exclusive("name", ["tags", "id"], "securityGroupSelectorTerms")]),
        "subnetSelectorTerms": selector_terms("Subnets for instances; terms are ORed.", {
            "id": string("Subnet id.", pattern="subnet-[0-9a-z]+"),
            "tags": tags("Subnet tags; '*' matches any value."),
        }, [("subnetSelectorTerms cannot be empty", "self.size() != 0"),
            at_least_one(["tags", "id"]),
            exclusive("id", ["tags"], "subnetSelectorTerms")]),
        "tags": string_map("Tags put on instances, volumes and launch templates.", **{
            "x-kubernetes-validations": cel(*tag_rules)}),
        "userData": string("User data merged with what the AMI family generates."),
        **{field: dict(schema, description="Not supported by tenon yet: refused.")
           for field, schema, _ in UNSUPPORTED_NODECLASS_FIELDS},
    }, required=["amiSelectorTerms", "securityGroupSelectorTerms", "subnetSelectorTerms"])
    spec["x-kubernetes-validations"] = cel(
        ("must specify exactly one of ['role', 'instanceProfile']",
         "(has(self.role) && !has(self.instanceProfile)) || "
         "(!has(self.role) && has(self.instanceProfile))"),
        ("changing from 'instanceProfile' to 'role' is not supported. You must delete and "
         "recreate this node class if you want to change this.",
         "(has(oldSelf.role) && has(self.role)) || "
         "(has(oldSelf.instanceProfile) && has(self.instanceProfile))"),
        *[alias_rule(f, a) for f, a in FAMILIES],
        ("must specify amiFamily if amiSelectorTerms does not contain an alias",
         "self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)"),
        *[unsupported_rule(field, why) for field, _, why in UNSUPPORTED_NODECLASS_FIELDS])
    return spec


# EC2NodeClass fields of Karpenter's current schema that tenon does not act on yet. Each is in
# the schema, so it is not pruned without a word, and a rule refuses it with what is missing.
UNSUPPORTED_NODECLASS_FIELDS = [
    ("connectionTracking", {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
     "connection tracking timeouts are not set on launched instances"),
    ("cpuOptions", {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
     "CPU options (nested virtualization) are not set on launched instances"),
    ("enclaveOptions", {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
     "Nitro Enclaves are not enabled on launched instances"),
    ("ipPrefixCount", {"type": "integer", "format": "int32"},
     "IPv4 prefixes are not assigned to launched instances' network interfaces"),
    ("networkInterfaces", {"type": "array", "items": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}},
     "network interfaces (EFA included) are not configured on launched instances"),
    ("placementGroupSelector", {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
     "instances are not launched into placement groups"),
]


def unsupported_rule(field, why):
    return ("%s is not supported by tenon yet: %s; remove it, or keep this EC2NodeClass on "
            "Karpenter" % (field, why), "!has(self.%s)" % field)


def ec2nodeclass_status():
    requirement = obj("A label requirement.", {
        "key": string("Label key."), "operator": string("Operator."),
        "values": array("Values.", {"type": "string"}, **{"x-kubernetes-list-type": "atomic"}),
    }, required=["key", "operator"])
    return obj("What the selector terms resolve to now.", {
        "amis": array("Resolved AMIs.", obj("An AMI.", {
            "deprecated": {"description": "The AMI is deprecated.", "type": "boolean"},
            "id": string("AMI id."), "name": string("AMI name."),
            "requirements": array("Instance types the AMI suits.", requirement),
        }, required=["id", "requirements"])),
        "capacityReservations": array("Resolved capacity reservations.", obj("A reservation.", {
            "availabilityZone": string("Zone of the reservation."),
            "endTime": string("When the reservation ends.", format="date-time"),
            "id": string("Reservation id.", pattern="^cr-[0-9a-z]+$"),
            "instanceMatchCriteria": string("open or targeted.", enum=["open", "targeted"]),
            "instanceType": string("Instance type reserved."),
            "ownerID": string("Owning account.", pattern="^[0-9]{12}$"),
            "reservationType": string("Kind of reservation.", default="default",
                                      enum=["default", "capacity-block"]),
            "state": string("Reservation state.", default="active",
                            enum=["active", "expiring"]),
        }, required=["availabilityZone", "id", "instanceMatchCriteria", "instanceType",
                     "ownerID"])),
        "conditions": conditions(),
        "instanceProfile": string("Instance profile nodes launch with."),
        "securityGroups": array("Resolved security groups.", obj("A security group.", {
            "id": string("Security group id."), "name": string("Security group name."),
        }, required=["id"])),
        "subnets": array("Resolved subnets.", obj("A subnet.", {
            "id": string("Subnet id."), "zone": string("Availability zone."),
            "zoneID": string("Availability zone id."),
        }, required=["id", "zone"])),
    })


def ec2nodeclass():
    columns = [READY, AGE, column("Role", ".spec.role", priority=1)]
    return crd("karpenter.k8s.aws", "EC2NodeClass", "ec2nodeclasses", columns,
               envelope("A Karpenter v1 EC2NodeClass.", ec2nodeclass_spec(),
                        ec2nodeclass_status()), short_names=["ec2nc", "ec2ncs"])


FILES = {
    "karpenter.sh_nodepools.yaml": nodepool,
    "karpenter.sh_nodeclaims.yaml": nodeclaim,
    "karpenter.sh_nodeoverlays.yaml": nodeoverlay,
    "karpenter.k8s.aws_ec2nodeclasses.yaml": ec2nodeclass,
}
HEADER = "# Generated by generate.py in this folder; edit that, then run it.\n"


def render(make):
    return HEADER + yaml.safe_dump(make(), sort_keys=False, width=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for name, make in FILES.items():
        path = os.path.join(HERE, name)
        text = render(make)
        if args.check:
            if not os.path.exists(path):
                stale.append(name)
                continue
            with open(path) as f:
                if f.read() != text:
                    stale.append(name)
        else:
            with open(path, "w") as f:
                f.write(text)
    if stale:
        print("generate.py: out of date, run deploy/base/crds/generate.py: " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
