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
  WorldRecord record;
  std::vector<Pod> pods;
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
          Instant{r.getLaunchedNs()},
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
  for (auto i : r.getInstances()) w.record.instances[Str(i.getId())] = GetInstance(i);
  w.record.client_tokens = codec::GetTexts(r.getClientTokens());
  w.record.nodeclaims = codec::GetTexts(r.getNodeClaims());
  w.record.deleting = TextSet(r.getDeleting());
  w.record.nodeclass_finalizers = TextSet(r.getNodeClassFinalizers());
  EachItem("planned", r.getPlanned(), [&](ws::Planned::Reader p, const std::string&) {
    w.record.planned[Str(p.getNodeClaim())] = codec::Get(p.getAllocatable());
  });
  w.record.overestimated = codec::GetTexts(r.getOverestimated());
}

void DecodeObjects(ws::World::Reader r, SavedWorld& w) {
  EachItem("nodes", r.getNodes(), [&](ks::Node::Reader n, const std::string&) {
    Node node = codec::Get(n);
    w.record.nodes[node.name] = std::move(node);
  });
  EachItem("pods", r.getPods(), [&](ks::Pod::Reader p, const std::string& field) {
    w.pods.push_back(GetPod(p, field));
  });
  w.record.pod_template = codec::GetTexts(r.getPodTemplates());
  EachItem("claims", r.getClaims(), [&](ks::PersistentVolumeClaim::Reader c, const std::string&) {
    PersistentVolumeClaim claim = codec::Get(c);
    w.record.claims[PodKey(claim.ns, claim.name)] = std::move(claim);
  });
  EachItem("volumes", r.getVolumes(), [&](ks::PersistentVolume::Reader v, const std::string&) {
    PersistentVolume volume = codec::Get(v);
    w.record.volumes[volume.name] = std::move(volume);
  });
}

void DecodeControllers(ws::World::Reader r, SavedWorld& w) {
  w.record.replicas = codec::GetInts(r.getReplicas());
  for (const auto& [key, step] : codec::GetInts(r.getDeployments())) {
    if (step < 0) throw BadField("deployments." + key + ": workload step " + std::to_string(step));
    w.record.deployments[key] = static_cast<std::size_t>(step);
  }
  w.record.job_pods_left = codec::GetInts(r.getJobPodsLeft());
  for (auto p : r.getAddedPoolLabels()) {
    w.record.added_pool_labels[Str(p.getNodePool())] = codec::GetTexts(p.getLabels());
  }
  EachItem("poolStatus", r.getPoolStatus(), [&](ws::PoolStatus::Reader p, const std::string&) {
    w.record.pool_status[Str(p.getNodePool())] = codec::Get(p.getStatus());
  });
  for (auto o : r.getOverlayStatus()) {
    w.record.overlay_status[Str(o.getNodeOverlay())] = codec::Get(o.getStatus());
  }
  EachItem("timers", r.getTimers(), [&](ws::Timer::Reader t, const std::string& field) {
    w.record.timers[{t.getAtNs(), t.getSequence()}] = GetTimer(t, field);
  });
}

// Every value of the file, checked against its type.
SavedWorld Decode(ws::World::Reader r) {
  if (r.getFormat() != kWorldFormat) {
    throw BadField("format: \"" + Str(r.getFormat()) + "\", not \"" + kWorldFormat +
                   "\" (not a world file, or one of another version)");
  }
  SavedWorld w;
  w.record.now = Instant{r.getNowNs()};
  w.record.started = r.getStarted();
  w.record.next_workload = r.getNextWorkload();
  w.record.next_instance = r.getNextInstance();
  w.record.next_timer = r.getNextTimer();
  w.record.next_pod = r.getNextPod();
  w.record.ami_release = r.getAmiRelease();
  w.record.launch_calls = r.getLaunchCalls();
  w.record.next_listing = Instant{r.getNextListingNs()};
  w.record.next_message = r.getNextMessage();
  w.record.next_bare_pod = r.getNextBarePod();
  w.record.next_job = r.getNextJob();
  w.record.next_action = r.getNextAction();
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
  const WorldRecord& record = saved.record;
  if (record.next_action > scenario.actions.size()) {
    throw another(std::to_string(record.next_action) + " actions run, the scenario has " +
                  std::to_string(scenario.actions.size()));
  }
  for (const auto& [key, step] : record.deployments) {
    if (step >= scenario.workloads.size()) {
      throw another(key + " at workload step " + std::to_string(step) + ", the scenario has " +
                    std::to_string(scenario.workloads.size()));
    }
  }
  for (const auto& [pod, key] : record.pod_template) {
    if (world.TemplateOf(key) == nullptr) throw another("no pod template " + key);
  }
}

void WorldFile::Restore(World& w, SavedWorld saved) {
  CheckOfScenario(w, saved);
  // The world as it was saved replaces the scenario's starting objects.
  const std::size_t actions_run = saved.record.next_action;
  w.record_ = std::move(saved.record);
  for (auto& [name, node] : w.record_.nodes) w.node_parts_.Share(node, w.pod_parts_.node_names);
  // A pod's owner is counted from its template as it goes in: the templates came first.
  for (auto& pod : saved.pods) w.InsertPod(std::move(pod));
  RunActionsAgain(w, actions_run);
}

void WorldFile::RunActionsAgain(World& w, std::size_t actions_run) {
  w.record_.next_action = actions_run;
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
  b.setNowNs(w.record_.now.value);
  b.setStarted(w.record_.started);
  b.setNextWorkload(w.record_.next_workload);
  b.setNextInstance(w.record_.next_instance);
  b.setNextTimer(w.record_.next_timer);
  b.setNextPod(w.record_.next_pod);
  b.setAmiRelease(w.record_.ami_release);
  b.setLaunchCalls(w.record_.launch_calls);
  b.setNextListingNs(w.record_.next_listing.value);
  b.setNextMessage(w.record_.next_message);
  b.setNextBarePod(w.record_.next_bare_pod);
  b.setNextJob(w.record_.next_job);
  b.setNextAction(w.record_.next_action);
  SaveCloud(w, b);
  SaveObjects(w, b);
  SaveControllers(w, b);
  WriteWhole(w.state_file_, codec::ToBytes(message));
}

void WorldFile::SaveCloud(const World& w, ws::World::Builder b) {
  auto instances = b.initInstances(w.record_.instances.size());
  unsigned i = 0;
  for (const auto& [id, instance] : w.record_.instances) PutInstance(instances[i++], instance);
  codec::Put(b.initClientTokens(w.record_.client_tokens.size()), w.record_.client_tokens);
  codec::Put(b.initNodeClaims(w.record_.nodeclaims.size()), w.record_.nodeclaims);
  PutTextSet(b.initDeleting(w.record_.deleting.size()), w.record_.deleting);
  PutTextSet(b.initNodeClassFinalizers(w.record_.nodeclass_finalizers.size()),
             w.record_.nodeclass_finalizers);
  auto planned = b.initPlanned(w.record_.planned.size());
  i = 0;
  for (const auto& [claim, resources] : w.record_.planned) {
    planned[i].setNodeClaim(Text(claim));
    codec::Put(planned[i++].initAllocatable(), resources);
  }
  codec::Put(b.initOverestimated(w.record_.overestimated.size()), w.record_.overestimated);
}

void WorldFile::SaveObjects(const World& w, ws::World::Builder b) {
  auto nodes = b.initNodes(w.record_.nodes.size());
  unsigned i = 0;
  for (const auto& [name, node] : w.record_.nodes) codec::Put(nodes[i++], node);
  auto pods = b.initPods(w.pods_.size());
  std::map<std::string, std::string> templates;
  i = 0;
  for (const auto& [key, pod] : w.pods_) {
    codec::Put(pods[i++], pod);
    if (auto t = w.record_.pod_template.find(key); t != w.record_.pod_template.end())
      templates.insert(*t);
  }
  codec::Put(b.initPodTemplates(templates.size()), templates);
  auto claims = b.initClaims(w.record_.claims.size());
  i = 0;
  for (const auto& [key, claim] : w.record_.claims) codec::Put(claims[i++], claim);
  auto volumes = b.initVolumes(w.record_.volumes.size());
  i = 0;
  for (const auto& [name, volume] : w.record_.volumes) codec::Put(volumes[i++], volume);
}

void WorldFile::SaveControllers(const World& w, ws::World::Builder b) {
  codec::Put(b.initReplicas(w.record_.replicas.size()), w.record_.replicas);
  auto deployments = b.initDeployments(w.record_.deployments.size());
  unsigned i = 0;
  for (const auto& [key, step] : w.record_.deployments) {
    deployments[i].setKey(Text(key));
    deployments[i++].setValue(static_cast<std::int64_t>(step));
  }
  codec::Put(b.initJobPodsLeft(w.record_.job_pods_left.size()), w.record_.job_pods_left);
  auto labels = b.initAddedPoolLabels(w.record_.added_pool_labels.size());
  i = 0;
  for (const auto& [pool, added] : w.record_.added_pool_labels) {
    labels[i].setNodePool(Text(pool));
    codec::Put(labels[i++].initLabels(added.size()), added);
  }
  auto status = b.initPoolStatus(w.record_.pool_status.size());
  i = 0;
  for (const auto& [pool, s] : w.record_.pool_status) {
    status[i].setNodePool(Text(pool));
    codec::Put(status[i++].initStatus(), s);
  }
  auto overlays = b.initOverlayStatus(w.record_.overlay_status.size());
  i = 0;
  for (const auto& [name, s] : w.record_.overlay_status) {
    overlays[i].setNodeOverlay(Text(name));
    codec::Put(overlays[i++].initStatus(), s);
  }
  auto timers = b.initTimers(w.record_.timers.size());
  i = 0;
  for (const auto& [key, t] : w.record_.timers) {
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
