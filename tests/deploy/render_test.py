#!/usr/bin/env python3
"""Proves that `kubectl kustomize deploy/` and every overlay render the objects tenon needs, as
specified: the CRDs exactly as generated, two leader-elected replicas with probes on 8081 and
metrics on 8080, the shared log volume, PDB, Service, least-privilege RBAC, and the overlays'
cluster-specific values; and that rbac_check.py passes the client's exact calls and fails on
any difference."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crd_schema  # noqa: E402
import rbac_check  # noqa: E402
import rendering  # noqa: E402
from rendering import find  # noqa: E402

# The calls the kube adapter makes: the ClusterRole must grant exactly these.
CLUSTER_CALLS = [
    ("karpenter.sh", "nodepools", ["get", "list", "watch"]),
    ("karpenter.sh", "nodepools/status", ["patch"]),
    ("karpenter.sh", "nodeclaims", ["get", "list", "watch", "create", "patch", "delete"]),
    ("karpenter.sh", "nodeclaims/status", ["patch"]),
    ("karpenter.sh", "nodeoverlays", ["get", "list", "watch"]),
    ("karpenter.sh", "nodeoverlays/status", ["patch"]),
    ("karpenter.k8s.aws", "ec2nodeclasses", ["get", "list", "watch", "patch"]),
    ("karpenter.k8s.aws", "ec2nodeclasses/status", ["patch"]),
    ("", "pods", ["get", "list", "watch", "patch", "delete"]),
    ("", "pods/eviction", ["create"]),
    ("", "nodes", ["get", "list", "watch", "patch", "delete"]),
    ("", "persistentvolumes", ["list", "watch"]),
    ("", "persistentvolumeclaims", ["list", "watch"]),
    ("", "events", ["create", "patch"]),
    ("apps", "daemonsets", ["list", "watch"]),
    ("policy", "poddisruptionbudgets", ["list", "watch"]),
    ("storage.k8s.io", "storageclasses", ["list", "watch"]),
    ("storage.k8s.io", "csinodes", ["list", "watch"]),
]
LEASE_CALLS = [("coordination.k8s.io", "leases", ["create", "get", "update"])]
LEASE_NAME = "tenon-leader-election"
NAMESPACE = "tenon"
KINDS = {"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole",
         "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "PersistentVolumeClaim",
         "Deployment", "PodDisruptionBudget", "Service"}
# What each overlay must set: ConfigMap values, image, storage class.
OVERLAYS = {
    "production": ({"CLUSTER_NAME": "prod-us-east-1", "INTERRUPTION_QUEUE": "prod-us-east-1"},
                   "123456789012.dkr.ecr.us-east-1.amazonaws.com/tenon:v0.1.0", "efs-sc"),
    "staging": ({"CLUSTER_NAME": "staging-us-west-2", "INTERRUPTION_QUEUE": "staging-us-west-2",
                 "LOG_LEVEL": "debug"},
                "123456789012.dkr.ecr.us-west-2.amazonaws.com/tenon:main-0147dc3",
                "efs-sc-staging"),
}


def used_list(calls):
    return [{"group": g, "resource": r, "verb": v} for g, r, verbs in calls for v in verbs]


def container(objects):
    return find(objects, "Deployment", "tenon")["spec"]["template"]["spec"]["containers"][0]


def env_of(objects):
    """-> {name: value or ("configMap", key)} of the controller container."""
    out = {}
    for e in container(objects)["env"]:
        ref = (e.get("valueFrom") or {}).get("configMapKeyRef")
        out[e["name"]] = ("configMap", ref["key"]) if ref else e.get("value")
    return out


def settings(objects):
    """The controller's environment with ConfigMap references resolved."""
    data = find(objects, "ConfigMap")["data"]
    return {k: data.get(v[1], "") if isinstance(v, tuple) else v
            for k, v in env_of(objects).items()}


class Rendered(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.default = rendering.render(rendering.DEPLOY)
        cls.overlays = {n: rendering.render(os.path.join(rendering.OVERLAYS, n))
                        for n in rendering.overlay_names()}

    def each(self):
        yield "default", self.default
        yield from self.overlays.items()

    def test_overlays_exist(self):
        self.assertEqual(sorted(self.overlays), sorted(OVERLAYS))

    def test_kinds(self):
        for name, objects in self.each():
            with self.subTest(name):
                self.assertEqual({o["kind"] for o in objects}, KINDS)
                namespaced = [o for o in objects if o["kind"] in (
                    "ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Deployment",
                    "PersistentVolumeClaim", "PodDisruptionBudget", "Service")]
                for o in namespaced:
                    self.assertEqual(o["metadata"].get("namespace"), NAMESPACE, o["kind"])

    def test_crds_are_the_generated_files(self):
        checked = subprocess.run(
            [sys.executable, os.path.join(crd_schema.CRD_DIR, "generate.py"), "--check"],
            capture_output=True, text=True)
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        files = {}
        for path in os.listdir(crd_schema.CRD_DIR):
            if path.endswith(".yaml"):
                for doc in crd_schema.load_yaml_documents(os.path.join(crd_schema.CRD_DIR, path)):
                    files[doc["metadata"]["name"]] = doc
        self.assertEqual(sorted(files), ["ec2nodeclasses.karpenter.k8s.aws",
                                         "nodeclaims.karpenter.sh", "nodeoverlays.karpenter.sh",
                                         "nodepools.karpenter.sh"])
        for name, objects in self.each():
            rendered = {o["metadata"]["name"]: o for o in objects
                        if o["kind"] == "CustomResourceDefinition"}
            self.assertEqual(sorted(rendered), sorted(files), name)
            for crd_name, doc in files.items():
                self.assertEqual(rendered[crd_name]["spec"], doc["spec"], (name, crd_name))
                version = doc["spec"]["versions"][0]
                # A NodePool also scales: kubectl scale sets a static pool's replicas.
                expected = {"status": {}}
                if crd_name == "nodepools.karpenter.sh":
                    expected["scale"] = {"specReplicasPath": ".spec.replicas",
                                         "statusReplicasPath": ".status.nodes"}
                self.assertEqual(version["subresources"], expected)
                self.assertTrue(version["additionalPrinterColumns"])

    def test_deployment(self):
        for name, objects in self.each():
            with self.subTest(name):
                deployment = find(objects, "Deployment", "tenon")
                self.assertEqual(deployment["spec"]["replicas"], 2)
                pod = deployment["spec"]["template"]["spec"]
                self.assertEqual(pod["serviceAccountName"], "tenon")
                self.assertEqual(pod["priorityClassName"], "system-cluster-critical")
                c = container(objects)
                self.assertEqual(c["args"], ["run", "--log-dir", "/var/lib/tenon/log"])
                ports = {p["name"]: p["containerPort"] for p in c["ports"]}
                self.assertEqual(ports, {"http-metrics": 8080, "http": 8081})
                self.assertEqual(c["livenessProbe"]["httpGet"], {"path": "/healthz",
                                                                 "port": "http"})
                self.assertEqual(c["readinessProbe"]["httpGet"], {"path": "/readyz",
                                                                  "port": "http"})
                security = c["securityContext"]
                self.assertTrue(security["readOnlyRootFilesystem"])
                self.assertTrue(security["runAsNonRoot"])
                self.assertFalse(security["allowPrivilegeEscalation"])
                self.assertEqual(security["capabilities"], {"drop": ["ALL"]})
                self.assertEqual(pod["securityContext"]["seccompProfile"],
                                 {"type": "RuntimeDefault"})
                self.assertTrue(c["resources"]["requests"] and c["resources"]["limits"])
                mount = c["volumeMounts"][0]
                self.assertEqual(mount["mountPath"], "/var/lib/tenon/log")
                volume = [v for v in pod["volumes"] if v["name"] == mount["name"]][0]
                self.assertEqual(volume["persistentVolumeClaim"]["claimName"], "tenon-log")

    def test_scheduling_constraints(self):
        pod = find(self.default, "Deployment", "tenon")["spec"]["template"]["spec"]
        terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertIn({"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
                      terms["nodeSelectorTerms"][0]["matchExpressions"])
        anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(anti[0]["topologyKey"], "kubernetes.io/hostname")
        self.assertEqual(pod["topologySpreadConstraints"][0]["topologyKey"],
                         "topology.kubernetes.io/zone")

    def test_karpenter_settings(self):
        env = settings(self.default)
        expected = {"DISABLE_LEADER_ELECTION": "false", "METRICS_PORT": "8080",
                    "HEALTH_PROBE_PORT": "8081", "KUBE_CLIENT_QPS": "200",
                    "KUBE_CLIENT_BURST": "300", "BATCH_IDLE_DURATION": "1s",
                    "BATCH_MAX_DURATION": "10s", "CLUSTER_NAME": "my-cluster",
                    "LOG_LEVEL": "info"}
        self.assertEqual({k: env.get(k) for k in expected}, expected)
        for name in ("CLUSTER_ENDPOINT", "INTERRUPTION_QUEUE", "FEATURE_GATES"):
            self.assertIn(name, env)

    def test_pvc_pdb_service(self):
        for name, objects in self.each():
            with self.subTest(name):
                pvc = find(objects, "PersistentVolumeClaim", "tenon-log")["spec"]
                self.assertEqual(pvc["accessModes"], ["ReadWriteMany"])
                self.assertEqual(pvc["resources"]["requests"]["storage"], "10Gi")
                self.assertTrue(pvc.get("storageClassName"))
                self.assertEqual(find(objects, "PodDisruptionBudget")["spec"]["maxUnavailable"],
                                 1)
                service = find(objects, "Service", "tenon")["spec"]
                self.assertEqual(service["ports"], [{"name": "http-metrics", "port": 8080,
                                                     "targetPort": "http-metrics",
                                                     "protocol": "TCP"}])
                labels = find(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
                for selector in (service["selector"],
                                 find(objects, "PodDisruptionBudget")["spec"]["selector"][
                                     "matchLabels"]):
                    self.assertLessEqual(selector.items(), labels.items())

    def test_overlay_values(self):
        for name, (values, image, storage_class) in OVERLAYS.items():
            with self.subTest(name):
                objects = self.overlays[name]
                env = settings(objects)
                self.assertEqual({k: env[k] for k in values}, values)
                self.assertTrue(env["CLUSTER_ENDPOINT"].startswith("https://"))
                self.assertEqual(container(objects)["image"], image)
                self.assertEqual(find(objects, "PersistentVolumeClaim")["spec"][
                    "storageClassName"], storage_class)
                self.assertIn("eks.amazonaws.com/role-arn",
                              find(objects, "ServiceAccount")["metadata"]["annotations"])

    def test_role_binds_the_lease_by_name(self):
        for name, objects in self.each():
            with self.subTest(name):
                role = find(objects, "Role", "tenon")
                self.assertEqual(role["metadata"]["namespace"], NAMESPACE)
                by_verbs = {tuple(r["verbs"]): r.get("resourceNames") for r in role["rules"]}
                self.assertEqual(by_verbs, {("create",): None, ("get", "update"): [LEASE_NAME]})
                for binding_kind, role_kind in (("RoleBinding", "Role"),
                                                ("ClusterRoleBinding", "ClusterRole")):
                    binding = find(objects, binding_kind, "tenon")
                    self.assertEqual(binding["roleRef"]["kind"], role_kind)
                    self.assertEqual(binding["subjects"], [{
                        "kind": "ServiceAccount", "name": "tenon", "namespace": NAMESPACE}])

    def test_rbac_grants_exactly_the_client_calls(self):
        grants = rbac_check.granted(self.default)
        missing, unused = rbac_check.differences(used_list(CLUSTER_CALLS + LEASE_CALLS), grants)
        self.assertEqual((missing, unused), ([], []))
        for name, objects in self.overlays.items():
            self.assertEqual(rbac_check.granted(objects), grants, name)


class RbacCheck(unittest.TestCase):
    """rbac_check.py's own contract: it passes an exact match and fails either difference."""

    def run_cli(self, used):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(used, f)
        try:
            return subprocess.run([sys.executable, rbac_check.__file__, f.name],
                                  capture_output=True, text=True)
        finally:
            os.unlink(f.name)

    def test_exact_use_passes(self):
        result = self.run_cli(used_list(CLUSTER_CALLS + LEASE_CALLS))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_an_extra_verb_fails(self):
        used = used_list(CLUSTER_CALLS + LEASE_CALLS) + [
            {"group": "", "resource": "nodes", "verb": "update"}]
        result = self.run_cli(used)
        self.assertEqual(result.returncode, 1)
        self.assertIn("used but not granted", result.stdout)
        self.assertIn("update core/nodes", result.stdout)

    def test_an_unused_grant_fails(self):
        used = [u for u in used_list(CLUSTER_CALLS + LEASE_CALLS)
                if (u["resource"], u["verb"]) != ("csinodes", "watch")]
        result = self.run_cli(used)
        self.assertEqual(result.returncode, 1)
        self.assertIn("granted but never used", result.stdout)
        self.assertIn("watch storage.k8s.io/csinodes", result.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=1)
