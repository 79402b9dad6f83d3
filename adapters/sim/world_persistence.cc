// The world's file: a Cap'n Proto message of World (adapters/sim/world.capnp), whose Kubernetes
// objects the log's codec encodes as events and snapshots carry them, written whole and renamed
// into place, read back whole. What it holds is read as outside input: bytes that are not such a
// message (a truncated file, another kind of file), an enum's number or a pod's phase that its
// type does not have, or an index past the scenario's lists is an error naming the file and the
// field, never a value made up; and the world changes only once the whole file was read and
// checked.
#include <capnp/message.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "adapters/sim/world.capnp.h"
#include "adapters/sim/world.h"
#include "adapters/sim/world_parts.h"
#include "log/codec_objects.h"

namespace tenon::sim {

// What a world file holds, decoded and checked against its types: WorldFile::Restore takes it
// over once it is checked against the scenario too.
struct SavedWorld {
  Nanos now{0};
  bool started = false;
  std::size_t next_workload = 0;
  std::uint64_t next_instance = 1;
  std::uint64_t next_timer = 1;
  std::uint64_t next_pod = 1;
  std::int64_t ami_release = 1;
  std::size_t launch_calls = 0;
  Nanos next_listing{0};
  std::uint64_t next_message = 1;
  std::size_t next_bare_pod = 0;
  std::size_t next_job = 0;
  std::size_t next_action = 0;
  std::map<std::string, SimInstance> instances;
  std::map<std::string, std::string> client_tokens;
  std::map<std::string, std::string> nodeclaims;
  std::set<std::string> deleting;
  std::set<std::string> nodeclass_finalizers;
  std::map<std::string, Resources> planned;
  std::map<std::string, std::string> overestimated;
  std::map<std::string, Node> nodes;
  std::vector<Pod> pods;
  std::map<std::string, std::string> pod_templates;
  std::map<std::string, PersistentVolumeClaim> claims;
  std::map<std::string, PersistentVolume> volumes;
  std::map<std::string, std::int64_t> replicas;
  std::map<std::string, std::int64_t> deployments;
  std::map<std::string, std::int64_t> job_pods_left;
  std::map<std::string, Labels> added_pool_labels;
  std::map<std::string, NodePoolStatus> pool_status;
  std::map<std::pair<std::int64_t, std::uint64_t>, Timer> timers;
};

namespace {

namespace ws = schema;           // The world file's own types (world.capnp).
namespace ks = tenon::schema;    // The log's objects it carries (log/kube.capnp).
namespace codec = log::objects;  // Their encoding.

// What a world file's `format` holds: a Cap'n Proto message without it is not a world file.
constexpr const char* kWorldFormat = "tenon-sim-world/1";

static_assert(static_cast<int>(ws::TimerKind::REGISTER) ==
              static_cast<int>(Timer::Kind::kRegister));
static_assert(static_cast<int>(ws::TimerKind::READY) == static_cast<int>(Timer::Kind::kReady));
static_assert(static_cast<int>(ws::TimerKind::RECLAIM) == static_cast<int>(Timer::Kind::kReclaim));
static_assert(static_cast<int>(ws::TimerKind::JOB_DONE) == static_cast<int>(Timer::Kind::kJobDone));
static_assert(static_cast<int>(ws::TimerKind::LAUNCH_ANSWER) ==
              static_cast<int>(Timer::Kind::kLaunchAnswer));

// A field of the world file holds a value its type does not have (Load names the file).
class BadField : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

kj::StringPtr Text(const std::string& value) {
  return kj::StringPtr(value.c_str(), value.size());
}
std::string Str(capnp::Text::Reader text) {
  return std::string(text.cStr(), text.size());
}

// The path of item `i` of the list at `field`: "nodes[3]".
std::string Item(const std::string& field, std::size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

// `decode` applied to each item of `list`; a value the codec refuses (an enum's number its
// type does not have) is a BadField naming the item: "nodes[3]: unknown taint effect value 7".
template <class List, class Decode>
void EachItem(const char* field, List list, Decode decode) {
  for (unsigned i = 0; i < list.size(); ++i) {
    try {
      decode(list[i], Item(field, i));
    } catch (const log::CodecError& e) {
      throw BadField(Item(field, i) + ": " + e.what());
    }
  }
}

std::set<std::string> TextSet(capnp::List<capnp::Text>::Reader in) {
  std::set<std::string> out;
  for (auto text : in) out.insert(Str(text));
  return out;
}
void PutTextSet(capnp::List<capnp::Text>::Builder out, const std::set<std::string>& values) {
  unsigned i = 0;
  for (const auto& value : values) out.set(i++, Text(value));
}

void PutInstance(ws::Instance::Builder b, const SimInstance& i) {
  b.setId(Text(i.id));
  b.setNodeClaim(Text(i.nodeclaim));
  b.setNodePool(Text(i.nodepool));
  b.setInstanceType(Text(i.instance_type));
  b.setZone(Text(i.zone));
  b.setCapacityType(Text(i.capacity_type));
  b.setPriceMicroUsdHour(i.price.value);
  b.setLaunchedNs(i.launched.value);
  b.setNodeName(Text(i.node_name));
  b.setImageId(Text(i.image_id));
}
SimInstance GetInstance(ws::Instance::Reader r) {
  return {Str(r.getId()),
          Str(r.getNodeClaim()),
          Str(r.getNodePool()),
          Str(r.getInstanceType()),
          Str(r.getZone()),
          Str(r.getCapacityType()),
          MicroUsdPerHour{r.getPriceMicroUsdHour()},
          Nanos{r.getLaunchedNs()},
          Str(r.getNodeName()),
          Str(r.getImageId())};
}

// A pod as the codec reads it; a phase Kubernetes does not have is refused, where the codec
// (which reads what the controller once saw) takes it for Unknown.
Pod GetPod(ks::Pod::Reader r, const std::string& field) {
  const std::string phase = Str(r.getPhase());
  if (PodPhaseText(PodPhaseFrom(phase)) != phase) {
    throw BadField(field + ".phase: \"" + phase + "\" is not a pod phase");
  }
  return codec::Get(r);
}

Timer GetTimer(ws::Timer::Reader r, const std::string& field) {
  const auto kind = static_cast<std::uint16_t>(r.getKind());
  const auto last = static_cast<std::uint16_t>(Timer::Kind::kLaunchAnswer);
  if (kind > last) {
    throw BadField(field + ".kind: " + std::to_string(kind) + " is not a timer kind (0 to " +
                   std::to_string(last) + ")");
  }
  return Timer{static_cast<Timer::Kind>(kind), Str(r.getInstanceId()), r.getCommand()};
}

void DecodeCloud(ws::World::Reader r, SavedWorld& w) {
  for (auto i : r.getInstances()) w.instances[Str(i.getId())] = GetInstance(i);
  w.client_tokens = codec::GetTexts(r.getClientTokens());
  w.nodeclaims = codec::GetTexts(r.getNodeClaims());
  w.deleting = TextSet(r.getDeleting());
  w.nodeclass_finalizers = TextSet(r.getNodeClassFinalizers());
  EachItem("planned", r.getPlanned(), [&](ws::Planned::Reader p, const std::string&) {
    w.planned[Str(p.getNodeClaim())] = codec::Get(p.getAllocatable());
  });
  w.overestimated = codec::GetTexts(r.getOverestimated());
}

void DecodeObjects(ws::World::Reader r, SavedWorld& w) {
  EachItem("nodes", r.getNodes(), [&](ks::Node::Reader n, const std::string&) {
    Node node = codec::Get(n);
    w.nodes[node.name] = std::move(node);
  });
  EachItem("pods", r.getPods(), [&](ks::Pod::Reader p, const std::string& field) {
    w.pods.push_back(GetPod(p, field));
  });
  w.pod_templates = codec::GetTexts(r.getPodTemplates());
  EachItem("claims", r.getClaims(), [&](ks::PersistentVolumeClaim::Reader c, const std::string&) {
    PersistentVolumeClaim claim = codec::Get(c);
    w.claims[PodKey(claim.ns, claim.name)] = std::move(claim);
  });
  EachItem("volumes", r.getVolumes(), [&](ks::PersistentVolume::Reader v, const std::string&) {
    PersistentVolume volume = codec::Get(v);
    w.volumes[volume.name] = std::move(volume);
  });
}

void DecodeControllers(ws::World::Reader r, SavedWorld& w) {
  w.replicas = codec::GetInts(r.getReplicas());
  w.deployments = codec::GetInts(r.getDeployments());
  w.job_pods_left = codec::GetInts(r.getJobPodsLeft());
  for (auto p : r.getAddedPoolLabels()) {
    w.added_pool_labels[Str(p.getNodePool())] = codec::GetTexts(p.getLabels());
  }
  EachItem("poolStatus", r.getPoolStatus(), [&](ws::PoolStatus::Reader p, const std::string&) {
    w.pool_status[Str(p.getNodePool())] = codec::Get(p.getStatus());
  });
  EachItem("timers", r.getTimers(), [&](ws::Timer::Reader t, const std::string& field) {
    w.timers[{t.getAtNs(), t.getSequence()}] = GetTimer(t, field);
  });
}

// Every value of the file, checked against its type.
SavedWorld Decode(ws::World::Reader r) {
  if (r.getFormat() != kWorldFormat) {
    throw BadField("format: \"" + Str(r.getFormat()) + "\", not \"" + kWorldFormat +
                   "\" (not a world file, or one of another version)");
  }
  SavedWorld w;
  w.now = Nanos{r.getNowNs()};
  w.started = r.getStarted();
  w.next_workload = r.getNextWorkload();
  w.next_instance = r.getNextInstance();
  w.next_timer = r.getNextTimer();
  w.next_pod = r.getNextPod();
  w.ami_release = r.getAmiRelease();
  w.launch_calls = r.getLaunchCalls();
  w.next_listing = Nanos{r.getNextListingNs()};
  w.next_message = r.getNextMessage();
  w.next_bare_pod = r.getNextBarePod();
  w.next_job = r.getNextJob();
  w.next_action = r.getNextAction();
  DecodeCloud(r, w);
  DecodeObjects(r, w);
  DecodeControllers(r, w);
  return w;
}

// The file's bytes as a World message, read with the limits outside input needs.
SavedWorld DecodeBytes(const std::string& bytes) {
  if (bytes.empty()) throw BadField("the file is empty");
  if (bytes.front() == '{') {
    throw BadField(
        "it is in the JSON form older versions of tenon wrote, which this version "
        "does not read (start the run again in an empty folder)");
  }
  try {
    return codec::ReadMessage<ws::World>(bytes, "world message",
                                         [](ws::World::Reader r) { return Decode(r); });
  } catch (const log::CodecError& e) {
    throw BadField(std::string(e.what()) + " (a truncated or foreign file)");
  }
}

}  // namespace

// The world's file, with access to the World's private parts (world.h names it a friend).
class WorldFile {
 public:
  static void Restore(World& world, SavedWorld saved);
  static void Save(const World& world);

 private:
  // The saved world must be of the world's scenario: no more actions run than it has, no
  // workload step past its last, no pod of a template it lacks.
  static void CheckOfScenario(const World& world, const SavedWorld& saved);
  // How many of the scenario's actions ran, with the price changes and NodePool edits among
  // them applied again (they are not stored).
  static void RunActionsAgain(World& world, std::size_t actions_run);
  static void SaveCloud(const World& world, ws::World::Builder b);
  static void SaveObjects(const World& world, ws::World::Builder b);
  static void SaveControllers(const World& world, ws::World::Builder b);
  static void WriteWhole(const std::filesystem::path& file, const std::string& bytes);
};

bool World::Load() {
  if (state_file_.empty() || !std::filesystem::exists(state_file_)) return false;
  std::ifstream in(state_file_, std::ios::binary);
  if (!in) throw ScenarioError("cannot read the world file " + state_file_.string());
  const std::string bytes(std::istreambuf_iterator<char>(in), {});
  if (in.bad()) throw ScenarioError("cannot read the world file " + state_file_.string());
  SavedWorld saved;
  try {
    saved = DecodeBytes(bytes);
  } catch (const BadField& e) {
    throw ScenarioError(state_file_.string() + ": damaged world file: " + e.what());
  }
  WorldFile::Restore(*this, std::move(saved));
  return true;
}

void World::Save() const {
  WorldFile::Save(*this);
}

void WorldFile::CheckOfScenario(const World& world, const SavedWorld& saved) {
  const Scenario& scenario = world.scenario_;
  auto another = [&](const std::string& why) {
    return ScenarioError(world.state_file_.string() + ": the world file is of another scenario (" +
                         why + ")");
  };
  if (saved.next_action > scenario.actions.size()) {
    throw another(std::to_string(saved.next_action) + " actions run, the scenario has " +
                  std::to_string(scenario.actions.size()));
  }
  for (const auto& [key, step] : saved.deployments) {
    if (step < 0 || static_cast<std::size_t>(step) >= scenario.workloads.size()) {
      throw another(key + " at workload step " + std::to_string(step) + ", the scenario has " +
                    std::to_string(scenario.workloads.size()));
    }
  }
  for (const auto& [pod, key] : saved.pod_templates) {
    if (world.TemplateOf(key) == nullptr) throw another("no pod template " + key);
  }
}

void WorldFile::Restore(World& w, SavedWorld saved) {
  CheckOfScenario(w, saved);
  w.now_ = saved.now;
  w.started_ = saved.started;
  w.next_workload_ = saved.next_workload;
  w.next_instance_ = saved.next_instance;
  w.next_timer_ = saved.next_timer;
  w.next_pod_ = saved.next_pod;
  w.ami_release_ = saved.ami_release;
  w.launch_calls_ = saved.launch_calls;
  w.next_listing_ = saved.next_listing;
  w.next_message_ = saved.next_message;
  w.next_bare_pod_ = saved.next_bare_pod;
  w.next_job_ = saved.next_job;
  w.instances_ = std::move(saved.instances);
  w.client_tokens_ = std::move(saved.client_tokens);
  w.nodeclaims_ = std::move(saved.nodeclaims);
  w.deleting_ = std::move(saved.deleting);
  w.nodeclass_finalizers_ = std::move(saved.nodeclass_finalizers);
  w.planned_ = std::move(saved.planned);
  w.overestimated_ = std::move(saved.overestimated);
  w.replicas_ = std::move(saved.replicas);
  w.deployments_.clear();
  for (const auto& [key, step] : saved.deployments) w.deployments_[key] = step;
  w.job_pods_left_ = std::move(saved.job_pods_left);
  w.added_pool_labels_ = std::move(saved.added_pool_labels);
  w.pool_status_ = std::move(saved.pool_status);
  w.timers_ = std::move(saved.timers);
  // The world as it was saved replaces the scenario's starting objects.
  w.nodes_ = std::move(saved.nodes);
  for (auto& [name, node] : w.nodes_) w.node_parts_.Share(node, w.pod_parts_.node_names);
  w.claims_ = std::move(saved.claims);
  w.volumes_ = std::move(saved.volumes);
  // A pod's owner is counted from its template as it goes in: the templates first.
  w.pod_template_ = std::move(saved.pod_templates);
  for (auto& pod : saved.pods) w.InsertPod(std::move(pod));
  RunActionsAgain(w, saved.next_action);
}

void WorldFile::RunActionsAgain(World& w, std::size_t actions_run) {
  w.next_action_ = actions_run;
  for (std::size_t i = 0; i < actions_run; ++i) {
    const Action& action = w.scenario_.actions[i];
    if (action.kind == Action::Kind::kPriceChange) w.ChangePrice(action);
    if (action.kind == Action::Kind::kCatalogRefresh) w.catalog_ = action.catalog;
    if (action.kind == Action::Kind::kApplyNodePool) w.ApplyNodePool(action.nodepool);
  }
}

void WorldFile::Save(const World& w) {
  if (w.state_file_.empty()) return;
  capnp::MallocMessageBuilder message;
  auto b = message.initRoot<ws::World>();
  b.setFormat(kWorldFormat);
  b.setNowNs(w.now_.value);
  b.setStarted(w.started_);
  b.setNextWorkload(w.next_workload_);
  b.setNextInstance(w.next_instance_);
  b.setNextTimer(w.next_timer_);
  b.setNextPod(w.next_pod_);
  b.setAmiRelease(w.ami_release_);
  b.setLaunchCalls(w.launch_calls_);
  b.setNextListingNs(w.next_listing_.value);
  b.setNextMessage(w.next_message_);
  b.setNextBarePod(w.next_bare_pod_);
  b.setNextJob(w.next_job_);
  b.setNextAction(w.next_action_);
  SaveCloud(w, b);
  SaveObjects(w, b);
  SaveControllers(w, b);
  WriteWhole(w.state_file_, codec::ToBytes(message));
}

void WorldFile::SaveCloud(const World& w, ws::World::Builder b) {
  auto instances = b.initInstances(w.instances_.size());
  unsigned i = 0;
  for (const auto& [id, instance] : w.instances_) PutInstance(instances[i++], instance);
  codec::Put(b.initClientTokens(w.client_tokens_.size()), w.client_tokens_);
  codec::Put(b.initNodeClaims(w.nodeclaims_.size()), w.nodeclaims_);
  PutTextSet(b.initDeleting(w.deleting_.size()), w.deleting_);
  PutTextSet(b.initNodeClassFinalizers(w.nodeclass_finalizers_.size()), w.nodeclass_finalizers_);
  auto planned = b.initPlanned(w.planned_.size());
  i = 0;
  for (const auto& [claim, resources] : w.planned_) {
    planned[i].setNodeClaim(Text(claim));
    codec::Put(planned[i++].initAllocatable(), resources);
  }
  codec::Put(b.initOverestimated(w.overestimated_.size()), w.overestimated_);
}

void WorldFile::SaveObjects(const World& w, ws::World::Builder b) {
  auto nodes = b.initNodes(w.nodes_.size());
  unsigned i = 0;
  for (const auto& [name, node] : w.nodes_) codec::Put(nodes[i++], node);
  auto pods = b.initPods(w.pods_.size());
  std::map<std::string, std::string> templates;
  i = 0;
  for (const auto& [key, pod] : w.pods_) {
    codec::Put(pods[i++], pod);
    if (auto t = w.pod_template_.find(key); t != w.pod_template_.end()) templates.insert(*t);
  }
  codec::Put(b.initPodTemplates(templates.size()), templates);
  auto claims = b.initClaims(w.claims_.size());
  i = 0;
  for (const auto& [key, claim] : w.claims_) codec::Put(claims[i++], claim);
  auto volumes = b.initVolumes(w.volumes_.size());
  i = 0;
  for (const auto& [name, volume] : w.volumes_) codec::Put(volumes[i++], volume);
}

void WorldFile::SaveControllers(const World& w, ws::World::Builder b) {
  codec::Put(b.initReplicas(w.replicas_.size()), w.replicas_);
  auto deployments = b.initDeployments(w.deployments_.size());
  unsigned i = 0;
  for (const auto& [key, step] : w.deployments_) {
    deployments[i].setKey(Text(key));
    deployments[i++].setValue(static_cast<std::int64_t>(step));
  }
  codec::Put(b.initJobPodsLeft(w.job_pods_left_.size()), w.job_pods_left_);
  auto labels = b.initAddedPoolLabels(w.added_pool_labels_.size());
  i = 0;
  for (const auto& [pool, added] : w.added_pool_labels_) {
    labels[i].setNodePool(Text(pool));
    codec::Put(labels[i++].initLabels(added.size()), added);
  }
  auto status = b.initPoolStatus(w.pool_status_.size());
  i = 0;
  for (const auto& [pool, s] : w.pool_status_) {
    status[i].setNodePool(Text(pool));
    codec::Put(status[i++].initStatus(), s);
  }
  auto timers = b.initTimers(w.timers_.size());
  i = 0;
  for (const auto& [key, t] : w.timers_) {
    timers[i].setAtNs(key.first);
    timers[i].setSequence(key.second);
    timers[i].setKind(static_cast<ws::TimerKind>(t.kind));
    timers[i].setInstanceId(Text(t.instance_id));
    timers[i++].setCommand(t.command);
  }
}

// The file is written whole beside its place and renamed into it: a reader (or a run killed
// while it is written) finds the world before or after, never part of one.
void WorldFile::WriteWhole(const std::filesystem::path& file, const std::string& bytes) {
  auto tmp = file;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw ScenarioError("cannot write " + tmp.string());
    }
  }
  std::filesystem::rename(tmp, file);
}

}  // namespace tenon::sim
