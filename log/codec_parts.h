// The pieces the codec's files share (log/codec*.cc): the Put/Get pair of every type between the
// domain model and its Cap'n Proto struct, the list and optional helpers, and the framing.
// Private to log/: nothing outside this folder includes it.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "log/codec.h"
#include "log/codec_objects.h"
#include "tenon.capnp.h"

namespace tenon::log::parts {

namespace s = tenon::schema;

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

inline kj::StringPtr T(const std::string& value) {
  return kj::StringPtr(value.c_str(), value.size());
}
inline std::string S(capnp::Text::Reader text) {
  return std::string(text.cStr(), text.size());
}
inline std::string_view View(capnp::Text::Reader text) {
  return std::string_view(text.cStr(), text.size());
}

// Times that may be absent, in the nanoseconds a record stores (OrStoredNone in model/units.h;
// read back with InstantOrNone, DurationOrNone and DurationOrNever).
inline std::int64_t Ns(const std::optional<Instant>& at) {
  return OrStoredNone(at).value;
}
inline std::int64_t Ns(const std::optional<Duration>& d) {
  return OrStoredNone(d).value;
}
inline std::int64_t NsOrNever(const std::optional<Duration>& d) {
  return OrStoredNever(d).value;
}

template <class E>
E CheckedEnum(std::uint16_t raw, std::uint16_t max, const char* what) {
  if (raw > max) throw CodecError(std::string("unknown ") + what + " value " + std::to_string(raw));
  return static_cast<E>(raw);
}

// A name the log records for an enumerator (a disruption method, a transition), read back.
template <class E>
E Named(std::optional<E> (*parse)(std::string_view), capnp::Text::Reader text, const char* what) {
  if (auto value = parse(View(text))) return *value;
  throw CodecError(std::string("unknown ") + what + " \"" + S(text) + "\"");
}

template <class LabelMap>  // Labels or NodeLabels: the same pairs in the same order.
void Put(capnp::List<s::KeyValue>::Builder out, const LabelMap& labels) {
  unsigned i = 0;
  for (const auto& [k, v] : labels) {
    out[i].setKey(T(k));
    out[i].setValue(T(v));
    ++i;
  }
}
Labels GetLabels(capnp::List<s::KeyValue>::Reader in);
void PutTexts(capnp::List<capnp::Text>::Builder out, const std::vector<std::string>& values);
std::vector<std::string> GetTexts(capnp::List<capnp::Text>::Reader in);
void Put(capnp::List<s::KeyInt>::Builder out, const std::map<std::string, std::int64_t>& m);
std::map<std::string, std::int64_t> GetInts(capnp::List<s::KeyInt>::Reader in);
ErrorCode GetCode(s::ErrorCode code);

// Every type's pair, declared here so the list templates below find every overload.
void Put(s::Resources::Builder b, const Resources& v);
Resources Get(s::Resources::Reader r);
void Put(s::Requirement::Builder b, const Requirement& v);
Requirement Get(s::Requirement::Reader r);
void Put(s::Taint::Builder b, const Taint& v);
Taint Get(s::Taint::Reader r);
void Put(s::Toleration::Builder b, const Toleration& v);
Toleration Get(s::Toleration::Reader r);
void Put(s::LabelSelector::Builder b, const LabelSelector& v);
LabelSelector Get(s::LabelSelector::Reader r);
void Put(s::NodeSelectorTerm::Builder b, const NodeSelectorTerm& v);
NodeSelectorTerm Get(s::NodeSelectorTerm::Reader r);
void Put(s::PodAffinityTerm::Builder b, const PodAffinityTerm& v);
PodAffinityTerm Get(s::PodAffinityTerm::Reader r);
void Put(s::TopologySpreadConstraint::Builder b, const TopologySpreadConstraint& v);
TopologySpreadConstraint Get(s::TopologySpreadConstraint::Reader r);
void Put(s::HostPort::Builder b, const HostPort& v);
HostPort Get(s::HostPort::Reader r);
void Put(s::DaemonSet::Builder b, const DaemonSet& v);
DaemonSet Get(s::DaemonSet::Reader r);
void Put(s::PersistentVolumeClaim::Builder b, const PersistentVolumeClaim& v);
PersistentVolumeClaim Get(s::PersistentVolumeClaim::Reader r);
void Put(s::PersistentVolume::Builder b, const PersistentVolume& v);
PersistentVolume Get(s::PersistentVolume::Reader r);
void Put(s::StorageClass::Builder b, const StorageClass& v);
StorageClass Get(s::StorageClass::Reader r);
void Put(s::CsiNode::Builder b, const CsiNode& v);
CsiNode Get(s::CsiNode::Reader r);
void Put(s::PodDisruptionBudget::Builder b, const PodDisruptionBudget& v);
PodDisruptionBudget Get(s::PodDisruptionBudget::Reader r);
void Put(s::ReplacementWait::Builder b, const ReplacementWait& v);
ReplacementWait Get(s::ReplacementWait::Reader r);
void Put(s::Offering::Builder b, const Offering& v);
Offering Get(s::Offering::Reader r);
void Put(s::OfferingChoice::Builder b, const OfferingChoice& v);
OfferingChoice Get(s::OfferingChoice::Reader r);
void Put(s::InstanceType::Builder b, const InstanceType& v);
InstanceType Get(s::InstanceType::Reader r);
void Put(s::FleetError::Builder b, const FleetError& v);
FleetError Get(s::FleetError::Reader r);
void Put(s::LaunchOverride::Builder b, const LaunchOverride& v);
LaunchOverride Get(s::LaunchOverride::Reader r);
void Put(s::ClaimPlan::Builder b, const ClaimPlan& v);
ClaimPlan Get(s::ClaimPlan::Reader r);
void Put(s::PodOutcome::Builder b, const PodOutcome& v);
PodOutcome Get(s::PodOutcome::Reader r);
void Put(s::Command::Builder b, const Command& v);
Command Get(s::Command::Reader r);
void Put(s::NodePool::Builder b, const NodePool& v);
NodePool Get(s::NodePool::Reader r);
void Put(s::NodeClass::Builder b, const NodeClass& v);
NodeClass Get(s::NodeClass::Reader r);
void Put(s::NodeClassResolution::Builder b, const NodeClassResolution& v);
NodeClassResolution Get(s::NodeClassResolution::Reader r);
void Put(s::NodePoolStatus::Builder b, const NodePoolStatus& v);
NodePoolStatus Get(s::NodePoolStatus::Reader r);
void Put(s::NodeOverlay::Builder b, const NodeOverlay& v);
NodeOverlay Get(s::NodeOverlay::Reader r);
void Put(s::NodeOverlayStatus::Builder b, const NodeOverlayStatus& v);
NodeOverlayStatus Get(s::NodeOverlayStatus::Reader r);
void Put(s::Pod::Builder b, const Pod& v);
Pod Get(s::Pod::Reader r);
void Put(s::Node::Builder b, const Node& v);
Node Get(s::Node::Reader r);
void Put(s::NodeClaim::Builder b, const NodeClaim& v);
NodeClaim Get(s::NodeClaim::Reader r);
void Put(s::CatalogEntry::Builder b, const CatalogEntry& v);
CatalogEntry Get(s::CatalogEntry::Reader r);
void Put(s::Settings::Builder b, const Settings& v);
Settings Get(s::Settings::Reader r);
void Put(s::LaunchNode::Builder b, const LaunchNode& v);
LaunchNode Get(s::LaunchNode::Reader r);
void Put(s::Event::Builder b, const Event& v);
Event Get(s::Event::Reader r);
void Put(s::Decision::Builder b, const Decision& v);
Decision Get(s::Decision::Reader r, const CandidateFilter& keep = {});

// Lists of structs: Put each element, Get each element.
template <class SList, class T>
void PutList(SList out, const std::vector<T>& values) {
  for (unsigned i = 0; i < values.size(); ++i) Put(out[i], values[i]);
}
// A map by name, in key order, as a list of structs with the name and the value, whose
// builder `value_of(item)` gives.
template <class SList, class V, class ValueOf>
void PutNamed(SList out, const std::map<std::string, V>& map, ValueOf value_of) {
  unsigned i = 0;
  for (const auto& [name, value] : map) {
    out[i].setName(T(name));
    Put(value_of(out[i]), value);
    ++i;
  }
}
// A map's values in key order, written in place (a snapshot's maps hold the whole cluster:
// copying them into a vector first doubled the memory a snapshot takes).
template <class K, class V, class SList>
void PutValues(SList out, const std::map<K, V>& map) {
  unsigned i = 0;
  for (const auto& [key, value] : map) Put(out[i++], value);
}
template <class T, class SList>
std::vector<T> GetList(SList in) {
  std::vector<T> out;
  out.reserve(in.size());
  for (auto item : in) out.push_back(Get(item));
  return out;
}

template <class V>
void PutOpt(s::OptionalInt64::Builder b, const std::optional<V>& v) {
  b.setSet(v.has_value());
  if constexpr (std::is_same_v<V, std::int64_t>) {
    if (v) b.setValue(*v);
  } else {
    if (v) b.setValue(v->value);
  }
}
template <class V>
std::optional<V> GetOpt(s::OptionalInt64::Reader r) {
  if (!r.getSet()) return std::nullopt;
  if constexpr (std::is_same_v<V, std::int64_t>) {
    return r.getValue();
  } else {
    return V{r.getValue()};
  }
}

// The same bytes as messageToFlatArray, written straight into the string: one copy of a
// record rather than two (a disruption pass's decision is megabytes at 5,000 nodes).
std::string ToBytes(capnp::MallocMessageBuilder& message);

// Decodes `bytes` as a message with root T and hands the reader to `fn`; every Cap'n Proto
// error (truncation, bad pointers, limits) becomes a CodecError (codec_objects.h).
template <class Root, class Fn>
auto WithReader(std::string_view bytes, Fn&& fn) {
  return objects::ReadMessage<Root>(bytes, "record", std::forward<Fn>(fn));
}

}  // namespace tenon::log::parts
