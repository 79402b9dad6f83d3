#!/usr/bin/env python3
"""Proves that deploy/aws/cloudformation.yaml parses, that every reference in it resolves, that
cfn-lint accepts it (its JSON-string policies included), that it makes the interruption queue
and the four EventBridge rules tenon reads, the controller's role for IRSA and Pod Identity
with the names deploy/ uses, the node role, and policies scoped as documented; and that
iam_check.py maps each protocol's requests to IAM actions, passes the controller's exact calls
and fails on any difference, a removed action among them."""
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iam_check  # noqa: E402
import yaml  # noqa: E402  (iam_check has checked it is installed)

try:
    import cfnlint.api
except ImportError:  # cfn-lint comes with moto[server], which the AWS tests need anyway.
    cfnlint = None

ROOT = iam_check.ROOT
EVENTBRIDGE_SOURCE = os.path.join(ROOT, "adapters", "aws", "eventbridge.cc")
DEPLOY_BASE = os.path.join(ROOT, "deploy", "base")
PRODUCTION = os.path.join(ROOT, "deploy", "overlays", "production", "kustomization.yaml")

# The AWS calls `tenon run` sends (adapters/controller/cloud.cc through adapters/aws/): the
# controller policy must grant exactly these and AUTHORIZATION_ONLY.
CONTROLLER_CALLS = [
    "ec2:DescribeInstanceTypes", "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeSpotPriceHistory", "pricing:GetProducts",            # catalog
    "ssm:GetParameter", "ec2:DescribeImages", "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",                                     # EC2NodeClass resolution
    "iam:GetInstanceProfile", "iam:CreateInstanceProfile", "iam:AddRoleToInstanceProfile",
    "iam:RemoveRoleFromInstanceProfile",                              # instance profiles
    "ec2:DescribeLaunchTemplates", "ec2:CreateLaunchTemplate", "ec2:CreateFleet",  # launch
    "ec2:CreateTags",                                                 # tags on registration
    "ec2:TerminateInstances", "ec2:DescribeInstances",                # termination, GC
    "ec2:DeleteLaunchTemplate", "iam:DeleteInstanceProfile",          # EC2NodeClass deleted
    "sqs:GetQueueUrl", "sqs:ReceiveMessage", "sqs:DeleteMessage",     # interruption queue
]
ARCHIVE_CALLS = ["s3:PutObject", "s3:GetObject"]
RULES = {"SpotInterruptionRule", "RebalanceRule", "ScheduledChangeRule",
         "InstanceStateChangeRule"}
NODE_POLICIES = {"AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy",
                 "AmazonEC2ContainerRegistryReadOnly", "AmazonSSMManagedInstanceCore"}
OIDC = "oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
# Parameter sets that take every branch of every condition.
VARIANTS = [{}, {"OidcProvider": OIDC, "NodeRoleName": "KarpenterNodeRole-example",
                 "InterruptionQueueName": "example-tenon", "ArchiveBucketName": "incidents"}]
KEY = "AKIATENONCONTROLLER1"


def signed(service, key=KEY):
    return {"Authorization": "AWS4-HMAC-SHA256 Credential=%s/20260101/us-east-1/%s/aws4_request, "
                             "SignedHeaders=host;x-amz-date, Signature=00" % (key, service)}


def entry(method, url, headers, body=b""):
    return {"method": method, "url": url, "headers": headers,
            "body": base64.b64encode(body).decode(), "body_encoded": True}


def request_for(action, key=KEY):
    """A recorded request, as tenon's client sends it, that needs `action`."""
    service, operation = action.split(":")
    if service in ("ec2", "iam"):
        body = ("Action=%s&Version=2016-11-15" % operation).encode()
        return entry("POST", "http://127.0.0.1/", dict(signed(service, key), **{
            "Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}), body)
    if service == "s3":
        method = {"PutObject": "PUT", "GetObject": "GET"}[operation]
        return entry(method, "http://127.0.0.1/incidents/2026/demo.tenonlog", signed("s3", key))
    prefix = {"sqs": "AmazonSQS", "ssm": "AmazonSSM", "pricing": "AWSPriceListService"}[service]
    return entry("POST", "http://127.0.0.1/", dict(signed(service, key), **{
        "X-Amz-Target": "%s.%s" % (prefix, operation)}), b"{}")


def recording(actions, key=KEY):
    return [request_for(a, key) for a in actions]


def resources_of(template, kind):
    return {n: r for n, r in template["Resources"].items() if r["Type"] == kind}


def walk(node, path=""):
    """Yields (path, node) for every mapping in the template."""
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from walk(v, "%s/%s" % (path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, "%s/%d" % (path, i))


def policy_document(template, resource, prop="PolicyDocument", parameters=None):
    evaluator = iam_check.Evaluator(template, parameters)
    return evaluator.document(template["Resources"][resource]["Properties"][prop])


def statement(document, sid):
    found = [s for s in iam_check.statements(document) if s.get("Sid") == sid]
    if len(found) != 1:
        raise LookupError("expected one statement %s, found %d" % (sid, len(found)))
    return found[0]


def lint(text, resolved=False):
    """cfn-lint's findings on a template's text. In a resolved template the parameters and
    conditions the policies used are substituted away, so their "unused" warnings are moot."""
    moot = ("W2001", "W8001") if resolved else ()
    return [str(m) for m in cfnlint.api.lint(text, regions=["us-east-1"])
            if m.rule.id not in moot]


def resolved_template(template, parameters):
    """The template with each JSON-string policy replaced by the document it evaluates to, so
    that cfn-lint checks the policies' actions and structure too."""
    out = json.loads(json.dumps(template))
    evaluator = iam_check.Evaluator(template, parameters)
    for resource in out["Resources"].values():
        properties = resource.get("Properties") or {}
        for prop in ("PolicyDocument", "AssumeRolePolicyDocument"):
            if prop in properties and isinstance(evaluator.value(properties[prop]), str):
                properties[prop] = evaluator.document(properties[prop])
    return out


class Template(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.template = iam_check.load_template()

    def test_parses_with_short_forms(self):
        self.assertEqual(self.template["AWSTemplateFormatVersion"], "2010-09-09")
        self.assertIn({"Ref": "InterruptionQueue"},
                      self.template["Resources"]["InterruptionQueuePolicy"]["Properties"]["Queues"])
        self.assertEqual(self.template["Outputs"]["ControllerRoleArn"]["Value"],
                         {"Fn::GetAtt": ["ControllerRole", "Arn"]})

    def test_every_reference_resolves(self):
        parameters = set(self.template["Parameters"])
        resources = set(self.template["Resources"])
        conditions = set(self.template["Conditions"])
        names = parameters | resources | set(iam_check.PSEUDO)
        checked = 0
        for path, node in walk(self.template):
            if len(node) != 1:
                continue
            (key, arg), = node.items()
            if key == "Ref":
                self.assertIn(arg, names, path)
            elif key == "Fn::GetAtt":
                self.assertIn(arg[0], resources, path)
            elif key in ("Condition", "Fn::If"):
                self.assertIn(arg if key == "Condition" else arg[0], conditions, path)
            elif key == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else arg
                for name in iam_check.SUB_VARIABLE.findall(text):
                    self.assertTrue(name in names or name in variables or
                                    ("." in name and name.split(".")[0] in resources),
                                    "%s: ${%s}" % (path, name))
            else:
                continue
            checked += 1
        self.assertGreater(checked, 40)
        for section in ("Resources", "Outputs"):
            for name, item in self.template[section].items():
                if "Condition" in item:
                    self.assertIn(item["Condition"], conditions, name)

    def test_every_variant_evaluates(self):
        for parameters in VARIANTS:
            with self.subTest(parameters):
                evaluator = iam_check.Evaluator(self.template, parameters)
                for name, output in self.template["Outputs"].items():
                    if "Condition" in output and not evaluator.condition(output["Condition"]):
                        continue
                    self.assertTrue(evaluator.value(output["Value"]), name)

    @unittest.skipIf(cfnlint is None, "cfn-lint is not installed (pip install cfn-lint)")
    def test_cfn_lint_accepts_it(self):
        with open(iam_check.TEMPLATE) as f:
            self.assertEqual(lint(f.read()), [])
        for parameters in VARIANTS:
            self.assertEqual(lint(json.dumps(resolved_template(self.template, parameters)),
                                  resolved=True), [], parameters)

    @unittest.skipIf(cfnlint is None, "cfn-lint is not installed (pip install cfn-lint)")
    def test_cfn_lint_sees_into_the_json_policies(self):
        with open(iam_check.TEMPLATE) as f:
            text = f.read()
        self.assertEqual(text.count('"ec2:DescribeSubnets"'), 1)
        planted = yaml.load(text.replace('"ec2:DescribeSubnets"', '"ec2:DescribeSubnetz"'),
                            Loader=iam_check.CfnLoader)
        found = lint(json.dumps(resolved_template(planted, {})), resolved=True)
        self.assertTrue(any("describesubnetz" in m for m in found), found)

    def test_interruption_queue(self):
        queue = self.template["Resources"]["InterruptionQueue"]
        self.assertEqual(queue["Type"], "AWS::SQS::Queue")
        self.assertEqual(queue["Properties"]["MessageRetentionPeriod"], 300)
        self.assertIs(queue["Properties"]["SqsManagedSseEnabled"], True)
        for parameters, name in ((VARIANTS[0], "example"), (VARIANTS[1], "example-tenon")):
            evaluator = iam_check.Evaluator(self.template, parameters)
            self.assertEqual(evaluator.value(queue["Properties"]["QueueName"]), name)
        policy = self.template["Resources"]["InterruptionQueuePolicy"]["Properties"]
        self.assertEqual(policy["Queues"], [{"Ref": "InterruptionQueue"}])
        send = statement(policy["PolicyDocument"], "EventBridgeSends")
        self.assertEqual(send["Effect"], "Allow")
        self.assertEqual(send["Action"], "sqs:SendMessage")
        self.assertEqual(set(send["Principal"]["Service"]),
                         {"events.amazonaws.com", "sqs.amazonaws.com"})
        self.assertEqual(send["Resource"], {"Fn::GetAtt": ["InterruptionQueue", "Arn"]})
        deny = statement(policy["PolicyDocument"], "DenyHTTP")
        self.assertEqual((deny["Effect"], deny["Condition"]),
                         ("Deny", {"Bool": {"aws:SecureTransport": False}}))

    def test_four_rules_send_what_the_parser_reads_to_the_queue(self):
        with open(EVENTBRIDGE_SOURCE) as f:
            parsed = set(re.findall(r'source == "([\w.]+)" && type == "([^"]+)"', f.read()))
        self.assertEqual(len(parsed), 4, parsed)
        rules = resources_of(self.template, "AWS::Events::Rule")
        self.assertEqual(set(rules), RULES)
        patterns = set()
        for name, rule in rules.items():
            pattern = rule["Properties"]["EventPattern"]
            self.assertEqual((len(pattern["source"]), len(pattern["detail-type"])), (1, 1), name)
            patterns.add((pattern["source"][0], pattern["detail-type"][0]))
            self.assertEqual(rule["Properties"]["Targets"],
                             [{"Id": "InterruptionQueue",
                               "Arn": {"Fn::GetAtt": ["InterruptionQueue", "Arn"]}}], name)
        self.assertEqual(patterns, parsed)
        # The parser reads only EC2 scheduled changes from AWS Health: the rule asks for no more.
        self.assertEqual(rules["ScheduledChangeRule"]["Properties"]["EventPattern"]["detail"],
                         {"service": ["EC2"], "eventTypeCategory": ["scheduledChange"]})

    def test_controller_role_trusts_the_service_account(self):
        irsa = policy_document(self.template, "ControllerRole", "AssumeRolePolicyDocument",
                               {"OidcProvider": OIDC})
        web = statement(irsa, "IRSA")
        self.assertEqual(web["Action"], "sts:AssumeRoleWithWebIdentity")
        self.assertEqual(web["Principal"]["Federated"],
                         "arn:aws:iam::123456789012:oidc-provider/" + OIDC)
        self.assertEqual(web["Condition"]["StringEquals"],
                         {OIDC + ":aud": "sts.amazonaws.com",
                          OIDC + ":sub": "system:serviceaccount:tenon:tenon"})
        for document in (irsa, policy_document(self.template, "ControllerRole",
                                               "AssumeRolePolicyDocument")):
            pods = statement(document, "PodIdentity")
            self.assertEqual(pods["Principal"], {"Service": "pods.eks.amazonaws.com"})
            self.assertEqual(set(pods["Action"]), {"sts:AssumeRole", "sts:TagSession"})
        self.assertEqual(len(iam_check.statements(policy_document(
            self.template, "ControllerRole", "AssumeRolePolicyDocument"))), 1)
        policy = self.template["Resources"]["ControllerPolicy"]["Properties"]
        self.assertEqual(policy["Roles"], [{"Ref": "ControllerRole"}])

    def test_names_match_the_deployment(self):
        with open(os.path.join(DEPLOY_BASE, "kustomization.yaml")) as f:
            namespace = yaml.safe_load(f)["namespace"]
        with open(os.path.join(DEPLOY_BASE, "serviceaccount.yaml")) as f:
            account = yaml.safe_load(f)["metadata"]["name"]
        parameters = self.template["Parameters"]
        self.assertEqual((parameters["Namespace"]["Default"],
                          parameters["ServiceAccountName"]["Default"]), (namespace, account))
        # The production overlay's role annotation and queue follow the stack's names.
        with open(PRODUCTION) as f:
            overlay = f.read()
        cluster = re.search(r"CLUSTER_NAME=(\S+)", overlay).group(1)
        evaluator = iam_check.Evaluator(self.template, {"ClusterName": cluster})
        resources = self.template["Resources"]
        self.assertIn("role/" + evaluator.value(resources["ControllerRole"]["Properties"]
                                                ["RoleName"]) + "\n", overlay)
        self.assertIn("INTERRUPTION_QUEUE=" + evaluator.value(
            resources["InterruptionQueue"]["Properties"]["QueueName"]) + "\n", overlay)

    def test_node_role_and_instance_profile(self):
        resources = self.template["Resources"]
        role = resources["NodeRole"]
        trust = iam_check.statements(role["Properties"]["AssumeRolePolicyDocument"])
        self.assertEqual([(s["Principal"], s["Action"]) for s in trust],
                         [({"Service": {"Fn::Sub": "ec2.${AWS::URLSuffix}"}}, "sts:AssumeRole")])
        arns = iam_check.Evaluator(self.template).value(role["Properties"]["ManagedPolicyArns"])
        self.assertEqual({a.rsplit("/", 1)[1] for a in arns}, NODE_POLICIES)
        profile = resources["NodeInstanceProfile"]
        self.assertEqual(profile["Properties"]["Roles"], [{"Ref": "NodeRole"}])
        self.assertEqual((role["Condition"], profile["Condition"]),
                         ("CreateNodeRole", "CreateNodeRole"))
        # The controller may pass exactly the node role: the stack's, or the one named.
        for parameters, name in ((VARIANTS[0], "tenon-node-example"),
                                 (VARIANTS[1], "KarpenterNodeRole-example")):
            document = policy_document(self.template, "ControllerPolicy", parameters=parameters)
            passing = statement(document, "PassTheNodeRole")
            self.assertEqual(passing["Resource"], "arn:aws:iam::123456789012:role/" + name)
            self.assertEqual(passing["Condition"]["StringEquals"]["iam:PassedToService"][0],
                             "ec2.amazonaws.com")

    def test_controller_policy_is_scoped(self):
        document = policy_document(self.template, "ControllerPolicy")
        self.assertEqual(document["Version"], "2012-10-17")
        sids = [s["Sid"] for s in iam_check.statements(document)]
        self.assertEqual(len(sids), len(set(sids)))
        owned = {"aws:ResourceTag/kubernetes.io/cluster/example": "owned"}
        requested = {"aws:RequestTag/kubernetes.io/cluster/example": "owned"}
        unscoped = set()
        for s in iam_check.statements(document):
            self.assertEqual(s["Effect"], "Allow", s["Sid"])
            for action in iam_check.as_list(s["Action"]):
                self.assertRegex(action, r"^[a-z0-9]+:[A-Za-z]+$")
            if s["Resource"] == "*" and "Condition" not in s:
                unscoped.update(iam_check.as_list(s["Action"]))
        # Only the Price List API has no resource or region to be scoped by.
        self.assertEqual(unscoped, {"pricing:GetProducts"})
        read = statement(document, "ReadEC2InTheRegion")
        self.assertEqual(read["Condition"], {"StringEquals": {"aws:RequestedRegion": "us-east-1"}})
        terminate = statement(document, "TerminateTheClustersInstances")
        self.assertEqual(terminate["Condition"]["StringEquals"], owned)
        self.assertEqual(terminate["Condition"]["StringLike"],
                         {"aws:ResourceTag/karpenter.sh/nodepool": "*"})
        for sid in ("LaunchTaggedInstances", "CreateTaggedLaunchTemplates",
                    "CreateTaggedInstanceProfiles"):
            self.assertEqual(statement(document, sid)["Condition"]["StringEquals"], requested, sid)
        tagging = statement(document, "TagOnCreate")["Condition"]["StringEquals"]
        self.assertEqual(set(tagging["ec2:CreateAction"]),
                         {"CreateFleet", "RunInstances", "CreateLaunchTemplate"})
        self.assertEqual(statement(document, "LaunchFromTheClustersLaunchTemplates")[
            "Condition"]["StringEquals"], owned)
        # What tenon deletes with an EC2NodeClass is the cluster's and was made for one.
        made_for_a_nodeclass = {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"}
        for sid in ("SetTheRoleOfTheClustersInstanceProfiles", "DeleteTheClustersLaunchTemplates",
                    "DeleteTheClustersInstanceProfiles"):
            self.assertEqual(statement(document, sid)["Condition"]["StringEquals"], owned, sid)
            self.assertEqual(statement(document, sid)["Condition"]["StringLike"],
                             made_for_a_nodeclass, sid)
        # Tags after registration, as Karpenter's tagging controller: only on the cluster's
        # NodePool instances, and only the three keys it sets.
        tagging_later = statement(document, "TagTheClustersInstancesOnRegistration")
        self.assertEqual(tagging_later["Resource"], "arn:aws:ec2:us-east-1:*:instance/*")
        self.assertEqual(tagging_later["Condition"]["StringEquals"], owned)
        self.assertEqual(tagging_later["Condition"]["StringLike"],
                         {"aws:ResourceTag/karpenter.sh/nodepool": "*"})
        self.assertEqual(tagging_later["Condition"]["StringEqualsIfExists"],
                         {"aws:RequestTag/eks:eks-cluster-name": "example"})
        self.assertEqual(set(tagging_later["Condition"]["ForAllValues:StringEquals"][
            "aws:TagKeys"]), {"eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"})
        # tenon names its instance profiles CLUSTER_NODECLASS (aws::InstanceProfileName).
        for sid in ("ReadTheClustersInstanceProfiles", "CreateTaggedInstanceProfiles",
                    "SetTheRoleOfTheClustersInstanceProfiles",
                    "DeleteTheClustersInstanceProfiles"):
            self.assertEqual(statement(document, sid)["Resource"],
                             "arn:aws:iam::123456789012:instance-profile/example_*", sid)
        self.assertEqual(statement(document, "ConsumeTheInterruptionQueue")["Resource"],
                         "arn:aws:sqs:us-east-1:123456789012:example")
        self.assertEqual(statement(document, "ReadPublicAmiParameters")["Resource"],
                         "arn:aws:ssm:us-east-1::parameter/aws/service/*")

    def test_archive_policy_only_with_a_bucket(self):
        archive = self.template["Resources"]["ArchivePolicy"]
        self.assertEqual(archive["Condition"], "HasArchiveBucket")
        self.assertNotIn("Roles", archive["Properties"])
        evaluator = iam_check.Evaluator(self.template, {"ArchiveBucketName": "incidents"})
        self.assertTrue(evaluator.condition("HasArchiveBucket"))
        self.assertFalse(iam_check.Evaluator(self.template).condition("HasArchiveBucket"))
        document = evaluator.document(archive["Properties"]["PolicyDocument"])
        only = statement(document, "ExportAndImportArchives")
        self.assertEqual(set(only["Action"]), set(ARCHIVE_CALLS))
        self.assertEqual(only["Resource"], "arn:aws:s3:::incidents/*")


class Mapping(unittest.TestCase):
    """Each protocol's request to its IAM action."""

    def test_query_json_and_rest(self):
        for action in CONTROLLER_CALLS + ARCHIVE_CALLS:
            self.assertEqual(iam_check.action_of(request_for(action)), (KEY, action))

    def test_a_real_query_body(self):
        body = b"Action=CreateFleet&Version=2016-11-15&Type=instant&ClientToken=default-x4k2p"
        self.assertEqual(iam_check.action_of(entry("POST", "http://h/", signed("ec2"), body)),
                         (KEY, "ec2:CreateFleet"))
        plain = {"method": "POST", "url": "http://h/", "headers": signed("iam"),
                 "body": "Action=GetInstanceProfile&Version=2010-05-08", "body_encoded": False}
        self.assertEqual(iam_check.action_of(plain), (KEY, "iam:GetInstanceProfile"))

    def test_unsigned_requests_need_no_permission(self):
        body = b"Action=AssumeRoleWithWebIdentity&Version=2011-06-15"
        self.assertEqual(iam_check.action_of(entry("POST", "http://h/", {}, body)), (None, None))

    def test_only_the_given_key_counts(self):
        mixed = recording(["ec2:CreateFleet"]) + recording(["ec2:CreateVpc"], "AKIAOTHER")
        self.assertEqual(iam_check.used_actions(mixed, KEY), {"ec2:CreateFleet"})
        self.assertEqual(iam_check.used_actions(mixed), {"ec2:CreateFleet", "ec2:CreateVpc"})

    def test_an_unknown_request_is_an_error(self):
        with self.assertRaises(ValueError):
            iam_check.action_of(entry("POST", "http://h/", signed("ec2"), b"Version=1"))
        with self.assertRaises(ValueError):
            iam_check.action_of(entry("POST", "http://h/", signed("kinesis"), b""))


class IamCheck(unittest.TestCase):
    """iam_check.py's own contract: it passes an exact match and fails on any difference."""

    def run_cli(self, entries, *args, template_text=None):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "recording.jsonl")
            with open(path, "w") as f:
                f.writelines(json.dumps(e) + "\n" for e in entries)
            extra = list(args)
            if template_text is not None:
                template = os.path.join(d, "cloudformation.yaml")
                with open(template, "w") as f:
                    f.write(template_text)
                extra += ["--template", template]
            return subprocess.run([sys.executable, iam_check.__file__, path] + extra,
                                  capture_output=True, text=True)

    @staticmethod
    def template_with(old, new=""):
        """The template's text with `old` (found exactly once) replaced by `new`."""
        with open(iam_check.TEMPLATE) as f:
            original = f.read()
        assert original.count(old) == 1, old
        return original.replace(old, new)

    def test_exact_use_passes(self):
        result = self.run_cli(recording(CONTROLLER_CALLS), "--access-key-id", KEY)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("ControllerPolicy grants exactly", result.stdout)

    def test_the_archive_policy(self):
        result = self.run_cli(recording(ARCHIVE_CALLS), "--policy", "ArchivePolicy")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_an_action_removed_from_the_template_fails(self):
        text = self.template_with('"sqs:DeleteMessage", ')
        result = self.run_cli(recording(CONTROLLER_CALLS), template_text=text)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("used but not granted", result.stdout)
        self.assertIn("  sqs:DeleteMessage\n", result.stdout + "\n")

    def test_an_authorization_only_action_removed_fails(self):
        text = self.template_with(', "iam:TagInstanceProfile"')
        result = self.run_cli(recording(CONTROLLER_CALLS), template_text=text)
        self.assertEqual(result.returncode, 1)
        self.assertIn("iam:TagInstanceProfile (authorization only: the Tags of "
                      "CreateInstanceProfile)", result.stdout)

    def test_an_extra_call_fails(self):
        result = self.run_cli(recording(CONTROLLER_CALLS + ["ec2:ModifyInstanceAttribute"]))
        self.assertEqual(result.returncode, 1)
        self.assertIn("used but not granted", result.stdout)
        self.assertIn("ec2:ModifyInstanceAttribute", result.stdout)

    def test_an_unused_grant_fails(self):
        used = [a for a in CONTROLLER_CALLS if a != "sqs:GetQueueUrl"]
        result = self.run_cli(recording(used))
        self.assertEqual(result.returncode, 1)
        self.assertIn("granted but never used", result.stdout)
        self.assertIn("sqs:GetQueueUrl", result.stdout)

    def test_a_wildcard_grant_fails(self):
        text = self.template_with('"ec2:DescribeSubnets"', '"ec2:Describe*"')
        result = self.run_cli(recording(CONTROLLER_CALLS), template_text=text)
        self.assertEqual(result.returncode, 1)
        self.assertIn("granted with a wildcard", result.stdout)
        self.assertIn("ec2:Describe*", result.stdout)

    def test_another_keys_calls_do_not_count(self):
        result = self.run_cli(recording(CONTROLLER_CALLS, "AKIAOTHER"), "--access-key-id", KEY)
        self.assertEqual(result.returncode, 1)
        self.assertIn("no signed request from " + KEY, result.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=1)
