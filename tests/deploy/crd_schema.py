"""Validates objects against tenon's CRDs (deploy/base/crds) the way the Kubernetes API server
does for `kubectl apply` with strict field validation, as far as a JSON-schema check and plain
Python can:

  - the openAPIV3Schema becomes a JSON schema: nullable, x-kubernetes-int-or-string and
    x-kubernetes-preserve-unknown-fields are honoured, the other x-kubernetes-* extensions and
    descriptions are dropped, and every object with `properties` rejects unknown fields (a
    structural schema prunes them; strict validation turns that into an error);
  - defaults are applied before validation, as the API server does, so CEL rules see them;
  - the CEL rules (x-kubernetes-validations) cannot be run by jsonschema. Each rule is looked up
    by its message in CEL_RULES, a plain-Python equivalent: restricted label domains in labels
    and requirement keys (the karpenter.k8s.aws list read from the rule itself, as NodePool and
    NodeOverlay list different labels); requirement value counts (In, NotIn, Gt/Lt,
    minValues); budget schedule needs duration; NodeOverlay price xor priceAdjustment and its
    restricted capacity names; nodeClassRef fields not empty; EC2NodeClass role xor
    instanceProfile, AMI selector exclusivity and alias format/family, amiFamily needed without
    an alias and consistent with it, selector terms not empty and their field exclusivity, tag
    key restrictions, kubelet eviction/reserved keys and GC thresholds, one root volume,
    snapshotID or volumeSize.
    Transition rules (those comparing with oldSelf: immutability) cannot apply to a new object
    and are listed in TRANSITION_RULES; a rule in neither table fails unknown_rules().
"""
import ast
import copy
import glob
import os
import re
import sys

try:
    import jsonschema
    import yaml
except ImportError as e:
    sys.exit("tests/deploy needs python3 with PyYAML and jsonschema (apt install python3-yaml "
             "python3-jsonschema): %s" % e)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CRD_DIR = os.path.join(ROOT, "deploy", "base", "crds")


def load_yaml_documents(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def load_crds():
    """-> {(apiVersion, kind): the v1 openAPIV3Schema}."""
    crds = {}
    for path in sorted(glob.glob(os.path.join(CRD_DIR, "*.yaml"))):
        for doc in load_yaml_documents(path):
            spec = doc["spec"]
            for version in spec["versions"]:
                key = ("%s/%s" % (spec["group"], version["name"]), spec["names"]["kind"])
                crds[key] = version["schema"]["openAPIV3Schema"]
    return crds


# ---- openAPIV3Schema -> JSON schema -------------------------------------------------------

DROPPED = {"description", "default", "format", "example"}


def to_json_schema(node, top=True):
    """A JSON schema equivalent to one structural OpenAPI v3 schema node."""
    out = {}
    for key, value in node.items():
        if key in DROPPED or key.startswith("x-kubernetes-"):
            continue
        if key == "properties":
            out[key] = {name: to_json_schema(child, False) for name, child in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = to_json_schema(value, False)
        elif key in ("anyOf", "allOf", "oneOf"):
            out[key] = [to_json_schema(child, False) for child in value]
        elif key == "not":
            out[key] = to_json_schema(value, False)
        else:
            out[key] = copy.deepcopy(value)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
        out.pop("nullable", None)
    out.pop("nullable", None)
    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    if "properties" in node and "additionalProperties" not in node and not preserve:
        out["additionalProperties"] = False
    if top:
        # ObjectMeta is validated by the API server itself, not by the CRD's schema.
        out["properties"]["metadata"] = {"type": "object"}
    return out


def apply_defaults(schema, value):
    """Fills in schema defaults in place, as the API server does before validating."""
    if isinstance(value, dict):
        for name, child in (schema.get("properties") or {}).items():
            if name not in value and "default" in child:
                value[name] = copy.deepcopy(child["default"])
            if name in value:
                apply_defaults(child, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and "properties" not in schema:
            for child_value in value.values():
                apply_defaults(extra, child_value)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            apply_defaults(schema["items"], item)


def structural_problems(schema, path="<root>"):
    """What would make the API server refuse the CRD itself: a node without a type (unless
    int-or-string or preserve-unknown-fields), properties beside additionalProperties, or a
    default its own schema rejects (defaults must validate, and are not pruned silently)."""
    problems = []
    if "type" not in schema and not (schema.get("x-kubernetes-int-or-string") or
                                     schema.get("x-kubernetes-preserve-unknown-fields")):
        problems.append("%s: no type" % path)
    if "properties" in schema and "additionalProperties" in schema:
        problems.append("%s: both properties and additionalProperties" % path)
    if "default" in schema:
        validator = jsonschema.Draft7Validator(to_json_schema(schema, top=False))
        problems += ["%s: default: %s" % (path, e.message)
                     for e in validator.iter_errors(schema["default"])]
    for name, child in (schema.get("properties") or {}).items():
        problems += structural_problems(child, "%s.%s" % (path, name))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            problems += structural_problems(schema[key], "%s.%s" % (path, key))
    return problems


# ---- CEL rules in Python ------------------------------------------------------------------

def domain(key):
    """CEL's key.find("^([^/]+)"): the part before the first slash, or the whole key."""
    return key.split("/", 1)[0]


def keys_of(value):
    """Label rules are written both on one key (a string) and on a whole map (its keys)."""
    return list(value) if isinstance(value, dict) else [value]


def label_rule(allowed_exactly=(), allowed_domains=(), restricted_domain=None, banned=None):
    def check(value):
        for key in keys_of(value):
            if banned is not None:
                if key == banned:
                    return False
                continue
            d = domain(key)
            if key in allowed_exactly or any(d.endswith(a) for a in allowed_domains):
                continue
            if d.endswith(restricted_domain):
                return False
        return True
    return check


KUBERNETES_IO_ALLOWED = (
    "beta.kubernetes.io/instance-type", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch", "failure-domain.beta.kubernetes.io/zone",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os",
    "node.kubernetes.io/windows-build")
RESTRICTED_CAPACITY = {"cpu", "memory", "ephemeral-storage", "pods"}
EVICTION_SIGNALS = {"memory.available", "nodefs.available", "nodefs.inodesFree",
                    "imagefs.available", "imagefs.inodesFree", "pid.available"}
RESERVED_KEYS = {"cpu", "memory", "ephemeral-storage", "pid"}
ALIAS_FAMILIES = {"al2", "al2023", "bottlerocket", "windows2019", "windows2022"}


def non_negative_int(text):
    return re.fullmatch(r"[+-]?[0-9]+", text or "") is not None and int(text) >= 0


def gt_lt_ok(r):
    if r.get("operator") not in ("Gt", "Lt"):
        return True
    values = r.get("values") or []
    return len(values) == 1 and non_negative_int(values[0])


def min_values_ok(r):
    if r.get("operator") != "In" or "minValues" not in r:
        return True
    return len(r.get("values") or []) >= r["minValues"]


def one_root_volume(mappings):
    return sum(1 for m in mappings if m.get("rootVolume") is True) <= 1


def kubelet_ok(k):
    high, low = k.get("imageGCHighThresholdPercent"), k.get("imageGCLowThresholdPercent")
    return high is None or low is None or high > low


def role_xor_profile(spec):
    return ("role" in spec) != ("instanceProfile" in spec)


def has_alias(spec):
    return any("alias" in t for t in spec.get("amiSelectorTerms") or [])


CEL_RULES = {
    'label domain "kubernetes.io" is restricted': label_rule(
        KUBERNETES_IO_ALLOWED, ("node.kubernetes.io", "node-restriction.kubernetes.io"),
        "kubernetes.io"),
    'label domain "k8s.io" is restricted': label_rule((), ("kops.k8s.io",), "k8s.io"),
    'label domain "karpenter.sh" is restricted': label_rule(
        ("karpenter.sh/capacity-type", "karpenter.sh/nodepool"), (), "karpenter.sh"),
    'label "karpenter.sh/nodepool" is restricted': label_rule(banned="karpenter.sh/nodepool"),
    'label "kubernetes.io/hostname" is restricted': label_rule(banned="kubernetes.io/hostname"),
    "requirements with operator 'In' must have a value defined":
        lambda rs: all(r.get("operator") != "In" or r.get("values") for r in rs),
    "requirements with operator 'NotIn' must have a value defined":
        lambda rs: all(r.get("operator") != "NotIn" or r.get("values") for r in rs),
    "requirements operator 'Gt' or 'Lt' must have a single positive integer value":
        lambda rs: all(gt_lt_ok(r) for r in rs),
    "requirements with 'minValues' must have at least that many values specified in the "
    "'values' field": lambda rs: all(min_values_ok(r) for r in rs),
    "group may not be empty": lambda v: v != "",
    "kind may not be empty": lambda v: v != "",
    "name may not be empty": lambda v: v != "",
    "'schedule' must be set with 'duration'":
        lambda budgets: all(("schedule" in b) == ("duration" in b) for b in budgets),
    "empty tag keys or values aren't supported":
        lambda tags: all(k != "" and v != "" for k, v in tags.items()),
    "empty tag keys aren't supported": lambda tags: all(k != "" for k in tags),
    "tag contains a restricted tag matching kubernetes.io/cluster/":
        lambda tags: not any(k.startswith("kubernetes.io/cluster") for k in tags),
    "kubeReserved value cannot be a negative resource quantity":
        lambda m: not any(v.startswith("-") for v in m.values()),
    "systemReserved value cannot be a negative resource quantity":
        lambda m: not any(v.startswith("-") for v in m.values()),
    "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent": kubelet_ok,
    "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod":
        lambda k: all(s in (k.get("evictionSoftGracePeriod") or {})
                      for s in k.get("evictionSoft") or {}),
    "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft":
        lambda k: all(s in (k.get("evictionSoft") or {})
                      for s in k.get("evictionSoftGracePeriod") or {}),
    "snapshotID or volumeSize must be defined":
        lambda ebs: "snapshotID" in ebs or "volumeSize" in ebs,
    "must have only one blockDeviceMappings with rootVolume": one_root_volume,
    "'alias' is improperly formatted, must match the format 'family@version'":
        lambda a: re.match(r"^[a-zA-Z0-9]*@.*$", a) is not None,
    "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms":
        lambda terms: not (any("alias" in t for t in terms) and len(terms) != 1),
    "securityGroupSelectorTerms cannot be empty": lambda terms: len(terms) != 0,
    "subnetSelectorTerms cannot be empty": lambda terms: len(terms) != 0,
    "role cannot be empty": lambda v: v != "",
    "instanceProfile cannot be empty": lambda v: v != "",
    "must specify exactly one of ['role', 'instanceProfile']": role_xor_profile,
    "must specify amiFamily if amiSelectorTerms does not contain an alias":
        lambda spec: has_alias(spec) or "amiFamily" in spec,
    "only 'limits.nodes' is supported on static NodePools":
        lambda spec: "replicas" not in spec or set(spec.get("limits") or {}) <= {"nodes"},
    "'weight' is not supported on static NodePools":
        lambda spec: "replicas" not in spec or "weight" not in spec,
    "cannot set both 'price' and 'priceAdjustment'":
        lambda spec: "price" not in spec or "priceAdjustment" not in spec,
    "invalid resource restricted": lambda capacity: not set(capacity) & RESTRICTED_CAPACITY,
}


def listed_domain_rule(message, rule):
    """`K in ["a", ...] || !D.endsWith("domain")`: the allowed keys are read from the rule, as
    each kind lists its own."""
    if message != 'label domain "karpenter.k8s.aws" is restricted':
        return None
    m = re.search(r" in (\[[^\]]*\]) \|\| ", rule)
    if not m:
        return None
    return label_rule(tuple(ast.literal_eval(m.group(1))), (), "karpenter.k8s.aws")


# Rules on updates only (they compare with oldSelf), so a new object always passes them.
TRANSITION_RULES = {
    "nodeClassRef.group is immutable", "nodeClassRef.kind is immutable", "spec is immutable",
    "immutable field changed",
    "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) "
    "provisioning modes",
    "changing from 'instanceProfile' to 'role' is not supported. You must delete and recreate "
    "this node class if you want to change this.",
}


def pattern_rule(message):
    """Rules whose messages carry their parameters: one function per family of messages."""
    m = re.fullmatch(r"valid keys for (\w+) are \[(.*)\]", message)
    if m:
        allowed = set(ast.literal_eval("[%s]" % m.group(2)))
        return lambda mapping: set(mapping) <= allowed
    m = re.fullmatch(r"expected at least one, got none, (\[.*\])", message)
    if m:
        fields = ast.literal_eval(m.group(1))
        return lambda terms: all(any(f in t for f in fields) for t in terms)
    m = re.fullmatch(r"'(\w+)' is mutually exclusive, cannot be set with a combination of "
                     r"other fields in \w+", message)
    if m:
        return None  # Needs the rule text: see exclusive_rule().
    m = re.fullmatch(r"(\w+) is not supported by tenon yet: .*", message)
    if m:
        field = m.group(1)
        # On the spec (a field of its own) or on a list of terms (a field of any term).
        return lambda v: (all(field not in t for t in v) if isinstance(v, list)
                          else field not in v)
    m = re.fullmatch(r"tag contains a restricted tag matching ([\w./-]+)", message)
    if m:
        return lambda tags, tag=m.group(1): tag not in tags
    m = re.fullmatch(r"family is not supported, must be one of the following: .*", message)
    if m:
        return lambda alias: alias.split("@", 1)[0] in ALIAS_FAMILIES
    m = re.fullmatch(r"if set, amiFamily must be '(\w+)' or 'Custom' when using an? \w+ alias",
                     message)
    if m:
        family = m.group(1)

        def consistent(spec):
            uses = any(t.get("alias", "").split("@", 1)[0] == family.lower()
                       for t in spec.get("amiSelectorTerms") or [])
            return "amiFamily" not in spec or not uses or spec["amiFamily"] in ("Custom", family)
        return consistent
    return None


def exclusive_rule(rule):
    """`!self.exists(x, has(x.A) && (has(x.B) || ...))`: no term sets A together with B..."""
    m = re.fullmatch(r"!self\.exists\(x, has\(x\.(\w+)\) && \((.*)\)\)", rule)
    if not m:
        return None
    field, others = m.group(1), re.findall(r"has\(x\.(\w+)\)", m.group(2))
    return lambda terms: not any(field in t and any(o in t for o in others) for t in terms)


def rule_check(rule):
    """-> the Python check for one x-kubernetes-validations entry, "transition", or None."""
    message = rule["message"]
    if message in TRANSITION_RULES:
        return "transition"
    return (CEL_RULES.get(message) or listed_domain_rule(message, rule["rule"]) or
            pattern_rule(message) or exclusive_rule(rule["rule"]))


def all_rules(schema):
    for rule in schema.get("x-kubernetes-validations") or []:
        yield rule
    for child in (schema.get("properties") or {}).values():
        yield from all_rules(child)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from all_rules(schema[key])


def unknown_rules(crds):
    """Messages of CEL rules that have no Python equivalent here."""
    return sorted({r["message"] for s in crds.values() for r in all_rules(s)
                   if rule_check(r) is None})


def cel_errors(schema, value, path="", errors=None):
    """Evaluates the Python equivalents of the CEL rules over `value`, as the API server would
    (after the JSON schema passed, so types are right)."""
    errors = [] if errors is None else errors
    for rule in schema.get("x-kubernetes-validations") or []:
        check = rule_check(rule)
        if check not in (None, "transition") and not check(value):
            errors.append("%s: %s" % (path or "<root>", rule["message"]))
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name, child_value in value.items():
            child = properties.get(name) or (extra if isinstance(extra, dict) else None)
            if child is not None:
                cel_errors(child, child_value, "%s.%s" % (path, name), errors)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            cel_errors(schema["items"], item, "%s[%d]" % (path, i), errors)
    return errors


class Validator:
    def __init__(self):
        self.crds = load_crds()
        self.json_schemas = {k: to_json_schema(s) for k, s in self.crds.items()}

    def handles(self, obj):
        return isinstance(obj, dict) and (obj.get("apiVersion"), obj.get("kind")) in self.crds

    def errors(self, obj):
        """-> the reasons the API server would refuse to create `obj`; empty when it is valid."""
        key = (obj.get("apiVersion"), obj.get("kind"))
        schema = self.crds[key]
        obj = copy.deepcopy(obj)
        validator = jsonschema.Draft7Validator(self.json_schemas[key])
        found = ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "<root>", e.message)
                 for e in validator.iter_errors(obj)]
        if found:
            return found
        apply_defaults(schema, obj)
        return cel_errors(schema, obj)
