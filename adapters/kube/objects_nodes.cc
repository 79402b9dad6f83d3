// v1 Nodes, as the kubelet registers them and the scheduler sees them.
#include "adapters/kube/objects.h"

#include "adapters/kube/objects_parts.h"

namespace tenon::kube {

using namespace parts;

Node ParseNode(const YAML::Node& object) {
  return ParseNamed<Node>(object, "Node", [&](Node& node) {
    node.labels = ParseLabels(object["metadata"]["labels"], "metadata.labels");
    node.created = Created(object["metadata"]);
    const auto& deleted_at = object["metadata"]["deletionTimestamp"];
    node.deleting = deleted_at && !deleted_at.IsNull();
    node.labels.Set(label::kHostname, node.name);
    if (const auto& notes = object["metadata"]["annotations"];
        notes && notes[label::kDoNotDisrupt]) {
      node.do_not_disrupt = Str(notes[label::kDoNotDisrupt],
                                "metadata.annotations.karpenter.sh/do-not-disrupt") == "true";
    }
    const auto& spec = object["spec"];
    if (spec && spec["providerID"]) node.provider_id = Str(spec["providerID"], "spec.providerID");
    if (spec) node.taints = ParseTaints(spec["taints"]);
    const auto& status = object["status"];
    node.ready = true;
    if (status) {
      node.allocatable = ParseResourceList(status["allocatable"], "status.allocatable");
      if (const auto& attached = status["volumesAttached"]; attached) {
        for (const auto& v : attached) {
          node.volumes_attached.push_back(Str(v["name"], "status.volumesAttached.name"));
        }
      }
      if (status["conditions"]) {
        for (const auto& c : status["conditions"]) {
          if (Str(c["type"], "type") == "Ready") node.ready = Str(c["status"], "status") == "True";
        }
      }
    }
  });
}

}  // namespace tenon::kube
