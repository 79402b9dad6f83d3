#include "adapters/kube/events.h"

#include <algorithm>
#include <cstdio>

namespace tenon::kube {
template <class V>
V* EventCorrelator::Lru<V>::Find(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return &it->second->second;
}

template <class V>
V& EventCorrelator::Lru<V>::Put(const std::string& key, V value) {
  if (V* found = Find(key)) return *found = std::move(value);
  order_.emplace_front(key, std::move(value));
  index_[key] = order_.begin();
  if (order_.size() > max_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
  return order_.front().second;
}

EventCorrelator::Write EventCorrelator::Correlate(const std::string& source, const KubeEvent& event,
                                                  Instant now) {
  // Unit separators keep the fields of a key apart (client-go joins them with nothing).
  constexpr char kSep = '\x1f';
  const ObjectRef& o = event.object;
  const std::string object_key =
      source + kSep + o.api_version + kSep + o.kind + kSep + o.ns + kSep + o.name;
  const std::string similar_key = object_key + kSep + event.type + kSep + event.reason;

  Write write;
  write.event = event;
  // Aggregation: distinct messages of one type and reason on one object, within the window.
  Similar similar;
  if (const Similar* found = similar_.Find(similar_key);
      found != nullptr && now - found->last <= options_.aggregate_window) {
    similar = *found;
  }
  if (std::find(similar.messages.begin(), similar.messages.end(), event.message) ==
      similar.messages.end()) {
    similar.messages.push_back(event.message);
  }
  similar.last = now;
  const bool combine = similar.messages.size() >= options_.aggregate_max;
  if (combine) similar.messages.erase(similar.messages.begin());  // Stays bounded.
  similar_.Put(similar_key, std::move(similar));
  std::string key = similar_key;
  if (combine) {
    write.event.message = "(combined from similar events): " + event.message;
  } else {
    key += kSep + event.message;
  }

  // Counting: the Event this key was written as before, if any.
  if (const Seen* seen = seen_.Find(key); seen != nullptr && seen->count > 0) {
    write.count = seen->count + 1;
    write.first = seen->first;
    write.name = seen->name;
  } else {
    const Instant stamp{std::max(now.value, last_name_.value + 1)};
    last_name_ = stamp;
    char hex[24];
    std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(stamp.value));
    write.count = 1;
    write.first = now;
    write.name = o.name + "." + hex;
  }
  seen_.Put(key, Seen{write.count, write.first, write.name});

  // Spam filter: a token bucket per source and object, full at first.
  Bucket bucket{options_.spam_burst, now};
  if (const Bucket* found = buckets_.Find(object_key)) bucket = *found;
  if (options_.spam_refill.value > 0 && now > bucket.refilled) {
    const std::int64_t earned = (now - bucket.refilled).value / options_.spam_refill.value;
    bucket.tokens = std::min(options_.spam_burst, bucket.tokens + earned);
    bucket.refilled = bucket.tokens == options_.spam_burst
                          ? now
                          : bucket.refilled + earned * options_.spam_refill;
  }
  if (bucket.tokens > 0) {
    --bucket.tokens;
  } else {
    write.skip = true;
  }
  buckets_.Put(object_key, bucket);
  return write;
}

}  // namespace tenon::kube
