#include "adapters/sim/manifests.h"

#include <algorithm>
#include <set>

#include "adapters/sim/manifests_parts.h"
#include "adapters/sim/schema.h"

namespace tenon::sim {
namespace {

std::size_t Distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string Text(const YAML::Node& node) {
  return node ? node.as<std::string>() : std::string();
}

std::string Meta(const YAML::Node& object, const char* field) {
  const auto& meta = object["metadata"];
  return meta && meta[field] ? meta[field].as<std::string>() : std::string();
}

const std::set<std::string>& WorkloadKinds() {
  static const std::set<std::string> kinds{"Deployment", "ReplicaSet", "StatefulSet"};
  return kinds;
}

std::string CheckedName(const YAML::Node& node, const std::string& field, std::size_t max) {
  const std::string value = node.as<std::string>();
  const bool valid =
      !value.empty() && value.size() <= max &&
      value.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") == std::string::npos &&
      value.front() != '-' && value.back() != '-';
  if (!valid) {
    throw ScenarioError("line " + std::to_string(node.Mark().line + 1) + ": " + field + ": '" +
                        value.substr(0, 64) + (value.size() > 64 ? "...'" : "'") +
                        " is not a Kubernetes name (lower-case letters, digits, '-' and '.', " +
                        "at most " + std::to_string(max) + " characters)");
  }
  return value;
}

bool IgnoredKind(const std::string& kind) {
  static const std::set<std::string> kinds{"Namespace",
                                           "Service",
                                           "ConfigMap",
                                           "Secret",
                                           "ServiceAccount",
                                           "Endpoints",
                                           "EndpointSlice",
                                           "Ingress",
                                           "IngressClass",
                                           "HorizontalPodAutoscaler",
                                           "Role",
                                           "RoleBinding",
                                           "ClusterRole",
                                           "ClusterRoleBinding",
                                           "NetworkPolicy",
                                           "LimitRange",
                                           "ResourceQuota",
                                           "Event",
                                           "Lease",
                                           "ControllerRevision",
                                           "CustomResourceDefinition",
                                           "VolumeAttachment",
                                           "CSIDriver",
                                           "ValidatingWebhookConfiguration",
                                           "MutatingWebhookConfiguration",
                                           "APIService"};
  return kinds.contains(kind);
}

void UnknownField(const YAML::Node& key, const std::string& path,
                  const std::vector<std::string>& known) {
  const std::string name = key.IsScalar() ? key.Scalar() : std::string();
  std::string best;
  std::size_t best_distance = 0;
  for (const std::string& k : known) {
    const std::size_t d = Distance(name, k);
    if (best.empty() || d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  std::string message =
      "line " + std::to_string(key.Mark().line + 1) + ": " + path + ": unknown field";
  if (!best.empty() && best_distance <= std::max<std::size_t>(2, name.size() / 3)) {
    message += " (did you mean '" + best + "'?)";
  }
  throw ScenarioError(message);
}

void CheckKeys(const YAML::Node& node, std::initializer_list<const char*> known,
               const std::string& path) {
  if (!node || !node.IsMap()) return;
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) continue;
    UnknownField(kv.first, (path.empty() ? "" : path + ".") + key,
                 std::vector<std::string>(known.begin(), known.end()));
  }
}

void Manifests::Add(const YAML::Node& object, const std::string& where, Duration at) {
  if (!object.IsMap()) throw ScenarioError(where + ": a Kubernetes object must be a map");
  if (Text(object["kind"]) == "List") {
    for (const auto& item : object["items"]) {
      Add(item, where.substr(0, where.rfind(':') + 1) + std::to_string(item.Mark().line + 1), at);
    }
    return;
  }
  // Fields and names are checked as the API server checks them, before anything refers to them.
  const auto& meta = object["metadata"];
  try {
    CheckFields(object);
    if (meta && meta["name"]) CheckedName(meta["name"], "metadata.name", kNameCharsMax);
    if (meta && meta["namespace"]) {
      CheckedName(meta["namespace"], "metadata.namespace", kNamespaceCharsMax);
    }
  } catch (const ScenarioError& e) {
    // The error names its own line; the file is `where`'s.
    const std::string name = meta && meta["name"] && meta["name"].IsScalar()
                                 ? " " + meta["name"].Scalar()
                                 : std::string();
    throw ScenarioError(where.substr(0, where.rfind(':')) + ": " + Text(object["kind"]) + name +
                        ": " + e.what());
  }
  docs_.push_back({object, where, at});
}

namespace {

// RFC 7386 on YAML: `patch` merged into a copy of `target`.
YAML::Node MergePatch(const YAML::Node& target, const YAML::Node& patch) {
  if (!patch.IsMap()) return YAML::Clone(patch);
  YAML::Node out = target.IsMap() ? YAML::Clone(target) : YAML::Node(YAML::NodeType::Map);
  for (const auto& entry : patch) {
    const std::string key = entry.first.Scalar();
    if (entry.second.IsNull()) {
      out.remove(key);
      continue;
    }
    const YAML::Node& current = static_cast<const YAML::Node&>(out)[key];
    out[key] = MergePatch(current ? current : YAML::Node(), entry.second);
  }
  return out;
}

}  // namespace

bool Manifests::Patch(const std::string& kind, const std::string& ns, const std::string& name,
                      const YAML::Node& merge, const std::string& where, Duration at) {
  const Doc* base = nullptr;
  for (const Doc& d : docs_) {
    if (Text(d.object["kind"]) != kind || Meta(d.object, "name") != name || d.at > at) continue;
    const std::string have = Meta(d.object, "namespace");
    const bool same_ns =
        ns.empty() || ns == "default" ? have.empty() || have == "default" : have == ns;
    if (!same_ns) continue;
    if (base == nullptr || d.at >= base->at) base = &d;
  }
  if (base == nullptr) return false;
  if (!merge.IsMap()) throw ScenarioError(where + ": a merge patch must be a map");
  Add(MergePatch(base->object, merge), where, at);
  return true;
}

bool Manifests::HasWorkload(const std::string& key) const {
  return std::any_of(docs_.begin(), docs_.end(), [&](const Doc& d) {
    const std::string kind = Text(d.object["kind"]);
    std::string ns = Meta(d.object, "namespace");
    if (ns.empty()) ns = "default";
    return WorkloadKinds().contains(kind) && kind + "/" + ns + "/" + Meta(d.object, "name") == key;
  });
}

}  // namespace tenon::sim
