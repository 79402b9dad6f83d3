// The scheduler: one provisioning pass over the pending pods, as Karpenter's provisioner runs it.
//
// Pods are taken largest first. Each goes to an existing node or in-flight NodeClaim, else to
// a NodeClaim planned in this pass (fewest pods first), else to a new NodeClaim from the
// heaviest NodePool that can take it. Preferences start out as requirements and are relaxed
// one at a time in Karpenter's order when a pod fits nowhere. Pods that still fit nowhere go
// to the back of the queue; the pass ends when a full turn of the queue places nothing.
#include <algorithm>
#include <cassert>
#include <iterator>

#include "reducers/scheduler_pass.h"

namespace tenon::core::placement {
namespace {

std::string TaintText(const Taint& t) {
  static constexpr const char* kEffects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
  return t.key + (t.value.empty() ? "" : "=" + t.value) + ":" +
         kEffects[static_cast<int>(t.effect)];
}

bool PortsConflict(const HostPort& a, const HostPort& b) {
  if (a.port != b.port || a.protocol != b.protocol) return false;
  bool any_a = a.host_ip.empty() || a.host_ip == "0.0.0.0";
  bool any_b = b.host_ip.empty() || b.host_ip == "0.0.0.0";
  return any_a || any_b || a.host_ip == b.host_ip;
}

std::string Quantity(const Resources& r) {
  std::string s = "cpu " + std::to_string(r.cpu.value) + "m, memory " +
                  std::to_string(r.memory.value / kMebibyte.value) + "Mi";
  for (const auto& [name, n] : r.extended) s += ", " + name + " " + std::to_string(n);
  return s;
}

void DropUnlaunchable(ScheduleResult& result);

// Fits(a + b, have), without making the sum: most planned claims a pod tries are full, and
// the sum copies the extended resources' map.
bool SumFits(const Resources& a, const Resources& b, const Resources& have) {
  if (a.cpu + b.cpu > have.cpu || a.memory + b.memory > have.memory ||
      a.pods + b.pods > have.pods) {
    return false;
  }
  auto fits = [&](const std::string& name, std::int64_t sum) {
    if (sum <= 0) return true;
    auto it = have.extended.find(name);
    return it != have.extended.end() && sum <= it->second;
  };
  for (const auto& [name, quantity] : a.extended) {
    auto other = b.extended.find(name);
    if (!fits(name, quantity + (other == b.extended.end() ? 0 : other->second))) return false;
  }
  for (const auto& [name, quantity] : b.extended) {
    if (!a.extended.contains(name) && !fits(name, quantity)) return false;
  }
  return true;
}

}  // namespace

bool Pass::TolerantOf(const PodView& v, const std::vector<Taint>& taints, std::string* why) const {
  for (const Taint& t : taints) {
    if (t.effect == TaintEffect::kPreferNoSchedule && v.tolerate_prefer_no_schedule) continue;
    if (Tolerates(v.pod->constraints->tolerations, t)) continue;
    if (why != nullptr) *why = "taint " + TaintText(t) + " not tolerated";
    return false;
  }
  return true;
}

bool Pass::PortsFit(const Pod& pod, const Bin& bin) const {
  for (const auto& mine : pod.constraints->host_ports) {
    for (const auto& theirs : bin.host_ports) {
      if (PortsConflict(mine, theirs)) return false;
    }
  }
  return true;
}

bool Pass::VolumesFit(const PodView& v, const Bin& bin) const {
  for (const auto& [driver, ids] : v.volumes) {
    auto limit = bin.volume_limits.find(driver);
    if (limit == bin.volume_limits.end()) continue;
    std::set<std::string> all = ids;
    if (auto used = bin.volumes.find(driver); used != bin.volumes.end()) {
      all.insert(used->second.begin(), used->second.end());
    }
    if (static_cast<std::int64_t>(all.size()) > limit->second) return false;
  }
  return true;
}

bool Pass::TryExisting(PodView& v, Bin& bin, std::size_t index) {
  if (!Fits(v.need, bin.remaining)) return false;
  Resolve(bin);
  auto never = [&] {  // Refused for the rest of the pass and every trial of it.
    auto& refused = refused_existing_[v.shape];
    if (refused.size() < existing_.size()) refused.resize(existing_.size(), false);
    refused[index] = true;
    return false;
  };
  if (!TolerantOf(v, bin.taints, nullptr)) return never();
  bool match =
      v.requirements.Matches([&](const std::string& key) { return bin.labels().Lookup(key); });
  if (!match) return never();
  if (!PortsFit(*v.pod, bin) || !VolumesFit(v, bin)) return false;
  if (!topology_.Check(v, bin.name, &bin.labels(), nullptr, nullptr, nullptr, nullptr, &memo_)) {
    return topology_.RefusalOutlivesTrial(v, bin.name) ? never() : false;
  }
  Save(bin);
  if (hinted_ && !(v.tries == 1 && v.hint == index)) MarkExtra(index);
  bin.remaining -= v.need;
  SetRoom(index, RoomOf(bin));
  topology_.Record(v, bin.name, &bin.labels(), nullptr, nullptr);
  Commit(v, bin);
  v.existing = index;
  return true;
}

// The candidate types that allow `reqs` (null: the candidates already do), hold `requests`,
// honour minValues and fit the NodePool's remaining limits (counting what other planned claims
// already reserve). `why` (optional) says why none is left.
TypeMask Pass::FitTypes(PoolTemplate& t, const TypeMask& candidates, const Requirements* reqs,
                        const Resources& requests, const Bin* claim, std::string* why) {
  TypeMask mask = candidates;
  if (reqs != nullptr) mask &= TypesFor(t, *reqs);
  if (!mask.Any()) {
    if (why != nullptr) *why = "no instance type satisfies " + reqs->Describe();
    return mask;
  }
  bool limited = t.limited;
  Resources available;
  if (limited) {
    Resources own = claim != nullptr ? claim->reservation : Resources{};
    available = t.remaining - (t.reserved - own);
    std::int64_t nodes = t.nodes_remaining - t.nodes_reserved + (claim != nullptr ? 1 : 0);
    if (nodes < 1) {
      if (why != nullptr) *why = "nodepool limit on nodes reached";
      return TypeMask(t.types.size());
    }
  }
  KeepFitting(t, mask, requests);
  bool any_fit = mask.Any();
  if (limited) {
    mask.ForEach([&](std::size_t i) {
      if (!Fits(TypeCapacity(t.types[i]), available)) mask.Clear(i);
    });
  }
  if (!mask.Any()) {
    if (why != nullptr) {
      *why = any_fit ? "no instance type with room for " + Quantity(requests) + " within limits"
                     : "no instance type has room for " + Quantity(requests);
    }
    return mask;
  }
  const Requirements& all = reqs != nullptr ? *reqs : claim->requirements;
  if (!state_.settings.min_values_best_effort && all.HasMinValues()) {
    if (auto missing = MinValuesShortfall(t, mask, all); !missing.empty()) {
      if (why != nullptr) *why = missing;
      return TypeMask(t.types.size());
    }
  }
  return mask;
}

// Why the pod's volumes keep it from being provisioned for, as Karpenter validates a pending
// pod's claims (the pod is ignored, with the reason): a claim that does not exist, a bound one
// whose volume does not, an unbound one without a StorageClass, with one that does not exist, or
// with one that binds at once (Immediate: the volume comes first, and its place decides).
std::string VolumeErrorOf(const State& state, const Pod& pod) {
  for (const auto& name : pod.constraints->volume_claims) {
    auto pvc = state.cluster.pvcs.find(PodKey(pod.ns, name));
    if (pvc == state.cluster.pvcs.end()) return "persistentvolumeclaim " + name + " not found";
    const PersistentVolumeClaim& claim = pvc->second;
    if (!claim.volume_name.empty()) {
      if (!state.cluster.pvs.contains(claim.volume_name)) {
        return "persistentvolumeclaim " + name + ": persistentvolume " + claim.volume_name +
               " not found";
      }
      continue;
    }
    if (claim.storage_class.empty()) {
      return "unbound persistentvolumeclaim " + name + " must define a storage class";
    }
    auto sc = state.cluster.storage_classes.find(claim.storage_class);
    if (sc == state.cluster.storage_classes.end()) {
      return "persistentvolumeclaim " + name + ": storage class " + claim.storage_class +
             " not found";
    }
    if (!sc->second.wait_for_first_consumer) {
      return "persistentvolumeclaim " + name + " is unbound and its storage class binds " +
             "immediately: waiting for its volume";
    }
  }
  return {};
}

bool Pass::TryPlanned(PodView& v, std::size_t index, std::uint64_t epoch) {
  Bin& bin = planned_[index];
  PoolTemplate& t = templates_[bin.pool];
  if (!bin.pods.empty() && !SumFits(bin.requests, v.need, bin.room)) return false;
  Resources requests = bin.requests + v.need;
  if (!TolerantOf(v, bin.taints, nullptr)) return Refuse(v, index, kRefusedForever), false;
  if (!bin.requirements.Compatible(v.requirements, true).empty() || NamesAHost(v)) {
    return Refuse(v, index, kRefusedForever), false;
  }
  if (!PortsFit(*v.pod, bin)) return Refuse(v, index, kRefusedForever), false;
  Topology::Choices chosen;
  bool lasting = false;
  if (!topology_.Check(v, bin.name, nullptr, &bin.requirements, &chosen, &lasting)) {
    Refuse(v, index, lasting ? kRefusedForever : epoch + 1);
    return false;
  }
  // Narrow the claim only when the pod or its topology actually adds a constraint.
  Requirements narrowed;
  bool changed =
      bin.requirements.Narrows(v.requirements) || topology_.Narrows(chosen, bin.requirements);
  if (changed) {
    narrowed = bin.requirements;
    narrowed.Add(v.requirements);
    topology_.Apply(chosen, narrowed);
  }
  TypeMask mask = FitTypes(t, bin.types, changed ? &narrowed : nullptr, requests, &bin, nullptr);
  if (!mask.Any()) return false;
  if (changed) bin.requirements = std::move(narrowed);
  if (bin.pods.empty() || mask != bin.types) {
    bin.types = std::move(mask);
    bin.room = Room(t, bin.types);
    if (t.limited) {
      Resources largest;
      bin.types.ForEach([&](std::size_t i) { largest = Max(largest, TypeCapacity(t.types[i])); });
      t.reserved = t.reserved - bin.reservation + largest;
      bin.reservation = largest;
    }
  }
  bin.requests = std::move(requests);
  topology_.Record(v, bin.name, nullptr, &t, &bin.requirements);
  if (bin.pods.empty()) order_.Add(index);
  Commit(v, bin);
  order_.Bump(index);
  return true;
}

void Pass::Commit(PodView& v, Bin& bin) {
  if (bin.planned) bin.pods.push_back(&v.key);  // Only a planned claim lists its pods.
  for (const auto& p : v.pod->constraints->host_ports) bin.host_ports.push_back(p);
  for (const auto& [driver, ids] : v.volumes) bin.volumes[driver].insert(ids.begin(), ids.end());
  v.target = bin.name;
}

void Pass::Prepare(PodView& v) {
  auto& [groups, scanned] = selecting_[v.shape];
  topology_.Selecting(*v.pod, groups, scanned);
}

bool Pass::TryPlace(PodView& v) {
  Prepare(v);
  std::size_t* resume = ResumeOf(v);
  std::size_t start = resume != nullptr ? *resume : 0;
  bool scan = true;
  if (hinted_ && v.tries == 1 && v.hint != kNoHint) {
    if (PlaceByHint(v)) return true;
    // Every bin up to the hinted one refused it; with no bin hinted, every bin did.
    scan = v.hint != kFitsNoBin;
    if (scan) start = std::max(start, v.hint + 1);
  }
  // Most bins are full for a large pod: when not even the roomiest holds it, skip the scan.
  // (CPU, memory and pods only: the cheap dimensions.)
  if (scan && existing_room_dirty_) {
    existing_room_ = Resources{};
    for (const BinRoom& room : block_room_) {
      existing_room_.cpu = std::max(existing_room_.cpu, room.cpu);
      existing_room_.memory = std::max(existing_room_.memory, room.memory);
      existing_room_.pods = std::max(existing_room_.pods, room.pods);
    }
    existing_room_dirty_ = false;
  }
  if (scan && v.need.cpu <= existing_room_.cpu && v.need.memory <= existing_room_.memory &&
      v.need.pods <= existing_room_.pods) {
    const auto& refused = refused_existing_[v.shape];
    memo_.verdicts.clear();  // Nothing is placed during the scan, so verdicts hold across it.
    memo_.refused_zones.clear();
    for (std::size_t b = start / kRoomBlock; b < block_room_.size(); ++b) {
      if (!Holds(block_room_[b], v.need)) continue;
      const std::size_t end = std::min(existing_.size(), (b + 1) * kRoomBlock);
      for (std::size_t i = std::max(b * kRoomBlock, start); i < end; ++i) {
        if (!Holds(rooms_[i], v.need)) continue;
        if (i < refused.size() && refused[i]) continue;
        if (!memo_.refused_zones.empty()) {
          Resolve(existing_[i]);
          if (std::find(memo_.refused_zones.begin(), memo_.refused_zones.end(),
                        existing_[i].zone) != memo_.refused_zones.end()) {
            continue;
          }
        }
        if (TryExisting(v, existing_[i], i)) {
          if (resume != nullptr) *resume = i;
          return true;
        }
      }
    }
  }
  if (resume != nullptr) *resume = existing_.size();
  std::uint64_t epoch = topology_.Epoch(v);
  if (refused_forever_[v.shape] < planned_.size()) {
    auto& refused = refused_[v.shape];
    refused.resize(planned_.size(), 0);
    for (std::size_t index : order_.claims()) {
      if (refused[index] == kRefusedForever || refused[index] == epoch + 1) continue;
      if (TryPlanned(v, index, epoch)) return true;
    }
  }
  if (planned_.size() >= kNodeClaimsPerBatchMax) return false;
  for (std::size_t p = 0; p < templates_.size(); ++p) {
    PoolTemplate& t = templates_[p];
    // A static NodePool launches for its replicas only, never for pods.
    if (t.nodeclass == nullptr || t.types.empty() || t.pool->replicas) continue;
    Bin bin;
    bin.planned = true;
    bin.pool = p;
    bin.name = PlannedName(planned_.size());
    bin.taints = t.pool->taints;
    bin.requirements = t.requirements;
    bin.types = t.all;
    planned_.push_back(std::move(bin));
    std::size_t index = planned_.size() - 1;
    if (t.limited) t.nodes_reserved++;
    if (TryPlanned(v, index, epoch)) return true;
    if (t.limited) t.nodes_reserved--;
    planned_.pop_back();
  }
  return false;
}

std::size_t* Pass::ResumeOf(const PodView& v) {
  if (!v.groups.empty() || !v.selecting->empty() || !v.volumes.empty() ||
      !v.pod->constraints->host_ports.empty() || !v.need.extended.empty()) {
    return nullptr;
  }
  return &resume_.try_emplace({v.shape, v.need.cpu.value, v.need.memory.value, v.need.pods}, 0)
              .first->second;
}

void Pass::MakeViews(const std::vector<const Pod*>& pods, std::span<const std::size_t> hints,
                     const std::vector<bool>& reported) {
  // A view is made at its pod's first try, so a trial cut short never makes the rest, unless
  // the pod owns topology groups: every group must exist before the first pod is placed, to
  // count it. A hinted pending pod whose outcome is not asked for gets its view only when its
  // base bin is not certain to take it (Defer).
  unmade_.assign(pods.size(), false);
  deferrable_.assign(pods.size(), false);
  for (std::size_t i = 0; i < pods.size(); ++i) {
    PodView& v = views_[i];
    v.deferred = false;
    const std::size_t hint = hints.empty() ? kNoHint : hints[i];
    deferrable_[i] = !hints.empty() && !reported.empty() && !reported[i] && hint < kFitsNoBin;
    if (OwnsTopologyGroups(*pods[i])) {
      MakeView(*pods[i], v);
    } else {
      unmade_[i] = true;
      v.pod = pods[i];
    }
    v.hint = hint;
  }
}

ScheduleResult Pass::Run(const std::vector<const Pod*>& pods, std::span<const std::size_t> hints,
                         const std::vector<bool>& reported, bool until_blocked) {
  assert(hints.empty() || (trial_ && hints.size() == pods.size()));
  assert(reported.empty() || reported.size() == pods.size());
  assert(!until_blocked || reported.size() == pods.size());
  resume_.clear();  // Bins lose room only within one run.
  // The views of the last run are assigned over: a trial's pods reuse their allocations.
  if (views_.size() < pods.size()) views_.resize(pods.size());
  const std::span<PodView> views(views_.data(), pods.size());
  MakeViews(pods, hints, reported);
  std::vector<bool>& unmade = unmade_;
  hinted_ = !hints.empty();
  if (hinted_) {
    extra_.assign(existing_.size(), false);
    missing_.assign(existing_.size(), false);
    for (std::size_t index : gone_) MarkExtra(index);  // Taken away: they refuse every pod.
  }
  std::deque<std::size_t>& queue = queue_;
  queue.clear();
  for (std::size_t i = 0; i < views.size(); ++i) queue.push_back(i);
  // view -> queue length when last tried; a pod seeing the same length again means a full
  // turn of the queue placed nothing.
  constexpr std::size_t kNever = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t>& last_seen = last_seen_;
  last_seen.assign(views.size(), kNever);
  std::size_t turns = 0;
  // Until blocked: while every reported pod so far, in order, landed on an initialized existing
  // bin at its first try, the first one to land on an uninitialized bin decides the answer.
  bool clean = until_blocked;
  std::size_t blocked = kNever;
  while (!queue.empty() && turns < kQueuePassesMax * (views.size() + 1)) {
    ++turns;
    std::size_t i = queue.front();
    if (last_seen[i] == queue.size()) break;
    last_seen[i] = queue.size();
    queue.pop_front();
    PodView& v = views[i];
    if (unmade[i]) {
      unmade[i] = false;
      if (deferrable_[i] && Defer(v)) continue;
      const std::size_t hint = v.hint;
      MakeView(*pods[i], v);
      v.hint = hint;
    }
    bool placed = false;
    do {
      ++v.tries;
      placed = TryPlace(v);
    } while (!placed && Relax(v));
    if (!placed) queue.push_back(i);
    // The first views.size() turns are each pod's first try, in order.
    if (clean && reported[i]) {
      clean = placed && turns <= views.size() && v.target.front() != '#';
      if (clean && Uninitialized(v.existing)) {
        blocked = i;
        break;
      }
    }
  }
  hinted_ = false;
  missing_list_.clear();
  if (blocked != kNever) return CutShort(views.first(blocked + 1), reported);
  return Outcomes(views, reported);
}

ScheduleResult Pass::Outcomes(std::span<PodView> views, const std::vector<bool>& reported) {
  ScheduleResult result;
  result.pods.reserve(views.size());
  result.claims.reserve(planned_.size());
  // The claims first: they copy their pods' keys, which the outcomes then take.
  for (const Bin& bin : planned_) result.claims.push_back(Launch(bin));
  for (std::size_t i = 0; i < views.size(); ++i) {
    PodView& v = views[i];
    if (!reported.empty() && !reported[i]) {
      if (v.deferred || (!v.target.empty() && v.target.front() != '#')) {
        result.existing_placements++;
      }
      continue;
    }
    PodOutcome outcome{std::move(v.key), {}, {}, std::move(v.relaxed)};
    if (!v.target.empty()) {
      outcome.target = std::move(v.target);
      bool planned = outcome.target[0] == '#';
      outcome.reason = planned ? "new nodeclaim" : "fits existing capacity";
      if (!planned) result.existing_placements++;
    } else {
      outcome.reason = Explain(v);
    }
    result.pods.push_back(std::move(outcome));
  }
  DropUnlaunchable(result);
  return result;
}

bool Pass::Uninitialized(std::size_t index) {
  std::int8_t& known = uninitialized_[index];
  if (known < 0) known = UninitializedTarget(state_, std::string(existing_[index].name)) ? 1 : 0;
  return known == 1;
}

ScheduleResult Pass::CutShort(std::span<PodView> views, const std::vector<bool>& reported) {
  ScheduleResult result;
  result.cut_short = true;
  for (std::size_t i = 0; i < views.size(); ++i) {
    if (!reported[i]) continue;
    PodView& v = views[i];
    result.pods.push_back(
        {std::move(v.key), std::move(v.target), "fits existing capacity", std::move(v.relaxed)});
    result.existing_placements++;
  }
  return result;
}

namespace {

// A NodeClaim with no offering to launch is never created: its pods stay pending, with why.
// Planning keeps only types with an offering the claim allows, so this guards what the launch
// choice filters after it (spot dearer than on-demand, the cut for minValues).
void DropUnlaunchable(ScheduleResult& result) {
  constexpr std::size_t kDropped = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> renumbered(result.claims.size(), kDropped);
  std::vector<PlannedClaim> kept;
  for (std::size_t i = 0; i < result.claims.size(); ++i) {
    if (result.claims[i].offerings.empty()) continue;
    renumbered[i] = kept.size();
    kept.push_back(std::move(result.claims[i]));
  }
  if (kept.size() == result.claims.size()) {
    result.claims = std::move(kept);
    return;
  }
  for (PodOutcome& outcome : result.pods) {
    if (outcome.target.empty() || outcome.target[0] != '#') continue;
    const std::size_t i = std::stoul(outcome.target.substr(1));
    if (renumbered[i] != kDropped) {
      outcome.target = "#" + std::to_string(renumbered[i]);
      continue;
    }
    outcome.target.clear();
    outcome.reason = "NodePool " + result.claims[i].nodepool +
                     ": no offering of the instance types it fits is available in the zones "
                     "and capacity types it allows";
  }
  result.claims = std::move(kept);
}

}  // namespace

PlannedClaim Pass::Launch(const Bin& bin) {
  const PlannedClaim* known = nullptr;
  for (const Launched& l : launches_) {
    if (l.pool != bin.pool || l.types != bin.types || l.requirements != bin.requirements) continue;
    known = &l.claim;
    break;
  }
  if (known == nullptr) {
    PlannedClaim claim = ChooseLaunch(templates_[bin.pool], bin);
    if (launches_.size() >= kLaunchesKept) return brief_ ? Brief(claim) : claim;
    launches_.push_back({bin.pool, bin.types, bin.requirements, std::move(claim)});
    launches_.back().claim.pods.clear();
    known = &launches_.back().claim;
  }
  if (brief_) {
    PlannedClaim claim = Brief(*known);
    claim.requests = bin.requests;
    return claim;
  }
  PlannedClaim claim = *known;
  claim.pods = PodKeys(bin);
  claim.requests = bin.requests;
  return claim;
}

PlannedClaim Pass::Brief(const PlannedClaim& full) {
  PlannedClaim claim;
  claim.nodepool = full.nodepool;
  claim.nodeclass = full.nodeclass;
  claim.requests = full.requests;
  claim.capacity_type = full.capacity_type;
  claim.allocation_strategy = full.allocation_strategy;
  if (!full.offerings.empty()) claim.offerings.push_back(full.offerings.front());
  claim.allocatable = full.allocatable;
  return claim;
}

}  // namespace tenon::core::placement

namespace tenon::core {

void ClaimOrder::Swap(std::size_t a, std::size_t b) {
  std::swap(order_[a], order_[b]);
  pos_[order_[a]] = a;
  pos_[order_[b]] = b;
}

void ClaimOrder::Add(std::size_t claim) {
  if (pos_.size() <= claim) {
    pos_.resize(claim + 1);
    count_.resize(claim + 1);
  }
  std::size_t at = order_.size();
  order_.push_back(claim);
  pos_[claim] = at;
  count_[claim] = 0;
  if (start_.empty()) start_.push_back(0);
  // Walk down past every fuller bucket: each gives its first claim to the slot after its end.
  for (std::size_t b = start_.size() - 1; b > 0; --b) {
    std::size_t first = start_[b];
    Swap(at, first);
    start_[b]++;
    at = first;
  }
}

void ClaimOrder::Clear() {
  order_.clear();
  pos_.clear();
  count_.clear();
  start_.clear();
}

void ClaimOrder::Bump(std::size_t claim) {
  std::size_t k = count_[claim];
  if (start_.size() <= k + 1) start_.push_back(order_.size());
  std::size_t last = start_[k + 1] - 1;  // The end of bucket k.
  Swap(pos_[claim], last);
  start_[k + 1]--;
  count_[claim]++;
}

}  // namespace tenon::core

namespace tenon {

ScheduleResult Schedule(const State& state, const std::vector<const Pod*>& pods,
                        const std::set<std::string>& excluded_nodeclaims) {
  using namespace core;
  std::vector<const Pod*> sorted = pods;
  std::sort(sorted.begin(), sorted.end(), PlacedBefore);
  return placement::Pass(state, excluded_nodeclaims).Run(sorted);
}

ScheduleResult Schedule(const State& state, const std::vector<const Pod*>& pods) {
  return Schedule(state, pods, {});
}

ScheduleResult Schedule(const State& state) {
  std::vector<const Pod*> pods;
  // A pod asking for a restricted label is not Karpenter's to launch for: it is ignored, with
  // the reason, and nothing is planned for it (a new node could never carry that label).
  std::vector<PodOutcome> ignored;
  for (const auto& [key, pod] : state.cluster.pods.Provisionable()) {
    if (pods.size() >= kPodsPerBatchMax) break;
    if (std::string why = core::PodRequirementError(*pod); !why.empty()) {
      ignored.push_back({std::string(key), "", why, {}});
      continue;
    }
    if (std::string why = core::placement::VolumeErrorOf(state, *pod); !why.empty()) {
      ignored.push_back({std::string(key), "", why, {}});
      continue;
    }
    pods.push_back(pod);
  }
  ScheduleResult result = Schedule(state, pods);
  std::move(ignored.begin(), ignored.end(), std::back_inserter(result.pods));
  return result;
}

}  // namespace tenon
