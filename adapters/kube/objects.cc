#include "adapters/kube/objects.h"

#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "adapters/kube/objects_parts.h"

namespace tenon::kube::parts {
namespace {

RequirementOp ParseOp(const std::string& op) {
  if (op == "In") return RequirementOp::kIn;
  if (op == "NotIn") return RequirementOp::kNotIn;
  if (op == "Exists") return RequirementOp::kExists;
  if (op == "DoesNotExist") return RequirementOp::kDoesNotExist;
  if (op == "Gt") return RequirementOp::kGt;
  if (op == "Lt") return RequirementOp::kLt;
  throw ObjectError("unknown requirement operator '" + op + "'");
}

}  // namespace

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

std::vector<Taint> ParseTaints(const YAML::Node& node) {
  std::vector<Taint> taints;
  if (node) {
    for (const auto& t : node) taints.push_back(ParseTaint(t));
  }
  return taints;
}

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

}  // namespace tenon::kube::parts

namespace tenon::kube {

using namespace parts;

namespace {

TaintEffect ParseEffect(const std::string& effect) {
  if (effect == "NoSchedule") return TaintEffect::kNoSchedule;
  if (effect == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (effect == "NoExecute") return TaintEffect::kNoExecute;
  throw ObjectError("unknown taint effect '" + effect + "'");
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
