// The codec's object pairs for other schemas (codec_objects.h): each hands over to the one events
// and snapshots use (codec_kube.cc, codec_cloud.cc).
#include "log/codec_objects.h"

#include "log/codec_parts.h"

namespace tenon::log::objects {

void Put(schema::Resources::Builder b, const Resources& v) {
  parts::Put(b, v);
}
Resources Get(schema::Resources::Reader r) {
  return parts::Get(r);
}
void Put(schema::Pod::Builder b, const Pod& v) {
  parts::Put(b, v);
}
Pod Get(schema::Pod::Reader r) {
  return parts::Get(r);
}
void Put(schema::Node::Builder b, const Node& v) {
  parts::Put(b, v);
}
Node Get(schema::Node::Reader r) {
  return parts::Get(r);
}
void Put(schema::PersistentVolumeClaim::Builder b, const PersistentVolumeClaim& v) {
  parts::Put(b, v);
}
PersistentVolumeClaim Get(schema::PersistentVolumeClaim::Reader r) {
  return parts::Get(r);
}
void Put(schema::PersistentVolume::Builder b, const PersistentVolume& v) {
  parts::Put(b, v);
}
PersistentVolume Get(schema::PersistentVolume::Reader r) {
  return parts::Get(r);
}
void Put(schema::NodePoolStatus::Builder b, const NodePoolStatus& v) {
  parts::Put(b, v);
}
NodePoolStatus Get(schema::NodePoolStatus::Reader r) {
  return parts::Get(r);
}
void Put(schema::NodeOverlayStatus::Builder b, const NodeOverlayStatus& v) {
  parts::Put(b, v);
}
NodeOverlayStatus Get(schema::NodeOverlayStatus::Reader r) {
  return parts::Get(r);
}

void Put(capnp::List<schema::KeyValue>::Builder out, const std::map<std::string, std::string>& m) {
  parts::Put(out, m);
}
std::map<std::string, std::string> GetTexts(capnp::List<schema::KeyValue>::Reader in) {
  return parts::GetLabels(in);
}
void Put(capnp::List<schema::KeyInt>::Builder out, const std::map<std::string, std::int64_t>& m) {
  parts::Put(out, m);
}
std::map<std::string, std::int64_t> GetInts(capnp::List<schema::KeyInt>::Reader in) {
  return parts::GetInts(in);
}

std::string ToBytes(capnp::MallocMessageBuilder& message) {
  return parts::ToBytes(message);
}

}  // namespace tenon::log::objects
