// The workload controllers: Deployments' ReplicaSets, StatefulSets (with their claims),
// Jobs, DaemonSets and the scenario's bare pods, and the volume provisioner.
#include "adapters/sim/world.h"

#include <algorithm>
#include <cassert>

#include "adapters/sim/world_parts.h"

namespace tenon::sim {
namespace {

// The constraints a scenario's workload gives its pods: a nodeSelector and tolerations.
template <class Workload>
PodConstraints Placement(const Workload& w) {
  PodConstraints c;
  c.node_selector = w.node_selector;
  c.tolerations = w.tolerations;
  return c;
}

}  // namespace

std::vector<Event> World::ScaleWorkloads() {
  std::vector<Event> events;
  while (record_.next_workload < scenario_.workloads.size() &&
         scenario_.start + scenario_.workloads[record_.next_workload].at <= record_.now) {
    const WorkloadStep& step = scenario_.workloads[record_.next_workload++];
    // A step that only scales (no requests given) keeps the deployment's pod template.
    std::string key = step.ns + "/" + step.name;
    auto known = record_.deployments.find(key);
    bool scale_only = known != record_.deployments.end() && step.template_key.empty() &&
                      step.requests == Resources{};
    const WorkloadStep& pod_template = scale_only ? scenario_.workloads[known->second] : step;
    auto existing = PodsOf(step.ns, step.name);
    std::int64_t have = static_cast<std::int64_t>(existing.size());
    // Scale down removes the pods of the lowest controller.kubernetes.io/pod-deletion-cost
    // first, then the newest, as a ReplicaSet prefers.
    std::sort(existing.begin(), existing.end(), [](const auto& a, const auto& b) {
      if (a->second.deletion_cost != b->second.deletion_cost) {
        return a->second.deletion_cost < b->second.deletion_cost;
      }
      const std::string &x = a->second.uid, &y = b->second.uid;
      return x.size() != y.size() ? x.size() > y.size() : x > y;
    });
    for (std::int64_t i = 0; i < have - step.replicas; ++i) {
      events.push_back(PodDeleted{existing[i]->second.ns, existing[i]->second.name});
      ErasePod(existing[i]);
      room_may_have_changed_ = true;
    }
    for (std::int64_t i = have; i < step.replicas; ++i) AddWorkloadPod(pod_template, events);
    record_.replicas[key] = step.replicas;
    if (!scale_only) record_.deployments[key] = record_.next_workload - 1;
  }
  return events;
}

// What a deployment's and a job's pods share: a numbered name and uid, the owner, the template.
template <class Template>
Pod World::TemplatePod(const Template& t, const char* owner_kind) {
  Pod pod;
  pod.ns = t.ns;
  pod.name = t.name + "-" + std::to_string(record_.next_pod);
  pod.uid = "uid-" + std::to_string(record_.next_pod++);
  pod.requests = t.requests;
  pod.owner_kind = owner_kind;
  pod.created = record_.now;
  pod.labels = Labels{{"app", t.name}};
  pod.constraints = Placement(t);
  return pod;
}

Pod World::FromTemplate(const std::string& template_key, const std::string& ns,
                        const std::string& name, const char* owner_kind) {
  Pod pod = *TemplateOf(template_key);
  pod.ns = ns;
  pod.name = name;
  pod.uid = "uid-" + std::to_string(record_.next_pod++);
  pod.owner_kind = owner_kind;
  pod.created = record_.now;
  pod.unschedulable = false;  // The scheduler has not looked at it yet.
  record_.pod_template[PodKey(ns, name)] = template_key;
  return pod;
}

void World::AddWorkloadPod(const WorkloadStep& step, std::vector<Event>& events) {
  if (step.template_key.empty()) {
    events.push_back(AddPending(NewPod(step)));
    return;
  }
  std::string name = step.name + "-" + std::to_string(record_.next_pod);
  if (step.stateful) {
    // A StatefulSet's pods are named by ordinal: the lowest one missing comes back.
    std::int64_t ordinal = 0;
    while (pods_.contains(PodKey(step.ns, step.name + "-" + std::to_string(ordinal)))) ++ordinal;
    name = step.name + "-" + std::to_string(ordinal);
  }
  Pod pod =
      FromTemplate(step.template_key, step.ns, name, step.stateful ? "StatefulSet" : "ReplicaSet");
  if (step.stateful) {
    for (auto& e : ClaimsFor(step, pod)) events.push_back(std::move(e));
  }
  events.push_back(AddPending(std::move(pod)));
}

std::vector<Event> World::ClaimsFor(const WorkloadStep& step, Pod& pod) {
  std::vector<Event> events;
  PodConstraints& constraints = pod.constraints.Mutable();
  for (const auto& t : step.claim_templates) {
    const std::string name = t.name + "-" + pod.name;
    constraints.volume_claims.push_back(name);
    // The claim outlives its pod, as a StatefulSet's does: a replacement finds its volume.
    auto [it, fresh] = record_.claims.try_emplace(
        PodKey(step.ns, name), PersistentVolumeClaim{step.ns, name, t.storage_class, ""});
    if (!fresh) continue;
    if (const PersistentVolume* volume = ProvisionAtOnce(it->second)) {
      events.push_back(PersistentVolumeUpserted{*volume});
    }
    events.push_back(PersistentVolumeClaimUpserted{it->second});
  }
  return events;
}

const PersistentVolume* World::ProvisionAtOnce(PersistentVolumeClaim& claim) {
  auto sc = storage_classes_.find(claim.storage_class);
  if (!claim.volume_name.empty() || sc == storage_classes_.end() ||
      sc->second.wait_for_first_consumer) {
    return nullptr;
  }
  // The provisioner picks the zone, knowing nothing of the pods: the first the class allows,
  // else the first the cloud offers.
  std::string zone;
  for (const auto& term : sc->second.allowed_topologies) {
    for (const auto& r : term.requirements) {
      if (r.key == label::kZone && !r.values.empty() && zone.empty()) zone = r.values.front();
    }
  }
  if (zone.empty()) {
    for (const auto& type : catalog_) {
      for (const auto& o : type.offerings) {
        if (zone.empty() || o.zone < zone) zone = o.zone;
      }
    }
  }
  PersistentVolume volume;
  volume.name = "pv-" + claim.ns + "-" + claim.name;
  volume.csi_driver = sc->second.provisioner;
  if (!zone.empty()) {
    volume.node_affinity.push_back({{{std::string(label::kZone), RequirementOp::kIn, {zone}}}});
  }
  claim.volume_name = volume.name;
  return &(record_.volumes[volume.name] = volume);
}

std::vector<Event> World::ProvisionFor(const Pod& pod) {
  std::vector<Event> events;
  const Node& node = record_.nodes.at(pod.node_name.str());
  for (const auto& name : pod.constraints->volume_claims) {
    auto claim = record_.claims.find(PodKey(pod.ns.str(), name));
    if (claim == record_.claims.end() || !claim->second.volume_name.empty()) continue;
    PersistentVolume volume;
    volume.name = "pv-" + pod.ns.str() + "-" + name;
    if (auto sc = storage_classes_.find(claim->second.storage_class);
        sc != storage_classes_.end()) {
      volume.csi_driver = sc->second.provisioner;
    }
    // The volume lives in the zone of the node it was made for.
    if (auto zone = node.labels.Lookup(label::kZone)) {
      volume.node_affinity.push_back(
          {{{std::string(label::kZone), RequirementOp::kIn, {std::string(*zone)}}}});
    }
    claim->second.volume_name = volume.name;
    record_.volumes[volume.name] = volume;
    events.push_back(PersistentVolumeUpserted{volume});
    events.push_back(PersistentVolumeClaimUpserted{claim->second});
  }
  return events;
}

// Bare pods of the scenario appear at their time, bound when they name their node.
std::vector<Event> World::CreatePods() {
  std::vector<Event> events;
  while (record_.next_bare_pod < scenario_.pods.size() &&
         scenario_.pods[record_.next_bare_pod].created <= record_.now) {
    Pod pod = scenario_.pods[record_.next_bare_pod++];
    if (!pod.node_name.empty() && !record_.nodes.contains(pod.node_name.str())) {
      pod.node_name = SharedText();  // Its node is gone: the pod waits to be scheduled.
      pod.phase = PodPhase::kPending;
    }
    if (!pod.node_name.empty()) pod_parts_.node_names.Intern(pod.node_name.SharedForInterning());
    pod.unschedulable = false;  // The simulated scheduler looks at it afresh.
    const std::string key = PodKey(pod.ns, pod.name);
    if (auto adopted = scenario_.adopted.find(key); adopted != scenario_.adopted.end()) {
      record_.pod_template[key] = adopted->second;  // A replica of that workload from now on.
    }
    events.push_back(PodUpserted{InsertPod(std::move(pod))});
  }
  return events;
}

Pod World::NewPod(const WorkloadStep& step) {
  Pod pod = TemplatePod(step, "ReplicaSet");
  if (!step.labels.empty()) pod.labels = PodLabels(step);
  pod.do_not_disrupt = step.do_not_disrupt;
  pod.do_not_disrupt_for = step.do_not_disrupt_for;
  pod.termination_grace = step.termination_grace;
  pod.priority_class = step.priority_class;
  pod.priority = step.priority;
  if (step.zone_spread_max_skew > 0) {
    pod.constraints.Mutable().topology_spread.push_back(
        ZoneSpread(step.zone_spread_max_skew, step.name));
  }
  return pod;
}

PodUpserted World::AddPending(Pod pod) {
  assert(pod.node_name.empty());
  return PodUpserted{InsertPod(std::move(pod))};
}

Pod World::NewJobPod(const Job& job) {
  Pod pod = job.template_key.empty()
                ? TemplatePod(job, "Job")
                : FromTemplate(job.template_key, job.ns,
                               job.name + "-" + std::to_string(record_.next_pod), "Job");
  pod.labels.Mutable()["job-name"] = job.name;
  return pod;
}

std::int64_t World::JobPodsAtOnce(const Job& job, std::int64_t left) const {
  return job.parallelism > 0 ? std::min(left, job.parallelism) : left;
}

// The Job controller: a job's pods appear at its time.
std::vector<Event> World::StartJobs() {
  std::vector<Event> events;
  while (record_.next_job < scenario_.jobs.size() &&
         scenario_.start + scenario_.jobs[record_.next_job].at <= record_.now) {
    const Job& job = scenario_.jobs[record_.next_job++];
    record_.job_pods_left[job.ns + "/" + job.name] += job.pods;
    for (std::int64_t i = 0; i < JobPodsAtOnce(job, job.pods); ++i) {
      events.push_back(AddPending(NewJobPod(job)));
    }
  }
  return events;
}

// The ReplicaSet controller: replaces pods that were evicted or deleted.
std::vector<Event> World::TopUp() {
  std::vector<Event> events;
  if (!pods_removed_) return events;  // Nothing went away since the last top-up.
  pods_removed_ = false;
  for (const auto& [key, index] : record_.deployments) {
    const WorkloadStep& step = scenario_.workloads[index];
    const std::int64_t have = PodsCountOf(step.ns, step.name);
    for (std::int64_t i = have; i < record_.replicas[key]; ++i) AddWorkloadPod(step, events);
  }
  // The Job controller replaces a job's pods evicted before they finished.
  for (const Job& job : scenario_.jobs) {
    auto left = record_.job_pods_left.find(job.ns + "/" + job.name);
    if (left == record_.job_pods_left.end()) continue;
    const std::int64_t have = PodsCountOf(job.ns, job.name);
    for (std::int64_t i = have; i < JobPodsAtOnce(job, left->second); ++i) {
      events.push_back(AddPending(NewJobPod(job)));
    }
  }
  return events;
}

Pod World::DaemonPod(const DaemonSetSpec& d) const {
  if (const Pod* made_from = TemplateOf(d.template_key)) {
    Pod pod = *made_from;
    pod.owner_kind = "DaemonSet";
    return pod;
  }
  Pod pod;
  pod.ns = d.ns;
  pod.requests = d.requests;
  pod.owner_kind = "DaemonSet";
  pod.constraints = Placement(d);
  return pod;
}

std::vector<Event> World::PlaceDaemonPods(const Node& node) {
  std::vector<Event> events;
  for (const auto& d : scenario_.daemonsets) {
    Pod pod = DaemonPod(d);
    // The DaemonSet controller's own filter: the node's taints and the pod's node affinity.
    if (!TaintsTolerated(pod, node) || !NodeAffinityMatches(pod, node)) continue;
    pod.ns = d.ns;
    if (d.template_key.empty()) pod.labels = Labels{{"app", d.name}};
    pod.name = d.name + "-" + node.name.substr(0, node.name.find('.'));
    pod.uid = "uid-" + std::to_string(record_.next_pod++);
    pod.created = record_.now;
    pod.node_name = node.name;
    pod.phase = PodPhase::kRunning;
    events.push_back(PodUpserted{InsertPod(std::move(pod))});
  }
  return events;
}

void World::StartJobTimer(const Pod& pod) {
  for (const Job& job : scenario_.jobs) {
    if (job.ns == pod.ns && job.name == pod.labels->at("job-name")) {
      AddTimer(record_.now + job.run_for, Timer{Timer::Kind::kJobDone, PodKey(pod.ns, pod.name)});
      return;
    }
  }
}

}  // namespace tenon::sim
