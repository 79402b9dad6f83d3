// v1 Nodes, as the kubelet registers them and the scheduler sees them.
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
        if (Str(c["type"], "type") == "Ready") node.ready = Str(c["status"], "status") == "True";
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
