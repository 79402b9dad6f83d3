// Prices, times and pod phases as people read them, for decision reasons, reports, the log and
// incident tools alike.
#include <array>
#include <limits>
#include <string_view>

#include "model/scores.h"
#include "model/state.h"

namespace tenon {
namespace {

// Each enumerator's name, in the enumeration's order.
constexpr std::array kMethodNames{"Emptiness",
                                  "Drift",
                                  "Expiration",
                                  "SoftExpiration",
                                  "Interruption",
                                  "SingleNodeConsolidation",
                                  "MultiNodeConsolidation"};
constexpr std::array kPhaseNames{"blocked",  "proposed",    "invalidated", "replacing",
                                 "replaced", "rolled back", "executed"};
constexpr std::array kTransitionNames{"Launched",
                                      "LaunchFailed",
                                      "Registered",
                                      "Initialized",
                                      "Adopted",
                                      "Tainted",
                                      "Untainted",
                                      "RebalanceRecommendation",
                                      "InstanceStateChange",
                                      "Interrupted",
                                      "InterruptionIgnored",
                                      "Deleting",
                                      "Evicted",
                                      "EvictionRefused",
                                      "PodForceDeleted",
                                      "Drained",
                                      "InstanceTerminated",
                                      "InstanceGone",
                                      "Finalized",
                                      "LeakedInstance",
                                      "LeakedInstanceTerminated"};
static_assert(kMethodNames.size() ==
              static_cast<std::size_t>(DisruptionMethod::kMultiNodeConsolidation) + 1);
static_assert(kPhaseNames.size() == static_cast<std::size_t>(DisruptionPhase::kExecuted) + 1);
static_assert(kTransitionNames.size() ==
              static_cast<std::size_t>(Transition::kLeakedInstanceTerminated) + 1);

template <class E, std::size_t N>
const char* NameIn(const std::array<const char*, N>& names, E value) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : "?";
}

template <class E, std::size_t N>
std::optional<E> ParseIn(const std::array<const char*, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<E>(i);
  }
  return std::nullopt;
}

// `n` in decimal, zero-padded to `width` digits.
std::string Padded(std::int64_t n, std::size_t width) {
  std::string digits = std::to_string(n);
  return digits.size() >= width ? digits : std::string(width - digits.size(), '0') + digits;
}

}  // namespace

const char* PodPhaseText(PodPhase phase) {
  switch (phase) {
    case PodPhase::kPending:
      return "Pending";
    case PodPhase::kRunning:
      return "Running";
    case PodPhase::kSucceeded:
      return "Succeeded";
    case PodPhase::kFailed:
      return "Failed";
    case PodPhase::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

const char* Name(DisruptionMethod method) {
  return NameIn(kMethodNames, method);
}
const char* Name(DisruptionPhase phase) {
  return NameIn(kPhaseNames, phase);
}
const char* Name(Transition transition) {
  return NameIn(kTransitionNames, transition);
}
std::optional<DisruptionMethod> ParseDisruptionMethod(std::string_view name) {
  return ParseIn<DisruptionMethod>(kMethodNames, name);
}
std::optional<DisruptionPhase> ParseDisruptionPhase(std::string_view name) {
  return ParseIn<DisruptionPhase>(kPhaseNames, name);
}
std::optional<Transition> ParseTransition(std::string_view name) {
  return ParseIn<Transition>(kTransitionNames, name);
}

const char* CauseName(Cause cause) {
  switch (cause) {
    case Cause::kNone:
      return "";
    case Cause::kDoNotDisrupt:
      return "DoNotDisrupt";
    case Cause::kPodDisruptionBudget:
      return "PodDisruptionBudget";
    case Cause::kDisruptionBudget:
      return "DisruptionBudget";
    case Cause::kNotSettled:
      return "NotSettled";
    case Cause::kNominated:
      return "Nominated";
    case Cause::kPolicy:
      return "Policy";
    case Cause::kNoBetterPlacement:
      return "NoBetterPlacement";
    case Cause::kNotConsidered:
      return "NotConsidered";
    case Cause::kInsufficientCapacity:
      return "InsufficientCapacity";
    case Cause::kLaunchError:
      return "LaunchError";
    case Cause::kSpotInterruption:
      return "SpotInterruption";
    case Cause::kRebalanceRecommendation:
      return "RebalanceRecommendation";
    case Cause::kScheduledChange:
      return "ScheduledChange";
    case Cause::kInstanceStopping:
      return "InstanceStopping";
    case Cause::kInstanceTerminating:
      return "InstanceTerminating";
    case Cause::kEmpty:
      return "Empty";
    case Cause::kUnderutilized:
      return "Underutilized";
    case Cause::kDrifted:
      return "Drifted";
    case Cause::kExpired:
      return "Expired";
    case Cause::kDeletedThroughApi:
      return "Deleted";
    case Cause::kNodeDeleted:
      return "NodeDeleted";
    case Cause::kAdoptedWithoutInstance:
      return "AdoptedWithoutInstance";
    case Cause::kLaunchTimeout:
      return "LaunchTimeout";
    case Cause::kRegistrationTimeout:
      return "RegistrationTimeout";
    case Cause::kInstanceGone:
      return "InstanceGone";
    case Cause::kBalancedScore:
      return "BalancedScore";
    case Cause::kOverprovisioned:
      return "Overprovisioned";
    case Cause::kUnhealthy:
      return "Unhealthy";
  }
  return "";
}

PodPhase PodPhaseFrom(const std::string& text) {
  for (PodPhase phase :
       {PodPhase::kPending, PodPhase::kRunning, PodPhase::kSucceeded, PodPhase::kFailed}) {
    if (text == PodPhaseText(phase)) return phase;
  }
  return PodPhase::kUnknown;
}

std::string ClockText(Instant at) {
  const std::int64_t s = at.value / kSecond.value;
  return Padded((s / 3600) % 24, 2) + ":" + Padded((s / 60) % 60, 2) + ":" + Padded(s % 60, 2);
}

std::string DurationText(Duration d) {
  std::int64_t s = d.value / kSecond.value;
  if (s % 3600 == 0 && s >= 3600) return std::to_string(s / 3600) + "h";
  if (s % 60 == 0 && s >= 60) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

std::string DollarsText(MicroUsdPerHour price) {
  const std::int64_t v = price.value < 0 ? -price.value : price.value;
  return std::string(price.value < 0 ? "-" : "") + "$" + std::to_string(v / 1'000'000) + "." +
         Padded((v % 1'000'000) / 100, 4);
}

std::string PodKey(const std::string& ns, const std::string& name) {
  return ns + "/" + name;
}

std::string OfferingKey(const std::string& type, const std::string& zone,
                        const std::string& capacity_type) {
  return type + "/" + zone + "/" + capacity_type;
}

}  // namespace tenon

namespace tenon {

std::vector<OutcomeScore> ScoresIn(const std::string& outcome) {
  constexpr std::string_view kMarker = " (Balanced): ";
  constexpr std::string_view kPool = "NodePool ";
  std::vector<OutcomeScore> out;
  for (auto at = outcome.find(kMarker); at != std::string::npos;
       at = outcome.find(kMarker, at + 1)) {
    const auto pool = outcome.rfind(kPool, at);
    const auto start = at + kMarker.size();
    const auto end = outcome.find(')', start);
    if (pool == std::string::npos || end == std::string::npos) continue;
    OutcomeScore s;
    s.nodepool = outcome.substr(pool + kPool.size(), at - pool - kPool.size());
    s.text = outcome.substr(start, end + 1 - start);
    // "score 2.81 ..." in hundredths, or "score unbounded ...".
    std::size_t i = start + 6;
    std::int64_t hundredths = 0;
    bool digits = false;
    for (; i < end && outcome[i] != ' '; ++i) {
      if (outcome[i] >= '0' && outcome[i] <= '9') {
        hundredths = hundredths * 10 + (outcome[i] - '0');
        digits = true;
      }
    }
    s.score =
        digits ? static_cast<double>(hundredths) / 100.0 : std::numeric_limits<double>::infinity();
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tenon
