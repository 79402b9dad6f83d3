// NodeLabels (units.h): a node's labels as sorted pairs of shared texts, read as a Labels map.
#include <algorithm>
#include <stdexcept>

#include "model/model.h"

namespace tenon {
namespace {

bool KeyBefore(const NodeLabels::Entry& entry, std::string_view key) {
  return std::string_view(entry.first.str()) < key;
}

}  // namespace

NodeLabels::NodeLabels(const Labels& labels) {
  entries_.reserve(labels.size());
  // A map iterates in key order, so the pairs come out sorted.
  for (const auto& [key, value] : labels) entries_.emplace_back(key, value);
}

NodeLabels::const_iterator NodeLabels::find(std::string_view key) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key, KeyBefore);
  return it != entries_.end() && it->first == key ? it : entries_.end();
}

const std::string& NodeLabels::at(std::string_view key) const {
  auto it = find(key);
  if (it == end()) throw std::out_of_range("NodeLabels::at: no label " + std::string(key));
  return it->second.str();
}

void NodeLabels::Set(const std::string& key, const std::string& value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key, KeyBefore);
  if (it != entries_.end() && it->first == key) {
    it->second = value;
    return;
  }
  entries_.emplace(it, key, value);
}

Labels NodeLabels::ToLabels() const {
  Labels labels;
  for (const auto& [key, value] : entries_)
    labels.emplace_hint(labels.end(), key.str(), value.str());
  return labels;
}

}  // namespace tenon
