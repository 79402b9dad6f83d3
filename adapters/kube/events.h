// How a Kubernetes Event reaches the API server. What Events there are is the core's to say
// (KubeEventsFor, reducers/events.cc, and RecordKubeEvent commands); EventCorrelator decides how
// each is written (KubeExecutor::RecordEvent uses it), as client-go's recorder does for
// Karpenter.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "adapters/kube/executor.h"
#include "reducers/core.h"

namespace tenon::kube {

using KubeEvent = RecordKubeEvent;

// What client-go's EventCorrelator (tools/record/events_cache.go) does before an Event is
// written, so that a controller repeating itself leaves one Event with a count, not a flood:
//  - counting: an Event identical to one recorded before (same source, involved object, type,
//    reason and message) updates that Event object (count + 1, lastTimestamp) instead of
//    creating another;
//  - aggregation: from the tenth distinct message of one type and reason on one object (each
//    within 10 minutes of the one before), the messages go to a single Event whose message is
//    "(combined from similar events): " and the latest message, counted as above;
//  - spam filter: a source may write a burst of 25 Events about one object, then one per 5
//    minutes (a token bucket); the others are dropped (their occurrences are still counted, so
//    the next Event written carries them).
// Each of the three caches is an LRU of at most `cache_max` keys. Not thread-safe; the caller
// supplies the wall clock.
class EventCorrelator {
 public:
  struct Options {
    std::size_t cache_max = 4096;
    std::size_t aggregate_max = 10;                  // Distinct messages before aggregation.
    Duration aggregate_window{600 * kSecond.value};  // Since the last similar Event.
    std::int64_t spam_burst = 25;
    Duration spam_refill{300 * kSecond.value};  // One token per this much time.
  };
  // What to write.
  struct Write {
    bool skip = false;  // Dropped by the spam filter: write nothing.
    KubeEvent event;    // The message may be the combined one.
    std::string name;   // The Event object: created when count is 1, else updated.
    std::int64_t count = 1;
    Instant first;  // firstTimestamp; lastTimestamp is now.
  };

  EventCorrelator() : EventCorrelator(Options{}) {}
  explicit EventCorrelator(Options options) : options_(options) {}

  // `source` is the reporting component; `now` the wall clock. A new Event object is named
  // "<involved object>.<now in hexadecimal nanoseconds>", as client-go names them; an update
  // whose Event is gone (the API server expires Events after an hour) creates it again under
  // the same name.
  Write Correlate(const std::string& source, const KubeEvent& event, Instant now);

 private:
  // A small LRU map: Find refreshes, Put inserts or refreshes, and the oldest key goes beyond
  // `max` keys.
  template <class V>
  class Lru {
   public:
    explicit Lru(std::size_t max) : max_(max) {}
    V* Find(const std::string& key);
    V& Put(const std::string& key, V value);

   private:
    std::size_t max_;
    std::list<std::pair<std::string, V>> order_;  // Most recent first.
    std::unordered_map<std::string, typename decltype(order_)::iterator> index_;
  };
  struct Similar {
    std::vector<std::string> messages;  // Distinct, fewer than aggregate_max.
    Instant last;
  };
  struct Seen {
    std::int64_t count = 0;
    Instant first;
    std::string name;
  };
  struct Bucket {
    std::int64_t tokens = 0;
    Instant refilled;
  };

  Options options_;
  Lru<Similar> similar_{options_.cache_max};
  Lru<Seen> seen_{options_.cache_max};
  Lru<Bucket> buckets_{options_.cache_max};
  Instant last_name_;  // Names stay unique when the clock repeats itself.
};

}  // namespace tenon::kube
