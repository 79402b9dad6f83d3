// What one object change means to the core: simdjson parses the object, the fields the core
// never reads (managedFields, last-applied annotations) are dropped, and the object parsers map
// the rest into events. An object that cannot be decoded becomes InputRejected with its payload
// kept whole, so a malformed custom resource never stops the controller.
#pragma once

#include <vector>

#include "adapters/kube/informer.h"
#include "model/model.h"

namespace tenon::kube {

std::vector<Event> Decode(const Change& change);

}  // namespace tenon::kube
