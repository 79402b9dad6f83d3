// Karpenter's karpenter.sh/v1alpha1 NodeOverlays: price and capacity changes to the instance
// types their requirements match (reducers/overlays.cc applies them).
#include <regex>

#include "adapters/kube/objects.h"
#include "adapters/kube/objects_parts.h"
#include "reducers/requirements.h"

namespace tenon::kube {

using namespace parts;

namespace {

constexpr std::int64_t kMicroPerDollar = 1'000'000;
constexpr std::int64_t kBillionthsPerPercent = 10'000'000;
constexpr std::size_t kLabelNameCharsMax = 63;
constexpr std::size_t kLabelPrefixCharsMax = 253;

// spec.price: an unsigned decimal, dollars an hour.
PriceChange ParsePrice(const std::string& text) {
  static const std::regex kPrice(R"(^\d+(\.\d+)?$)");
  if (!std::regex_match(text, kPrice)) {
    throw ObjectError("spec.price: '" + text + "' is not a price (a decimal number, e.g. 0.25)");
  }
  return {PriceChange::Kind::kSet, ParseScaledDecimal(text, kMicroPerDollar, "spec.price")};
}

// spec.priceAdjustment, with the CRD's pattern: a signed amount ("+0.5", "-0.5") or a signed
// percent ("+10%", "-10%", never below -100%).
PriceChange ParseAdjustment(const std::string& text) {
  static const std::regex kAdjustment(
      R"(^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$)");
  if (!std::regex_match(text, kAdjustment)) {
    throw ObjectError("spec.priceAdjustment: '" + text +
                      "' is neither a signed amount (+0.5, -0.5) nor a signed percent (+10%, "
                      "-10%, at least -100%)");
  }
  const bool negative = text.front() == '-';
  const bool percent = text.back() == '%';
  std::string digits = text.substr(1, text.size() - (percent ? 2 : 1));
  if (digits.front() == '.') digits.insert(digits.begin(), '0');
  const std::int64_t magnitude = ParseScaledDecimal(
      digits, percent ? kBillionthsPerPercent : kMicroPerDollar, "spec.priceAdjustment");
  return {percent ? PriceChange::Kind::kPercent : PriceChange::Kind::kAdd,
          negative ? -magnitude : magnitude};
}

// Karpenter's qualified-name rule for a label key: an optional DNS-subdomain prefix and a name of
// at most 63 alphanumerics, '-', '_' and '.', starting and ending alphanumeric.
bool QualifiedName(const std::string& key) {
  static const std::regex kName(R"(^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$)");
  static const std::regex kPrefix(
      R"(^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$)");
  const std::size_t slash = key.find('/');
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  if (name.empty() || name.size() > kLabelNameCharsMax || !std::regex_match(name, kName)) {
    return false;
  }
  if (slash == std::string::npos) return true;
  const std::string prefix = key.substr(0, slash);
  return !prefix.empty() && prefix.size() <= kLabelPrefixCharsMax &&
         std::regex_match(prefix, kPrefix);
}

// What Karpenter's controller refuses at run time (RuntimeValidate), the first reason found.
std::string RuntimeInvalid(const NodeOverlay& overlay) {
  for (const Requirement& r : overlay.requirements) {
    if (!QualifiedName(r.key)) {
      return "invalid value: key " + r.key + " is not a qualified name in requirements, restricted";
    }
    if (r.key == "karpenter.k8s.aws/ec2nodeclass") continue;
    if (std::string why = core::RestrictedLabel(r.key); !why.empty()) {
      return "invalid value: " + why + " in requirements, restricted";
    }
  }
  for (const auto& [name, amount] : overlay.capacity) {
    if (name == "cpu" || name == "memory" || name == "ephemeral-storage" || name == "pods") {
      return "invalid capacity: " + name + " in resource, restricted";
    }
  }
  return "";
}

template <class V>
std::map<std::string, std::int64_t> ParseCapacity(const V& value) {
  std::map<std::string, std::int64_t> out;
  if (!value) return out;
  if (!value.IsMap()) throw ObjectError("spec.capacity must be a map");
  for (const auto& [key, quantity] : value.Entries()) {
    const std::string name(key);
    const std::string path = "spec.capacity." + name;
    try {
      // Whole counts, or bytes for huge pages: a quantity with a binary suffix ("100Mi") reads
      // as memory does.
      out[name] = ParseMemory(Str(quantity, path)).value;
    } catch (const ObjectError& e) {
      throw ObjectError(path + ": " + e.what());
    }
  }
  return out;
}

template <class V>
NodeOverlay ParseNodeOverlayFrom(const V& object) {
  return ParseNamed<NodeOverlay>(object, "NodeOverlay", [&](NodeOverlay& overlay) {
    const V spec = object["spec"];
    if (!spec) throw ObjectError("spec is required");
    if (spec["weight"]) {
      overlay.weight = Int<std::int32_t>(spec["weight"], "spec.weight");
      if (overlay.weight < 1 || overlay.weight > 10000) {
        throw ObjectError("spec.weight must be within 1..10000");
      }
    }
    overlay.requirements = ParseRequirements(spec["requirements"], "spec.requirements");
    if (spec["price"] && spec["priceAdjustment"]) {
      throw ObjectError("cannot set both 'price' and 'priceAdjustment'");
    }
    if (spec["price"]) overlay.price = ParsePrice(Str(spec["price"], "spec.price"));
    if (spec["priceAdjustment"]) {
      overlay.price = ParseAdjustment(Str(spec["priceAdjustment"], "spec.priceAdjustment"));
    }
    overlay.capacity = ParseCapacity(spec["capacity"]);
    overlay.invalid = RuntimeInvalid(overlay);
  });
}

}  // namespace

NodeOverlay ParseNodeOverlay(const YAML::Node& object) {
  return ParseNodeOverlayFrom(YamlValue(object));
}

NodeOverlay ParseNodeOverlay(const JsonValue& object) {
  return ParseNodeOverlayFrom(object);
}

}  // namespace tenon::kube
