#include "adapters/kube/objects.h"

#include <charconv>
#include <limits>

namespace tenon::kube {
namespace {

constexpr std::size_t kQuantityCharsMax = 64;

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
      if (scale) *scale *= 10;
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
  __int128 numerator =
      (static_cast<__int128>(d.whole) * d.fraction_scale + d.fraction) * multiplier;
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
  if (limits["cpu"]) out.cpu = ParseCpu(Str(limits["cpu"], "limits.cpu"));
  if (limits["memory"]) out.memory = ParseMemory(Str(limits["memory"], "limits.memory"));
  if (limits["nodes"]) out.nodes = ParseCpu(Str(limits["nodes"], "limits.nodes")).value / 1000;
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
    total += Scale(d, unit->nanos, 1);
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
    ParseLimits(spec["limits"], pool.limits);
  } catch (const ObjectError& e) {
    throw ObjectError("NodePool " + pool.name + ": " + e.what());
  } catch (const YAML::Exception& e) {
    throw ObjectError("NodePool " + pool.name + ": " + e.what());
  }
  return pool;
}

NodeClass ParseNodeClass(const YAML::Node& object) {
  NodeClass nodeclass;
  nodeclass.name = Name(object, "EC2NodeClass");
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
  return nodeclass;
}

}  // namespace tenon::kube
