// The codec's encoding of the model's objects, for a Cap'n Proto message of another schema that
// carries them (the simulated world's file, adapters/sim/world.capnp, imports log/kube.capnp):
// the same Put/Get pairs events and snapshots use, so an object has one encoding wherever it is
// stored. Get reads outside input as the codec does: an enum's number its type does not have
// raises CodecError, never a value made up.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "kube.capnp.h"
#include "log/codec.h"

namespace tenon::log::objects {

void Put(schema::Resources::Builder b, const Resources& v);
Resources Get(schema::Resources::Reader r);
void Put(schema::Pod::Builder b, const Pod& v);
Pod Get(schema::Pod::Reader r);
void Put(schema::Node::Builder b, const Node& v);
Node Get(schema::Node::Reader r);
void Put(schema::PersistentVolumeClaim::Builder b, const PersistentVolumeClaim& v);
PersistentVolumeClaim Get(schema::PersistentVolumeClaim::Reader r);
void Put(schema::PersistentVolume::Builder b, const PersistentVolume& v);
PersistentVolume Get(schema::PersistentVolume::Reader r);
void Put(schema::NodePoolStatus::Builder b, const NodePoolStatus& v);
NodePoolStatus Get(schema::NodePoolStatus::Reader r);
void Put(schema::NodeOverlayStatus::Builder b, const NodeOverlayStatus& v);
NodeOverlayStatus Get(schema::NodeOverlayStatus::Reader r);

// Maps by name as lists of pairs, in key order.
void Put(capnp::List<schema::KeyValue>::Builder out, const std::map<std::string, std::string>& m);
std::map<std::string, std::string> GetTexts(capnp::List<schema::KeyValue>::Reader in);
void Put(capnp::List<schema::KeyInt>::Builder out, const std::map<std::string, std::int64_t>& m);
std::map<std::string, std::int64_t> GetInts(capnp::List<schema::KeyInt>::Reader in);

// Decodes `bytes`, outside input, as a message with root `Root` (`what` names it in errors:
// "record") and hands the reader to `fn`; every Cap'n Proto error (truncation, bad pointers,
// limits), in `fn` too, becomes a CodecError.
template <class Root, class Fn>
auto ReadMessage(std::string_view bytes, const char* what, Fn&& fn) {
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) {
    throw CodecError(std::string(what) + " of " + std::to_string(bytes.size()) +
                     " bytes is not a whole number of Cap'n Proto words");
  }
  // Copy into word-aligned memory: the caller's buffer carries no alignment promise.
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  // Reading a message never visits much more than its own words; a list of empty structs could
  // otherwise claim millions of elements from a few bytes (a forged or damaged message) and hold
  // the decoder for seconds building them.
  capnp::ReaderOptions options;
  options.traversalLimitInWords = words.size() * 8 + 1024;
  try {
    capnp::FlatArrayMessageReader reader(words.asPtr(), options);
    return fn(reader.getRoot<Root>());
  } catch (const kj::Exception& e) {
    throw CodecError(std::string("malformed ") + what + ": " + e.getDescription().cStr());
  }
}

// The message's bytes, as capnp::messageToFlatArray gives them (a segment table, then the
// segments), written straight into the string.
std::string ToBytes(capnp::MallocMessageBuilder& message);

}  // namespace tenon::log::objects
