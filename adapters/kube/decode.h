// What one object change means to the core: simdjson parses the object and the object parsers
// (objects.h) read the fields they need straight from its JSON into events; what they do not
// read (managedFields, last-applied annotations, env, container statuses) is never copied. An
// object that cannot be decoded becomes InputRejected with its payload kept whole, so a
// malformed custom resource never stops the controller.
#pragma once

#include <vector>

#include "adapters/kube/informer.h"
#include "model/model.h"

namespace tenon::kube {

std::vector<Event> Decode(const Change& change);

}  // namespace tenon::kube
