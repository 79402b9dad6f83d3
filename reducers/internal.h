// Private to reducers/: the pieces Step is made of. Not included outside this folder.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include "reducers/core.h"

namespace tenon::core {

// Looks a label up on a prospective node; nullopt when the node would not carry it.
using LabelLookup = std::function<std::optional<std::string_view>(std::string_view key)>;

bool RequirementAllows(const Requirement& requirement, std::optional<std::string_view> value);
bool AllRequirementsAllow(const std::vector<Requirement>& requirements, const LabelLookup& lookup);
// A pod's nodeSelector as In requirements.
std::vector<Requirement> SelectorRequirements(const Labels& node_selector);

bool Tolerates(const std::vector<Toleration>& tolerations, const Taint& taint);
// True when every NoSchedule / NoExecute taint is tolerated.
bool ToleratesAll(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints);

// Command and decision construction with the state's deterministic counters.
Command& Issue(State& state, Seq cause, CommandBody body, Output& out);
Decision& Decide(State& state, Seq cause, DecisionBody body, Output& out);

// Provisioning: runs one scheduling pass over the pending pods when the batch window closes.
void MaybeProvision(State& state, Seq seq, Output& out);
void NotePodForBatch(State& state, const Pod& pod);
bool IsProvisionable(const Pod& pod);

// Lifecycle: results of launches and the nodes that register for them.
void OnFleetLaunched(State& state, Seq seq, const FleetLaunched& event, Output& out);
void OnFleetFailed(State& state, Seq seq, const FleetFailed& event, Output& out);
void OnCommandFailed(State& state, Seq seq, const CommandFailed& event, Output& out);
void OnNodeUpserted(State& state, Seq seq, const Node& node, Output& out);
void OnNodeDeleted(State& state, const std::string& name);
void ExpireUnavailableOfferings(State& state);

}  // namespace tenon::core
