#include "adapters/kube/objects.h"

#include "model/pod_rules.h"
#include "model/timestamp.h"
#include "reducers/core.h"
#include "reducers/cron.h"

#include <charconv>
#include <chrono>
#include <limits>
#include <set>
#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

namespace tenon::kube {
namespace {

constexpr std::size_t kQuantityCharsMax = 64;
constexpr std::int64_t kGraceSecondsMax = 10LL * 365 * 24 * 3600;  // Ten years.

struct Decimal {
  std::int64_t whole = 0;
  std::int64_t fraction = 0;        // Digits after the point, as an integer...
  std::int64_t fraction_scale = 1;  // ...over this power of ten.
  std::string_view suffix;
};

Decimal SplitDecimal(std::string_view text, std::string_view what) {
  if (text.empty() || text.size() > kQuantityCharsMax) {
    throw ObjectError("invalid " + std::string(what) + " quantity '" + std::string(text) + "'");
  }
  Decimal d;
  std::size_t i = 0;
  auto digits = [&](std::int64_t& value, std::int64_t* scale) {
    std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (value > std::numeric_limits<std::int64_t>::max() / 100) {
        throw ObjectError(std::string(what) + " quantity '" + std::string(text) + "' too large");
      }
      value = value * 10 + (text[i] - '0');
      if (scale) {
        // Past 18 places the scale would overflow; no unit is that fine.
        if (*scale > std::numeric_limits<std::int64_t>::max() / 10) {
          throw ObjectError(std::string(what) + " quantity '" + std::string(text) +
                            "' has too many decimal places");
        }
        *scale *= 10;
      }
      ++i;
    }
    return i > start;
  };
  bool any = digits(d.whole, nullptr);
  if (i < text.size() && text[i] == '.') {
    ++i;
    any = digits(d.fraction, &d.fraction_scale) || any;
  }
  if (!any) {
    throw ObjectError("invalid " + std::string(what) + " quantity '" + std::string(text) + "'");
  }
  d.suffix = text.substr(i);
  return d;
}

std::int64_t Scale(const Decimal& d, std::int64_t multiplier, std::int64_t divisor) {
  // value = (whole + fraction/fraction_scale) * multiplier / divisor, rounded up as Kubernetes
  // rounds quantities up to the unit.
  // whole * fraction_scale stays below 2^117 (whole < 2^57, fraction_scale <= 10^18); the
  // multiplier (up to hours in nanoseconds) could carry it past what 128 bits hold.
  const __int128 base = static_cast<__int128>(d.whole) * d.fraction_scale + d.fraction;
  if (multiplier > 0 && base > std::numeric_limits<__int128>::max() / 2 / multiplier) {
    throw ObjectError("quantity too large");
  }
  __int128 numerator = base * multiplier;
  __int128 denominator = static_cast<__int128>(d.fraction_scale) * divisor;
  __int128 value = (numerator + denominator - 1) / denominator;
  if (value > std::numeric_limits<std::int64_t>::max()) throw ObjectError("quantity too large");
  return static_cast<std::int64_t>(value);
}

std::string Str(const YAML::Node& node, const std::string& field) {
  try {
    return node.as<std::string>();
  } catch (const YAML::Exception&) {
    throw ObjectError("field " + field + " must be a string");
  }
}

std::string Name(const YAML::Node& object, const char* kind) {
  const auto& meta = object["metadata"];
  if (!meta || !meta["name"]) throw ObjectError(std::string(kind) + " without metadata.name");
  return Str(meta["name"], "metadata.name");
}

Labels ParseLabels(const YAML::Node& node, const std::string& field) {
  Labels labels;
  if (!node) return labels;
  if (!node.IsMap()) throw ObjectError(field + " must be a map");
  for (const auto& kv : node) labels[kv.first.as<std::string>()] = Str(kv.second, field);
  return labels;
}

RequirementOp ParseOp(const std::string& op) {
  if (op == "In") return RequirementOp::kIn;
  if (op == "NotIn") return RequirementOp::kNotIn;
  if (op == "Exists") return RequirementOp::kExists;
  if (op == "DoesNotExist") return RequirementOp::kDoesNotExist;
  if (op == "Gt") return RequirementOp::kGt;
  if (op == "Lt") return RequirementOp::kLt;
  throw ObjectError("unknown requirement operator '" + op + "'");
}

Requirement ParseRequirement(const YAML::Node& node) {
  if (!node["key"] || !node["operator"]) throw ObjectError("requirement needs key and operator");
  Requirement r{Str(node["key"], "key"), ParseOp(Str(node["operator"], "operator")), {}, 0};
  if (node["values"]) {
    for (const auto& v : node["values"]) r.values.push_back(Str(v, "values"));
  }
  if (node["minValues"]) r.min_values = node["minValues"].as<std::int32_t>();
  bool needs_values = r.op == RequirementOp::kIn || r.op == RequirementOp::kNotIn ||
                      r.op == RequirementOp::kGt || r.op == RequirementOp::kLt;
  if (needs_values && r.values.empty()) {
    throw ObjectError("requirement on " + r.key + " needs values for its operator");
  }
  return r;
}

TaintEffect ParseEffect(const std::string& effect) {
  if (effect == "NoSchedule") return TaintEffect::kNoSchedule;
  if (effect == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (effect == "NoExecute") return TaintEffect::kNoExecute;
  throw ObjectError("unknown taint effect '" + effect + "'");
}

std::vector<Taint> ParseTaints(const YAML::Node& node) {
  std::vector<Taint> taints;
  if (node) {
    for (const auto& t : node) taints.push_back(ParseTaint(t));
  }
  return taints;
}

void ParseLimits(const YAML::Node& limits, NodePoolLimits& out) {
  if (!limits) return;
  for (const auto& kv : limits) {
    std::string name = kv.first.as<std::string>();
    std::string value = Str(kv.second, "limits." + name);
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

// A resource list (requests, allocatable, overhead): cpu in millicores, memory and
// ephemeral storage in bytes, everything else as a whole count.
Resources ParseResourceList(const YAML::Node& node, const std::string& field) {
  Resources r;
  if (!node) return r;
  if (!node.IsMap()) throw ObjectError(field + " must be a map");
  for (const auto& kv : node) {
    std::string name = kv.first.as<std::string>();
    std::string value = Str(kv.second, field + "." + name);
    if (name == "cpu") {
      r.cpu = ParseCpu(value);
    } else if (name == "memory") {
      r.memory = ParseMemory(value);
    } else if (name == "pods") {
      r.pods = ParseCpu(value).value / 1000;
    } else if (name != "ephemeral-storage") {
      r.extended[name] = ParseCpu(value).value / 1000;
    }
  }
  return r;
}

std::vector<std::string> Texts(const YAML::Node& node, const std::string& field) {
  std::vector<std::string> out;
  if (!node) return out;
  if (!node.IsSequence()) throw ObjectError(field + " must be a list");
  for (const auto& v : node) out.push_back(Str(v, field));
  return out;
}

}  // namespace

LabelSelector ParseSelector(const YAML::Node& node) {
  LabelSelector selector;
  if (!node) return selector;
  selector.match_labels = ParseLabels(node["matchLabels"], "matchLabels");
  if (node["matchExpressions"]) {
    for (const auto& e : node["matchExpressions"]) {
      selector.match_expressions.push_back(ParseRequirement(e));
    }
  }
  return selector;
}

namespace {

NodeSelectorTerm ParseTerm(const YAML::Node& node, std::int32_t weight) {
  NodeSelectorTerm term;
  term.weight = weight;
  if (node["matchExpressions"]) {
    for (const auto& e : node["matchExpressions"]) term.requirements.push_back(ParseRequirement(e));
  }
  if (node["matchLabelExpressions"]) {  // StorageClass allowedTopologies
    for (const auto& e : node["matchLabelExpressions"]) {
      term.requirements.push_back(
          {Str(e["key"], "key"), RequirementOp::kIn, Texts(e["values"], "values"), 0});
    }
  }
  return term;
}

std::vector<NodeSelectorTerm> ParseTerms(const YAML::Node& node) {
  std::vector<NodeSelectorTerm> out;
  if (node) {
    for (const auto& t : node) out.push_back(ParseTerm(t, 0));
  }
  return out;
}

PodAffinityTerm ParseAffinityTerm(const YAML::Node& node, std::int32_t weight) {
  PodAffinityTerm term;
  term.weight = weight;
  term.selector = ParseSelector(node["labelSelector"]);
  term.namespaces = Texts(node["namespaces"], "namespaces");
  if (const auto& ns = node["namespaceSelector"]) {
    if (ns.size() > 0) throw ObjectError("namespaceSelector with labels is not supported yet");
    term.all_namespaces = true;
  }
  if (!node["topologyKey"]) throw ObjectError("pod affinity term needs topologyKey");
  term.topology_key = Str(node["topologyKey"], "topologyKey");
  term.match_label_keys = Texts(node["matchLabelKeys"], "matchLabelKeys");
  return term;
}

void ParseAffinity(const YAML::Node& affinity, PodConstraints& constraints) {
  if (!affinity) return;
  if (const auto& na = affinity["nodeAffinity"]) {
    if (const auto& req = na["requiredDuringSchedulingIgnoredDuringExecution"]) {
      constraints.node_affinity_required = ParseTerms(req["nodeSelectorTerms"]);
    }
    if (const auto& pref = na["preferredDuringSchedulingIgnoredDuringExecution"]) {
      for (const auto& p : pref) {
        constraints.node_affinity_preferred.push_back(
            ParseTerm(p["preference"], p["weight"].as<std::int32_t>()));
      }
    }
  }
  auto terms = [](const YAML::Node& node, std::vector<PodAffinityTerm>& required,
                  std::vector<PodAffinityTerm>& preferred) {
    if (!node) return;
    if (const auto& req = node["requiredDuringSchedulingIgnoredDuringExecution"]) {
      for (const auto& t : req) required.push_back(ParseAffinityTerm(t, 0));
    }
    if (const auto& pref = node["preferredDuringSchedulingIgnoredDuringExecution"]) {
      for (const auto& p : pref) {
        preferred.push_back(
            ParseAffinityTerm(p["podAffinityTerm"], p["weight"].as<std::int32_t>()));
      }
    }
  };
  terms(affinity["podAffinity"], constraints.pod_affinity_required,
        constraints.pod_affinity_preferred);
  terms(affinity["podAntiAffinity"], constraints.pod_anti_affinity_required,
        constraints.pod_anti_affinity_preferred);
}

TopologySpreadConstraint ParseSpread(const YAML::Node& node) {
  TopologySpreadConstraint c;
  if (node["maxSkew"]) c.max_skew = node["maxSkew"].as<std::int32_t>();
  if (!node["topologyKey"]) throw ObjectError("topologySpreadConstraint needs topologyKey");
  c.topology_key = Str(node["topologyKey"], "topologyKey");
  if (node["whenUnsatisfiable"]) {
    std::string when = Str(node["whenUnsatisfiable"], "whenUnsatisfiable");
    if (when != "DoNotSchedule" && when != "ScheduleAnyway") {
      throw ObjectError("unknown whenUnsatisfiable '" + when + "'");
    }
    c.do_not_schedule = when == "DoNotSchedule";
  }
  c.selector = ParseSelector(node["labelSelector"]);
  if (node["minDomains"]) c.min_domains = node["minDomains"].as<std::int32_t>();
  if (node["nodeAffinityPolicy"]) {
    c.node_affinity_honor = Str(node["nodeAffinityPolicy"], "nodeAffinityPolicy") == "Honor";
  }
  if (node["nodeTaintsPolicy"]) {
    c.node_taints_honor = Str(node["nodeTaintsPolicy"], "nodeTaintsPolicy") == "Honor";
  }
  c.match_label_keys = Texts(node["matchLabelKeys"], "matchLabelKeys");
  return c;
}

std::vector<ContainerRequests> ParseContainers(const YAML::Node& list, bool init,
                                               PodConstraints& constraints) {
  std::vector<ContainerRequests> out;
  if (!list) return out;
  for (const auto& c : list) {
    ContainerRequests cr;
    if (c["resources"]) cr.requests = ParseResourceList(c["resources"]["requests"], "requests");
    cr.sidecar = init && c["restartPolicy"] && Str(c["restartPolicy"], "restartPolicy") == "Always";
    out.push_back(cr);
    if (!c["ports"]) continue;
    for (const auto& p : c["ports"]) {
      if (!p["hostPort"]) continue;
      HostPort hp;
      hp.port = p["hostPort"].as<std::int32_t>();
      if (p["protocol"]) hp.protocol = Str(p["protocol"], "protocol");
      if (p["hostIP"]) hp.host_ip = Str(p["hostIP"], "hostIP");
      constraints.host_ports.push_back(hp);
    }
  }
  return out;
}

// spec.disruption: consolidationPolicy, consolidateAfter ("Never" or a duration) and budgets.
void ParseDisruption(const YAML::Node& d, NodePool& pool) {
  if (!d) return;
  if (d["consolidationPolicy"]) {
    std::string policy = Str(d["consolidationPolicy"], "spec.disruption.consolidationPolicy");
    if (policy == "WhenEmpty") {
      pool.consolidation_policy = ConsolidationPolicy::kWhenEmpty;
    } else if (policy == "WhenEmptyOrUnderutilized") {
      pool.consolidation_policy = ConsolidationPolicy::kWhenEmptyOrUnderutilized;
    } else {
      throw ObjectError("spec.disruption.consolidationPolicy: unknown '" + policy +
                        "' (WhenEmpty, WhenEmptyOrUnderutilized)");
    }
  }
  if (d["consolidateAfter"]) {
    pool.consolidate_after =
        ParseDuration(Str(d["consolidateAfter"], "spec.disruption.consolidateAfter"));
  }
  if (!d["budgets"]) return;
  pool.budgets.clear();
  for (const auto& b : d["budgets"]) {
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
    if (b["reasons"]) {
      for (const auto& r : b["reasons"]) {
        std::string reason = Str(r, "spec.disruption.budgets.reasons");
        if (reason != "Empty" && reason != "Drifted" && reason != "Underutilized") {
          throw ObjectError("spec.disruption.budgets.reasons: unknown '" + reason +
                            "' (Empty, Drifted, Underutilized)");
        }
        budget.reasons.push_back(reason);
      }
    }
    pool.budgets.push_back(std::move(budget));
  }
}

// The owner that controls the pod (controller: true), else the first listed.
std::string OwnerKind(const YAML::Node& meta) {
  const auto& owners = meta["ownerReferences"];
  if (!owners || !owners.IsSequence() || owners.size() == 0) return "";
  std::size_t chosen = 0;
  for (std::size_t i = 0; i < owners.size(); ++i) {
    const auto& controller = owners[i]["controller"];
    if (controller && controller.as<std::string>() == "true") {
      chosen = i;
      break;
    }
  }
  const auto& kind = owners[chosen]["kind"];
  return kind ? Str(kind, "metadata.ownerReferences.kind") : "";
}

// metadata.`field` as a time; zero when absent.
Nanos Timestamp(const YAML::Node& meta, const std::string& field) {
  const auto& ts = meta[field];
  if (!ts || ts.IsNull()) return Nanos{0};
  try {
    return ParseTimestamp(Str(ts, "metadata." + field));
  } catch (const ObjectError& e) {
    throw ObjectError("metadata." + field + ": " + e.what());
  }
}

Nanos Created(const YAML::Node& meta) {
  return Timestamp(meta, "creationTimestamp");
}

constexpr const char* kPodDeletionCost = "controller.kubernetes.io/pod-deletion-cost";

// Parses a v1 Pod; errors carry the field, the caller adds the pod's name.
Pod ParsePodInner(const YAML::Node& object, Pod pod) {
  const auto& meta = object["metadata"];
  if (meta["namespace"]) pod.ns = Str(meta["namespace"], "metadata.namespace");
  pod.uid = meta["uid"] ? Str(meta["uid"], "metadata.uid") : pod.ns + "/" + pod.name;
  pod.labels = ParseLabels(meta["labels"], "metadata.labels");
  pod.owner_kind = OwnerKind(meta);
  pod.created = Created(meta);
  pod.deletion = Timestamp(meta, "deletionTimestamp");
  if (const auto& notes = meta["annotations"]; notes && notes[kPodDeletionCost]) {
    // Kubernetes accepts an int32; anything else is the object's error.
    std::string text =
        Str(notes[kPodDeletionCost], "metadata.annotations." + std::string(kPodDeletionCost));
    try {
      std::size_t used = 0;
      long long cost = std::stoll(text, &used);
      if (used != text.size() || cost < INT32_MIN || cost > INT32_MAX)
        throw std::out_of_range(text);
      pod.deletion_cost = static_cast<std::int32_t>(cost);
    } catch (const std::exception&) {
      throw ObjectError("metadata.annotations." + std::string(kPodDeletionCost) +
                        ": not a 32-bit integer: " + text);
    }
  }
  if (const auto& notes = meta["annotations"]; notes && notes[label::kDoNotDisrupt]) {
    std::string value =
        Str(notes[label::kDoNotDisrupt], "metadata.annotations.karpenter.sh/do-not-disrupt");
    // "true", or the duration form ("30m"): protected for that long after creation.
    if (value == "true") {
      pod.do_not_disrupt = true;
    } else if (!value.empty() && value != "false") {
      try {
        pod.do_not_disrupt_for = ParseDuration(value);
      } catch (const ObjectError& e) {
        throw ObjectError("metadata.annotations.karpenter.sh/do-not-disrupt: " +
                          std::string(e.what()));
      }
      pod.do_not_disrupt = pod.do_not_disrupt_for.value > 0;
    }
  }
  const auto& spec = object["spec"];
  if (!spec) throw ObjectError("no spec");
  if (spec["nodeName"]) pod.node_name = Str(spec["nodeName"], "spec.nodeName");
  if (spec["priorityClassName"]) {
    pod.priority_class = Str(spec["priorityClassName"], "spec.priorityClassName");
  }
  if (spec["priority"]) {
    try {
      pod.priority = spec["priority"].as<std::int32_t>();
    } catch (const YAML::Exception&) {
      throw ObjectError("spec.priority: not a 32-bit integer");
    }
  }
  if (const auto& grace = spec["terminationGracePeriodSeconds"]; grace) {
    std::string text = Str(grace, "spec.terminationGracePeriodSeconds");
    std::int64_t seconds = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc() || end != text.data() + text.size() || seconds < 0 ||
        seconds > kGraceSecondsMax) {
      throw ObjectError("spec.terminationGracePeriodSeconds: invalid '" + text + "'");
    }
    pod.termination_grace = Nanos{seconds * kSecond.value};
  }
  PodConstraints constraints;
  constraints.node_selector = ParseLabels(spec["nodeSelector"], "spec.nodeSelector");
  if (spec["tolerations"]) {
    for (const auto& t : spec["tolerations"]) {
      constraints.tolerations.push_back(ParseToleration(t));
    }
  }
  ParseAffinity(spec["affinity"], constraints);
  if (spec["topologySpreadConstraints"]) {
    for (const auto& c : spec["topologySpreadConstraints"]) {
      constraints.topology_spread.push_back(ParseSpread(c));
    }
  }
  auto containers = ParseContainers(spec["containers"], false, constraints);
  auto init = ParseContainers(spec["initContainers"], true, constraints);
  pod.requests = PodRequests(containers, init, ParseResourceList(spec["overhead"], "overhead"));
  if (spec["volumes"]) {
    for (const auto& v : spec["volumes"]) {
      if (v["persistentVolumeClaim"]) {
        constraints.volume_claims.push_back(
            Str(v["persistentVolumeClaim"]["claimName"], "claimName"));
      }
    }
  }
  pod.constraints = std::move(constraints);
  const auto& status = object["status"];
  // A pod with no status yet is pending and, once the scheduler has looked, unschedulable;
  // manifests written by hand (scenarios, tests) rely on that default.
  pod.unschedulable = pod.node_name.empty();
  if (status) {
    if (status["phase"]) pod.phase = PodPhaseFrom(Str(status["phase"], "status.phase"));
    if (status["nominatedNodeName"]) {
      pod.nominated_node = Str(status["nominatedNodeName"], "status.nominatedNodeName");
    }
    if (status["conditions"]) {
      pod.unschedulable = false;
      for (const auto& c : status["conditions"]) {
        if (c["type"] && Str(c["type"], "type") == "PodScheduled" && c["status"] &&
            Str(c["status"], "status") == "False" && c["reason"] &&
            Str(c["reason"], "reason") == "Unschedulable") {
          pod.unschedulable = true;
        }
      }
    }
  }
  return pod;
}

template <class F>
auto Named(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const ObjectError& e) {
    throw ObjectError(what + ": " + e.what());
  } catch (const YAML::Exception& e) {
    throw ObjectError(what + ": " + e.what());
  }
}

}  // namespace

Millicores ParseCpu(std::string_view quantity) {
  Decimal d = SplitDecimal(quantity, "cpu");
  if (d.suffix.empty()) return Millicores{Scale(d, 1000, 1)};
  if (d.suffix == "m") return Millicores{Scale(d, 1, 1)};
  throw ObjectError("invalid cpu quantity '" + std::string(quantity) + "'");
}

Bytes ParseMemory(std::string_view quantity) {
  Decimal d = SplitDecimal(quantity, "memory");
  struct Unit {
    std::string_view suffix;
    std::int64_t multiplier;
    std::int64_t divisor;
  };
  constexpr std::int64_t kKi = 1024;
  constexpr Unit kUnits[] = {
      {"", 1, 1},
      {"m", 1, 1000},
      {"k", 1000, 1},
      {"M", 1000 * 1000, 1},
      {"G", 1000LL * 1000 * 1000, 1},
      {"T", 1000LL * 1000 * 1000 * 1000, 1},
      {"Ki", kKi, 1},
      {"Mi", kKi * kKi, 1},
      {"Gi", kKi * kKi * kKi, 1},
      {"Ti", kKi * kKi * kKi * kKi, 1},
      {"Pi", kKi * kKi * kKi * kKi * kKi, 1},
  };
  for (const auto& unit : kUnits) {
    if (d.suffix == unit.suffix) return Bytes{Scale(d, unit.multiplier, unit.divisor)};
  }
  throw ObjectError("invalid memory quantity '" + std::string(quantity) + "'");
}

Nanos ParseTimestamp(std::string_view text) {
  if (auto at = ParseRfc3339(text)) return *at;
  throw ObjectError("invalid RFC 3339 timestamp '" + std::string(text) + "'");
}

Nanos ParseDuration(std::string_view text) {
  if (text == "Never") return Nanos{-1};
  if (text.empty() || text.size() > kQuantityCharsMax) {
    throw ObjectError("invalid duration '" + std::string(text) + "'");
  }
  struct Unit {
    std::string_view suffix;
    std::int64_t nanos;
  };
  constexpr Unit kUnits[] = {{"ns", 1},           {"us", 1000},         {"ms", 1000 * 1000},
                             {"s", 1000000000LL}, {"m", 60000000000LL}, {"h", 3600000000000LL}};
  std::int64_t total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    std::size_t unit_start = i;
    while (i < text.size() && !((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    auto number = text.substr(start, unit_start - start);
    auto suffix = text.substr(unit_start, i - unit_start);
    const Unit* unit = nullptr;
    for (const auto& u : kUnits) {
      if (u.suffix == suffix) unit = &u;
    }
    if (number.empty() || unit == nullptr) {
      throw ObjectError("invalid duration '" + std::string(text) + "'");
    }
    Decimal d = SplitDecimal(number, "duration");
    if (__builtin_add_overflow(total, Scale(d, unit->nanos, 1), &total)) {
      throw ObjectError("duration '" + std::string(text) + "' too large");
    }
  }
  return Nanos{total};
}

Taint ParseTaint(const YAML::Node& node) {
  if (!node["key"] || !node["effect"]) throw ObjectError("taint needs key and effect");
  return Taint{Str(node["key"], "taint.key"),
               node["value"] ? Str(node["value"], "taint.value") : "",
               ParseEffect(Str(node["effect"], "taint.effect"))};
}

Toleration ParseToleration(const YAML::Node& node) {
  Toleration t;
  if (node["key"]) t.key = Str(node["key"], "toleration.key");
  t.op_exists = node["operator"] && Str(node["operator"], "toleration.operator") == "Exists";
  if (node["value"]) t.value = Str(node["value"], "toleration.value");
  if (node["effect"] && !Str(node["effect"], "toleration.effect").empty()) {
    t.effect = ParseEffect(Str(node["effect"], "toleration.effect"));
  }
  return t;
}

NodePool ParseNodePool(const YAML::Node& object) {
  NodePool pool;
  pool.name = Name(object, "NodePool");
  const auto& spec = object["spec"];
  if (!spec) throw ObjectError("NodePool " + pool.name + " has no spec");
  try {
    if (spec["weight"]) pool.weight = spec["weight"].as<std::int32_t>();
    if (pool.weight < 0 || pool.weight > 100) throw ObjectError("weight must be within 0..100");
    const auto& tmpl = spec["template"];
    if (tmpl && tmpl["metadata"]) pool.labels = ParseLabels(tmpl["metadata"]["labels"], "labels");
    const auto& tspec = tmpl ? tmpl["spec"] : YAML::Node();
    if (!tspec || !tspec["nodeClassRef"] || !tspec["nodeClassRef"]["name"]) {
      throw ObjectError("spec.template.spec.nodeClassRef.name is required");
    }
    pool.nodeclass = Str(tspec["nodeClassRef"]["name"], "nodeClassRef.name");
    if (tspec["requirements"]) {
      for (const auto& r : tspec["requirements"]) pool.requirements.push_back(ParseRequirement(r));
    }
    pool.taints = ParseTaints(tspec["taints"]);
    pool.startup_taints = ParseTaints(tspec["startupTaints"]);
    if (tspec["expireAfter"])
      pool.expire_after = ParseDuration(Str(tspec["expireAfter"], "expireAfter"));
    if (tspec["terminationGracePeriod"]) {
      pool.termination_grace_period =
          ParseDuration(Str(tspec["terminationGracePeriod"], "terminationGracePeriod"));
    }
    ParseLimits(spec["limits"], pool.limits);
    ParseDisruption(spec["disruption"], pool);
  } catch (const ObjectError& e) {
    throw ObjectError("NodePool " + pool.name + ": " + e.what());
  } catch (const YAML::Exception& e) {
    throw ObjectError("NodePool " + pool.name + ": " + e.what());
  }
  return pool;
}

Pod ParsePod(const YAML::Node& object) {
  Pod pod;
  pod.name = Name(object, "Pod");
  pod.ns = "default";
  return Named("Pod " + pod.name, [&] { return ParsePodInner(object, pod); });
}

DaemonSet ParseDaemonSet(const YAML::Node& object) {
  DaemonSet ds;
  ds.name = Name(object, "DaemonSet");
  ds.ns = object["metadata"]["namespace"] ? Str(object["metadata"]["namespace"], "namespace")
                                          : "default";
  return Named("DaemonSet " + ds.name, [&] {
    const auto& tmpl = object["spec"]["template"];
    if (!tmpl) throw ObjectError("no spec.template");
    YAML::Node pod_object = YAML::Clone(tmpl);
    pod_object["metadata"]["name"] = ds.name;
    Pod pod;
    pod.name = ds.name;
    pod.ns = ds.ns;
    ds.pod = ParsePodInner(pod_object, pod);
    ds.pod.owner_kind = "DaemonSet";
    ds.pod.unschedulable = false;
    return ds;
  });
}

Node ParseNode(const YAML::Node& object) {
  Node node;
  node.name = Name(object, "Node");
  return Named("Node " + node.name, [&] {
    node.labels = ParseLabels(object["metadata"]["labels"], "metadata.labels");
    node.created = Created(object["metadata"]);
    const auto& deleted_at = object["metadata"]["deletionTimestamp"];
    node.deleting = deleted_at && !deleted_at.IsNull();
    node.labels.Set(label::kHostname, node.name);
    if (const auto& notes = object["metadata"]["annotations"];
        notes && notes[label::kDoNotDisrupt]) {
      node.do_not_disrupt = Str(notes[label::kDoNotDisrupt],
                                "metadata.annotations.karpenter.sh/do-not-disrupt") == "true";
    }
    const auto& spec = object["spec"];
    if (spec && spec["providerID"]) node.provider_id = Str(spec["providerID"], "spec.providerID");
    if (spec) node.taints = ParseTaints(spec["taints"]);
    const auto& status = object["status"];
    node.ready = true;
    if (status) {
      node.allocatable = ParseResourceList(status["allocatable"], "status.allocatable");
      if (const auto& attached = status["volumesAttached"]; attached) {
        for (const auto& v : attached) {
          node.volumes_attached.push_back(Str(v["name"], "status.volumesAttached.name"));
        }
      }
      if (status["conditions"]) {
        for (const auto& c : status["conditions"]) {
          if (Str(c["type"], "type") == "Ready") node.ready = Str(c["status"], "status") == "True";
        }
      }
    }
    return node;
  });
}

namespace {

bool ConditionTrue(const YAML::Node& status, const char* type) {
  if (!status || !status["conditions"]) return false;
  for (const auto& c : status["conditions"]) {
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
std::uint64_t OwnHash(const YAML::Node& notes, const char* hash_key, const char* version_key) {
  if (!notes || !notes[hash_key] || notes[version_key]) return 0;
  const std::string text = Str(notes[hash_key], hash_key);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() ? value : 0;
}

}  // namespace

NodeClaim ParseNodeClaim(const YAML::Node& object) {
  NodeClaim claim;
  claim.name = Name(object, "NodeClaim");
  return Named("NodeClaim " + claim.name, [&] {
    const auto& meta = object["metadata"];
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
    const auto& spec = object["spec"];
    if (!spec || !spec["nodeClassRef"] || !spec["nodeClassRef"]["name"]) {
      throw ObjectError("spec.nodeClassRef.name is required");
    }
    claim.nodeclass = Str(spec["nodeClassRef"]["name"], "spec.nodeClassRef.name");
    if (spec["requirements"]) {
      for (const auto& r : spec["requirements"])
        claim.requirements.Mutable().push_back(ParseRequirement(r));
    }
    if (spec["resources"]) {
      claim.requests = ParseResourceList(spec["resources"]["requests"], "spec.resources.requests");
    }
    const auto& status = object["status"];
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
    return claim;
  });
}

PersistentVolumeClaim ParsePersistentVolumeClaim(const YAML::Node& object) {
  PersistentVolumeClaim pvc;
  pvc.name = Name(object, "PersistentVolumeClaim");
  return Named("PersistentVolumeClaim " + pvc.name, [&] {
    const auto& meta = object["metadata"];
    pvc.ns = meta["namespace"] ? Str(meta["namespace"], "namespace") : "default";
    const auto& spec = object["spec"];
    if (spec && spec["storageClassName"]) {
      pvc.storage_class = Str(spec["storageClassName"], "storageClassName");
    }
    if (spec && spec["volumeName"]) pvc.volume_name = Str(spec["volumeName"], "volumeName");
    return pvc;
  });
}

PersistentVolume ParsePersistentVolume(const YAML::Node& object) {
  PersistentVolume pv;
  pv.name = Name(object, "PersistentVolume");
  return Named("PersistentVolume " + pv.name, [&] {
    const auto& spec = object["spec"];
    if (spec && spec["csi"] && spec["csi"]["driver"]) {
      pv.csi_driver = Str(spec["csi"]["driver"], "csi.driver");
    }
    if (spec && spec["nodeAffinity"] && spec["nodeAffinity"]["required"]) {
      pv.node_affinity = ParseTerms(spec["nodeAffinity"]["required"]["nodeSelectorTerms"]);
    }
    // A local or hostPath volume lives and dies with its node: its hostname affinity says where
    // it was, not where a rescheduled pod can go, and is left out (as Karpenter leaves it out).
    if (spec && (spec["local"] || spec["hostPath"])) {
      for (auto& term : pv.node_affinity) {
        std::erase_if(term.requirements,
                      [](const Requirement& r) { return r.key == label::kHostname; });
      }
    }
    return pv;
  });
}

StorageClass ParseStorageClass(const YAML::Node& object) {
  StorageClass sc;
  sc.name = Name(object, "StorageClass");
  return Named("StorageClass " + sc.name, [&] {
    if (object["provisioner"]) sc.provisioner = Str(object["provisioner"], "provisioner");
    sc.wait_for_first_consumer =
        object["volumeBindingMode"] &&
        Str(object["volumeBindingMode"], "volumeBindingMode") == "WaitForFirstConsumer";
    sc.allowed_topologies = ParseTerms(object["allowedTopologies"]);
    return sc;
  });
}

CsiNode ParseCsiNode(const YAML::Node& object) {
  CsiNode csi;
  csi.name = Name(object, "CSINode");
  return Named("CSINode " + csi.name, [&] {
    if (object["spec"] && object["spec"]["drivers"]) {
      for (const auto& d : object["spec"]["drivers"]) {
        if (d["allocatable"] && d["allocatable"]["count"]) {
          csi.attach_limits[Str(d["name"], "driver.name")] =
              d["allocatable"]["count"].as<std::int64_t>();
        }
      }
    }
    return csi;
  });
}

PodDisruptionBudget ParsePodDisruptionBudget(const YAML::Node& object) {
  PodDisruptionBudget pdb;
  pdb.name = Name(object, "PodDisruptionBudget");
  return Named("PodDisruptionBudget " + pdb.name, [&] {
    const auto& meta = object["metadata"];
    if (meta["namespace"]) pdb.ns = Str(meta["namespace"], "metadata.namespace");
    if (pdb.ns.empty()) pdb.ns = "default";
    if (object["spec"] && object["spec"]["selector"]) {
      pdb.selector = ParseSelector(object["spec"]["selector"]);
    }
    // Without a status (not yet reconciled by the disruption controller) nothing is allowed.
    if (const auto& status = object["status"]; status && status["disruptionsAllowed"]) {
      pdb.disruptions_allowed = status["disruptionsAllowed"].as<std::int32_t>();
    }
    return pdb;
  });
}

NodeClass ParseNodeClass(const YAML::Node& object, bool needs_ready_condition) {
  NodeClass nodeclass;
  nodeclass.name = Name(object, "EC2NodeClass");
  if (const auto& meta = object["metadata"]; meta && meta["deletionTimestamp"]) {
    nodeclass.terminating = !meta["deletionTimestamp"].IsNull();
  }
  if (const auto& meta = object["metadata"];
      meta && meta["finalizers"] && meta["finalizers"].IsSequence()) {
    for (const auto& f : meta["finalizers"]) {
      if (f.IsScalar() && f.Scalar() == label::kNodeClassFinalizer) nodeclass.finalizer = true;
    }
  }
  const auto& spec = object["spec"];
  if (!spec) throw ObjectError("EC2NodeClass " + nodeclass.name + " has no spec");
  if (spec["amiFamily"]) nodeclass.ami_family = Str(spec["amiFamily"], "amiFamily");
  if (spec["amiSelectorTerms"] && spec["amiSelectorTerms"][0] &&
      spec["amiSelectorTerms"][0]["alias"]) {
    auto alias = Str(spec["amiSelectorTerms"][0]["alias"], "amiSelectorTerms.alias");
    if (nodeclass.ami_family.empty()) nodeclass.ami_family = alias.substr(0, alias.find('@'));
  }
  if (spec["role"]) nodeclass.role = Str(spec["role"], "role");
  if (spec["instanceProfile"] && nodeclass.role.empty()) {
    nodeclass.role = Str(spec["instanceProfile"], "instanceProfile");
  }
  if (nodeclass.role.empty()) {
    throw ObjectError("EC2NodeClass " + nodeclass.name +
                      ": spec.role or spec.instanceProfile is required");
  }
  if (const auto& kubelet = spec["kubelet"]) {
    if (kubelet["maxPods"]) nodeclass.max_pods = kubelet["maxPods"].as<std::int32_t>();
    if (kubelet["podsPerCore"]) nodeclass.pods_per_core = kubelet["podsPerCore"].as<std::int32_t>();
  }
  if (spec["userData"]) nodeclass.user_data = Str(spec["userData"], "userData");
  if (const auto& tags = spec["tags"]; tags && tags.IsMap()) {
    for (const auto& tag : tags) {
      nodeclass.tags[tag.first.as<std::string>()] =
          Str(tag.second, "tags." + tag.first.as<std::string>());
    }
  }
  // Status, as the EC2NodeClass controller resolved the selector terms: the ids drift compares
  // a NodeClaim's instance against.
  if (const auto& status = object["status"]) {
    auto ids = [&](const char* field, std::vector<std::string>& out) {
      for (const auto& item : status[field]) {
        if (item["id"]) out.push_back(Str(item["id"], std::string("status.") + field + "[].id"));
      }
    };
    ids("amis", nodeclass.amis);
    ids("subnets", nodeclass.subnets);
    ids("securityGroups", nodeclass.security_groups);
    // Where it can launch: its subnets' zones, and the architectures its AMIs' requirements
    // name (an AMI without an arch requirement serves any).
    std::set<std::string> zones;
    for (const auto& subnet : status["subnets"]) {
      if (subnet["zone"]) zones.insert(Str(subnet["zone"], "status.subnets[].zone"));
    }
    std::set<std::string> archs;
    bool any_arch = false;
    for (const auto& ami : status["amis"]) {
      bool named = false;
      for (const auto& r : ami["requirements"]) {
        const Requirement req = ParseRequirement(r);
        if (req.key != label::kArch || req.op != RequirementOp::kIn) continue;
        archs.insert(req.values.begin(), req.values.end());
        named = true;
      }
      any_arch = any_arch || !named;
    }
    nodeclass.zones.assign(zones.begin(), zones.end());
    if (!any_arch) nodeclass.archs.assign(archs.begin(), archs.end());
  }
  // The Ready condition its controller writes; without one, ready only where no controller
  // runs (scenario files, examples).
  bool ready_known = false;
  if (const auto& status = object["status"]; status && status["conditions"]) {
    for (const auto& c : status["conditions"]) {
      if (c["type"] && Str(c["type"], "type") == "Ready" && c["status"]) {
        nodeclass.ready = Str(c["status"], "status.conditions[Ready].status") == "True";
        ready_known = true;
      }
    }
  }
  if (!ready_known && needs_ready_condition) nodeclass.ready = false;
  return nodeclass;
}

const char* EffectName(TaintEffect effect) {
  static constexpr const char* kNames[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
  return kNames[static_cast<std::size_t>(effect)];
}

const char* OperatorName(RequirementOp op) {
  static constexpr const char* kNames[] = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"};
  return kNames[static_cast<std::size_t>(op)];
}

namespace {

// Reads a stream's events only to see that every document starts past where the one before it
// started: one that starts at the same token made no progress, and LoadAll would repeat it.
class DocumentProgress : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (started_ && mark.pos == last_.pos) {
      throw YAML::ParserException(mark, "unexpected token here: no document can start with it");
    }
    started_ = true;
    last_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  bool started_ = false;
  YAML::Mark last_;
};

}  // namespace

std::vector<YAML::Node> LoadDocuments(const std::string& text) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentProgress progress;
  while (parser.HandleNextDocument(progress)) {
  }
  return YAML::LoadAll(text);
}

}  // namespace tenon::kube
