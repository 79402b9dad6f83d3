#include "adapters/kube/objects.h"

#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "adapters/kube/objects_parts.h"

namespace tenon::kube::parts {

RequirementOp ParseOp(const std::string& op) {
  if (op == "In") return RequirementOp::kIn;
  if (op == "NotIn") return RequirementOp::kNotIn;
  if (op == "Exists") return RequirementOp::kExists;
  if (op == "DoesNotExist") return RequirementOp::kDoesNotExist;
  if (op == "Gt") return RequirementOp::kGt;
  if (op == "Lt") return RequirementOp::kLt;
  throw ObjectError("unknown requirement operator '" + op + "'");
}

TaintEffect ParseEffect(const std::string& effect) {
  if (effect == "NoSchedule") return TaintEffect::kNoSchedule;
  if (effect == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (effect == "NoExecute") return TaintEffect::kNoExecute;
  throw ObjectError("unknown taint effect '" + effect + "'");
}

}  // namespace tenon::kube::parts

namespace tenon::kube {

LabelSelector ParseSelector(const YAML::Node& node) {
  return parts::ParseSelector(YamlValue(node));
}

Taint ParseTaint(const YAML::Node& node) {
  return parts::ParseTaint(YamlValue(node));
}

Toleration ParseToleration(const YAML::Node& node) {
  return parts::ParseToleration(YamlValue(node));
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
