// The scheduler's pass (reducers/scheduler.cc), shared by the files that make it up: the
// existing bins and trials (scheduler_bins.cc), the pods' views (scheduler_views.cc) and the
// placement itself (scheduler.cc). Private to reducers/.
#pragma once

#include <deque>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "reducers/launch.h"
#include "reducers/scheduling.h"
#include "reducers/templates.h"
#include "reducers/topology.h"

namespace tenon::core::placement {

constexpr std::uint64_t kRefusedForever = std::numeric_limits<std::uint64_t>::max();
// PodView::hint: none (not a pending pod, or no base run), or no existing bin took the pod.
constexpr std::size_t kNoHint = std::numeric_limits<std::size_t>::max();
constexpr std::size_t kFitsNoBin = kNoHint - 1;

// Whether the pod's requirements name the hosts it may run on: no new node can be one of them
// (Karpenter gives its NodeClaim templates a hostname no node has, for that reason).
inline bool NamesAHost(const PodView& v) {
  const ValueSet* host = v.requirements.Get(label::kHostname);
  return host != nullptr && !host->complement && !host->values.empty();
}

// Whether making the pod's view adds topology groups (Pass::Refresh): spread or pod
// (anti-)affinity.
inline bool OwnsTopologyGroups(const Pod& pod) {
  const PodConstraints& c = *pod.constraints;
  return !c.topology_spread.empty() || !c.pod_affinity_required.empty() ||
         !c.pod_affinity_preferred.empty() || !c.pod_anti_affinity_required.empty() ||
         !c.pod_anti_affinity_preferred.empty();
}

// Why the pod's volumes keep it from being provisioned for ("" when they do not).
std::string VolumeErrorOf(const State& state, const Pod& pod);

class Pass {
 public:
  Pass(const State& state, const std::set<std::string>& excluded)
      : state_(state),
        excluded_(excluded),
        excluded_nodes_(NodesOf(state, excluded)),
        templates_(BuildTemplates(state)),
        topology_(state, templates_, excluded_nodes_) {
    AllocatableCache per_nodeclass;
    for (PoolTemplate& t : templates_) FillTypes(state, t, per_nodeclass);
    BuildExistingBins();
    topology_.AddExistingAntiAffinity();
  }

  // `hints`, when given, one per pod: the pending pods' PodView::hint, from BaseRun.
  // `reported`, when given, one per pod: the pods whose outcomes the result lists.
  // `until_blocked` (with `reported`): stop at the first reported pod that lands on an
  // uninitialized bin while every reported pod before it landed on an initialized existing
  // bin (Simulation::Without).
  ScheduleResult Run(const std::vector<const Pod*>& pods, std::span<const std::size_t> hints = {},
                     const std::vector<bool>& reported = {}, bool until_blocked = false);

  // Consolidation's trials all place the same pending pods, and each trial changes few bins:
  // those of the node it takes away and those its pods land on. The base run places the pending
  // pods alone and returns where each first try landed (an existing bin's index, or kFitsNoBin).
  // A trial given these hints knows, for a pending pod's first try, that every bin it has not
  // changed answers as in the base run: the bins before the hinted one refuse the pod (its
  // first fit passed them) and the hinted one takes it. A bin that only gained pods still
  // refuses what it refused. So only the bins that lost some of the base run's pods, and the
  // hinted one, need trying. For pods whose placement reads nothing but the bin: no topology
  // spread, pod (anti-)affinity or volume claims, and no bound pod's anti-affinity.
  std::vector<std::size_t> BaseRun(const std::vector<const Pod*>& pending);

  // Trials (consolidation's what-if): the removals' nodes and the pods bound there are taken
  // away, Run places the pods, and EndTrial undoes all of it. Needs a pass that has planned
  // nothing. `brief`: the trial's planned claims are brief (Simulation::Without without
  // offerings).
  void BeginTrial(const std::vector<Simulation::Removal>& removals, bool brief);
  void EndTrial();

 private:
  void BuildExistingBins();
  // Nodes no pod goes to: being terminated, or tainted for a disruption.
  std::set<std::string> Leaving() const;
  // The existing nodes' bins; -> their index by node name.
  NameIndex<std::size_t> AddNodeBins(const std::set<std::string>& leaving);
  // A claim's registering node as the claim will make it: startup taints gone, its labels.
  void CountClaimOnNode(Bin& bin, const NodeClaim& claim, const NodePool& pool);
  void AddClaimBins(const std::set<std::string>& leaving, const NameIndex<std::size_t>& node_bins);
  // Takes the pods bound to the bin's node out of its room (their ports and volumes too).
  void AddBound(Bin& bin, const PodTable::Bound& bound);
  // An existing node's bin reads its labels and zone from the node when first needed: most
  // bins of a full cluster never hold the pod a pass tries.
  void Resolve(Bin& bin);
  Labels ClaimLabels(const NodeClaim& claim, const NodePool& pool) const;
  void AddVolumes(const Pod& pod, std::map<std::string, std::set<std::string>>& out) const;
  // Makes `v` the pod's view (assigned over whatever view it held, reusing its allocations).
  void MakeView(const Pod& pod, PodView& v);
  // Run's views of `pods`, each with its hint, left unmade (unmade_) until the pod's first try.
  void MakeViews(const std::vector<const Pod*>& pods, std::span<const std::size_t> hints,
                 const std::vector<bool>& reported);
  void Prepare(PodView& v);
  void Refresh(PodView& v);
  std::size_t ShapeOf(const PodView& v);
  void Refuse(const PodView& v, std::size_t index, std::uint64_t until);
  bool Relax(PodView& v);
  bool TryPlace(PodView& v);
  // A hinted pending pod's first try: the bins before its hinted one that lost pods, then the
  // hinted one. Marks the hinted bin as missing the pod when the pod does not land there.
  bool PlaceByHint(PodView& v);
  void MarkExtra(std::size_t index);
  void MarkMissing(std::size_t index);
  // A hinted pending pod's first try, its view not made yet, when it is certain to land on its
  // hinted bin: that bin misses none of the base run's pods (and has the room, if it gained
  // some), and no bin before it that misses some has the room. Charges the bin for it.
  bool Defer(PodView& v);
  bool TryExisting(PodView& v, Bin& bin, std::size_t index);
  bool TryPlanned(PodView& v, std::size_t index, std::uint64_t epoch);
  bool TolerantOf(const PodView& v, const std::vector<Taint>& taints, std::string* why) const;
  bool VolumesFit(const PodView& v, const Bin& bin) const;
  bool PortsFit(const Pod& pod, const Bin& bin) const;
  TypeMask FitTypes(PoolTemplate& t, const TypeMask& candidates, const Requirements* reqs,
                    const Resources& requests, const Bin* claim, std::string* why);
  std::string Explain(PodView& v);
  void Commit(PodView& v, Bin& bin);
  // Whether the existing bin is not initialized yet (UninitializedTarget), looked up once.
  bool Uninitialized(std::size_t index);
  // Run's answer: the claims it planned and the reported pods' outcomes.
  ScheduleResult Outcomes(std::span<PodView> views, const std::vector<bool>& reported);
  // Run's answer when it stopped once blocked: the reported pods' outcomes up to the last view.
  ScheduleResult CutShort(std::span<PodView> views, const std::vector<bool>& reported);

  static std::set<std::string> NodesOf(const State& state, const std::set<std::string>& claims) {
    std::set<std::string> nodes;
    for (const auto& name : claims) {
      auto claim = state.lifecycle.nodeclaims.find(name);
      if (claim != state.lifecycle.nodeclaims.end() && !claim->second.node_name.empty()) {
        nodes.insert(claim->second.node_name);
      }
    }
    return nodes;
  }

  const State& state_;
  const std::set<std::string>& excluded_;  // NodeClaims treated as gone.
  std::set<std::string> excluded_nodes_;   // Their nodes.
  std::vector<PoolTemplate> templates_;
  Topology topology_;
  std::vector<Bin> existing_;
  std::vector<std::int8_t> uninitialized_;  // Per existing bin: -1 not looked up yet, 0 or 1.
  NameIndex<std::size_t> existing_index_;   // The same, for a trial's lookups.
  std::vector<Bin> planned_;
  // An existing bin as it was before a trial changed it.
  struct SavedBin {
    std::size_t index = 0;
    Resources remaining;
    std::size_t pods = 0;
    std::size_t host_ports = 0;
    std::map<std::string, std::set<std::string>> volumes;
  };
  bool trial_ = false;
  // While a hinted Run lasts, how its existing bins differ from the base run's at the same
  // point of the pending pods' first tries: holding pods the base run's did not hold (or taken
  // away), and missing pods the base run's held (also listed, in scan order).
  bool hinted_ = false;
  std::vector<bool> extra_;
  std::vector<bool> missing_;
  std::vector<std::size_t> missing_list_;
  std::vector<bool> unmade_;      // Run's: the views it has not made yet.
  std::vector<bool> deferrable_;  // Run's: the pods Defer may place without a view.
  bool brief_ = false;            // This trial's planned claims are brief.
  std::vector<SavedBin> saved_bins_;
  std::vector<bool> bin_saved_;
  std::vector<std::size_t> gone_;
  // Per existing bin, what the scan over them reads first, packed for the cache: its CPU,
  // memory and pod room and whether a trial took it away.
  struct BinRoom {
    Millicores cpu{0};
    Bytes memory{0};
    std::int64_t pods = 0;
    bool gone = false;
  };
  static BinRoom RoomOf(const Bin& bin) {
    return {bin.remaining.cpu, bin.remaining.memory, bin.remaining.pods, bin.gone};
  }
  std::vector<BinRoom> rooms_;
  // The most room any bin of each block of kRoomBlock bins holds (gone bins hold none), so the
  // scan skips a block of full bins at one look, in the same first-fit order.
  static constexpr std::size_t kRoomBlock = 32;
  std::vector<BinRoom> block_room_;
  void SetRoom(std::size_t index, const BinRoom& room);
  void RefreshBlock(std::size_t block);
  static bool Holds(const BinRoom& room, const Resources& need) {
    return !room.gone && need.cpu <= room.cpu && need.memory <= room.memory &&
           need.pods <= room.pods;
  }
  // CPU, memory and pods: the most any existing bin still holds (recomputed after a change).
  Resources existing_room_;
  bool existing_room_dirty_ = true;
  std::vector<std::pair<Resources, std::int64_t>> saved_reserved_;  // Per template.
  void Save(const Bin& bin);
  ClaimOrder order_;
  std::map<std::string, std::size_t> shapes_;  // shape signature -> id
  std::uint64_t stamps_ = 0;                   // PodView::stamp, never reused in a pass.
  // [shape][planned claim]: refused for good (kRefusedForever), or while the shape's
  // topology epoch + 1 equals the value; 0 when never refused.
  std::vector<std::vector<std::uint64_t>> refused_;
  std::vector<std::size_t> refused_forever_;  // [shape]
  // [shape][existing bin]: refused by taints, requirements or a hostname spread or
  // anti-affinity count, which no later placement or trial can undo.
  std::vector<std::vector<bool>> refused_existing_;
  Topology::Memo memo_;
  // First fit, resumed. Within one Run existing bins only lose room, so a bin that refused a
  // pod refuses the next pod of the same shape and size when nothing but room and the shape
  // decides (no topology, host ports, volumes or extended resources): such a pod's scan starts
  // where the last one of its shape and size stopped. Per (shape, cpu, memory, pods): the bin
  // it was placed on, or existing_.size() when none took it. Null when the pod is not such.
  std::map<std::tuple<std::size_t, std::int64_t, std::int64_t, std::int64_t>, std::size_t> resume_;
  std::size_t* ResumeOf(const PodView& v);
  // Views as MakeView first builds them, for pods without volume claims: such a view depends
  // only on the pod's namespace, constraints and labels (its requests, name and stamp are set
  // per pod), which the pods of one template share. Keyed by those three, by address: the
  // state, and so every address, is unchanged while the pass lives.
  std::map<std::tuple<const void*, const void*, const void*>, PodView> base_views_;
  // ChooseLaunch's answers: what a planned claim launches depends on its pool, types and
  // requirements, not its pods, and consolidation's trials plan the same few claims over and
  // over. A short list, searched in order.
  struct Launched {
    std::size_t pool = 0;
    TypeMask types;
    Requirements requirements;
    PlannedClaim claim;
  };
  static constexpr std::size_t kLaunchesKept = 32;
  std::vector<Launched> launches_;
  PlannedClaim Launch(const Bin& bin);
  // "#<index>", kept for the pass: a planned bin's name.
  std::string_view PlannedName(std::size_t index) {
    while (planned_names_.size() <= index) {
      planned_names_.push_back("#" + std::to_string(planned_names_.size()));
    }
    return planned_names_[index];
  }
  std::deque<std::string> planned_names_;
  static PlannedClaim Brief(const PlannedClaim& full);
  // [shape]: the topology groups selecting the shape's pods, and how many groups were seen.
  std::deque<std::pair<std::vector<std::size_t>, std::size_t>> selecting_;
  std::vector<PodView> views_;     // Run's, kept between runs (only the first pods.size() count).
  std::deque<std::size_t> queue_;  // Run's queue and when each view was last tried, kept
  std::vector<std::size_t> last_seen_;  // between runs for their allocations.
};

}  // namespace tenon::core::placement
