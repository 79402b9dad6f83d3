#!/usr/bin/env python3
"""Proves that tenon's CRDs accept every NodePool, EC2NodeClass and NodeOverlay under examples/
(also those embedded in scenarios) and refuse what Karpenter's CRDs refuse: a list of invalid
objects, each of which must be rejected for the stated reason, and the NodeOverlay values
Karpenter's own validation tests accept and refuse. What the check covers, and which CEL rules
it evaluates in Python, is described in crd_schema.py."""
import copy
import glob
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crd_schema  # noqa: E402
import yaml  # noqa: E402 (crd_schema has checked that PyYAML is there)

EXAMPLES = os.path.join(crd_schema.ROOT, "examples")

NODEPOOL = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
    "spec": {"template": {"spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                         "name": "default"},
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                          "values": ["spot"]}]}}},
}
NODECLASS = {
    "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "c"},
    "spec": {"role": "KarpenterNodeRole-c", "amiSelectorTerms": [{"alias": "al2023@latest"}],
             "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}],
             "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "c"}}]},
}
NODECLAIM = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
    "spec": copy.deepcopy(NODEPOOL["spec"]["template"]["spec"]),
}
NODEOVERLAY = {
    "apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": "o"},
    "spec": {"requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                               "values": ["m5.large"]}]},
}

# The first example of Karpenter's NodeOverlay documentation (trailing spaces left out). It sets
# both price and priceAdjustment, so the API server refuses it; examples/nodeoverlays/
# example-overlay.yaml is the corrected copy.
DOCS_EXAMPLE_OVERLAY = """\
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata:
  name: example-overlay
spec:
  # Optional weight for conflict resolution (higher weight wins)
  weight: 10

  # Requirements determine which instance types this overlay applies to
  requirements:
    - key: node.kubernetes.io/instance-type
      operator: In
      values: ["m5.large", "m5.xlarge"]
    # or
    - key: karpenter.sh/capacity-type
      operator: In
      values: ["spot"]
    # or
    - key: karpenter.k8s.aws/instance-cpu
      operator: Gt
      values: ["32"]

  # Price and priceAdjustment are mutually exclusive
  # Price override (sets absolute price)
  price: "5.00"

  # Price adjustment (modifies existing price)
  priceAdjustment: "+10%"  # or "-0.50" for absolute adjustment

  # Extended resources to add to matching instance types
  capacity:
    hugepages-2Mi: 100Mi
    hugepages-1Gi: 2Gi
    custom-device/gpu-slice: 4
"""


def edit(base, path, value):
    """A copy of `base` with the dotted `path` set to `value` (None deletes); "[n]" indexes."""
    obj = copy.deepcopy(base)
    parts = path.replace("[", ".[").split(".")
    target = obj
    for part in parts[:-1]:
        target = target[int(part[1:-1])] if part.startswith("[") else target.setdefault(part, {})
    last = parts[-1]
    key = int(last[1:-1]) if last.startswith("[") else last
    if value is None:
        del target[key]
    else:
        target[key] = value
    return obj


def requirement(key, operator, values=None, **extra):
    r = {"key": key, "operator": operator, **extra}
    if values is not None:
        r["values"] = values
    return r


REQS = "spec.template.spec.requirements"
# (what is wrong, the object, a fragment the error must contain)
INVALID = [
    ("v1beta1 policy name", edit(NODEPOOL, "spec.disruption",
                                 {"consolidationPolicy": "WhenUnderutilized",
                                  "consolidateAfter": "1m"}), "is not one of"),
    ("days are not a Go duration", edit(NODEPOOL, "spec.template.spec.expireAfter", "30d"),
     "does not match"),
    ("weight below 1", edit(NODEPOOL, "spec.weight", 0), "less than the minimum"),
    ("weight above 100", edit(NODEPOOL, "spec.weight", 101), "greater than the maximum"),
    ("requirement values are strings", edit(NODEPOOL, REQS, [
        requirement("karpenter.k8s.aws/instance-generation", "Gt", [5])]), "is not of type"),
    ("kubelet moved to EC2NodeClass in v1", edit(NODEPOOL, "spec.template.spec.kubelet",
                                                  {"maxPods": 110}), "kubelet"),
    ("v1beta1 nodeClassRef.apiVersion", edit(NODEPOOL, "spec.template.spec.nodeClassRef", {
        "apiVersion": "karpenter.k8s.aws/v1beta1", "kind": "EC2NodeClass", "name": "d"}),
     "apiVersion"),
    ("more than 100 requirements", edit(NODEPOOL, REQS, [
        requirement("example.com/k%d" % i, "Exists") for i in range(101)]), "is too long"),
    ("no requirements", edit(NODEPOOL, REQS, None), "'requirements' is a required property"),
    ("disruption without consolidateAfter", edit(NODEPOOL, "spec.disruption",
                                                  {"consolidationPolicy": "WhenEmpty"}),
     "'consolidateAfter' is a required property"),
    ("schedule without duration", edit(NODEPOOL, "spec.disruption", {
        "consolidateAfter": "0s", "budgets": [{"nodes": "0", "schedule": "@daily"}]}),
     "'schedule' must be set with 'duration'"),
    ("budget over 100%", edit(NODEPOOL, "spec.disruption", {
        "consolidateAfter": "0s", "budgets": [{"nodes": "110%"}]}), "does not match"),
    ("budget duration in seconds", edit(NODEPOOL, "spec.disruption", {
        "consolidateAfter": "0s", "budgets": [{"nodes": "1", "schedule": "@daily",
                                               "duration": "30s"}]}), "does not match"),
    ("unknown budget reason", edit(NODEPOOL, "spec.disruption", {
        "consolidateAfter": "0s", "budgets": [{"nodes": "1", "reasons": ["Expired"]}]}),
     "is not one of"),
    ("more than 50 budgets", edit(NODEPOOL, "spec.disruption", {
        "consolidateAfter": "0s", "budgets": [{"nodes": "1"}] * 51}), "is too long"),
    ("hostname label on the template", edit(NODEPOOL, "spec.template.metadata",
                                            {"labels": {"kubernetes.io/hostname": "n"}}),
     'label "kubernetes.io/hostname" is restricted'),
    ("karpenter.sh label on the template", edit(NODEPOOL, "spec.template.metadata",
                                                {"labels": {"karpenter.sh/team": "a"}}),
     'label domain "karpenter.sh" is restricted'),
    ("requirement on a restricted k8s.io key", edit(NODEPOOL, REQS, [
        requirement("example.k8s.io/zone", "Exists")]), 'label domain "k8s.io" is restricted'),
    ("requirement on an unknown karpenter.k8s.aws key", edit(NODEPOOL, REQS, [
        requirement("karpenter.k8s.aws/instance-colour", "Exists")]),
     'label domain "karpenter.k8s.aws" is restricted'),
    ("In without values", edit(NODEPOOL, REQS, [requirement("team", "In", [])]),
     "requirements with operator 'In' must have a value defined"),
    ("Gt with a word", edit(NODEPOOL, REQS, [
        requirement("karpenter.k8s.aws/instance-cpu", "Gt", ["four"])]),
     "requirements operator 'Gt' or 'Lt' must have a single positive integer value"),
    ("minValues above the values given", edit(NODEPOOL, REQS, [
        requirement("node.kubernetes.io/instance-type", "In", ["m5.large"], minValues=2)]),
     "requirements with 'minValues' must have at least that many values"),
    ("unknown operator", edit(NODEPOOL, REQS, [requirement("team", "Equals", ["a"])]),
     "is not one of"),
    ("taint without effect", edit(NODEPOOL, "spec.template.spec.taints", [{"key": "a"}]),
     "'effect' is a required property"),
    ("empty nodeClassRef name", edit(NODEPOOL, "spec.template.spec.nodeClassRef.name", ""),
     "name may not be empty"),
    ("limit that is not a quantity", edit(NODEPOOL, "spec.limits", {"cpu": "lots"}),
     "does not match"),
    ("NodeClaim without nodeClassRef", edit(NODECLAIM, "spec.nodeClassRef", None),
     "'nodeClassRef' is a required property"),
    ("network interfaces, not supported yet", edit(NODECLASS, "spec.networkInterfaces", [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}]),
     "networkInterfaces is not supported by tenon yet"),
    ("placement group, not supported yet", edit(NODECLASS, "spec.placementGroupSelector",
                                                {"name": "pg"}),
     "placementGroupSelector is not supported by tenon yet"),
    ("capacity reservations by instanceMatchCriteria", edit(
        NODECLASS, "spec.capacityReservationSelectorTerms", [{"instanceMatchCriteria": "open"}]),
     "instanceMatchCriteria is not supported by tenon yet"),
    ("both role and instanceProfile", edit(NODECLASS, "spec.instanceProfile", "p"),
     "must specify exactly one of ['role', 'instanceProfile']"),
    ("neither role nor instanceProfile", edit(NODECLASS, "spec.role", None),
     "must specify exactly one of ['role', 'instanceProfile']"),
    ("no amiSelectorTerms", edit(NODECLASS, "spec.amiSelectorTerms", None),
     "'amiSelectorTerms' is a required property"),
    ("alias beside another term", edit(NODECLASS, "spec.amiSelectorTerms", [
        {"alias": "al2023@latest"}, {"id": "ami-0123456789abcdef0"}]),
     "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"),
    ("id with tags in one term", edit(NODECLASS, "spec.amiSelectorTerms", [
        {"id": "ami-0123", "tags": {"a": "b"}}]), "'id' is mutually exclusive"),
    ("alias of an unknown family", edit(NODECLASS, "spec.amiSelectorTerms",
                                        [{"alias": "ubuntu@latest"}]), "family is not supported"),
    ("alias without a version", edit(NODECLASS, "spec.amiSelectorTerms",
                                     [{"alias": "al2023"}]), "'alias' is improperly formatted"),
    ("amiFamily contradicting the alias", edit(NODECLASS, "spec.amiFamily", "Bottlerocket"),
     "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias"),
    ("no amiFamily and no alias", edit(NODECLASS, "spec.amiSelectorTerms",
                                       [{"name": "my-ami-*"}]),
     "must specify amiFamily if amiSelectorTerms does not contain an alias"),
    ("empty AMI term", edit(NODECLASS, "spec.amiSelectorTerms", [{"owner": "self"}]),
     "expected at least one, got none"),
    ("Ubuntu was dropped in v1", edit(NODECLASS, "spec.amiFamily", "Ubuntu"), "is not one of"),
    ("empty subnet terms", edit(NODECLASS, "spec.subnetSelectorTerms", []),
     "subnetSelectorTerms cannot be empty"),
    ("security group name and id in one term", edit(
        NODECLASS, "spec.securityGroupSelectorTerms", [{"name": "a", "id": "sg-1"}]),
     "is mutually exclusive"),
    ("empty tag value in a selector", edit(NODECLASS, "spec.subnetSelectorTerms",
                                           [{"tags": {"team": ""}}]),
     "empty tag keys or values aren't supported"),
    ("restricted tag", edit(NODECLASS, "spec.tags", {"karpenter.sh/nodepool": "x"}),
     "tag contains a restricted tag matching karpenter.sh/nodepool"),
    ("cluster ownership tag", edit(NODECLASS, "spec.tags", {"kubernetes.io/cluster/c": "owned"}),
     "tag contains a restricted tag matching kubernetes.io/cluster/"),
    ("hop limit above 64", edit(NODECLASS, "spec.metadataOptions",
                                {"httpPutResponseHopLimit": 65}), "greater than the maximum"),
    ("httpTokens typo", edit(NODECLASS, "spec.metadataOptions", {"httpTokens": "require"}),
     "is not one of"),
    ("volume size in GB", edit(NODECLASS, "spec.blockDeviceMappings", [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100GB"}}]), "does not match"),
    ("volume with neither size nor snapshot", edit(NODECLASS, "spec.blockDeviceMappings", [
        {"deviceName": "/dev/xvda", "ebs": {"volumeType": "gp3"}}]),
     "snapshotID or volumeSize must be defined"),
    ("two root volumes", edit(NODECLASS, "spec.blockDeviceMappings", [
        {"deviceName": "/dev/xvda", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}},
        {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": {"volumeSize": "20Gi"}}]),
     "must have only one blockDeviceMappings with rootVolume"),
    ("capacity reservation id pattern", edit(NODECLASS, "spec.capacityReservationSelectorTerms",
                                             [{"id": "odcr-123"}]), "does not match"),
    ("capacity reservation id with tags", edit(
        NODECLASS, "spec.capacityReservationSelectorTerms",
        [{"id": "cr-123", "tags": {"a": "b"}}]), "'id' is mutually exclusive"),
    ("unknown eviction signal", edit(NODECLASS, "spec.kubelet",
                                     {"evictionHard": {"memory.free": "5%"}}),
     "valid keys for evictionHard"),
    ("soft eviction without grace period", edit(NODECLASS, "spec.kubelet",
                                                {"evictionSoft": {"memory.available": "5%"}}),
     "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod"),
    ("GC thresholds inverted", edit(NODECLASS, "spec.kubelet", {
        "imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 80}),
     "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"),
    ("negative kubeReserved", edit(NODECLASS, "spec.kubelet", {"kubeReserved": {"cpu": "-1"}}),
     "kubeReserved value cannot be a negative resource quantity"),
    ("v1alpha field name", edit(NODECLASS, "spec.subnetSelector", {"a": "b"}), "subnetSelector"),
    ("NodeOverlay documentation example with price and priceAdjustment",
     yaml.safe_load(DOCS_EXAMPLE_OVERLAY), "cannot set both 'price' and 'priceAdjustment'"),
]


def overlay_requirements(*requirements):
    return edit(NODEOVERLAY, "spec.requirements", list(requirements))


def gt(values):
    return overlay_requirements(requirement("karpenter.k8s.aws/instance-cpu", "Gt", values))


def key(name, operator="Exists"):
    return overlay_requirements(requirement(name, operator))


# NodeOverlay values that Karpenter's CEL validation tests refuse: (what, the object, a fragment
# of the refusal, the field the API server names).
OVERLAY_REFUSED = [
    ("price with priceAdjustment", edit(edit(NODEOVERLAY, "spec.price", "0.432"),
                                        "spec.priceAdjustment", "+10%"),
     "cannot set both 'price' and 'priceAdjustment'", "spec"),
] + [
    ("priceAdjustment %s" % value, edit(NODEOVERLAY, "spec.priceAdjustment", value),
     "does not match", "spec.priceAdjustment") for value in ("1%", "1", "1.3")
] + [
    ("capacity %s" % name, edit(NODEOVERLAY, "spec.capacity", {name: "1"}),
     "invalid resource restricted", "spec.capacity")
    for name in ("cpu", "memory", "ephemeral-storage", "pods")
] + [
    ("Gt with values %s" % values, gt(values),
     "requirements operator 'Gt' or 'Lt' must have a single positive integer value",
     "spec.requirements") for values in ([], ["1", "2"], ["a"])
] + [
    # Not a label value either: tenon's schema checks each value (deliberate-differences.yml).
    ("Gt with values ['-1']", gt(["-1"]), "does not match", "spec.requirements[0].values[0]"),
] + [
    ("key %s" % name, key(name), "does not match", "spec.requirements[0].key")
    for name in ("test.com.com}", "Test.com/test", "test/test/test", "test/", "/test")
] + [
    ("restricted domain", key("karpenter.sh/test"), 'label domain "karpenter.sh" is restricted',
     "spec.requirements[0].key"),
    ("weight 0", edit(NODEOVERLAY, "spec.weight", 0), "less than the minimum", "spec.weight"),
    ("weight 10001", edit(NODEOVERLAY, "spec.weight", 10001), "greater than the maximum",
     "spec.weight"),
]

# NodeOverlay values that Karpenter's CEL validation tests accept: (what, the object).
OVERLAY_ACCEPTED = [
    ("priceAdjustment %s" % value, edit(NODEOVERLAY, "spec.priceAdjustment", value))
    for value in ("+1%", "-1%", "-100%", "+100.102%", "+298%", "+43", "-43", "+34.43", "-34.43")
] + [
    ("price %s" % value, edit(NODEOVERLAY, "spec.price", value)) for value in ("43", "34.43")
] + [
    ("extended resource capacity", edit(NODEOVERLAY, "spec.capacity",
                                        {"smarter-devices/fuse": 1})),
    ("no requirements", overlay_requirements()),
] + [
    ("key %s" % name, key(name)) for name in ("Test", "test.com/Test", "key-only")
] + [
    ("In and NotIn on one key", overlay_requirements(
        requirement("node.kubernetes.io/instance-type", "In", ["m5.large", "m5.xlarge"]),
        requirement("node.kubernetes.io/instance-type", "NotIn", ["m5.xlarge"]))),
]


def custom_objects(node, validator):
    """Every object of a kind tenon serves in a loaded document, however deeply embedded."""
    if validator.handles(node):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from custom_objects(value, validator)
    elif isinstance(node, list):
        for value in node:
            yield from custom_objects(value, validator)


def example_objects(validator):
    paths = sorted(glob.glob(os.path.join(EXAMPLES, "**", "*.yaml"), recursive=True) +
                   glob.glob(os.path.join(EXAMPLES, "**", "*.yml"), recursive=True))
    for path in paths:
        for doc in crd_schema.load_yaml_documents(path):
            for obj in custom_objects(doc, validator):
                yield os.path.relpath(path, crd_schema.ROOT), obj


class Examples(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.validator = crd_schema.Validator()

    def test_every_cel_rule_has_a_python_equivalent(self):
        self.assertEqual(crd_schema.unknown_rules(self.validator.crds), [])

    def test_schemas_are_structural_and_defaults_valid(self):
        for key, schema in self.validator.crds.items():
            self.assertEqual(crd_schema.structural_problems(schema), [], key)

    def test_the_four_kinds_are_served(self):
        self.assertEqual(sorted(self.validator.crds), [
            ("karpenter.k8s.aws/v1", "EC2NodeClass"), ("karpenter.sh/v1", "NodeClaim"),
            ("karpenter.sh/v1", "NodePool"), ("karpenter.sh/v1alpha1", "NodeOverlay")])

    def test_examples_are_valid(self):
        found = {}
        for path, obj in example_objects(self.validator):
            found.setdefault(path, []).append(obj["kind"])
            with self.subTest(path=path, name=obj["metadata"]["name"]):
                self.assertEqual(self.validator.errors(obj), [])
        kinds = {k for ks in found.values() for k in ks}
        self.assertEqual(kinds, {"NodePool", "EC2NodeClass", "NodeOverlay"}, found)
        for folder in ("nodepools", "nodeclasses", "nodeoverlays", "scenarios"):
            self.assertTrue(any(p.startswith("examples/%s/" % folder) for p in found), folder)

    def test_base_objects_are_valid(self):
        for obj in (NODEPOOL, NODECLASS, NODECLAIM, NODEOVERLAY):
            self.assertEqual(self.validator.errors(obj), [], obj["kind"])

    def test_overlay_values_as_karpenter_validates_them(self):
        for what, obj, expected, _ in OVERLAY_REFUSED:
            with self.subTest(what):
                errors = self.validator.errors(obj)
                self.assertTrue(any(expected in e for e in errors),
                                "%s: expected an error containing %r, got %r"
                                % (what, expected, errors))
        for what, obj in OVERLAY_ACCEPTED:
            with self.subTest(what):
                self.assertEqual(self.validator.errors(obj), [])

    def test_docs_example_overlay_differs_from_its_copy_only_in_price(self):
        docs = yaml.safe_load(DOCS_EXAMPLE_OVERLAY)
        copied = crd_schema.load_yaml_documents(
            os.path.join(EXAMPLES, "nodeoverlays", "example-overlay.yaml"))
        self.assertEqual(copied, [edit(docs, "spec.price", None)])

    def test_invalid_objects_are_rejected_for_the_right_reason(self):
        for what, obj, expected in INVALID:
            with self.subTest(what):
                errors = self.validator.errors(obj)
                self.assertTrue(any(expected in e for e in errors),
                                "%s: expected an error containing %r, got %r"
                                % (what, expected, errors))

    def test_defaults_match_karpenter(self):
        pool = copy.deepcopy(NODEPOOL)
        crd_schema.apply_defaults(self.validator.crds[("karpenter.sh/v1", "NodePool")], pool)
        self.assertEqual(pool["spec"]["disruption"], {
            "consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "budgets": [{"nodes": "10%"}]})
        self.assertEqual(pool["spec"]["template"]["spec"]["expireAfter"], "720h")
        nodeclass = copy.deepcopy(NODECLASS)
        crd_schema.apply_defaults(self.validator.crds[("karpenter.k8s.aws/v1", "EC2NodeClass")],
                                  nodeclass)
        self.assertEqual(nodeclass["spec"]["metadataOptions"], {
            "httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1, "httpTokens": "required"})


if __name__ == "__main__":
    unittest.main(verbosity=1)
