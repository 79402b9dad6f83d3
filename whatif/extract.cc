// The recorded inputs of a log read back out as a simulation scenario (ScenarioFromLog in
// whatif/whatif.h): workloads, their scaling and finishing, DaemonSets, PDBs, the catalog,
// interruptions and the cloud's out-of-capacity answers.
#include <algorithm>
#include <iterator>
#include <set>

#include "log/codec.h"
#include "whatif/whatif.h"

namespace tenon::whatif {
namespace {

// A pod's workload: a Job's pods by their job-name label, a deployment's by app label (else
// the name without its last "-suffix").
struct Group {
  std::string ns;
  std::string name;
  bool job = false;
  auto operator<=>(const Group&) const = default;
};

Group GroupOf(const Pod& pod) {
  if (pod.owner_kind == "Job") {
    auto it = pod.labels->find("job-name");
    if (it != pod.labels->end()) return {pod.ns, it->second, true};
  }
  auto app = pod.labels->find("app");
  if (app != pod.labels->end()) return {pod.ns, app->second, false};
  return {pod.ns, pod.name.substr(0, pod.name.rfind('-')), false};
}

struct TrackedPod {
  Group group;
  Shared<Labels> labels;
  std::string node;
  std::optional<Instant> bound;
  bool running = false;
};

struct GroupState {
  Pod model;                  // The last pod that arrived: the template.
  std::int64_t live = 0;      // Workload arrivals minus departures (a deployment's replicas).
  std::int64_t emitted = -1;  // Replicas of the last step written.
  std::int64_t debt = 0;      // Pods the controller removed, not yet replaced.
  std::int64_t arrived_now = 0;
  Duration run_for{0};  // Jobs: longest bound-to-finished time seen.
};

struct PdbSample {
  std::int64_t healthy = 0;
  std::int64_t want = 0;
  std::int64_t allowed = 0;
};

// Reads the recorded inputs out of a log, event by event. Events a world tick produced are
// written before that tick's Tick, so they take its time; command results follow a Tick and
// take that one's.
class Extractor {
 public:
  explicit Extractor(std::vector<std::string>& notes) : notes_(notes) {}

  void OnEvent(const Event& event);
  void OnOutput(const log::OutputRecord& output);
  sim::Scenario Finish();

 private:
  void OnTick(Instant now);
  void OnPod(const Pod& pod);
  void OnPodDeleted(const std::string& key);
  void OnLaunched(const FleetLaunched& launched);
  void OnErrors(const std::vector<FleetError>& errors);
  void OnInterruption(const InterruptionReceived& message);
  void OnPdb(const PodDisruptionBudget& pdb);
  void OnNode(const Node& node);
  void OnNodePool(const NodePool& pool);
  void OnNodeClaimDeletionRequested(const std::string& name);
  void OnListed(const InstancesListed& listed);
  sim::Action OfferingAction(sim::Action::Kind kind, const std::string& offering, Instant at) const;
  sim::WorkloadStep StepOf(const Group& group, const GroupState& state) const;
  sim::Budget BudgetOf(const std::string& key) const;
  Duration Since(Instant at) const { return at - start_; }
  // When an event the world produced in a tick happened: that tick's end, the next Tick's time.
  Instant WorldTickTime() const { return last_tick_ + tick_; }

  std::vector<std::string>& notes_;
  sim::Scenario s_;
  bool have_start_ = false, have_catalog_ = false, have_settings_ = false;
  Instant start_, last_tick_;
  Duration tick_{0};
  std::map<std::string, NodePool> pools_;
  std::map<std::string, NodeClass> classes_;
  std::map<std::string, NodeOverlay> overlays_;  // Each NodeOverlay as first recorded.
  std::map<std::string, sim::DaemonSetSpec> daemonsets_;
  std::map<std::string, TrackedPod> pods_;
  std::map<Group, GroupState> groups_;
  std::set<std::string> evicting_;                      // Pods the core asked to evict/delete.
  std::map<std::uint64_t, std::string> evict_command_;  // Command id -> its pod.
  std::map<std::uint64_t, Instant> launch_command_;     // LaunchInstance id -> when issued.
  std::set<std::string> gone_nodes_;
  std::map<std::string, bool> node_ready_;
  std::map<std::string, std::string> offering_of_instance_;
  std::map<std::string, Instant> launched_at_;  // Provider id -> when its launch was issued.
  std::map<std::string, Instant> appeared_at_;  // Node name -> when it registered.
  std::vector<Duration> registration_, ready_, latency_;
  std::map<std::string, std::vector<Instant>> ice_;  // Offering -> when answered out of capacity.
  std::map<std::string, PdbSample> pdb_first_;       // First sample allowing a disruption.
  std::map<std::string, std::vector<PdbSample>> pdb_samples_;
  std::map<std::string, PodDisruptionBudget> pdbs_;
  std::map<std::string, NodePool> served_pools_;  // Each NodePool as last recorded.
  // NodeClaims deleted (by the controller, or seen deleted by hand), instances the controller
  // terminated or an interruption message named, and instances found gone: any other instance
  // that goes was terminated by hand.
  std::set<std::string> deleted_claims_, terminated_, interrupted_, gone_;
  std::map<std::string, std::string> offering_of_claim_;  // NodeClaim -> its instance's offering.
  std::map<std::string, std::string> claim_of_instance_, provider_of_instance_;
  std::map<std::string, std::string> node_of_provider_;  // Provider id -> node name.
  std::map<std::string, Instant> not_ready_at_;          // Node -> when it last went NotReady.
  std::vector<InstanceType> last_catalog_;
  std::size_t interruptions_skipped_ = 0;
  std::size_t pool_deletions_ = 0;
  // Events of the tick in progress that take the next Tick's time.
  std::vector<InterruptionReceived> pending_interruptions_;
};

void Extractor::OnEvent(const Event& event) {
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, Tick>) {
          OnTick(e.now);
        } else if constexpr (std::is_same_v<T, ControllerStarted>) {
          if (!have_settings_) s_.seed = e.seed, s_.settings = e.settings;
          have_settings_ = true;
        } else if constexpr (std::is_same_v<T, CatalogRefreshed>) {
          if (!have_catalog_) {
            s_.catalog = e.instance_types;
          } else if (e.instance_types != last_catalog_) {
            sim::Action a;
            a.at = Since(WorldTickTime());
            a.kind = sim::Action::Kind::kCatalogRefresh;
            a.catalog = e.instance_types;
            s_.actions.push_back(std::move(a));
          }
          last_catalog_ = e.instance_types;
          have_catalog_ = true;
        } else if constexpr (std::is_same_v<T, NodePoolUpserted>) {
          OnNodePool(e.nodepool);
        } else if constexpr (std::is_same_v<T, NodePoolDeleted>) {
          ++pool_deletions_;
        } else if constexpr (std::is_same_v<T, NodeClassUpserted>) {
          classes_.try_emplace(e.nodeclass.name, e.nodeclass);
        } else if constexpr (std::is_same_v<T, NodeOverlayUpserted>) {
          overlays_.try_emplace(e.overlay.name, e.overlay);
        } else if constexpr (std::is_same_v<T, DaemonSetUpserted>) {
          const Pod& p = e.daemonset.pod;
          daemonsets_.try_emplace(
              e.daemonset.ns + "/" + e.daemonset.name,
              sim::DaemonSetSpec{e.daemonset.ns, e.daemonset.name, p.requests,
                                 p.constraints->node_selector, p.constraints->tolerations, ""});
        } else if constexpr (std::is_same_v<T, PodUpserted>) {
          OnPod(e.pod);
        } else if constexpr (std::is_same_v<T, PodDeleted>) {
          OnPodDeleted(PodKey(e.ns, e.name));
        } else if constexpr (std::is_same_v<T, NodeUpserted>) {
          OnNode(e.node);
        } else if constexpr (std::is_same_v<T, NodeDeleted>) {
          gone_nodes_.insert(e.name);
        } else if constexpr (std::is_same_v<T, FleetLaunched>) {
          OnLaunched(e);
        } else if constexpr (std::is_same_v<T, FleetFailed>) {
          OnErrors(e.errors);
        } else if constexpr (std::is_same_v<T, CommandFailed>) {
          if (auto it = evict_command_.find(e.command.value); it != evict_command_.end()) {
            evicting_.erase(it->second);
          }
        } else if constexpr (std::is_same_v<T, InterruptionReceived>) {
          interrupted_.insert(e.instance_id);
          pending_interruptions_.push_back(e);
        } else if constexpr (std::is_same_v<T, PodDisruptionBudgetUpserted>) {
          OnPdb(e.pdb);
        } else if constexpr (std::is_same_v<T, NodeClaimDeletionRequested>) {
          OnNodeClaimDeletionRequested(e.name);
        } else if constexpr (std::is_same_v<T, InstancesListed>) {
          OnListed(e);
        }
      },
      event);
}

void Extractor::OnOutput(const log::OutputRecord& output) {
  for (const Command& c : output.commands) {
    if (const auto* evict = std::get_if<EvictPod>(&c.body)) {
      evicting_.insert(PodKey(evict->ns, evict->name));
      evict_command_[c.id.value] = PodKey(evict->ns, evict->name);
    } else if (const auto* del = std::get_if<DeletePod>(&c.body)) {
      evicting_.insert(PodKey(del->ns, del->name));
      evict_command_[c.id.value] = PodKey(del->ns, del->name);
    } else if (std::holds_alternative<LaunchInstance>(c.body)) {
      launch_command_[c.id.value] = last_tick_;
    } else if (const auto* claim = std::get_if<DeleteNodeClaim>(&c.body)) {
      deleted_claims_.insert(claim->name);
    } else if (const auto* term = std::get_if<TerminateInstance>(&c.body)) {
      terminated_.insert(term->instance_id);
    }
  }
}

void Extractor::OnTick(Instant now) {
  if (!have_start_) {
    start_ = now;
    have_start_ = true;
  } else if (tick_.value == 0 && now > last_tick_) {
    tick_ = now - last_tick_;
  }
  last_tick_ = now;
  for (auto& [group, state] : groups_) {
    if (group.job) {
      if (state.arrived_now > 0) {
        sim::Job job;
        job.at = Since(now);
        job.ns = group.ns;
        job.name = group.name;
        job.pods = state.arrived_now;
        job.requests = state.model.requests;
        job.node_selector = state.model.constraints->node_selector;
        job.tolerations = state.model.constraints->tolerations;
        s_.jobs.push_back(std::move(job));
      }
    } else if (state.live != state.emitted) {
      sim::WorkloadStep step = StepOf(group, state);
      step.at = Since(now);
      s_.workloads.push_back(std::move(step));
      state.emitted = state.live;
    }
    state.arrived_now = 0;
  }
  for (const auto& m : pending_interruptions_) OnInterruption(m);
  pending_interruptions_.clear();
}

sim::WorkloadStep Extractor::StepOf(const Group& group, const GroupState& state) const {
  const Pod& p = state.model;
  sim::WorkloadStep step;
  step.ns = group.ns;
  step.name = group.name;
  step.replicas = state.live;
  step.requests = p.requests;
  step.node_selector = p.constraints->node_selector;
  step.tolerations = p.constraints->tolerations;
  step.labels = *p.labels;
  step.do_not_disrupt = p.do_not_disrupt;
  step.do_not_disrupt_for = p.do_not_disrupt_for;
  step.termination_grace = p.termination_grace;
  step.priority_class = p.priority_class;
  step.priority = p.priority;
  if (!p.constraints->topology_spread.empty())
    step.zone_spread_max_skew = p.constraints->topology_spread.front().max_skew;
  return step;
}

// A new pod is the workload's arrival, unless it replaces one the controller removed; a known
// pod bound to a node starts running there.
void Extractor::OnPod(const Pod& pod) {
  if (pod.owner_kind == "DaemonSet") return;
  const std::string key = PodKey(pod.ns, pod.name);
  auto [it, fresh] = pods_.try_emplace(key);
  TrackedPod& tracked = it->second;
  tracked.labels = pod.labels;
  if (fresh) {
    tracked.group = GroupOf(pod);
    GroupState& state = groups_[tracked.group];
    state.model = pod;
    if (state.debt > 0) {
      --state.debt;
    } else {
      ++state.live;
      ++state.arrived_now;
    }
  }
  if (!pod.node_name.empty() && tracked.node.empty()) {
    tracked.node = pod.node_name;
    // Bound in a world tick: it runs from that tick's time, the next Tick's.
    tracked.bound = WorldTickTime();
  }
  tracked.running = pod.phase == PodPhase::kRunning && !pod.node_name.empty();
}

// The controller removed it (an eviction, a deletion, its node gone): the workload replaces
// it. Otherwise the workload let it go: a deployment scaled down, or a Job's pod finished.
void Extractor::OnPodDeleted(const std::string& key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return;
  const TrackedPod tracked = it->second;
  pods_.erase(it);
  GroupState& state = groups_[tracked.group];
  const bool removed = evicting_.erase(key) > 0 || gone_nodes_.contains(tracked.node);
  if (removed) {
    ++state.debt;
    return;
  }
  --state.live;
  if (tracked.group.job && tracked.bound) {
    state.run_for = std::max(state.run_for, WorldTickTime() - *tracked.bound);
  }
}

void Extractor::OnNode(const Node& node) {
  node_of_provider_[node.provider_id] = node.name;
  if (!node.ready && node_ready_[node.name]) {
    not_ready_at_[node.name] = WorldTickTime();
  }
  if (!appeared_at_.contains(node.name)) {
    const Instant now = WorldTickTime();
    appeared_at_[node.name] = now;
    if (auto l = launched_at_.find(node.provider_id); l != launched_at_.end()) {
      registration_.push_back(now - l->second);
    }
  }
  if (node.ready && !node_ready_[node.name]) {
    ready_.push_back(WorldTickTime() - appeared_at_[node.name]);
  }
  node_ready_[node.name] = node.ready;
}

// The first version of each NodePool is the recorded configuration; each change after it is an
// edit made during the run, carried over at its time.
void Extractor::OnNodePool(const NodePool& pool) {
  pools_.try_emplace(pool.name, pool);
  auto [it, fresh] = served_pools_.try_emplace(pool.name, pool);
  if (fresh || it->second == pool) return;
  it->second = pool;
  sim::Action a;
  a.at = Since(WorldTickTime());
  a.kind = sim::Action::Kind::kApplyNodePool;
  a.nodepool = pool;
  s_.actions.push_back(std::move(a));
}

void Extractor::OnNodeClaimDeletionRequested(const std::string& name) {
  auto offering = offering_of_claim_.find(name);
  if (offering == offering_of_claim_.end() || !deleted_claims_.insert(name).second) return;
  s_.actions.push_back(OfferingAction(sim::Action::Kind::kDeleteNodeClaimOfOffering,
                                      offering->second, WorldTickTime()));
}

// An instance launched for a NodeClaim that a listing no longer shows, which the controller
// neither terminated nor drained and no interruption message named, was terminated by hand:
// when its node went NotReady, else by this listing.
void Extractor::OnListed(const InstancesListed& listed) {
  std::set<std::string> present;  // As the garbage collector counts them: not going away.
  for (const auto& i : listed.instances) {
    if (i.state != "terminated" && i.state != "shutting-down") present.insert(i.id);
  }
  for (const auto& [id, offering] : offering_of_instance_) {
    if (present.contains(id) || gone_.contains(id) || terminated_.contains(id) ||
        interrupted_.contains(id) || deleted_claims_.contains(claim_of_instance_[id])) {
      continue;
    }
    gone_.insert(id);
    Instant at = WorldTickTime();
    if (auto node = node_of_provider_.find(provider_of_instance_[id]);
        node != node_of_provider_.end() && not_ready_at_.contains(node->second)) {
      at = not_ready_at_.at(node->second);
    }
    s_.actions.push_back(
        OfferingAction(sim::Action::Kind::kTerminateInstanceOfOffering, offering, at));
  }
}

// An action at `at` on an instance of `offering` ("type/zone/capacity-type").
sim::Action Extractor::OfferingAction(sim::Action::Kind kind, const std::string& offering,
                                      Instant at) const {
  const auto first = offering.find('/'), second = offering.find('/', first + 1);
  sim::Action a;
  a.at = Since(at);
  a.kind = kind;
  a.instance_type = offering.substr(0, first);
  a.zone = offering.substr(first + 1, second - first - 1);
  a.capacity_type = offering.substr(second + 1);
  return a;
}

void Extractor::OnLaunched(const FleetLaunched& launched) {
  offering_of_instance_[launched.instance_id] =
      OfferingKey(launched.instance_type, launched.zone, launched.capacity_type);
  offering_of_claim_[launched.nodeclaim] = offering_of_instance_[launched.instance_id];
  claim_of_instance_[launched.instance_id] = launched.nodeclaim;
  provider_of_instance_[launched.instance_id] = launched.provider_id;
  auto issued = launch_command_.find(launched.command.value);
  const Instant at = issued == launch_command_.end() ? last_tick_ : issued->second;
  // An answer that came back later than the call arrived in a world tick (the next Tick's).
  if (last_tick_ > at) latency_.push_back(WorldTickTime() - at);
  launched_at_[launched.provider_id] = at;
  OnErrors(launched.errors);
}

void Extractor::OnErrors(const std::vector<FleetError>& errors) {
  for (const auto& e : errors) {
    if (e.code != ErrorCode::kInsufficientCapacity) continue;
    ice_[OfferingKey(e.instance_type, e.zone, e.capacity_type)].push_back(last_tick_);
  }
}

void Extractor::OnInterruption(const InterruptionReceived& message) {
  auto offering = offering_of_instance_.find(message.instance_id);
  if (offering == offering_of_instance_.end()) {
    ++interruptions_skipped_;
    return;
  }
  sim::Action a =
      OfferingAction(sim::Action::Kind::kInterruptOffering, offering->second, last_tick_);
  a.interruption = message.kind;
  a.detail = message.detail;
  s_.actions.push_back(std::move(a));
}

// A PodDisruptionBudget's status, with the cluster as it stood: how many of its pods were
// healthy and how many its deployment wanted, to tell minAvailable from maxUnavailable.
void Extractor::OnPdb(const PodDisruptionBudget& pdb) {
  const std::string key = pdb.ns + "/" + pdb.name;
  pdbs_[key] = pdb;
  PdbSample sample;
  for (const auto& [pod, tracked] : pods_) {
    if (tracked.group.ns != pdb.ns || !SelectorMatches(pdb.selector, *tracked.labels)) continue;
    if (tracked.running && node_ready_[tracked.node]) ++sample.healthy;
  }
  // The replicas wanted of the deployments it selects, as the simulated PDB controller counts.
  for (const auto& [group, state] : groups_) {
    if (group.job || group.ns != pdb.ns) continue;
    if (SelectorMatches(pdb.selector, *state.model.labels)) sample.want += state.live;
  }
  sample.allowed = pdb.disruptions_allowed;
  pdb_samples_[key].push_back(sample);
  if (sample.allowed > 0) pdb_first_.try_emplace(key, sample);
}

// minAvailable or maxUnavailable, whichever explains more of the recorded statuses.
sim::Budget Extractor::BudgetOf(const std::string& key) const {
  const PodDisruptionBudget& pdb = pdbs_.at(key);
  sim::Budget budget;
  budget.ns = pdb.ns;
  budget.name = pdb.name;
  budget.selector = pdb.selector;
  auto first = pdb_first_.find(key);
  if (first == pdb_first_.end()) {
    std::int64_t most = 0;
    for (const auto& s : pdb_samples_.at(key)) most = std::max(most, s.want);
    budget.min_available = most;
    notes_.push_back("PodDisruptionBudget " + key +
                     " never allowed a disruption in the recording: modelled as minAvailable " +
                     std::to_string(most));
    return budget;
  }
  const std::int64_t min_available = first->second.healthy - first->second.allowed;
  const std::int64_t max_unavailable =
      first->second.allowed + first->second.want - first->second.healthy;
  std::size_t min_misses = 0, max_misses = 0;
  for (const auto& s : pdb_samples_.at(key)) {
    min_misses += std::max<std::int64_t>(0, s.healthy - min_available) != s.allowed;
    max_misses += std::max<std::int64_t>(0, max_unavailable - (s.want - s.healthy)) != s.allowed;
  }
  if (max_misses < min_misses) {
    budget.max_unavailable = max_unavailable;
  } else {
    budget.min_available = min_available;
  }
  if (std::min(min_misses, max_misses) > 0) {
    notes_.push_back("PodDisruptionBudget " + key + ": " +
                     std::to_string(std::min(min_misses, max_misses)) + " of " +
                     std::to_string(pdb_samples_.at(key).size()) +
                     " recorded statuses differ from the budget inferred");
  }
  return budget;
}

Duration Median(std::vector<Duration> values, Duration otherwise) {
  if (values.empty()) return otherwise;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

sim::Scenario Extractor::Finish() {
  if (!have_start_) throw sim::ScenarioError("the log holds no Tick: nothing to re-run");
  if (!have_catalog_) throw sim::ScenarioError("the log holds no CatalogRefreshed event");
  if (tick_.value == 0) tick_ = kSecond;
  s_.name = "recorded inputs";
  s_.start = start_;
  s_.duration = last_tick_ - start_;
  s_.tick = tick_;
  for (const auto& [name, pool] : pools_) s_.nodepools.push_back(pool);
  for (const auto& [name, nodeclass] : classes_) s_.nodeclasses.push_back(nodeclass);
  for (const auto& [name, overlay] : overlays_) s_.overlays.push_back(overlay);
  for (const auto& [key, ds] : daemonsets_) s_.daemonsets.push_back(ds);
  for (const auto& [key, pdb] : pdbs_) s_.budgets.push_back(BudgetOf(key));
  for (auto& job : s_.jobs) {
    const GroupState& state = groups_.at(Group{job.ns, job.name, true});
    // A Job none of whose pods finished in the recording runs past its end.
    job.run_for = state.run_for.value > 0 ? state.run_for : s_.duration + tick_;
  }
  s_.cloud.registration_delay = Median(registration_, s_.cloud.registration_delay);
  s_.cloud.ready_delay = Median(ready_, s_.cloud.ready_delay);
  s_.cloud.launch_latency = Median(latency_, Duration{0});
  for (const auto& [offering, times] : ice_) {
    for (Instant at : times) {
      auto& windows = s_.cloud.capacity_windows;
      const Duration from = Since(at), until = from + kRecordedAnswerWindow;
      if (!windows.empty() && windows.back().offering == offering && windows.back().until >= from) {
        windows.back().until = until;  // Overlapping answers make one window.
      } else {
        windows.push_back({offering, from, until});
      }
    }
  }
  std::stable_sort(s_.actions.begin(), s_.actions.end(),
                   [](const auto& a, const auto& b) { return a.at < b.at; });
  if (pool_deletions_ > 0) {
    notes_.push_back(std::to_string(pool_deletions_) +
                     " NodePool deletions recorded during the run: not carried over");
  }
  if (interruptions_skipped_ > 0) {
    notes_.push_back(std::to_string(interruptions_skipped_) +
                     " interruption messages about instances the log never saw launched: not "
                     "carried over");
  }
  return s_;
}

}  // namespace

sim::Scenario ScenarioFromLog(const log::EventLog& log, std::vector<std::string>& notes) {
  Extractor extractor(notes);
  log.Scan(log.FirstSeq(), Seq{0}, [&](const log::Record& record) {
    auto entry = log::DecodeEntry(record.payload);
    if (const auto* event = std::get_if<Event>(&entry)) {
      extractor.OnEvent(*event);
    } else {
      extractor.OnOutput(std::get<log::OutputRecord>(entry));
    }
    return true;
  });
  return extractor.Finish();
}

}  // namespace tenon::whatif
