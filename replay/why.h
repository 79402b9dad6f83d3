// tenon why: what changed around a moment of the log, and the causal story of each change, told
// from the decisions, launches and events the log holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "log/event_log.h"
#include "model/decisions.h"

namespace tenon::replay {

// The cluster as the controller saw it at one moment.
struct WhyCounts {
  Instant at;
  std::int64_t nodes = 0;  // Launched NodeClaims not yet gone.
  MicroUsdPerHour cost{0};
  std::int64_t pending = 0;  // Active pods bound to no node.
  friend bool operator==(const WhyCounts&, const WhyCounts&) = default;
};

// An instance launched for a NodeClaim: what the fleet request offered, what was out of
// capacity first, and what came up.
struct WhyLaunch {
  Seq seq{0};  // The FleetLaunched or FleetFailed event.
  Instant at;
  std::string nodeclaim;
  std::string nodepool;
  bool launched = false;  // False: the launch failed.
  std::string instance_type, zone, capacity_type;
  MicroUsdPerHour price{0};
  std::vector<OfferingChoice> offered;   // The fleet request's overrides, cheapest first.
  std::vector<std::string> unavailable;  // "type/zone/capacity-type: code" tried and refused.
  friend bool operator==(const WhyLaunch&, const WhyLaunch&) = default;
};

struct WhyWorkload {
  std::string name;  // The pods' name without its generated suffix ("web" for "web-7").
  std::int64_t pods = 0;
  friend bool operator==(const WhyWorkload&, const WhyWorkload&) = default;
};

struct WhyPool {
  std::string name;
  std::int32_t weight = 0;
  std::string limits;  // "cpu 200" and so on; empty when none.
  friend bool operator==(const WhyPool&, const WhyPool&) = default;
};

// Where a disruption planned the pods of the nodes it takes to go, by destination.
struct WhyDestination {
  std::string node;       // An existing node; empty for a replacement.
  std::string nodeclaim;  // The node's NodeClaim, or the replacement's (empty: not known here).
  bool replacement = false;
  std::int64_t pods = 0;
  friend bool operator==(const WhyDestination&, const WhyDestination&) = default;
};

enum class WhyKind : std::uint8_t {
  kScaleUp,       // A provisioning batch launched new capacity.
  kScaleDown,     // A graceful disruption removed (or replaced) nodes, or a node it chose went.
  kInterruption,  // An interruption message took nodes away.
  kLifecycle,     // Capacity went for another reason (a timeout, an expiry, a deletion).
};
const char* Name(WhyKind kind);

struct WhyChange {
  WhyKind kind = WhyKind::kScaleUp;
  Seq seq{0};  // The event whose fold made the decision.
  Instant at;
  std::vector<std::string> nodeclaims;  // Launched, or taken away.
  // Scale-up: the batch and what it planned.
  Instant batch_opened;
  std::int64_t pods = 0;  // Planned for in the batch.
  std::vector<WhyWorkload> workloads;
  std::vector<std::string> unschedulable;  // "ns/name: why", pods the batch found no place for.
  std::vector<WhyPool> pools;              // Every NodePool, by weight: the one chosen is named.
  std::vector<WhyLaunch> launches;
  // Scale-down and interruption: the disruption decision as carried out.
  std::optional<DisruptionMethod> method;
  std::string phase;   // "executed", "replacing", ...
  std::string reason;  // The decision's, or the lifecycle's deletion reason.
  Cause cause = Cause::kNone;
  std::vector<DisruptionCandidate> candidates;
  Seq proposed_seq{0};  // The proposal the candidates come from (0: the decision's own).
  std::vector<BudgetState> budgets;
  DisruptionPrices prices;
  std::vector<std::string> replacements;  // The NodeClaims launched in their place.
  std::vector<WhyDestination> moved;      // Where the selected candidates' pods were to go.
  std::int64_t evicted = 0;               // Evictions within the window.
  Seq evicted_seq{0};                     // The last of them.
  friend bool operator==(const WhyChange&, const WhyChange&) = default;
};

// A node consolidation would have moved but for its NodePool's Balanced score (the cause
// BalancedScore): the last such verdict in the window, with the score and its two parts.
struct WhyHeld {
  Seq seq{0};  // The event whose fold recorded it.
  Instant at;
  std::string nodeclaim;
  std::string nodepool;
  std::string outcome;
  friend bool operator==(const WhyHeld&, const WhyHeld&) = default;
};

struct WhyReport {
  Instant at;
  Instant from, to;                 // The window looked at.
  WhyCounts before, around, after;  // At `from`, at `at`, at `to`.
  std::vector<WhyChange> changes;   // In the order they happened.
  std::vector<WhyHeld> held;        // By NodeClaim name.
  std::string answer;               // One paragraph.
  friend bool operator==(const WhyReport&, const WhyReport&) = default;
};

// What changed between at - window/2 and at + window/2, and why. Folds from the newest snapshot
// at or before the window.
WhyReport Why(const log::EventLog& log, Instant at, Duration window);
// The answer, then each change's evidence, every line with its sequence number.
std::string WhyText(const WhyReport& report);
// The same as one JSON document (times RFC 3339, prices in micro-USD per hour).
std::string WhyJson(const WhyReport& report);

}  // namespace tenon::replay
