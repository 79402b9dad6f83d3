#!/usr/bin/env python3
"""Compares what tenon's AWS adapters sent with what an IAM policy of the CloudFormation template
grants, both ways.

  iam_check.py RECORDING [--policy LOGICAL_ID] [--access-key-id KEY] [--template FILE] [--list]

RECORDING holds the adapters' requests, one JSON object per line in the format of moto's request
recorder (GET /moto-api/recorder/download-recording; tests/aws/recording_proxy.py writes the
same): "method", "url", "headers", "body" (base64 when "body_encoded"). Each signed request
becomes the IAM action it needs: the service from its SigV4 credential scope, the operation
from X-Amz-Target (JSON protocols: SQS, SSM, Pricing), from Action= (Query protocols: EC2,
IAM), or from the method and path (S3). Unsigned requests (STS AssumeRoleWithWebIdentity) need
no permission: the role's trust policy admits them. With --access-key-id, only requests signed
with that key count.

The grants are the Allow statements of the managed policy LOGICAL_ID (default ControllerPolicy)
in deploy/aws/cloudformation.yaml. Exits 1, printing the differences, when an action was used
but is not granted (AWS would refuse it), an action is granted but never used (the policy is
wider than it must be), or a grant is a wildcard. AUTHORIZATION_ONLY below lists the actions AWS
checks without a request of their own: they must be granted and are never sent.
"""
import argparse
import base64
import json
import os
import re
import sys
import urllib.parse

try:
    import yaml
except ImportError as e:
    sys.exit("tests/deploy needs python3 with PyYAML (apt install python3-yaml): %s" % e)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEMPLATE = os.path.join(ROOT, "deploy", "aws", "cloudformation.yaml")

# Per policy: actions that authorize a request the adapters send under another name.
AUTHORIZATION_ONLY = {
    "ControllerPolicy": {
        "ec2:RunInstances": "CreateFleet (type instant) launches its instances as RunInstances, "
                            "authorized against the caller's policy",
        "ec2:CreateTags": "the TagSpecification of CreateFleet and CreateLaunchTemplate: tags "
                          "on create are authorized as CreateTags",
        "iam:TagInstanceProfile": "the Tags of CreateInstanceProfile",
        "iam:PassRole": "AddRoleToInstanceProfile and every launch with an instance profile "
                        "pass the node role",
    },
    "ArchivePolicy": {},
}

# SigV4 signing name -> IAM service prefix.
SERVICE_PREFIX = {"ec2": "ec2", "iam": "iam", "sqs": "sqs", "ssm": "ssm", "pricing": "pricing",
                  "s3": "s3", "sts": "sts"}

# Values for the pseudo parameters and for parameters without a default, to evaluate the
# template as CloudFormation would.
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012",
          "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": "tenon-example",
          "AWS::StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/tenon-example/1",
          "AWS::NotificationARNs": [], "AWS::NoValue": None}
EXAMPLE_PARAMETERS = {"ClusterName": "example"}

SCOPE = re.compile(r"Credential=([^/,\s]+)/\d{8}/[^/]+/([^/]+)/aws4_request")
SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


# ---- The template: CloudFormation's YAML with its short-form tags ----

class CfnLoader(yaml.SafeLoader):
    """PyYAML's safe loader that reads !Ref, !Sub, !GetAtt, ... into their long forms."""


def _intrinsic(tag):
    name = {"Ref": "Ref", "Condition": "Condition"}.get(tag, "Fn::" + tag)

    def construct(loader, node):
        if isinstance(node, yaml.ScalarNode):
            value = loader.construct_scalar(node)
            if tag == "GetAtt":
                value = value.split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        return {name: value}
    return construct


for _tag in ("Ref", "Condition", "Sub", "GetAtt", "If", "Equals", "Not", "And", "Or", "Join",
             "Select", "Split", "FindInMap", "Base64", "Cidr", "GetAZs", "ImportValue"):
    CfnLoader.add_constructor("!" + _tag, _intrinsic(_tag))


def load_template(path=TEMPLATE):
    with open(path) as f:
        return yaml.load(f, Loader=CfnLoader)  # noqa: S506 (a SafeLoader subclass)


class Evaluator:
    """Evaluates intrinsic functions for given parameter values. A resource's Ref is its logical
    id and Fn::GetAtt an ARN-like string naming it: enough to read and check the policies."""

    def __init__(self, template, parameters=None):
        self.template = template
        self.parameters = {}
        for name, spec in (template.get("Parameters") or {}).items():
            if "Default" in spec:
                self.parameters[name] = spec["Default"]
        self.parameters.update(EXAMPLE_PARAMETERS)
        self.parameters.update(parameters or {})
        self.resources = template.get("Resources") or {}
        self.conditions = {}
        for name in template.get("Conditions") or {}:
            self.condition(name)

    def condition(self, name):
        if name not in self.conditions:
            self.conditions[name] = bool(self.value(self.template["Conditions"][name]))
        return self.conditions[name]

    def ref(self, name):
        if name in PSEUDO:
            return PSEUDO[name]
        if name in self.parameters:
            return self.parameters[name]
        if name in self.resources:
            return name
        raise KeyError("Ref to unknown %s" % name)

    def get_att(self, resource, attribute):
        if resource not in self.resources:
            raise KeyError("Fn::GetAtt of unknown resource %s" % resource)
        kind = self.resources[resource]["Type"]
        if kind == "AWS::IAM::Role" and attribute == "Arn":
            name = self.value(self.resources[resource]["Properties"].get("RoleName", resource))
            return "arn:aws:iam::%s:role/%s" % (PSEUDO["AWS::AccountId"], name)
        if kind == "AWS::SQS::Queue" and attribute in ("Arn", "QueueName"):
            name = self.value(self.resources[resource]["Properties"].get("QueueName", resource))
            if attribute == "QueueName":
                return name
            return "arn:aws:sqs:%s:%s:%s" % (PSEUDO["AWS::Region"], PSEUDO["AWS::AccountId"], name)
        return "%s.%s" % (resource, attribute)

    def sub(self, text, variables):
        def one(match):
            name = match.group(1)
            if name in variables:
                return str(self.value(variables[name]))
            if "." in name and name.split(".", 1)[0] in self.resources:
                return str(self.get_att(*name.split(".", 1)))
            return str(self.ref(name))
        return SUB_VARIABLE.sub(one, text).replace("${!", "${")

    def value(self, node):
        if isinstance(node, list):
            return [self.value(n) for n in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, arg), = node.items()
            if key == "Ref":
                return self.ref(arg)
            if key == "Condition":
                return self.condition(arg)
            if key == "Fn::GetAtt":
                return self.get_att(*arg)
            if key == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else arg
                return self.sub(text, variables)
            if key == "Fn::If":
                return self.value(arg[1] if self.condition(arg[0]) else arg[2])
            if key == "Fn::Equals":
                return self.value(arg[0]) == self.value(arg[1])
            if key == "Fn::Not":
                return not self.value(arg[0])
            if key == "Fn::And":
                return all(self.value(a) for a in arg)
            if key == "Fn::Or":
                return any(self.value(a) for a in arg)
            if key == "Fn::Join":
                return arg[0].join(str(self.value(a)) for a in arg[1])
            if key.startswith("Fn::"):
                raise ValueError("%s is not evaluated by iam_check.py" % key)
        return {k: self.value(v) for k, v in node.items()}

    def document(self, node):
        """A policy document property: a YAML mapping, or a JSON string (as !Sub makes it)."""
        doc = self.value(node)
        return json.loads(doc) if isinstance(doc, str) else doc


def statements(document):
    found = document.get("Statement") or []
    return found if isinstance(found, list) else [found]


def as_list(value):
    return value if isinstance(value, list) else [value]


def granted(template, policy="ControllerPolicy", parameters=None):
    """-> the set of actions the Allow statements of the managed policy `policy` name."""
    resource = (template.get("Resources") or {}).get(policy)
    if resource is None or resource.get("Type") != "AWS::IAM::ManagedPolicy":
        raise LookupError("no AWS::IAM::ManagedPolicy %s in the template" % policy)
    evaluator = Evaluator(template, parameters)
    out = set()
    for statement in statements(evaluator.document(resource["Properties"]["PolicyDocument"])):
        if "NotAction" in statement:
            raise ValueError("%s: NotAction cannot be compared with calls" % policy)
        if statement.get("Effect") == "Allow":
            out.update(as_list(statement["Action"]))
    return out


# ---- The recording: each request to the IAM action it needs ----

def body_of(entry):
    body = entry.get("body") or ""
    if entry.get("body_encoded"):
        return base64.b64decode(body).decode("utf-8", "replace")
    return body


def s3_operation(method, path, query):
    bucket, _, key = path.lstrip("/").partition("/")
    if not bucket:
        return {"GET": "ListAllMyBuckets"}.get(method)
    if not key:
        return {"PUT": "CreateBucket", "GET": "ListBucket", "HEAD": "ListBucket",
                "DELETE": "DeleteBucket"}.get(method)
    if "uploads" in query or "uploadId" in query:  # Multipart uploads are authorized as PutObject.
        return "PutObject"
    return {"PUT": "PutObject", "GET": "GetObject", "HEAD": "GetObject",
            "DELETE": "DeleteObject"}.get(method)


def action_of(entry):
    """-> (access key id, IAM action), or (None, None) for an unsigned request."""
    headers = {k.lower(): v for k, v in (entry.get("headers") or {}).items()}
    scope = SCOPE.search(headers.get("authorization", ""))
    if scope is None:
        return None, None
    key, service = scope.groups()
    if service not in SERVICE_PREFIX:
        raise ValueError("a request signed for an unknown service %r" % service)
    prefix = SERVICE_PREFIX[service]
    method = entry.get("method", "GET").upper()
    url = urllib.parse.urlsplit(entry.get("url", "/"))
    query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
    target = headers.get("x-amz-target")
    if target:
        return key, "%s:%s" % (prefix, target.rsplit(".", 1)[-1])
    if service == "s3":
        operation = s3_operation(method, urllib.parse.unquote(url.path), query)
    else:
        form = urllib.parse.parse_qs(body_of(entry), keep_blank_values=True)
        operation = (form.get("Action") or query.get("Action") or [None])[0]
    if not operation:
        raise ValueError("cannot tell the action of %s %s" % (method, entry.get("url")))
    return key, "%s:%s" % (prefix, operation)


def read_recording(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def used_actions(entries, access_key_id=None):
    out = set()
    for entry in entries:
        key, action = action_of(entry)
        if action is not None and (access_key_id is None or key == access_key_id):
            out.add(action)
    return out


# ---- The comparison ----

def differences(used, grants, exceptions):
    """-> (needed but not granted, granted but never used, wildcard grants), each sorted."""
    wildcards = sorted(a for a in grants if "*" in a or "?" in a)
    exact = set(grants) - set(wildcards)
    needed = set(used) | set(exceptions)
    return sorted(needed - exact), sorted(exact - needed), wildcards


def report(missing, unused, wildcards, exceptions):
    lines = []
    if missing:
        lines.append("used but not granted (AWS would refuse these):")
        lines += ["  %s%s" % (a, " (authorization only: %s)" % exceptions[a]
                              if a in exceptions else "") for a in missing]
    if unused:
        lines.append("granted but never used (remove them from the policy):")
        lines += ["  " + a for a in unused]
    if wildcards:
        lines.append("granted with a wildcard (name each action instead):")
        lines += ["  " + a for a in wildcards]
    return "\n".join(lines)


def check(used, policy="ControllerPolicy", template_path=TEMPLATE):
    """-> an empty string when grants and use are equal, else the report of the differences."""
    exceptions = AUTHORIZATION_ONLY.get(policy, {})
    grants = granted(load_template(template_path), policy)
    return report(*differences(used, grants, exceptions), exceptions)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recording")
    parser.add_argument("--policy", default="ControllerPolicy")
    parser.add_argument("--access-key-id")
    parser.add_argument("--template", default=TEMPLATE)
    parser.add_argument("--list", action="store_true", help="print the actions used, one a line")
    args = parser.parse_args(argv[1:])
    try:
        used = used_actions(read_recording(args.recording), args.access_key_id)
    except (OSError, ValueError) as e:
        print("iam_check: %s: %s" % (args.recording, e), file=sys.stderr)
        return 2
    if args.list:
        print("\n".join(sorted(used)))
    if not used:
        print("iam_check: the recording holds no signed request%s" %
              (" from " + args.access_key_id if args.access_key_id else ""))
        return 1
    problems = check(used, args.policy, args.template)
    if problems:
        print(problems)
        return 1
    print("iam_check: %s grants exactly what was used (%d actions sent, %d authorization-only)"
          % (args.policy, len(used), len(AUTHORIZATION_ONLY.get(args.policy, {}))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
