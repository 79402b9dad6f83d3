// Private to reducers/: NodePool templates and instance-type filtering for one pass.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reducers/scheduling.h"

namespace tenon::core {

// Templates for every NodePool, heaviest weight first (types not yet filled).
std::vector<PoolTemplate> BuildTemplates(const State& state);
// Fills a template's instance types, DaemonSet overhead and remaining limits.
// `per_nodeclass` caches the catalog's allocatable recomputed for each NodeClass's kubelet
// settings (computed for the types some pool allows).
using AllocatableCache = std::map<std::pair<const NodeClass*, const CatalogEntry*>, Resources>;
void FillTypes(const State& state, PoolTemplate& t, AllocatableCache& per_nodeclass);

// Keys an instance type determines (instance-type, arch, os, karpenter.k8s.aws/instance-*).
bool IsTypeKey(const std::string& key);
std::optional<std::string_view> TypeLabel(const PoolTemplate& t, const TypeRow& row,
                                          const std::string& key);
// True when the type's labels satisfy `reqs` and an offering matches its zone and capacity type.
bool TypeAllows(const PoolTemplate& t, const TypeRow& row, const Requirements& reqs);
// The types of `t` that `reqs` allows, cached by the type-relevant part of the requirements.
const TypeMask& TypesFor(PoolTemplate& t, const Requirements& reqs);
// Clears from `mask` every type whose allocatable cannot hold `requests`.
void KeepFitting(const PoolTemplate& t, TypeMask& mask, const Resources& requests);
// Per dimension, the most any type in `mask` can hold.
Resources Room(const PoolTemplate& t, const TypeMask& mask);
// What a type counts against NodePool limits: its raw CPU, memory and accelerators.
Resources TypeCapacity(const TypeRow& row);

}  // namespace tenon::core
