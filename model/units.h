// The units and plain values every part of tenon shares: strong integer units (millicores,
// bytes, micro-dollars per hour), time (an Instant and a Duration, both in nanoseconds),
// identifiers, labels, resources and the well-known label and resource names.
//
// Units go last in names and are carried by strong types, so millicores never meet bytes.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tenon {

template <class Tag, class Rep = std::int64_t>
struct Strong {
  Rep value{};
  constexpr Strong() = default;
  constexpr explicit Strong(Rep v) : value(v) {}
  friend constexpr auto operator<=>(Strong, Strong) = default;
  friend constexpr Strong operator+(Strong a, Strong b) { return Strong(a.value + b.value); }
  friend constexpr Strong operator-(Strong a, Strong b) { return Strong(a.value - b.value); }
  constexpr Strong& operator+=(Strong o) {
    value += o.value;
    return *this;
  }
  constexpr Strong& operator-=(Strong o) {
    value -= o.value;
    return *this;
  }
};

using Millicores = Strong<struct MillicoresTag>;
using Bytes = Strong<struct BytesTag>;
using MicroUsdPerHour = Strong<struct MicroUsdPerHourTag>;
using Seq = Strong<struct SeqTag, std::uint64_t>;  // A record's place in the log, from 1; 0: none.
// The record `n` places after or before `seq`.
constexpr Seq operator+(Seq seq, std::uint64_t n) {
  return Seq{seq.value + n};
}
constexpr Seq operator-(Seq seq, std::uint64_t n) {
  return Seq{seq.value - n};
}
constexpr Seq& operator+=(Seq& seq, std::uint64_t n) {
  return seq = seq + n;
}

// A length of time in nanoseconds. Negative only as the difference of two instants.
using Duration = Strong<struct DurationTag>;
constexpr Duration operator*(std::int64_t n, Duration d) {
  return Duration{n * d.value};
}

// A point in time: nanoseconds since the Unix epoch, UTC. Instants subtract to a Duration and
// move by one; they do not add to each other. A time that may be absent is an
// optional<Instant>, never a zero.
struct Instant {
  std::int64_t value{};
  constexpr Instant() = default;
  constexpr explicit Instant(std::int64_t v) : value(v) {}
  friend constexpr auto operator<=>(Instant, Instant) = default;
  friend constexpr Instant operator+(Instant at, Duration d) { return Instant(at.value + d.value); }
  friend constexpr Instant operator-(Instant at, Duration d) { return Instant(at.value - d.value); }
  friend constexpr Duration operator-(Instant a, Instant b) { return Duration(a.value - b.value); }
  constexpr Instant& operator+=(Duration d) {
    value += d.value;
    return *this;
  }
};

// Absent times as the log and the state hash keep them: the numbers that stood for "none"
// before a time could be absent (0 for an instant or a duration, -1 for a Never duration), so
// that logs and hashes written before read and compare as they did.
constexpr Instant OrStoredNone(const std::optional<Instant>& at) {
  return at.value_or(Instant{});
}
constexpr Duration OrStoredNone(const std::optional<Duration>& d) {
  return d.value_or(Duration{0});
}
constexpr Duration OrStoredNever(const std::optional<Duration>& d) {
  return d.value_or(Duration{-1});
}
constexpr std::optional<Instant> InstantOrNone(std::int64_t ns) {
  return ns == 0 ? std::nullopt : std::optional<Instant>(Instant{ns});
}
constexpr std::optional<Duration> DurationOrNone(std::int64_t ns) {
  return ns == 0 ? std::nullopt : std::optional<Duration>(Duration{ns});
}
constexpr std::optional<Duration> DurationOrNever(std::int64_t ns) {
  return ns < 0 ? std::nullopt : std::optional<Duration>(Duration{ns});
}

using CommandId = Strong<struct CommandIdTag, std::uint64_t>;
using DecisionId = Strong<struct DecisionIdTag, std::uint64_t>;

inline constexpr Duration kSecond{1'000'000'000};
inline constexpr Duration kMinute{60 * kSecond.value};
inline constexpr Duration kHour{60 * kMinute.value};
inline constexpr Bytes kMebibyte{1 << 20};

using Labels = std::map<std::string, std::string>;

// A value held out of line, immutable and shared by its copies: copying a Shared<T> copies a
// pointer. It reads as T{} when it holds nothing and compares by value, so the sharing is seen
// by memory only, never by ==, the state hash or the codec. Pods of one template hold their
// labels and constraints this way, and the State keeps one copy of each distinct value (see
// SharedParts in state.h).
template <class T>
class Shared {
 public:
  Shared() = default;
  Shared(T value)  // NOLINT(google-explicit-constructor): a Shared<T> stands for its T.
      : ptr_(value == Empty() ? nullptr : std::make_shared<T>(std::move(value))) {}
  const T& operator*() const { return ptr_ ? *ptr_ : Empty(); }
  const T* operator->() const { return &**this; }
  // The value to change in place: this holder's own copy, made first unless it already is the
  // only holder. Take it while building a value; a copy of this Shared made while the reference
  // is still held would see the changes too.
  T& Mutable() {
    if (!ptr_ || ptr_.use_count() > 1) ptr_ = std::make_shared<T>(**this);
    return *ptr_;
  }
  friend bool operator==(const Shared& a, const Shared& b) { return a.ptr_ == b.ptr_ || *a == *b; }

 private:
  template <class>
  friend class Interner;
  static const T& Empty() {
    static const T empty{};
    return empty;
  }
  std::shared_ptr<T> ptr_;
};

// A string many records repeat, held as a Shared<std::string>: a pod's node name (EKS
// hostnames are 46 characters, and each node's tens of pods name it), one copy per node once
// the State interns it. It reads, compares and converts as the std::string it holds, so the
// sharing is seen by memory only.
class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string text)  // NOLINT(google-explicit-constructor): stands for its text.
      : text_(std::move(text)) {}
  SharedText(const char* text)  // NOLINT(google-explicit-constructor)
      : text_(std::string(text)) {}
  operator const std::string&() const { return *text_; }  // NOLINT(google-explicit-constructor)
  const std::string& str() const { return *text_; }
  bool empty() const { return text_->empty(); }
  std::size_t size() const { return text_->size(); }
  void clear() { text_ = Shared<std::string>(); }
  // For the State's interner (state.h) only.
  Shared<std::string>& SharedForInterning() { return text_; }
  friend bool operator==(const SharedText& a, const SharedText& b) { return a.text_ == b.text_; }
  friend bool operator==(const SharedText& a, const std::string& b) { return *a.text_ == b; }
  friend bool operator==(const SharedText& a, std::string_view b) { return *a.text_ == b; }
  friend bool operator==(const SharedText& a, const char* b) { return *a.text_ == b; }
  friend auto operator<=>(const SharedText& a, const std::string& b) { return *a.text_ <=> b; }
  friend std::string operator+(const SharedText& a, const char* b) { return *a.text_ + b; }

 private:
  Shared<std::string> text_;
};

// A node's labels: read as a Labels map is (find, at, contains, iteration in key order), held
// as (key, value) pairs of SharedText sorted by key. Thousands of nodes repeat the same dozen
// keys and a few dozen values (zone, instance type, capacity type, pool, ...), one copy of each
// once the State interns them (SharedNodeParts in state.h); a map's node and a key's heap copy
// for every label of every node was most of a node's memory. Equality, the state hash and the
// codec see the same pairs, in the same order, as a Labels with the same contents.
class NodeLabels {
 public:
  using Entry = std::pair<SharedText, SharedText>;
  using const_iterator = std::vector<Entry>::const_iterator;
  NodeLabels() = default;
  NodeLabels(const Labels& labels);  // NOLINT(google-explicit-constructor): stands for its map.
  NodeLabels(std::initializer_list<Labels::value_type> labels) : NodeLabels(Labels(labels)) {}
  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const_iterator find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != end(); }
  // The value of `key`, or nullopt when absent.
  std::optional<std::string_view> Lookup(std::string_view key) const {
    auto it = find(key);
    return it == end() ? std::nullopt : std::optional<std::string_view>(it->second.str());
  }
  // The value of `key`; throws std::out_of_range when absent, as Labels::at does.
  const std::string& at(std::string_view key) const;
  // Adds `key` or replaces its value.
  void Set(const std::string& key, const std::string& value);
  Labels ToLabels() const;
  // For the State's interner (state.h) only.
  std::vector<Entry>& EntriesForInterning() { return entries_; }
  friend bool operator==(const NodeLabels&, const NodeLabels&) = default;

 private:
  std::vector<Entry> entries_;
};

// Requests, capacity and allocatable. `extended` holds every other resource by its Kubernetes
// name (nvidia.com/gpu, aws.amazon.com/neuron, ...), in its integer unit; a key that is absent
// is zero.
struct Resources {
  Millicores cpu{0};
  Bytes memory{0};
  std::int64_t pods = 0;
  std::map<std::string, std::int64_t> extended;
  friend bool operator==(const Resources&, const Resources&) = default;
};

Resources operator+(const Resources& a, const Resources& b);
Resources operator-(const Resources& a, const Resources& b);
// In place, without the temporaries of a = a + b.
Resources& operator+=(Resources& a, const Resources& b);
Resources& operator-=(Resources& a, const Resources& b);
// True when `need` fits inside `have` on every dimension.
bool Fits(const Resources& need, const Resources& have);
// The larger (smaller) of each dimension.
Resources Max(const Resources& a, const Resources& b);
Resources Min(const Resources& a, const Resources& b);

// Well-known label keys (Kubernetes, Karpenter, Karpenter AWS).
namespace label {
inline constexpr const char* kNodePool = "karpenter.sh/nodepool";
inline constexpr const char* kCapacityType = "karpenter.sh/capacity-type";
inline constexpr const char* kRegistered = "karpenter.sh/registered";
inline constexpr const char* kInitialized = "karpenter.sh/initialized";
inline constexpr const char* kInstanceType = "node.kubernetes.io/instance-type";
inline constexpr const char* kZone = "topology.kubernetes.io/zone";
inline constexpr const char* kArch = "kubernetes.io/arch";
inline constexpr const char* kOs = "kubernetes.io/os";
inline constexpr const char* kHostname = "kubernetes.io/hostname";
inline constexpr const char* kInstanceFamily = "karpenter.k8s.aws/instance-family";
inline constexpr const char* kInstanceSize = "karpenter.k8s.aws/instance-size";
inline constexpr const char* kInstanceCategory = "karpenter.k8s.aws/instance-category";
inline constexpr const char* kInstanceGeneration = "karpenter.k8s.aws/instance-generation";
inline constexpr const char* kInstanceCpu = "karpenter.k8s.aws/instance-cpu";
inline constexpr const char* kInstanceMemory = "karpenter.k8s.aws/instance-memory";
inline constexpr const char* kInstanceCpuManufacturer =
    "karpenter.k8s.aws/instance-cpu-manufacturer";
inline constexpr const char* kInstanceHypervisor = "karpenter.k8s.aws/instance-hypervisor";
inline constexpr const char* kInstanceGpuName = "karpenter.k8s.aws/instance-gpu-name";
inline constexpr const char* kInstanceGpuManufacturer =
    "karpenter.k8s.aws/instance-gpu-manufacturer";
inline constexpr const char* kInstanceGpuCount = "karpenter.k8s.aws/instance-gpu-count";
inline constexpr const char* kInstanceGpuMemory = "karpenter.k8s.aws/instance-gpu-memory";
inline constexpr const char* kInstanceLocalNvme = "karpenter.k8s.aws/instance-local-nvme";
inline constexpr const char* kInstanceEbsBandwidth = "karpenter.k8s.aws/instance-ebs-bandwidth";
inline constexpr const char* kNodeClaim = "karpenter.sh/nodeclaim";
inline constexpr const char* kUnregisteredTaint = "karpenter.sh/unregistered";
inline constexpr const char* kDisruptedTaint = "karpenter.sh/disrupted";
inline constexpr const char* kTerminationFinalizer = "karpenter.sh/termination";
// An EC2NodeClass's: its deletion waits for its NodeClaims and its AWS resources.
inline constexpr const char* kNodeClassFinalizer = "karpenter.k8s.aws/termination";
inline constexpr const char* kDoNotDisrupt = "karpenter.sh/do-not-disrupt";  // Pod/Node annotation.
// Instance tags, as Karpenter's: the cluster's name, and the Node's name once it registers.
inline constexpr const char* kEksClusterName = "eks:eks-cluster-name";
inline constexpr const char* kNameTag = "Name";
}  // namespace label

inline constexpr const char* kCapacityOnDemand = "on-demand";
inline constexpr const char* kCapacitySpot = "spot";
inline constexpr const char* kCapacityReserved = "reserved";

// Extended resource names for accelerators, as the device plugins advertise them.
namespace resource {
inline constexpr const char* kNvidiaGpu = "nvidia.com/gpu";
inline constexpr const char* kAmdGpu = "amd.com/gpu";
inline constexpr const char* kHabanaGaudi = "habana.ai/gaudi";
inline constexpr const char* kNeuron = "aws.amazon.com/neuron";
}  // namespace resource

// "02:14:09", the UTC time of day, "90s" / "5m" / "2h" for a duration, and "$0.0981" from
// micro-dollars per hour.
std::string ClockText(Instant at);
std::string DurationText(Duration d);
std::string DollarsText(MicroUsdPerHour price);

}  // namespace tenon
