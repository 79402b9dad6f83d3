// The two inputs the object parsers (objects*.cc) read: a YAML node (scenario manifests, example
// files, what-if inputs) and a JSON value as simdjson parsed it (objects from the API server,
// decoded straight into the domain types). Both offer the same small read-only interface, and
// the parsers are templates over it, so each field of each kind is read by one piece of code:
//
//   explicit operator bool  present; a null counts as present, as in YAML
//   IsNull, IsScalar, IsSequence, IsMap
//   v[key]                  a map's member; absent when it has none, or when v is a null or a
//                           list. Looking into an absent value or a scalar is an error.
//   v[i]                    a list's element i; absent past its end
//   size()                  a map's members or a list's elements; 0 for anything else
//   Elements()              a list's elements; nothing for anything else
//   Entries()               a map's (key, value) pairs; nothing for anything else
//   Text()                  a scalar's text ("null" for a null, as yaml-cpp reads one); nullopt
//                           for a map, a list or an absent value
//   Integer<T>()            the scalar as a T; nullopt when it is not one
//   Where()                 "line N: " where a YAML node is, "" for JSON
//
// The YAML side forwards to yaml-cpp, errors included, so manifests read as they always have.
// The JSON side reads a number or a boolean as its JSON text, as yaml-cpp would read the same
// object converted to YAML, and throws ShapeError with yaml-cpp's wording where yaml-cpp throws.
#pragma once

#include <simdjson.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "adapters/kube/objects.h"

namespace tenon::kube {

// A lookup into a JSON value that is absent or a scalar, worded as yaml-cpp words it. Parsers
// that know the object add its kind and name; the decoder names the object by its key.
class ShapeError : public ObjectError {
 public:
  using ObjectError::ObjectError;
};

// A range over [begin, end) of `It` whose elements are what `Read` makes of each position.
template <class It, class Value, Value (*Read)(const It&)>
class ValueRange {
 public:
  class Iterator {
   public:
    explicit Iterator(It it) : it_(it) {}
    Value operator*() const { return Read(it_); }
    Iterator& operator++() {
      ++it_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return it_ != other.it_; }

   private:
    It it_;
  };
  ValueRange(It begin, It end) : begin_(begin), end_(end) {}
  Iterator begin() const { return Iterator(begin_); }
  Iterator end() const { return Iterator(end_); }

 private:
  It begin_;
  It end_;
};

class YamlValue {
 public:
  explicit YamlValue(const YAML::Node& node) : node_(node) {}

  explicit operator bool() const { return node_.IsDefined(); }
  bool IsNull() const { return node_.IsNull(); }
  bool IsScalar() const { return node_.IsScalar(); }
  bool IsSequence() const { return node_.IsSequence(); }
  bool IsMap() const { return node_.IsMap(); }

  YamlValue operator[](std::string_view key) const { return YamlValue(node_[std::string(key)]); }
  YamlValue operator[](std::size_t index) const { return YamlValue(node_[index]); }
  std::size_t size() const { return node_.size(); }

  static YamlValue ReadElement(const YAML::const_iterator& it) {
    return YamlValue(static_cast<const YAML::Node&>(*it));
  }
  static std::pair<std::string, YamlValue> ReadEntry(const YAML::const_iterator& it) {
    return {it->first.as<std::string>(), YamlValue(it->second)};
  }
  using Elements_ = ValueRange<YAML::const_iterator, YamlValue, &ReadElement>;
  using Entries_ = ValueRange<YAML::const_iterator, std::pair<std::string, YamlValue>, &ReadEntry>;
  Elements_ Elements() const {
    if (node_.IsDefined() && node_.IsSequence()) return {node_.begin(), node_.end()};
    return {YAML::const_iterator(), YAML::const_iterator()};
  }
  Entries_ Entries() const {
    if (node_.IsDefined() && node_.IsMap()) return {node_.begin(), node_.end()};
    return {YAML::const_iterator(), YAML::const_iterator()};
  }

  std::optional<std::string> Text() const {
    if (!node_.IsDefined()) return std::nullopt;
    if (node_.IsNull()) return "null";
    if (!node_.IsScalar()) return std::nullopt;
    return node_.Scalar();
  }
  template <class T>
  std::optional<T> Integer() const {
    T value{};
    if (!node_.IsDefined() || !YAML::convert<T>::decode(node_, value)) return std::nullopt;
    return value;
  }
  std::string Where() const {
    const YAML::Mark mark = node_.Mark();
    return mark.is_null() ? std::string() : "line " + std::to_string(mark.line + 1) + ": ";
  }

 private:
  YAML::Node node_;
};

class JsonValue {
 public:
  explicit JsonValue(simdjson::dom::element element) : element_(element), present_(true) {}

  explicit operator bool() const { return present_; }
  bool IsNull() const { return present_ && Type() == Kind::NULL_VALUE; }
  bool IsScalar() const { return present_ && !IsNull() && !IsSequence() && !IsMap(); }
  bool IsSequence() const { return present_ && Type() == Kind::ARRAY; }
  bool IsMap() const { return present_ && Type() == Kind::OBJECT; }

  // `key` must outlive the value returned: the parsers look up literals and their own strings.
  JsonValue operator[](std::string_view key) const {
    Subscribable(key);
    simdjson::dom::element child;
    if (IsMap() && simdjson::dom::object(element_).at_key(key).get(child) == simdjson::SUCCESS) {
      return JsonValue(child);
    }
    return Missing(key);
  }
  JsonValue operator[](std::size_t index) const {
    Subscribable("");
    simdjson::dom::element child;
    if (IsSequence() && simdjson::dom::array(element_).at(index).get(child) == simdjson::SUCCESS) {
      return JsonValue(child);
    }
    // yaml-cpp looks a number up in a map as a key.
    const std::string key = std::to_string(index);
    if (IsMap() && simdjson::dom::object(element_).at_key(key).get(child) == simdjson::SUCCESS) {
      return JsonValue(child);
    }
    return Missing("");
  }
  std::size_t size() const {
    if (IsMap()) return simdjson::dom::object(element_).size();
    if (IsSequence()) return simdjson::dom::array(element_).size();
    return 0;
  }

  static JsonValue ReadElement(const simdjson::dom::array::iterator& it) { return JsonValue(*it); }
  static std::pair<std::string_view, JsonValue> ReadEntry(
      const simdjson::dom::object::iterator& it) {
    return {it.key(), JsonValue(it.value())};
  }
  using Elements_ = ValueRange<simdjson::dom::array::iterator, JsonValue, &ReadElement>;
  using Entries_ = ValueRange<simdjson::dom::object::iterator,
                              std::pair<std::string_view, JsonValue>, &ReadEntry>;
  Elements_ Elements() const {
    if (!IsSequence()) return {{}, {}};
    const simdjson::dom::array array(element_);
    return {array.begin(), array.end()};
  }
  Entries_ Entries() const {
    if (!IsMap()) return {{}, {}};
    const simdjson::dom::object object(element_);
    return {object.begin(), object.end()};
  }

  std::optional<std::string> Text() const {
    if (!present_) return std::nullopt;
    switch (Type()) {
      case Kind::STRING:
        return std::string(std::string_view(element_));
      case Kind::NULL_VALUE:
        return "null";
      case Kind::INT64:
      case Kind::UINT64:
      case Kind::DOUBLE:
      case Kind::BOOL:
        return simdjson::minify(element_);
      case Kind::ARRAY:
      case Kind::OBJECT:
        break;
    }
    return std::nullopt;
  }
  // A JSON integer in T's range, or a string of decimal digits that is one.
  template <class T>
  std::optional<T> Integer() const {
    if (!present_) return std::nullopt;
    std::int64_t signed_value = 0;
    std::uint64_t unsigned_value = 0;
    std::string_view text;
    if (element_.get(signed_value) == simdjson::SUCCESS) return InRange<T>(signed_value);
    if (element_.get(unsigned_value) == simdjson::SUCCESS) return InRange<T>(unsigned_value);
    if (element_.get(text) != simdjson::SUCCESS) return std::nullopt;
    T value{};
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
  }
  std::string Where() const { return {}; }

 private:
  using Kind = simdjson::dom::element_type;

  JsonValue() = default;
  static JsonValue Missing(std::string_view key) {
    JsonValue missing;
    missing.missing_key_ = key;
    return missing;
  }
  Kind Type() const { return element_.type(); }

  // What yaml-cpp throws for a lookup into a value that is not there, or into a scalar.
  void Subscribable(std::string_view key) const {
    if (!present_) {
      throw ShapeError(missing_key_.empty()
                           ? std::string("invalid node; this may result from using a map "
                                         "iterator as a sequence iterator, or vice-versa")
                           : "invalid node; first invalid key: \"" + std::string(missing_key_) +
                                 "\"");
    }
    if (IsScalar()) {
      throw ShapeError("operator[] call on a scalar (key: \"" + std::string(key) + "\")");
    }
  }

  template <class T, class From>
  static std::optional<T> InRange(From value) {
    if (!std::in_range<T>(value)) return std::nullopt;
    return static_cast<T>(value);
  }

  simdjson::dom::element element_;
  bool present_ = false;
  std::string_view missing_key_;  // The key an absent value was looked up by.
};

}  // namespace tenon::kube
