// v1 Nodes, as the kubelet registers them and the scheduler sees them.
#include <algorithm>

#include "adapters/kube/objects.h"

#include "adapters/kube/objects_parts.h"

namespace tenon::kube {

using namespace parts;

namespace {

template <class V>
Node ParseNodeFrom(const V& object) {
  return ParseNamed<Node>(object, "Node", [&](Node& node) {
    node.labels = ParseLabels(object["metadata"]["labels"], "metadata.labels");
    node.created = Created(object["metadata"]);
    const V deleted_at = object["metadata"]["deletionTimestamp"];
    node.deleting = deleted_at && !deleted_at.IsNull();
    node.labels.Set(label::kHostname, node.name);
    if (const V notes = object["metadata"]["annotations"]; notes && notes[label::kDoNotDisrupt]) {
      node.do_not_disrupt = Str(notes[label::kDoNotDisrupt],
                                "metadata.annotations.karpenter.sh/do-not-disrupt") == "true";
    }
    const V spec = object["spec"];
    if (spec && spec["providerID"]) node.provider_id = Str(spec["providerID"], "spec.providerID");
    if (spec) node.taints = ParseTaints(spec["taints"], "spec.taints");
    const V status = object["status"];
    node.ready = true;
    if (status) {
      node.allocatable = ParseResourceList(status["allocatable"], "status.allocatable");
      for (const V v : List(status["volumesAttached"], "status.volumesAttached")) {
        node.volumes_attached.push_back(Str(v["name"], "status.volumesAttached.name"));
      }
      for (const V c : List(status["conditions"], "status.conditions")) {
        const std::string type = Str(c["type"], "status.conditions.type");
        const std::string state = Str(c["status"], "status.conditions.status");
        if (type == "Ready") node.ready = state == "True";
        // The conditions node repair watches, in the state it watches for; a missing
        // lastTransitionTime counts as long ago, as Karpenter reads it.
        const bool watched =
            std::any_of(std::begin(kRepairPolicies), std::end(kRepairPolicies),
                        [&](const RepairPolicy& p) { return type == p.type && state == p.status; });
        if (!watched) continue;
        Instant since;
        if (c["lastTransitionTime"] && !c["lastTransitionTime"].IsNull()) {
          since =
              ParseTimestamp(Str(c["lastTransitionTime"], "status.conditions.lastTransitionTime"));
        }
        node.unhealthy.push_back({type, state, since});
      }
    }
  });
}

}  // namespace

Node ParseNode(const YAML::Node& object) {
  return ParseNodeFrom(YamlValue(object));
}

Node ParseNode(const JsonValue& object) {
  return ParseNodeFrom(object);
}

}  // namespace tenon::kube
