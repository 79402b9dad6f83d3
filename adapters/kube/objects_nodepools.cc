// Karpenter's karpenter.sh/v1 NodePools (what may be launched, with its limits and disruption
// budgets) and NodeClaims (what was launched, as observed).
#include "adapters/kube/objects.h"

#include "adapters/kube/objects_parts.h"
#include "reducers/cron.h"

#include <charconv>

namespace tenon::kube {

using namespace parts;

namespace {

template <class V>
void ParseLimits(const V& limits, NodePoolLimits& out) {
  if (!limits || limits.IsNull()) return;
  if (!limits.IsMap()) throw ObjectError("spec.limits must be a map");
  for (const auto& [key, quantity] : limits.Entries()) {
    const std::string name(key);
    const std::string value = Str(quantity, "limits." + name);
    if (name == "cpu") {
      out.cpu = ParseCpu(value);
    } else if (name == "memory") {
      out.memory = ParseMemory(value);
    } else if (name == "nodes") {
      out.nodes = ParseCpu(value).value / 1000;
    } else {
      out.extended[name] = ParseCpu(value).value / 1000;
    }
  }
}

// spec.disruption: consolidationPolicy, consolidateAfter ("Never" or a duration) and budgets.
template <class V>
void ParseDisruption(const V& d, NodePool& pool) {
  if (!d) return;
  if (d["consolidationPolicy"]) {
    std::string policy = Str(d["consolidationPolicy"], "spec.disruption.consolidationPolicy");
    if (policy == "WhenEmpty") {
      pool.consolidation_policy = ConsolidationPolicy::kWhenEmpty;
    } else if (policy == "WhenEmptyOrUnderutilized") {
      pool.consolidation_policy = ConsolidationPolicy::kWhenEmptyOrUnderutilized;
    } else if (policy == "Balanced") {
      pool.consolidation_policy = ConsolidationPolicy::kBalanced;
    } else {
      throw ObjectError("spec.disruption.consolidationPolicy: unknown '" + policy +
                        "' (WhenEmpty, WhenEmptyOrUnderutilized, Balanced)");
    }
  }
  if (d["consolidateAfter"]) {
    pool.consolidate_after =
        ParseDurationOrNever(Str(d["consolidateAfter"], "spec.disruption.consolidateAfter"));
  }
  if (!d["budgets"]) return;
  pool.budgets.clear();
  for (const V b : List(d["budgets"], "spec.disruption.budgets")) {
    DisruptionBudget budget;
    budget.nodes = Str(b["nodes"], "spec.disruption.budgets.nodes");
    std::string digits = budget.nodes;
    if (!digits.empty() && digits.back() == '%') digits.pop_back();
    if (digits.empty() || digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        (budget.nodes.back() == '%' && std::stoll(digits) > 100)) {
      throw ObjectError("spec.disruption.budgets.nodes: '" + budget.nodes +
                        "' is neither a count nor a percent");
    }
    if (b["schedule"]) {
      budget.schedule = Str(b["schedule"], "spec.disruption.budgets.schedule");
      try {
        core::Cron::Parse(budget.schedule);
      } catch (const core::CronError& e) {
        throw ObjectError("spec.disruption.budgets.schedule: " + std::string(e.what()));
      }
      if (!b["duration"]) throw ObjectError("spec.disruption.budgets: a schedule needs a duration");
    }
    if (b["duration"]) {
      budget.duration = ParseDuration(Str(b["duration"], "spec.disruption.budgets.duration"));
    }
    for (const V r : List(b["reasons"], "spec.disruption.budgets.reasons")) {
      std::string reason = Str(r, "spec.disruption.budgets.reasons");
      if (reason != "Empty" && reason != "Drifted" && reason != "Underutilized") {
        throw ObjectError("spec.disruption.budgets.reasons: unknown '" + reason +
                          "' (Empty, Drifted, Underutilized)");
      }
      budget.reasons.push_back(reason);
    }
    pool.budgets.push_back(std::move(budget));
  }
}

// spec.replicas, a static NodePool, with Karpenter's rules for one: no weight, and no limit but
// limits.nodes.
template <class V>
void ParseReplicas(const V& spec, NodePool& pool) {
  if (!spec["replicas"]) return;
  pool.replicas = Int<std::int64_t>(spec["replicas"], "spec.replicas");
  if (*pool.replicas < 0) throw ObjectError("spec.replicas must be 0 or more");
  if (spec["weight"]) throw ObjectError("'weight' is not supported on static NodePools");
  const NodePoolLimits& l = pool.limits;
  if (l.cpu || l.memory || !l.extended.empty()) {
    throw ObjectError("only 'limits.nodes' is supported on static NodePools");
  }
}

template <class V>
bool ConditionTrue(const V& status, const char* type) {
  if (!status || !status["conditions"]) return false;
  for (const V c : List(status["conditions"], "status.conditions")) {
    if (Str(c["type"], "type") == type) return Str(c["status"], "status") == "True";
  }
  return false;
}

// The instance id at the end of an AWS providerID (aws:///us-east-1a/i-0123...).
std::string InstanceIdOf(const std::string& provider_id) {
  const auto slash = provider_id.rfind('/');
  std::string id = slash == std::string::npos ? provider_id : provider_id.substr(slash + 1);
  return id.rfind("i-", 0) == 0 ? id : "";
}

// The hash annotations tenon writes are its own TemplateHash; Karpenter's (which come with a
// hash-version annotation) hash something else and would read as drift, so they are not kept.
template <class V>
std::uint64_t OwnHash(const V& notes, const char* hash_key, const char* version_key) {
  if (!notes || !notes[hash_key] || notes[version_key]) return 0;
  const std::string text = Str(notes[hash_key], hash_key);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() ? value : 0;
}

template <class V>
NodePool ParseNodePoolFrom(const V& object) {
  NodePool pool;
  pool.name = Name(object, "NodePool");
  const V spec = object["spec"];
  if (!spec) throw ObjectError("NodePool " + pool.name + " has no spec");
  return Named("NodePool " + pool.name, [&] {
    if (spec["weight"]) pool.weight = Int<std::int32_t>(spec["weight"], "spec.weight");
    if (pool.weight < 0 || pool.weight > 100) throw ObjectError("weight must be within 0..100");
    const V tmpl = spec["template"];
    if (tmpl && tmpl["metadata"]) pool.labels = ParseLabels(tmpl["metadata"]["labels"], "labels");
    if (!tmpl || !tmpl["spec"] || !tmpl["spec"]["nodeClassRef"] ||
        !tmpl["spec"]["nodeClassRef"]["name"]) {
      throw ObjectError("spec.template.spec.nodeClassRef.name is required");
    }
    const V tspec = tmpl["spec"];
    pool.nodeclass = Str(tspec["nodeClassRef"]["name"], "nodeClassRef.name");
    pool.requirements = ParseRequirements(tspec["requirements"], "requirements");
    pool.taints = ParseTaints(tspec["taints"], "taints");
    pool.startup_taints = ParseTaints(tspec["startupTaints"], "startupTaints");
    if (tspec["expireAfter"])
      pool.expire_after = ParseDurationOrNever(Str(tspec["expireAfter"], "expireAfter"));
    if (tspec["terminationGracePeriod"]) {
      pool.termination_grace_period =
          ParseDurationOrNever(Str(tspec["terminationGracePeriod"], "terminationGracePeriod"));
    }
    ParseLimits(spec["limits"], pool.limits);
    ParseDisruption(spec["disruption"], pool);
    ParseReplicas(spec, pool);
    return pool;
  });
}

template <class V>
NodeClaim ParseNodeClaimFrom(const V& object) {
  return ParseNamed<NodeClaim>(object, "NodeClaim", [&](NodeClaim& claim) {
    const V meta = object["metadata"];
    const Labels labels = ParseLabels(meta["labels"], "metadata.labels");
    auto value = [&](const char* key) {
      auto it = labels.find(key);
      return it == labels.end() ? std::string() : it->second;
    };
    claim.nodepool = value(label::kNodePool);
    claim.instance_type = value(label::kInstanceType);
    claim.zone = value(label::kZone);
    claim.capacity_type = value(label::kCapacityType);
    claim.created = Created(meta);
    claim.nodepool_hash = OwnHash(meta["annotations"], "karpenter.sh/nodepool-hash",
                                  "karpenter.sh/nodepool-hash-version");
    claim.nodeclass_hash = OwnHash(meta["annotations"], "karpenter.k8s.aws/ec2nodeclass-hash",
                                   "karpenter.k8s.aws/ec2nodeclass-hash-version");
    const V spec = object["spec"];
    if (!spec || !spec["nodeClassRef"] || !spec["nodeClassRef"]["name"]) {
      throw ObjectError("spec.nodeClassRef.name is required");
    }
    claim.nodeclass = Str(spec["nodeClassRef"]["name"], "spec.nodeClassRef.name");
    if (spec["requirements"]) {
      claim.requirements = ParseRequirements(spec["requirements"], "spec.requirements");
    }
    if (spec["resources"]) {
      claim.requests = ParseResourceList(spec["resources"]["requests"], "spec.resources.requests");
    }
    const V status = object["status"];
    if (status) {
      if (status["providerID"]) claim.provider_id = Str(status["providerID"], "status.providerID");
      if (status["nodeName"]) claim.node_name = Str(status["nodeName"], "status.nodeName");
      if (status["imageID"]) claim.image_id = Str(status["imageID"], "status.imageID");
      claim.allocatable = ParseResourceList(status["allocatable"], "status.allocatable");
    }
    claim.instance_id = InstanceIdOf(claim.provider_id);
    if (ConditionTrue(status, "Initialized")) {
      claim.phase = ClaimPhase::kInitialized;
    } else if (ConditionTrue(status, "Registered")) {
      claim.phase = ClaimPhase::kRegistered;
    } else if (ConditionTrue(status, "Launched") || !claim.provider_id.empty()) {
      claim.phase = ClaimPhase::kLaunched;
    }
    if (claim.phase != ClaimPhase::kPending && claim.instance_id.empty()) {
      throw ObjectError("launched, but status.providerID names no EC2 instance");
    }
  });
}

}  // namespace

NodePool ParseNodePool(const YAML::Node& object) {
  return ParseNodePoolFrom(YamlValue(object));
}

NodePool ParseNodePool(const JsonValue& object) {
  return ParseNodePoolFrom(object);
}

NodeClaim ParseNodeClaim(const YAML::Node& object) {
  return ParseNodeClaimFrom(YamlValue(object));
}

NodeClaim ParseNodeClaim(const JsonValue& object) {
  return ParseNodeClaimFrom(object);
}

}  // namespace tenon::kube
