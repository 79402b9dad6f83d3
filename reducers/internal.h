// Private to reducers/: the pieces Step is made of. Not included outside this folder.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include "reducers/core.h"
#include "reducers/requirements.h"

namespace tenon::core {

bool Tolerates(const std::vector<Toleration>& tolerations, const Taint& taint);

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
