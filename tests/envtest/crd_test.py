#!/usr/bin/env python3
"""tenon's CRDs (deploy/base/crds) and examples against a real kube-apiserver.

  crd_test.py [REPOSITORY_ROOT] [unittest arguments]

Starts etcd and kube-apiserver (controlplane.py; KUBEBUILDER_ASSETS names the folder holding
kube-apiserver), installs the four CRDs by server-side apply with strict field validation and
waits until they are Established. Then, against the real server:

  - every NodePool, EC2NodeClass and NodeOverlay in examples/nodepools/, examples/nodeclasses/,
    examples/nodeoverlays/ and the `objects:` of examples/scenarios/*.yaml is accepted
    (server-side dry-run create with strict field validation, as `kubectl apply` sends it);
  - every invalid object of tests/deploy/validate_examples.py is refused for the same reason
    the Python schema check gives: 422 Invalid naming the rule, or 400 for an unknown field;
  - the NodeOverlay values of Karpenter's own validation tests (validate_examples.py's
    OVERLAY_REFUSED and OVERLAY_ACCEPTED): each refusal is a 422 naming the field and the rule
    or schema check, and every accepted value is accepted;
  - status conditions: a condition reason must be CamelCase (the metav1.Condition pattern), so
    a reason written in prose is refused with 422 and the prose belongs in the message; a
    NodeClaim's spec is immutable; the status shapes tenon writes for NodePools,
    EC2NodeClasses and NodeOverlays are accepted;
  - the printed columns (`kubectl get`, read as a server-side Table) are Karpenter's: names,
    order, which ones only -o wide shows, and the values they show for a NodeClaim.

Without the programs the suite prints "real control plane not available: REASON" and exits 77
(ctest reports it skipped); with the environment variable CI set it fails instead.
"""
import copy
import datetime
import glob
import os
import re
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "deploy"))
import controlplane  # noqa: E402

try:
    import yaml
except ImportError as e:
    sys.exit("tests/envtest needs python3 with PyYAML (apt install python3-yaml): %s" % e)

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))  # The first argument replaces it.

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
COLLECTIONS = {
    "NodePool": "/apis/karpenter.sh/v1/nodepools",
    "NodeClaim": "/apis/karpenter.sh/v1/nodeclaims",
    "EC2NodeClass": "/apis/karpenter.k8s.aws/v1/ec2nodeclasses",
    "NodeOverlay": "/apis/karpenter.sh/v1alpha1/nodeoverlays",
}
STRICT = {"fieldValidation": "Strict"}
DRY_RUN = {"dryRun": "All", "fieldValidation": "Strict"}
FIELD_MANAGER = "tenon-envtest"
ESTABLISH_TIMEOUT_S = 60

# The printed columns of Karpenter's CRDs, in order: (name, priority). Priority 0 columns
# are what `kubectl get` shows; priority 1 columns are added by `kubectl get -o wide`. NAME is
# the server's own first column.
COLUMNS = {
    "NodeClaim": [("Name", 0), ("Type", 0), ("Capacity", 0), ("Zone", 0), ("Node", 0),
                  ("Ready", 0), ("Age", 0), ("ImageID", 1), ("ID", 1), ("NodePool", 1),
                  ("NodeClass", 1), ("Drifted", 1)],
    "NodePool": [("Name", 0), ("NodeClass", 0), ("Nodes", 0), ("Ready", 0), ("Age", 0),
                 ("Weight", 1), ("CPU", 1), ("Memory", 1)],
    "EC2NodeClass": [("Name", 0), ("Ready", 0), ("Age", 0), ("Role", 1)],
    "NodeOverlay": [("Name", 0), ("Ready", 0), ("Age", 0), ("Weight", 1)],
}

# A condition reason as Kubernetes requires it (metav1.Condition), and one written in prose.
CAMEL_REASON = "Launched"
PROSE = "m5.2xlarge in us-east-1a (on-demand, 384000 micro-USD/h)"

# The Python schema check (tests/deploy) words its refusals as jsonschema does; the apiserver
# words the same refusal differently. CEL rule messages are the CRD's own, the same in both.
JSONSCHEMA_TO_APISERVER = [
    (re.compile(r"^is not one of$"), "Unsupported value"),
    (re.compile(r"^does not match$"), "should match"),
    (re.compile(r"^less than the minimum$"), "should be greater than or equal to"),
    (re.compile(r"^greater than the maximum$"), "should be less than or equal to"),
    (re.compile(r"^is not of type$"), "must be of type"),
    (re.compile(r"^is too long$"), "must have at most"),
    (re.compile(r"^'(\w+)' is a required property$"), r".\1: Required value"),
]


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_yaml(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def example_objects(root):
    """-> [(path relative to root, object)]: every document of examples/nodepools,
    examples/nodeclasses and examples/nodeoverlays, and the NodePools and EC2NodeClasses of
    each scenario in examples/scenarios (documents of their own, or under `objects:`)."""
    found = []
    for folder in ("nodepools", "nodeclasses", "nodeoverlays"):
        for path in sorted(glob.glob(os.path.join(root, "examples", folder, "*.yaml"))):
            found += [(os.path.relpath(path, root), doc) for doc in load_yaml(path)]
    for path in sorted(glob.glob(os.path.join(root, "examples", "scenarios", "**", "*.yaml"),
                              recursive=True)):
        for doc in load_yaml(path):
            for obj in [doc] + (doc.get("objects") or []):
                if obj.get("kind") in ("NodePool", "EC2NodeClass"):
                    found.append((os.path.relpath(path, root), obj))
    return found


def apiserver_fragment(jsonschema_fragment):
    """The part of the apiserver's refusal that corresponds to the Python check's fragment."""
    for pattern, replacement in JSONSCHEMA_TO_APISERVER:
        if pattern.match(jsonschema_fragment):
            return pattern.sub(replacement, jsonschema_fragment)
    return jsonschema_fragment


class CrdsOnARealApiServer(unittest.TestCase):
    """One control plane and one installation of the CRDs for every test."""

    @classmethod
    def setUpClass(cls):
        cls.plane = controlplane.shared()
        cls.api = cls.plane.api()
        cls.crds = {}
        cls.apply_warnings = {}
        started = time.monotonic()
        for path in sorted(glob.glob(os.path.join(ROOT, "deploy", "base", "crds", "*.yaml"))):
            for crd in load_yaml(path):
                name = crd["metadata"]["name"]
                status, body, headers = cls.api.call(
                    "PATCH", "%s/%s" % (CRDS, name), crd, content_type="apply",
                    params=dict(STRICT, fieldManager=FIELD_MANAGER, force="true"))
                if status // 100 != 2:
                    raise AssertionError("applying %s: %d %s" % (
                        os.path.relpath(path, ROOT), status, body.get("message", body)))
                cls.crds[name] = crd
                cls.apply_warnings[name] = headers.get_all("Warning") or []
        for name in cls.crds:
            controlplane.wait_for("CRD %s to be Established" % name,
                                  lambda: cls.established(name), ESTABLISH_TIMEOUT_S)
        for kind, collection in COLLECTIONS.items():
            controlplane.wait_for("%s to be served" % collection,
                                  lambda: cls.api.call("GET", collection)[0] == 200,
                                  ESTABLISH_TIMEOUT_S)
        print("CRDs applied and served in %.1f s" % (time.monotonic() - started), flush=True)

    @classmethod
    def established(cls, name):
        status, crd, _ = cls.api.call("GET", "%s/%s" % (CRDS, name))
        if status != 200:
            return False
        conditions = {c["type"]: c["status"] for c in crd.get("status", {}).get("conditions", [])}
        return conditions.get("Established") == "True" and \
            conditions.get("NamesAccepted") == "True"

    # ---- helpers ----

    def refusal(self, method, path, body, content_type="json", params=None):
        """-> (status, message) of a request that must not succeed."""
        status, answer, _ = self.api.call(method, path, body, content_type=content_type,
                                          params=params)
        self.assertNotEqual(status // 100, 2, "%s %s was accepted: %s" % (method, path, body))
        message = answer.get("message", "") if isinstance(answer, dict) else str(answer)
        return status, message

    def create(self, obj):
        return self.api.post(COLLECTIONS[obj["kind"]], obj, params=STRICT)

    def object_path(self, kind, name):
        return "%s/%s" % (COLLECTIONS[kind], name)

    # ---- the CRDs themselves ----

    def test_crds_install_cleanly(self):
        self.assertEqual(sorted(self.crds), ["ec2nodeclasses.karpenter.k8s.aws",
                                             "nodeclaims.karpenter.sh", "nodeoverlays.karpenter.sh",
                                             "nodepools.karpenter.sh"])
        for name, crd in self.crds.items():
            with self.subTest(name):
                self.assertEqual(self.apply_warnings[name], [], "warnings applying the CRD")
                served = self.api.get("%s/%s" % (CRDS, name))
                conditions = {c["type"]: c for c in served["status"]["conditions"]}
                self.assertNotIn("NonStructuralSchema", conditions)
                # Nothing in the schema was dropped or rewritten on the way in.
                for mine, theirs in zip(crd["spec"]["versions"], served["spec"]["versions"]):
                    self.assertEqual(mine["schema"], theirs["schema"], mine["name"])
                    self.assertEqual(mine.get("additionalPrinterColumns"),
                                     theirs.get("additionalPrinterColumns"), mine["name"])

    # ---- examples ----

    def test_every_example_is_accepted(self):
        examples = example_objects(ROOT)
        folders, kinds = set(), set()
        for path, obj in examples:
            with self.subTest(path=path, kind=obj.get("kind"),
                              name=obj.get("metadata", {}).get("name")):
                status, answer, headers = self.api.call("POST", COLLECTIONS[obj["kind"]], obj,
                                                        params=DRY_RUN)
                self.assertEqual(status, 201, answer.get("message", answer)
                                 if isinstance(answer, dict) else answer)
                self.assertEqual(headers.get_all("Warning") or [], [])
                folders.add(path.split(os.sep)[1])
                kinds.add(obj["kind"])
        self.assertEqual(folders, {"nodepools", "nodeclasses", "nodeoverlays", "scenarios"})
        self.assertEqual(kinds, {"NodePool", "EC2NodeClass", "NodeOverlay"})

    # ---- refusals ----

    def test_invalid_objects_are_refused_as_the_schema_check_says(self):
        import validate_examples  # tests/deploy: the objects Karpenter v1's CRDs refuse.
        self.assertGreater(len(validate_examples.INVALID), 10)
        for what, obj, fragment in validate_examples.INVALID:
            with self.subTest(what):
                status, message = self.refusal("POST", COLLECTIONS[obj["kind"]], obj,
                                               params=DRY_RUN)
                if status == 400:  # Strict decoding: a field the schema does not have.
                    self.assertIn("strict decoding error: unknown field", message)
                    self.assertIn(fragment, message)
                else:
                    self.assertEqual(status, 422, message)
                    self.assertIn(apiserver_fragment(fragment), message)

    def test_nodeoverlay_values_as_karpenter_validates_them(self):
        import validate_examples  # tests/deploy: the cases of Karpenter's CEL validation tests.
        for what, obj, fragment, field in validate_examples.OVERLAY_REFUSED:
            with self.subTest(what):
                status, message = self.refusal("POST", COLLECTIONS["NodeOverlay"], obj,
                                               params=DRY_RUN)
                self.assertEqual(status, 422, message)
                self.assertIn(apiserver_fragment(fragment), message)
                self.assertIn(field + ":", message)
        for what, obj in validate_examples.OVERLAY_ACCEPTED:
            with self.subTest(what):
                status, answer, headers = self.api.call("POST", COLLECTIONS["NodeOverlay"], obj,
                                                        params=DRY_RUN)
                self.assertEqual(status, 201, answer.get("message", answer)
                                 if isinstance(answer, dict) else answer)
                self.assertEqual(headers.get_all("Warning") or [], [])

    def test_the_basic_refusals(self):
        """One of each kind of rule, independently of the shared list."""
        pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "p"},
                "spec": {"template": {"spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                     "name": "default"},
                    "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                                      "values": ["spot"]}]}}}}
        self.assertEqual(self.api.call("POST", COLLECTIONS["NodePool"], pool,
                                       params=DRY_RUN)[0], 201)
        template = pool["spec"]["template"]["spec"]
        cases = [
            ("enum", ("spec", "disruption"),
             {"consolidationPolicy": "Always", "consolidateAfter": "0s"},
             'spec.disruption.consolidationPolicy: Unsupported value: "Always"'),
            ("pattern", ("spec", "template", "spec", "expireAfter"), "2 weeks",
             "spec.template.spec.expireAfter in body should match"),
            ("range", ("spec", "weight"), 1000,
             "spec.weight in body should be less than or equal to 100"),
            ("CEL rule", ("spec", "template", "spec", "requirements"),
             template["requirements"] + [{"key": "kubernetes.io/hostname", "operator": "In",
                                          "values": ["ip-10-0-0-1"]}],
             'label "kubernetes.io/hostname" is restricted'),
        ]
        for what, path, value, expected in cases:
            with self.subTest(what):
                bad = copy.deepcopy(pool)
                target = bad
                for key in path[:-1]:
                    target = target.setdefault(key, {})
                target[path[-1]] = value
                status, message = self.refusal("POST", COLLECTIONS["NodePool"], bad,
                                               params=DRY_RUN)
                self.assertEqual(status, 422, message)
                self.assertIn(expected, message)

    def test_static_nodepools_follow_karpenters_rules(self):
        """spec.replicas: only limits.nodes, no weight, no switching between static and dynamic,
        and kubectl scale through the scale subresource."""
        def pool(name, **spec):
            out = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                   "metadata": {"name": name},
                   "spec": {"template": {"spec": {
                       "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                        "name": "default"},
                       "requirements": [{"key": "karpenter.sh/capacity-type",
                                         "operator": "In", "values": ["on-demand"]}]}}}}
            out["spec"].update(spec)
            return out
        for what, bad, expected in (
                ("cpu limit", pool("s1", replicas=3, limits={"cpu": "10"}),
                 "only 'limits.nodes' is supported on static NodePools"),
                ("weight", pool("s2", replicas=3, weight=10),
                 "'weight' is not supported on static NodePools"),
                ("negative", pool("s3", replicas=-1),
                 "spec.replicas in body should be greater than or equal to 0")):
            with self.subTest(what):
                status, message = self.refusal("POST", COLLECTIONS["NodePool"], bad,
                                               params=DRY_RUN)
                self.assertEqual(status, 422, message)
                self.assertIn(expected, message)
        self.create(pool("static", replicas=3, limits={"nodes": "5"}))
        scale_path = self.object_path("NodePool", "static") + "/scale"
        scale = self.api.get(scale_path)
        self.assertEqual(scale["spec"]["replicas"], 3)
        scale["spec"]["replicas"] = 5
        self.assertEqual(self.api.call("PUT", scale_path, scale)[0], 200)
        self.assertEqual(self.api.get(self.object_path("NodePool", "static"))["spec"]["replicas"],
                         5)
        status, message = self.refusal("PATCH", self.object_path("NodePool", "static"),
                                       {"spec": {"replicas": None}}, content_type="merge")
        self.assertEqual(status, 422, message)
        self.assertIn("Cannot transition NodePool between static", message)

    # ---- status writes ----

    def nodeclaim(self, name, labels=None):
        return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                "metadata": {"name": name, "labels": labels or {}},
                "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                          "name": "default"},
                         "requirements": [{"key": "karpenter.sh/capacity-type",
                                           "operator": "In", "values": ["on-demand"]}]}}

    @staticmethod
    def condition(type_, status, reason, message=""):
        return {"type": type_, "status": status, "reason": reason, "message": message,
                "lastTransitionTime": now()}

    def test_condition_reason_must_be_camel_case(self):
        self.create(self.nodeclaim("reasons"))
        status_path = self.object_path("NodeClaim", "reasons") + "/status"
        for what, reason in (("prose", PROSE), ("empty", ""), ("spaces", "Launch Failed")):
            with self.subTest(what):
                status, message = self.refusal("PATCH", status_path, {"status": {
                    "conditions": [self.condition("Launched", "True", reason)]}},
                    content_type="merge")
                self.assertEqual(status, 422, message)
                self.assertIn("status.conditions[0].reason", message)
        # The same information written as Kubernetes wants it: CamelCase reason, prose message.
        written = self.api.patch(status_path, {"status": {"conditions": [
            self.condition("Launched", "True", CAMEL_REASON, PROSE)]}}, kind="merge")
        launched = written["status"]["conditions"][0]
        self.assertEqual((launched["reason"], launched["message"]), (CAMEL_REASON, PROSE))
        stored = self.api.get(self.object_path("NodeClaim", "reasons"))
        self.assertEqual(stored["status"]["conditions"][0]["message"], PROSE)

    def test_nodeclaim_spec_is_immutable(self):
        self.create(self.nodeclaim("immutable"))
        status, message = self.refusal(
            "PATCH", self.object_path("NodeClaim", "immutable"),
            {"spec": {"requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                                        "values": ["spot"]}]}}, content_type="merge")
        self.assertEqual(status, 422, message)
        self.assertIn("spec is immutable", message)

    def test_status_is_written_only_through_the_subresource(self):
        self.create(self.nodeclaim("subresource"))
        path = self.object_path("NodeClaim", "subresource")
        self.api.patch(path, {"status": {"nodeName": "ignored"}}, kind="merge")
        self.assertNotIn("nodeName", self.api.get(path).get("status", {}))
        self.api.patch(path + "/status", {"status": {"nodeName": "kept"}}, kind="merge")
        self.assertEqual(self.api.get(path)["status"]["nodeName"], "kept")

    # ---- printed columns ----

    def columns(self, kind, path=None):
        table = self.api.table(path or COLLECTIONS[kind])
        self.assertEqual(table["kind"], "Table")
        return table, [(c["name"], c.get("priority", 0)) for c in table["columnDefinitions"]]

    def test_printed_columns_are_karpenters(self):
        for kind, expected in COLUMNS.items():
            with self.subTest(kind):
                _, columns = self.columns(kind)
                self.assertEqual(columns, expected)
        # What plain `kubectl get nodeclaims` prints as its header.
        _, columns = self.columns("NodeClaim")
        self.assertEqual([name.upper() for name, priority in columns if priority == 0],
                         ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY", "AGE"])

    def test_nodeclaim_columns_show_its_labels_and_status(self):
        labels = {"node.kubernetes.io/instance-type": "m5.2xlarge",
                  "karpenter.sh/capacity-type": "on-demand",
                  "topology.kubernetes.io/zone": "us-east-1a",
                  "karpenter.sh/nodepool": "general"}
        self.create(self.nodeclaim("columns", labels))
        path = self.object_path("NodeClaim", "columns")
        self.api.patch(path + "/status", {"status": {
            "nodeName": "ip-10-0-1-7.ec2.internal",
            "providerID": "aws:///us-east-1a/i-0123456789abcdef0",
            "imageID": "ami-0123456789abcdef0",
            "conditions": [self.condition("Ready", "True", "Ready"),
                           self.condition("Drifted", "False", "NotDrifted")]}}, kind="merge")
        table, columns = self.columns("NodeClaim", path)
        cells = dict(zip([name for name, _ in columns], table["rows"][0]["cells"]))
        self.assertEqual({k: v for k, v in cells.items() if k != "Age"}, {
            "Name": "columns", "Type": "m5.2xlarge", "Capacity": "on-demand",
            "Zone": "us-east-1a", "Node": "ip-10-0-1-7.ec2.internal", "Ready": "True",
            "ImageID": "ami-0123456789abcdef0", "ID": "aws:///us-east-1a/i-0123456789abcdef0",
            "NodePool": "general", "NodeClass": "default", "Drifted": "False"})
        self.assertRegex(cells["Age"], r"^\d+s$")

    def test_nodepool_and_nodeclass_status_as_tenon_writes_them(self):
        path, example = next((p, o) for p, o in example_objects(ROOT)
                             if o["kind"] == "NodePool" and "weight" in o["spec"])
        pool = copy.deepcopy(example)
        pool["metadata"] = {"name": "status-pool"}
        self.create(pool)
        pool_path = self.object_path("NodePool", "status-pool")
        self.api.patch(pool_path + "/status", {"status": {
            "resources": {"cpu": "8", "memory": "32Gi", "pods": "58", "nodes": "2"},
            "nodes": 2,
            "conditions": [self.condition("NodeRegistrationHealthy", "True",
                                          "NodeRegistrationHealthy"),
                           self.condition("Ready", "True", "Ready")]}}, kind="merge")
        table, columns = self.columns("NodePool", pool_path)
        cells = dict(zip([name for name, _ in columns], table["rows"][0]["cells"]))
        self.assertEqual((cells["Nodes"], cells["Ready"], cells["CPU"], cells["Memory"],
                          cells["Weight"]), ("2", "True", "8", "32Gi", pool["spec"]["weight"]),
                         path)

        nodeclass = copy.deepcopy(next(o for _, o in example_objects(ROOT)
                                       if o["kind"] == "EC2NodeClass"))
        nodeclass["metadata"] = {"name": "status-class"}
        self.create(nodeclass)
        class_path = self.object_path("EC2NodeClass", "status-class")
        self.api.patch(class_path + "/status", {"status": {
            "amis": [{"id": "ami-0123456789abcdef0", "name": "al2023",
                      "requirements": [{"key": "kubernetes.io/arch", "operator": "In",
                                        "values": ["amd64"]}]}],
            "subnets": [{"id": "subnet-0a", "zone": "us-east-1a", "zoneID": "use1-az1"}],
            "securityGroups": [{"id": "sg-0a"}],
            "instanceProfile": "envtest_profile",
            "conditions": [self.condition("Ready", "False", "SubnetsNotFound",
                                          "no subnet matches the selector terms")]}},
            kind="merge")
        table, columns = self.columns("EC2NodeClass", class_path)
        cells = dict(zip([name for name, _ in columns], table["rows"][0]["cells"]))
        self.assertEqual(cells["Ready"], "False")

    def test_nodeoverlay_status_of_a_conflict(self):
        """The conditions an overlay that lost a conflict shows, and its printed columns."""
        overlay = copy.deepcopy(next(o for _, o in example_objects(ROOT)
                                     if o["kind"] == "NodeOverlay" and "weight" in o["spec"]))
        overlay["metadata"] = {"name": "status-overlay"}
        self.create(overlay)
        path = self.object_path("NodeOverlay", "status-overlay")
        conflict = [self.condition("ValidationSucceeded", "False", "Conflict",
                                   "conflict with another overlay"),
                    self.condition("Ready", "False", "UnhealthyDependents",
                                   "ValidationSucceeded=False")]
        written = self.api.patch(path + "/status", {"status": {"conditions": conflict}},
                                 kind="merge")
        self.assertEqual([(c["type"], c["status"], c["reason"], c["message"])
                          for c in written["status"]["conditions"]],
                         [(c["type"], c["status"], c["reason"], c["message"]) for c in conflict])
        table, columns = self.columns("NodeOverlay", path)
        cells = dict(zip([name for name, _ in columns], table["rows"][0]["cells"]))
        self.assertEqual((cells["Name"], cells["Ready"], cells["Weight"]),
                         ("status-overlay", "False", overlay["spec"]["weight"]))
        # The conditions are a list keyed by type, as on Karpenter's NodeOverlay.
        status, message = self.refusal("PATCH", path + "/status", {"status": {
            "conditions": conflict + [self.condition("Ready", "True", "Ready")]}},
            content_type="merge")
        self.assertEqual(status, 422, message)
        self.assertIn("Duplicate value", message)


if __name__ == "__main__":
    if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]):
        ROOT = os.path.abspath(sys.argv.pop(1))
    controlplane.main()
