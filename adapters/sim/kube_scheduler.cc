#include "adapters/sim/kube_scheduler.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

namespace tenon::sim {
namespace {

std::string Key(const std::string& ns, const std::string& name) {
  return ns + "/" + name;
}

// A label's value on a node, if it has the label.
std::optional<std::string> NodeLabel(const Node& node, const std::string& key) {
  auto it = node.labels.find(key);
  if (it == node.labels.end()) return std::nullopt;
  return std::string(it->second.str());
}

std::optional<std::int64_t> Integer(const std::string& text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// One requirement against a value that is present (`value`) or absent (nullopt).
bool Holds(const Requirement& r, const std::optional<std::string>& value) {
  const auto listed = [&] {
    return std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
  };
  switch (r.op) {
    case RequirementOp::kIn:
      return value && listed();
    case RequirementOp::kNotIn:
      return !value || !listed();
    case RequirementOp::kExists:
      return value.has_value();
    case RequirementOp::kDoesNotExist:
      return !value;
    case RequirementOp::kGt:
    case RequirementOp::kLt: {
      // Both sides must be integers; a node whose label is not one does not match.
      if (!value || r.values.size() != 1) return false;
      auto have = Integer(*value);
      auto bound = Integer(r.values.front());
      if (!have || !bound) return false;
      return r.op == RequirementOp::kGt ? *have > *bound : *have < *bound;
    }
  }
  return false;
}

bool TermMatches(const NodeSelectorTerm& term, const Node& node) {
  return std::all_of(term.requirements.begin(), term.requirements.end(),
                     [&](const Requirement& r) { return Holds(r, NodeLabel(node, r.key)); });
}

// A term's selector with its matchLabelKeys: each key's value in `owner`'s labels is required.
LabelSelector WithLabelKeys(LabelSelector selector, const std::vector<std::string>& keys,
                            const Labels& owner) {
  for (const auto& key : keys) {
    auto it = owner.find(key);
    if (it != owner.end())
      selector.match_expressions.push_back({key, RequirementOp::kIn, {it->second}});
  }
  return selector;
}

// Whether `other` counts for a term of `owner`: in the term's namespaces (the owner's own when
// none are named) and matching its selector.
bool TermSelects(const PodAffinityTerm& term, const Pod& owner, const LabelSelector& selector,
                 const Pod& other) {
  if (!term.all_namespaces) {
    const bool listed = term.namespaces.empty()
                            ? other.ns == owner.ns
                            : std::find(term.namespaces.begin(), term.namespaces.end(),
                                        other.ns.str()) != term.namespaces.end();
    if (!listed) return false;
  }
  return LabelsMatch(selector, *other.labels);
}

// Pods bound to a node that still count (not being deleted), with their node.
template <class F>
void ForEachBound(const ClusterView& cluster, F&& f) {
  for (const auto& [node_name, on] : cluster.on_node) {
    auto node = cluster.nodes.find(node_name);
    if (node == cluster.nodes.end()) continue;
    for (const auto& key : on.pods) {
      const Pod& pod = cluster.pods.at(key);
      if (!pod.Terminating()) f(pod, node->second);
    }
  }
}

bool SameDomain(const Node& a, const Node& b, const std::string& key) {
  auto x = NodeLabel(a, key);
  return x && x == NodeLabel(b, key);
}

bool AffinityAllows(const ClusterView& cluster, const Pod& pod, const Node& node) {
  const PodConstraints& c = *pod.constraints;
  for (const auto& term : c.pod_affinity_required) {
    if (!NodeLabel(node, term.topology_key)) return false;
    const LabelSelector selector = WithLabelKeys(term.selector, term.match_label_keys, *pod.labels);
    bool near = false, anywhere = false;
    ForEachBound(cluster, [&](const Pod& other, const Node& on) {
      if (!TermSelects(term, pod, selector, other)) return;
      anywhere = true;
      if (SameDomain(on, node, term.topology_key)) near = true;
    });
    // The first pod of a group that selects itself may go anywhere its other terms allow.
    if (!near && !(!anywhere && TermSelects(term, pod, selector, pod))) return false;
  }
  for (const auto& term : c.pod_anti_affinity_required) {
    if (!NodeLabel(node, term.topology_key)) continue;
    const LabelSelector selector = WithLabelKeys(term.selector, term.match_label_keys, *pod.labels);
    bool refused = false;
    ForEachBound(cluster, [&](const Pod& other, const Node& on) {
      if (TermSelects(term, pod, selector, other) && SameDomain(on, node, term.topology_key)) {
        refused = true;
      }
    });
    if (refused) return false;
  }
  // The anti-affinity of the pods already running refuses this pod near them.
  if (!cluster.any_refuses) return true;
  bool refused = false;
  ForEachBound(cluster, [&](const Pod& other, const Node& on) {
    for (const auto& term : other.constraints->pod_anti_affinity_required) {
      const LabelSelector selector =
          WithLabelKeys(term.selector, term.match_label_keys, *other.labels);
      if (TermSelects(term, other, selector, pod) && SameDomain(on, node, term.topology_key)) {
        refused = true;
      }
    }
  });
  return !refused;
}

bool SpreadAllows(const ClusterView& cluster, const Pod& pod, const Node& node) {
  for (const auto& spread : pod.constraints->topology_spread) {
    if (!spread.do_not_schedule) continue;
    const auto domain = NodeLabel(node, spread.topology_key);
    if (!domain) return false;
    const LabelSelector selector =
        WithLabelKeys(spread.selector, spread.match_label_keys, *pod.labels);
    // The domains of the nodes the policies let count, and the matching pods on them.
    std::map<std::string, std::int64_t> counts;
    for (const auto& [name, candidate] : cluster.nodes) {
      auto value = NodeLabel(candidate, spread.topology_key);
      if (!value) continue;
      if (spread.node_affinity_honor && !NodeAffinityMatches(pod, candidate)) continue;
      if (spread.node_taints_honor && !TaintsTolerated(pod, candidate)) continue;
      counts.try_emplace(*value, 0);
    }
    ForEachBound(cluster, [&](const Pod& other, const Node& on) {
      if (other.ns != pod.ns || !LabelsMatch(selector, *other.labels)) return;
      auto value = NodeLabel(on, spread.topology_key);
      if (!value) return;
      if (spread.node_affinity_honor && !NodeAffinityMatches(pod, on)) return;
      if (spread.node_taints_honor && !TaintsTolerated(pod, on)) return;
      ++counts[*value];
    });
    std::int64_t least = 0;
    if (!counts.empty()) {
      least = std::min_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
                return a.second < b.second;
              })->second;
    }
    if (spread.min_domains > 0 && static_cast<std::int64_t>(counts.size()) < spread.min_domains) {
      least = 0;  // Fewer domains than asked for: the missing ones count as empty.
    }
    const std::int64_t self = LabelsMatch(selector, *pod.labels) ? 1 : 0;
    const std::int64_t here = counts.contains(*domain) ? counts[*domain] : 0;
    if (here + self - least > spread.max_skew) return false;
  }
  return true;
}

bool PortsFree(const ClusterView& cluster, const Pod& pod, const Node& node) {
  if (pod.constraints->host_ports.empty()) return true;
  auto on = cluster.on_node.find(node.name);
  if (on == cluster.on_node.end()) return true;
  const auto wildcard = [](const std::string& ip) { return ip.empty() || ip == "0.0.0.0"; };
  for (const auto& key : on->second.pods) {
    for (const auto& used : cluster.pods.at(key).constraints->host_ports) {
      for (const auto& wanted : pod.constraints->host_ports) {
        if (used.port != wanted.port || used.protocol != wanted.protocol) continue;
        if (wildcard(used.host_ip) || wildcard(wanted.host_ip) || used.host_ip == wanted.host_ip) {
          return false;
        }
      }
    }
  }
  return true;
}

bool VolumesAllow(const ClusterView& cluster, const Pod& pod, const Node& node) {
  for (const auto& name : pod.constraints->volume_claims) {
    auto claim = cluster.claims.find(Key(pod.ns.str(), name));
    if (claim == cluster.claims.end()) return false;  // Waits for its claim.
    const PersistentVolumeClaim& pvc = claim->second;
    if (!pvc.volume_name.empty()) {
      auto volume = cluster.volumes.find(pvc.volume_name);
      if (volume == cluster.volumes.end()) return false;
      const auto& terms = volume->second.node_affinity;
      if (!terms.empty() && std::none_of(terms.begin(), terms.end(),
                                         [&](const auto& t) { return TermMatches(t, node); })) {
        return false;
      }
      continue;
    }
    // An unbound claim needs a class to provision it, one that waits for its pod (an Immediate
    // one binds first, and the pod waits for that).
    auto sc = cluster.storage_classes.find(pvc.storage_class);
    if (sc == cluster.storage_classes.end() || !sc->second.wait_for_first_consumer) return false;
    const auto& allowed = sc->second.allowed_topologies;
    if (!allowed.empty() && std::none_of(allowed.begin(), allowed.end(),
                                         [&](const auto& t) { return TermMatches(t, node); })) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool TaintTolerated(const std::vector<Toleration>& tolerations, const Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(), [&](const Toleration& t) {
    if (t.effect && *t.effect != taint.effect) return false;
    if (t.key.empty()) return t.op_exists;
    return t.key == taint.key && (t.op_exists || t.value == taint.value);
  });
}

bool TaintsTolerated(const Pod& pod, const Node& node) {
  return std::all_of(node.taints.begin(), node.taints.end(), [&](const Taint& taint) {
    return taint.effect == TaintEffect::kPreferNoSchedule ||
           TaintTolerated(pod.constraints->tolerations, taint);
  });
}

bool NodeAffinityMatches(const Pod& pod, const Node& node) {
  const PodConstraints& c = *pod.constraints;
  for (const auto& [key, value] : c.node_selector) {
    if (NodeLabel(node, key) != value) return false;
  }
  const auto& terms = c.node_affinity_required;
  return terms.empty() || std::any_of(terms.begin(), terms.end(),
                                      [&](const auto& t) { return TermMatches(t, node); });
}

bool LabelsMatch(const LabelSelector& selector, const Labels& labels) {
  for (const auto& [key, value] : selector.match_labels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  return std::all_of(
      selector.match_expressions.begin(), selector.match_expressions.end(),
      [&](const Requirement& r) {
        auto it = labels.find(r.key);
        return Holds(r, it == labels.end() ? std::nullopt : std::optional<std::string>(it->second));
      });
}

bool DependsOnNeighbours(const Pod& pod) {
  const PodConstraints& c = *pod.constraints;
  return !c.host_ports.empty() || !c.pod_affinity_required.empty() ||
         !c.pod_anti_affinity_required.empty() || !c.volume_claims.empty() ||
         std::any_of(c.topology_spread.begin(), c.topology_spread.end(),
                     [](const auto& s) { return s.do_not_schedule; });
}

bool RefusesNeighbours(const Pod& pod) {
  return !pod.constraints->pod_anti_affinity_required.empty();
}

bool Accepts(const ClusterView& cluster, const Pod& pod, const Node& node, const Resources& free) {
  if (!node.ready || !TaintsTolerated(pod, node) || !NodeAffinityMatches(pod, node)) return false;
  Resources need = pod.requests;
  need.pods = 1;
  if (!Fits(need, free)) return false;
  return PortsFree(cluster, pod, node) && VolumesAllow(cluster, pod, node) &&
         AffinityAllows(cluster, pod, node) && SpreadAllows(cluster, pod, node);
}

}  // namespace tenon::sim
