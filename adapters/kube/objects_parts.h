// What the files of the object parser share (adapters/kube/objects*.cc, one per kind of
// object): the fields every kind is built of. Private to the parser: objects.h is its face.
// Each is a template over the value it reads, a YamlValue or a JsonValue (values.h), so YAML
// manifests and the API server's JSON are read by the same code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "adapters/kube/objects.h"
#include "adapters/kube/values.h"
#include "model/model.h"

namespace tenon::kube::parts {

// The API's spelling of a requirement's operator and a taint's effect; ObjectError for others.
RequirementOp ParseOp(const std::string& op);
TaintEffect ParseEffect(const std::string& effect);

// The value as a string; an ObjectError naming `field` when it is not one.
template <class V>
std::string Str(const V& value, std::string_view field) {
  if (std::optional<std::string> text = value.Text()) return *std::move(text);
  throw ObjectError("field " + std::string(field) + " must be a string");
}

// The value as an integer `T`; an ObjectError naming `field` when it is absent or not one.
template <class T, class V>
T Int(const V& value, std::string_view field) {
  if (!value) throw ObjectError(std::string(field) + ": required");
  if (std::optional<T> number = value.template Integer<T>()) return *number;
  throw ObjectError(value.Where() + std::string(field) + ": not a " +
                    std::to_string(sizeof(T) * 8) + "-bit integer");
}

// A list's elements. A map where a list belongs is an error naming `field` (an empty one reads
// as an empty list); an absent value, a null or a scalar reads as no elements.
template <class V>
auto List(const V& value, std::string_view field) {
  if (value && value.IsMap() && value.size() > 0) {
    throw ObjectError(std::string(field) + " must be a list");
  }
  return value.Elements();
}

// What `parse` makes of each of a list's elements (read as List reads the list).
template <class T, class V, class F>
std::vector<T> Each(const V& value, std::string_view field, F&& parse) {
  std::vector<T> out;
  for (const V item : List(value, field)) out.push_back(parse(item));
  return out;
}

// metadata.name; an ObjectError naming the `kind` without one.
template <class V>
std::string Name(const V& object, const char* kind) {
  const V meta = object["metadata"];
  if (!meta || !meta["name"]) throw ObjectError(std::string(kind) + " without metadata.name");
  return Str(meta["name"], "metadata.name");
}

template <class V>
Labels ParseLabels(const V& value, std::string_view field) {
  Labels labels;
  if (!value) return labels;
  if (!value.IsMap()) throw ObjectError(std::string(field) + " must be a map");
  for (const auto& [key, text] : value.Entries()) labels[std::string(key)] = Str(text, field);
  return labels;
}

template <class V>
std::vector<std::string> Texts(const V& value, std::string_view field) {
  std::vector<std::string> out;
  if (!value) return out;
  if (!value.IsSequence()) throw ObjectError(std::string(field) + " must be a list");
  for (const V item : value.Elements()) out.push_back(Str(item, field));
  return out;
}

template <class V>
Requirement ParseRequirement(const V& value) {
  if (!value["key"] || !value["operator"]) {
    throw ObjectError("requirement needs key and operator");
  }
  Requirement r{Str(value["key"], "key"), ParseOp(Str(value["operator"], "operator")), {}, 0};
  for (const V v : List(value["values"], "values")) r.values.push_back(Str(v, "values"));
  if (value["minValues"]) r.min_values = Int<std::int32_t>(value["minValues"], "minValues");
  bool needs_values = r.op == RequirementOp::kIn || r.op == RequirementOp::kNotIn ||
                      r.op == RequirementOp::kGt || r.op == RequirementOp::kLt;
  if (needs_values && r.values.empty()) {
    throw ObjectError("requirement on " + r.key + " needs values for its operator");
  }
  return r;
}

template <class V>
std::vector<Requirement> ParseRequirements(const V& value, std::string_view field) {
  return Each<Requirement>(value, field, [](const V& r) { return ParseRequirement(r); });
}

template <class V>
NodeSelectorTerm ParseTerm(const V& value, std::int32_t weight) {
  NodeSelectorTerm term;
  term.weight = weight;
  term.requirements = ParseRequirements(value["matchExpressions"], "matchExpressions");
  for (const V e : List(value["matchLabelExpressions"], "matchLabelExpressions")) {
    // StorageClass allowedTopologies
    term.requirements.push_back(
        {Str(e["key"], "key"), RequirementOp::kIn, Texts(e["values"], "values"), 0});
  }
  return term;
}

template <class V>
std::vector<NodeSelectorTerm> ParseTerms(const V& value) {
  return Each<NodeSelectorTerm>(value, "nodeSelectorTerms",
                                [](const V& t) { return ParseTerm(t, 0); });
}

template <class V>
LabelSelector ParseSelector(const V& value) {
  LabelSelector selector;
  if (!value) return selector;
  selector.match_labels = ParseLabels(value["matchLabels"], "matchLabels");
  selector.match_expressions = ParseRequirements(value["matchExpressions"], "matchExpressions");
  return selector;
}

template <class V>
Taint ParseTaint(const V& value) {
  if (!value["key"] || !value["effect"]) throw ObjectError("taint needs key and effect");
  return Taint{Str(value["key"], "taint.key"),
               value["value"] ? Str(value["value"], "taint.value") : "",
               ParseEffect(Str(value["effect"], "taint.effect"))};
}

template <class V>
std::vector<Taint> ParseTaints(const V& value, std::string_view field) {
  return Each<Taint>(value, field, [](const V& t) { return ParseTaint(t); });
}

template <class V>
Toleration ParseToleration(const V& value) {
  Toleration t;
  if (value["key"]) t.key = Str(value["key"], "toleration.key");
  t.op_exists = value["operator"] && Str(value["operator"], "toleration.operator") == "Exists";
  if (value["value"]) t.value = Str(value["value"], "toleration.value");
  if (value["effect"] && !Str(value["effect"], "toleration.effect").empty()) {
    t.effect = ParseEffect(Str(value["effect"], "toleration.effect"));
  }
  return t;
}

// A resource list (requests, allocatable, overhead): cpu in millicores, memory and
// ephemeral storage in bytes, everything else as a whole count.
template <class V>
Resources ParseResourceList(const V& value, const std::string& field) {
  Resources r;
  if (!value) return r;
  if (!value.IsMap()) throw ObjectError(field + " must be a map");
  for (const auto& [key, quantity] : value.Entries()) {
    const std::string name(key);
    const std::string path = field + "." + name;
    const std::string text = Str(quantity, path);
    try {
      if (name == "cpu") {
        r.cpu = ParseCpu(text);
      } else if (name == "memory") {
        r.memory = ParseMemory(text);
      } else if (name == "pods") {
        r.pods = ParseCpu(text).value / 1000;
      } else if (name.starts_with("hugepages-")) {
        r.extended[name] = ParseMemory(text).value;  // Bytes, as the node's capacity has them.
      } else if (name != "ephemeral-storage") {
        r.extended[name] = ParseCpu(text).value / 1000;
      }
    } catch (const ObjectError& e) {
      throw ObjectError(path + ": " + e.what());
    }
  }
  return r;
}

// metadata.`field` as a time; none when absent.
template <class V>
std::optional<Instant> Timestamp(const V& meta, std::string_view field) {
  const V ts = meta[field];
  if (!ts || ts.IsNull()) return std::nullopt;
  const std::string path = "metadata." + std::string(field);
  try {
    return ParseTimestamp(Str(ts, path));
  } catch (const ObjectError& e) {
    throw ObjectError(path + ": " + e.what());
  }
}

// metadata.creationTimestamp; the epoch when absent (an object written by hand).
template <class V>
Instant Created(const V& meta) {
  return Timestamp(meta, "creationTimestamp").value_or(Instant{});
}

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
template <class T, class V, class F>
T ParseNamed(const V& object, const char* kind, F&& fill) {
  T parsed;
  parsed.name = Name(object, kind);
  return Named(std::string(kind) + " " + parsed.name, [&] {
    fill(parsed);
    return parsed;
  });
}

}  // namespace tenon::kube::parts
