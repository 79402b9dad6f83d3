// What the writers put into objects as text: condition reasons and messages the CRDs accept,
// and quantities as Kubernetes writes them; and which refused writes are worth a warning.
#include <regex>

#include "adapters/kube/executor.h"

namespace tenon::kube {
namespace {

constexpr long kConflict = 409;
constexpr long kNotFound = 404;
// The CRDs' bounds on a condition's reason and message (Kubernetes' metav1.Condition).
constexpr std::size_t kConditionReasonMax = 1024;
constexpr std::size_t kConditionMessageMax = 32768;

bool IsConditionReason(const std::string& text) {
  static const std::regex kReason("[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?");
  return !text.empty() && text.size() <= kConditionReasonMax && std::regex_match(text, kReason);
}

}  // namespace

ConditionText ConditionReason(const std::string& text, const std::string& fallback) {
  if (IsConditionReason(text)) return {text, ""};
  // "Reason: particulars", as the core gives a drift: the CamelCase code is the reason.
  static const std::regex kCoded("([A-Z][A-Za-z0-9]*): (.+)");
  std::smatch coded;
  if (std::regex_match(text, coded, kCoded) && coded[1].str().size() <= kConditionReasonMax) {
    return {coded[1].str(), text.substr(0, kConditionMessageMax)};
  }
  return {fallback, text.substr(0, kConditionMessageMax)};
}

bool IsRefusedWrite(const std::string& method, const std::string& path, int status) {
  if (status < 400 || method == "GET") return false;
  if (status == kNotFound && method == "DELETE") return false;
  if (status == kConflict) return false;
  // The object was deleted after it was read: nothing is left to write a status to.
  if (status == kNotFound && path.ends_with("/status")) return false;
  return !(path.ends_with("/eviction") && (status == 429 || status == kNotFound));
}

std::string CpuQuantity(Millicores cpu) {
  if (cpu.value % 1000 == 0) return std::to_string(cpu.value / 1000);
  return std::to_string(cpu.value) + "m";
}

std::string MemoryQuantity(Bytes memory) {
  constexpr std::int64_t kKi = 1024;
  const std::int64_t b = memory.value;
  if (b % (kKi * kKi * kKi) == 0) return std::to_string(b / (kKi * kKi * kKi)) + "Gi";
  if (b % (kKi * kKi) == 0) return std::to_string(b / (kKi * kKi)) + "Mi";
  if (b % kKi == 0) return std::to_string(b / kKi) + "Ki";
  return std::to_string(b);
}

}  // namespace tenon::kube
