// What the files of the object parser share (adapters/kube/objects*.cc, one per kind of
// object): the fields every kind is built of. Private to the parser: objects.h is its face.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "adapters/kube/objects.h"
#include "model/model.h"

namespace tenon::kube::parts {

// The node as a string; an ObjectError naming `field` when it is not one.
std::string Str(const YAML::Node& node, const std::string& field);
// metadata.name; an ObjectError naming the `kind` without one.
std::string Name(const YAML::Node& object, const char* kind);
Labels ParseLabels(const YAML::Node& node, const std::string& field);
std::vector<std::string> Texts(const YAML::Node& node, const std::string& field);

Requirement ParseRequirement(const YAML::Node& node);
NodeSelectorTerm ParseTerm(const YAML::Node& node, std::int32_t weight);
std::vector<NodeSelectorTerm> ParseTerms(const YAML::Node& node);
std::vector<Taint> ParseTaints(const YAML::Node& node);

// A resource list (requests, allocatable, overhead): cpu in millicores, memory and
// ephemeral storage in bytes, everything else as a whole count.
Resources ParseResourceList(const YAML::Node& node, const std::string& field);

// metadata.`field` as a time; zero when absent.
Nanos Timestamp(const YAML::Node& meta, const std::string& field);
Nanos Created(const YAML::Node& meta);

// What `f` returns; its errors, and yaml-cpp's, prefixed with `what` (the object's kind and
// name).
template <class F>
auto Named(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const ObjectError& e) {
    throw ObjectError(what + ": " + e.what());
  } catch (const YAML::Exception& e) {
    throw ObjectError(what + ": " + e.what());
  }
}

// A `T` named by the object's metadata.name and filled in by `fill`, whose errors are prefixed
// with the kind and the name.
template <class T, class F>
T ParseNamed(const YAML::Node& object, const char* kind, F&& fill) {
  T parsed;
  parsed.name = Name(object, kind);
  return Named(std::string(kind) + " " + parsed.name, [&] {
    fill(parsed);
    return parsed;
  });
}

}  // namespace tenon::kube::parts
