#include "adapters/controller/cloud.h"

#include <spdlog/spdlog.h>
#include <xxhash.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "adapters/aws/catalog_export.h"
#include "adapters/aws/iam.h"
#include "adapters/aws/pricing.h"
#include "adapters/aws/ssm.h"
#include "adapters/aws/userdata.h"
#include "adapters/kube/objects.h"

namespace tenon::controller {
namespace {

constexpr char kNodeClassesPath[] = "/apis/karpenter.k8s.aws/v1/ec2nodeclasses";
constexpr char kNodeClaimsPath[] = "/apis/karpenter.sh/v1/nodeclaims";
// Karpenter fires its WaitingOnNodeClaimTermination Event again every 10 minutes.
constexpr auto kWaitingReportEvery = std::chrono::minutes(10);
constexpr long kNotFound = 404;
constexpr char kDefaultKubernetesVersion[] = "1.31";

std::string Hex(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// The reason Karpenter's EC2NodeClass status uses for a resolution that found nothing.
std::string NotFoundReason(const std::string& message) {
  if (message.find("AMI") != std::string::npos || message.find("ami") != std::string::npos) {
    return "AMINotFound";
  }
  if (message.find("subnet") != std::string::npos) return "SubnetsNotFound";
  if (message.find("security group") != std::string::npos ||
      message.find("securityGroup") != std::string::npos) {
    return "SecurityGroupsNotFound";
  }
  return "ResolutionFailed";
}

// A string member of a JSON object; empty when absent or not a string.
std::string Text(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const nlohmann::json& Member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

bool BeingDeleted(const nlohmann::json& object) {
  return !Member(Member(object, "metadata"), "deletionTimestamp").is_null();
}

std::vector<std::string> Finalizers(const nlohmann::json& object) {
  std::vector<std::string> out;
  const nlohmann::json& list = Member(Member(object, "metadata"), "finalizers");
  if (!list.is_array()) return out;
  for (const auto& f : list) {
    if (f.is_string()) out.push_back(f.get<std::string>());
  }
  return out;
}

bool HasFinalizer(const nlohmann::json& object) {
  const std::vector<std::string> all = Finalizers(object);
  return std::find(all.begin(), all.end(), kNodeClassFinalizer) != all.end();
}

// A merge patch replaces the whole list: it carries every other finalizer the object has.
nlohmann::json FinalizerPatch(const nlohmann::json& object, bool present) {
  std::vector<std::string> list = Finalizers(object);
  std::erase(list, std::string(kNodeClassFinalizer));
  if (present) list.emplace_back(kNodeClassFinalizer);
  return {{"metadata", {{"finalizers", list}}}};
}

}  // namespace

std::string PrettyNames(const std::vector<std::string>& names, std::size_t shown) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i >= shown) {
      out += " and " + std::to_string(names.size() - i) + " other(s)";
      break;
    }
    out += (i > 0 ? ", " : "") + names[i];
  }
  return out;
}

std::string AmiFamily(const std::string& family_or_alias) {
  std::string family = family_or_alias.substr(0, family_or_alias.find('@'));
  std::string lower;
  for (char c : family) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "al2023") return "AL2023";
  if (lower == "al2") return "AL2";
  if (lower == "bottlerocket") return "Bottlerocket";
  if (lower == "custom") return "Custom";
  return family;
}

std::string MinorVersion(const std::string& git_version) {
  std::string v = git_version;
  if (!v.empty() && v[0] == 'v') v.erase(0, 1);
  const std::size_t first = v.find('.');
  if (first == std::string::npos || first == 0) return "";
  std::size_t end = first + 1;
  while (end < v.size() && std::isdigit(static_cast<unsigned char>(v[end]))) ++end;
  if (end == first + 1) return "";
  for (std::size_t i = 0; i < first; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) return "";
  }
  return v.substr(0, end);
}

kube::NodeClassStatus StatusFor(const aws::Result<aws::NodeClassResolution>& resolved,
                                const std::string& instance_profile) {
  kube::NodeClassStatus status;
  status.instance_profile = instance_profile;
  if (!resolved.ok()) {
    status.ready = false;
    status.reason = NotFoundReason(resolved.error.message);
    status.message = resolved.error.message;
    return status;
  }
  for (const aws::Image& image : resolved.value->amis) {
    status.amis.push_back({image.id, image.name, image.arch});
  }
  for (const aws::Subnet& subnet : resolved.value->subnets) {
    status.subnets.push_back({subnet.id, subnet.zone, ""});
  }
  for (const aws::SecurityGroup& group : resolved.value->security_groups) {
    status.security_groups.push_back(group.id);
  }
  status.ready = true;
  return status;
}

CloudSource::CloudSource(CloudOptions options, kube::Client& kube, std::function<bool()> may_act)
    : options_(std::move(options)),
      kube_(kube),
      may_act_(std::move(may_act)),
      main_(options_.aws, aws::ProcessEnv()),
      ec2_(main_.client()) {
  if (!options_.interruption_queue.empty() && !options_.read_only) {
    aws::TransportOptions poll;
    poll.total_timeout_ms = (options_.poll_wait_seconds + 10) * 1000;
    poll.abort = &abort_;
    poller_ = std::make_unique<aws::AwsConnection>(options_.aws, aws::ProcessEnv(), poll);
  }
  executor_ = std::make_unique<aws::AwsExecutor>(
      ec2_, nullptr, [this](const LaunchInstances& launch) { return ResolveLaunch(launch); });
}

CloudSource::~CloudSource() {
  Stop();
}

std::vector<Event> CloudSource::Execute(const Command& command) {
  const auto* ack = std::get_if<AcknowledgeMessage>(&command.body);
  if (ack == nullptr) return executor_->Execute(command);
  aws::InterruptionQueue* queue = queue_ready_.load();
  if (queue == nullptr) {
    return {CommandFailed{command.id, ErrorCode::kTransient,
                          "the interruption queue is not reachable yet"}};
  }
  const auto done = queue->Acknowledge(ack->message_id);
  if (!done.ok()) return {CommandFailed{command.id, done.error.code, done.error.message}};
  return {CommandSucceeded{command.id}};
}

void CloudSource::Start() {
  if (options_.refresh_catalog) threads_.emplace_back([this] { CatalogLoop(); });
  if (poller_ != nullptr) threads_.emplace_back([this] { InterruptionLoop(); });
  threads_.emplace_back([this] { GarbageLoop(); });
  threads_.emplace_back([this] { NodeClassLoop(); });
}

void CloudSource::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  abort_.Trigger();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void CloudSource::Push(std::vector<Event> events, std::vector<std::string> rejected) {
  std::lock_guard lock(mu_);
  for (auto& e : events) events_.push_back(std::move(e));
  rejected_pending_.insert(rejected_pending_.end(), rejected.begin(), rejected.end());
}

std::vector<Event> CloudSource::Drain() {
  std::lock_guard lock(mu_);
  std::vector<Event> out(std::make_move_iterator(events_.begin()),
                         std::make_move_iterator(events_.end()));
  events_.clear();
  rejected_drained_.insert(rejected_drained_.end(), rejected_pending_.begin(),
                           rejected_pending_.end());
  rejected_pending_.clear();
  return out;
}

std::int64_t CloudSource::Ingested() {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mu_);
    ids.swap(rejected_drained_);
  }
  aws::InterruptionQueue* queue = queue_ready_.load();
  if (queue == nullptr) return 0;
  std::int64_t deleted = 0;
  for (const std::string& id : ids) {
    const auto done = queue->Acknowledge(id);
    if (!done.ok()) {
      spdlog::warn("sqs: deleting rejected message {}: {}", id, done.error.message);
    }
    deleted += done.ok() ? 1 : 0;
  }
  return deleted;
}

void CloudSource::PokeNodeClasses() {
  {
    std::lock_guard lock(mu_);
    poke_ = true;
  }
  wake_.notify_all();
}

bool CloudSource::Sleep(std::chrono::milliseconds duration) {
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, duration, [&] { return stop_.load(); });
  return !stop_.load();
}

void CloudSource::CatalogLoop() {
  aws::AwsConnection connection(options_.aws, aws::ProcessEnv(), {.abort = &abort_});
  aws::Ec2 ec2(connection.client());
  aws::Pricing pricing(connection.pricing());
  aws::PriceMap fallback;
  if (!options_.price_file.empty()) {
    auto loaded = aws::LoadPriceFile(options_.price_file);
    if (loaded.ok()) {
      fallback = std::move(*loaded.value);
    } else {
      spdlog::error("catalog: price file {}: {}", options_.price_file, loaded.error.message);
    }
  }
  aws::PriceMap prices;
  auto priced_at = std::chrono::steady_clock::time_point::min();
  std::vector<InstanceType> published;
  while (!stop_.load()) {
    const auto now = std::chrono::steady_clock::now();
    if (prices.empty() || now - priced_at >= options_.prices_every) {
      bool used_file = false;
      prices = aws::OnDemandPricesOrFallback(pricing, options_.aws.region, fallback, &used_file);
      priced_at = now;
      spdlog::info("catalog: {} on-demand prices from {}", prices.size(),
                   used_file ? "the price file" : "the Pricing API");
    }
    auto types = ec2.Catalog({}, prices);
    if (!types.ok() && stop_.load()) return;  // Aborted by Stop.
    if (!types.ok()) {
      spdlog::warn("catalog: {}: {}", types.error.aws_code, types.error.message);
      if (!Sleep(options_.retry)) return;
      continue;
    }
    if (*types.value != published) {
      published = *types.value;
      spdlog::info("catalog: {} instance types changed; publishing", published.size());
      Push({CatalogRefreshed{published}});
      ++catalogs_published_;
    }
    if (!Sleep(options_.catalog_every)) return;
  }
}

void CloudSource::InterruptionLoop() {
  std::string url = options_.interruption_queue;
  while (url.rfind("http", 0) != 0) {
    const nlohmann::json request = {{"QueueName", options_.interruption_queue}};
    auto answer = aws::SqsCall(poller_->client(), "GetQueueUrl", request.dump());
    if (!answer.ok() && stop_.load()) return;  // Aborted by Stop.
    if (answer.ok()) {
      const auto body = nlohmann::json::parse(*answer.value, nullptr, false);
      if (body.is_object() && body.contains("QueueUrl") && body["QueueUrl"].is_string()) {
        url = body["QueueUrl"].get<std::string>();
        break;
      }
    }
    spdlog::warn("interruption: queue {} not found yet: {}", options_.interruption_queue,
                 answer.ok() ? "no QueueUrl in the answer" : answer.error.message);
    if (!Sleep(options_.retry)) return;
  }
  queue_ = std::make_unique<aws::InterruptionQueue>(poller_->client(), main_.client(), url);
  queue_ready_ = queue_.get();
  spdlog::info("interruption: polling {}", url);
  while (!stop_.load()) {
    auto received = queue_->Receive(aws::kReceiveMessagesMax, options_.poll_wait_seconds);
    if (!received.ok() && stop_.load()) return;  // Aborted by Stop: the messages stay queued.
    if (!received.ok()) {
      spdlog::warn("interruption: {}: {}", received.error.aws_code, received.error.message);
      if (!Sleep(options_.retry)) return;
      continue;
    }
    // The ids of messages that were only rejected input travel with their events: they are
    // deleted from the queue once those events are in the log.
    Push(std::move(*received.value), queue_->TakeRejected());
  }
}

void CloudSource::GarbageLoop() {
  aws::AwsConnection connection(options_.aws, aws::ProcessEnv(), {.abort = &abort_});
  aws::Ec2 ec2(connection.client());
  while (Sleep(options_.gc_every)) {
    auto listed = ec2.DescribeInstancesByTags(aws::LaunchedByNodePoolTags(options_.cluster_name));
    if (!listed.ok() && stop_.load()) return;  // Aborted by Stop.
    if (!listed.ok()) {
      spdlog::warn("gc: DescribeInstances: {}: {}", listed.error.aws_code, listed.error.message);
      continue;
    }
    Push({aws::ToInstancesListed(*listed.value)});
  }
}

std::string CloudSource::KubernetesVersion() {
  if (!options_.kubernetes_version.empty()) return options_.kubernetes_version;
  const kube::Response answer = kube_.Request("GET", "/version");
  if (answer.ok()) {
    const auto body = nlohmann::json::parse(answer.body, nullptr, false);
    if (body.is_object() && body.contains("gitVersion") && body["gitVersion"].is_string()) {
      std::string minor = MinorVersion(body["gitVersion"].get<std::string>());
      if (!minor.empty()) return minor;
    }
  }
  spdlog::warn("nodeclass: the API server's version is unknown ({}); AMI aliases use {}",
               kube::Describe(answer), kDefaultKubernetesVersion);
  return kDefaultKubernetesVersion;
}

void CloudSource::NodeClassLoop() {
  aws::AwsConnection connection(options_.aws, aws::ProcessEnv(), {.abort = &abort_});
  kube::KubeExecutor writer(kube_, {}, may_act_);
  while (!stop_.load()) {
    ResolveAll(connection, writer);
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, options_.nodeclass_every, [&] { return stop_.load() || poke_; });
    poke_ = false;
  }
}

void CloudSource::ResolveAll(aws::AwsConnection& connection, kube::KubeExecutor& writer) {
  const kube::Response listed = kube_.Request("GET", kNodeClassesPath);
  if (!listed.ok()) {
    spdlog::warn("nodeclass: listing EC2NodeClasses: {}", kube::Describe(listed));
    return;
  }
  const auto body = nlohmann::json::parse(listed.body, nullptr, false);
  if (!body.is_object() || !body.contains("items") || !body["items"].is_array()) {
    spdlog::warn("nodeclass: the EC2NodeClass list is not a list");
    return;
  }
  aws::Ec2 ec2(connection.client());
  aws::Ssm ssm(connection.client());
  aws::Iam iam(connection.client());
  const std::string version = KubernetesVersion();
  std::map<std::string, ResolvedNodeClass> resolved;
  for (const auto& item : body["items"]) {
    const std::string name = Text(Member(item, "metadata"), "name");
    if (name.empty()) continue;
    try {
      if (BeingDeleted(item)) {
        FinalizeNodeClass(item, connection, writer);
        continue;
      }
      if (!options_.read_only && !HasFinalizer(item)) {
        // Added before anything is made for it in AWS, as Karpenter's EC2NodeClass controller
        // adds it: a deletion then waits for the termination below.
        const kube::Response added =
            writer.Update(std::string(kNodeClassesPath) + "/" + name, "",
                          [](const nlohmann::json& current) -> std::optional<nlohmann::json> {
                            if (HasFinalizer(current) || BeingDeleted(current)) return std::nullopt;
                            return FinalizerPatch(current, true);
                          });
        if (!added.ok()) {
          spdlog::warn("nodeclass {}: adding the finalizer {}: {}", name, kNodeClassFinalizer,
                       kube::Describe(added));
        }
      }
      const YAML::Node object = YAML::Load(item.dump());
      const NodeClass nodeclass = kube::ParseNodeClass(object);
      const aws::NodeClassTerms terms = aws::ParseNodeClassTerms(object);
      const YAML::Node spec = object["spec"];
      ResolvedNodeClass entry;
      entry.ami_family = AmiFamily(nodeclass.ami_family);
      if (spec["userData"]) entry.user_data = spec["userData"].as<std::string>();
      if (spec["tags"]) entry.tags = spec["tags"].as<Labels>();
      // Karpenter makes an instance profile for spec.role; spec.instanceProfile is used as is.
      aws::Result<aws::NodeClassResolution> resolution =
          aws::ResolveNodeClassDetail(ec2, ssm, nodeclass, terms, version);
      if (spec["instanceProfile"]) {
        entry.instance_profile = spec["instanceProfile"].as<std::string>();
      } else if (resolution.ok()) {
        auto profile = iam.EnsureInstanceProfile(
            aws::InstanceProfileName(options_.cluster_name, name), nodeclass.role,
            aws::NodeClassOwnerTags(options_.cluster_name, name));
        if (profile.ok()) {
          entry.instance_profile = profile.value->name;
        } else {
          resolution = aws::Result<aws::NodeClassResolution>::Fail(aws::AwsError{
              profile.error.code, profile.error.aws_code,
              "instance profile for role " + nodeclass.role + ": " + profile.error.message,
              profile.error.http_status});
        }
      }
      kube::NodeClassStatus status = StatusFor(resolution, entry.instance_profile);
      if (stop_.load()) return;  // Stop aborted its AWS calls: this pass says nothing.
      if (!resolution.ok()) {
        spdlog::warn("nodeclass {}: not ready: {}", name, status.message);
      } else {
        entry.resolution = std::move(*resolution.value);
        resolved[name] = entry;
        // Usable by launches before its status says Ready, which is what lets the core launch.
        std::lock_guard lock(mu_);
        resolved_[name] = std::move(entry);
      }
      if (options_.read_only) continue;
      if (!writer.PatchNodeClassStatus(name, status)) {
        spdlog::warn("nodeclass {}: the status could not be written", name);
      }
    } catch (const kube::LeadershipLost&) {
      throw;
    } catch (const std::exception& e) {
      // A NodeClass the informer also rejects (logged there as InputRejected): not ready.
      spdlog::warn("nodeclass {}: {}", name, e.what());
      kube::NodeClassStatus status;
      status.ready = false;
      status.reason = "InvalidSpec";
      status.message = e.what();
      if (!options_.read_only) writer.PatchNodeClassStatus(name, status);
    }
  }
  const auto published = static_cast<std::int64_t>(resolved.size());
  {
    std::lock_guard lock(mu_);
    resolved_ = std::move(resolved);
    resolved_once_ = true;
  }
  wake_.notify_all();  // Launches waiting for the first pass.
  // Counted once launches can use them.
  nodeclasses_resolved_ += published;
}

std::optional<std::vector<std::string>> CloudSource::NodeClaimsUsing(const std::string& nodeclass) {
  const kube::Response listed = kube_.Request("GET", kNodeClaimsPath);
  const auto body = nlohmann::json::parse(listed.body, nullptr, false);
  if (!listed.ok() || !Member(body, "items").is_array()) {
    spdlog::warn("nodeclass {}: listing NodeClaims: {}", nodeclass,
                 listed.ok() ? "the answer is not a list" : kube::Describe(listed));
    return std::nullopt;
  }
  std::vector<std::string> names;
  for (const auto& claim : body["items"]) {
    const nlohmann::json& ref = Member(Member(claim, "spec"), "nodeClassRef");
    const std::string group = Text(ref, "group");
    const std::string kind = Text(ref, "kind");
    if (Text(ref, "name") != nodeclass || (!group.empty() && group != "karpenter.k8s.aws") ||
        (!kind.empty() && kind != "EC2NodeClass")) {
      continue;
    }
    names.push_back(Text(Member(claim, "metadata"), "name"));
  }
  std::sort(names.begin(), names.end());
  return names;
}

void CloudSource::FinalizeNodeClass(const nlohmann::json& object, aws::AwsConnection& connection,
                                    kube::KubeExecutor& writer) {
  const std::string name = Text(Member(object, "metadata"), "name");
  {
    // Nothing launches with it any more.
    std::lock_guard lock(mu_);
    resolved_.erase(name);
  }
  if (options_.read_only || !HasFinalizer(object) || (may_act_ && !may_act_())) return;
  const std::optional<std::vector<std::string>> claims = NodeClaimsUsing(name);
  if (!claims) return;  // Tried again on the next pass.
  if (!claims->empty()) {
    // As Karpenter: the deletion waits, and says so with an Event, repeated when the NodeClaims
    // it waits on change and every 10 minutes.
    const std::string message = "Waiting on NodeClaim termination for " + PrettyNames(*claims);
    const auto now = std::chrono::steady_clock::now();
    auto& [reported, at] = waiting_reported_[name];
    if (reported != message || now - at >= kWaitingReportEvery) {
      spdlog::info("nodeclass {}: being deleted; {}", name, message);
      writer.RecordEvent({"karpenter.k8s.aws/v1", "EC2NodeClass", "", name}, "Normal",
                         "WaitingOnNodeClaimTermination", message);
      reported = message;
      at = now;
    }
    return;
  }
  waiting_reported_.erase(name);
  aws::Ec2 ec2(connection.client());
  aws::Iam iam(connection.client());
  std::string profile_done = "no instance profile of its own";
  // The profile tenon made for spec.role; one named in spec.instanceProfile is the user's.
  if (!Text(Member(object, "spec"), "role").empty()) {
    const std::string profile = aws::InstanceProfileName(options_.cluster_name, name);
    const auto removed =
        iam.DeleteInstanceProfile(profile, aws::NodeClassOwnerTags(options_.cluster_name, name));
    if (!removed.ok()) {
      spdlog::warn("nodeclass {}: deleting the instance profile {}: {}: {}", name, profile,
                   removed.error.aws_code, removed.error.message);
      return;
    }
    switch (*removed.value) {
      case aws::ProfileRemoval::kDeleted:
        profile_done = "instance profile " + profile + " deleted";
        break;
      case aws::ProfileRemoval::kAbsent:
        profile_done = "instance profile " + profile + " already gone";
        break;
      case aws::ProfileRemoval::kNotOwned:
        profile_done = "instance profile " + profile + " left (not tagged as tenon's)";
        break;
    }
  }
  const auto templates = aws::DeleteNodeClassLaunchTemplates(ec2, options_.cluster_name, name);
  if (!templates.ok()) {
    spdlog::warn("nodeclass {}: deleting its launch templates: {}: {}", name,
                 templates.error.aws_code, templates.error.message);
    return;
  }
  for (const std::string& t : *templates.value) templates_.erase(t);
  const kube::Response dropped =
      writer.Update(std::string(kNodeClassesPath) + "/" + name, "",
                    [](const nlohmann::json& current) -> std::optional<nlohmann::json> {
                      if (!HasFinalizer(current)) return std::nullopt;
                      return FinalizerPatch(current, false);
                    });
  if (!dropped.ok() && dropped.status != kNotFound) {
    spdlog::warn("nodeclass {}: removing the finalizer {}: {}", name, kNodeClassFinalizer,
                 kube::Describe(dropped));
    return;
  }
  spdlog::info("nodeclass {}: deleted; {}, {} launch template(s) deleted, finalizer {} removed",
               name, profile_done, templates.value->size(), kNodeClassFinalizer);
}

aws::Result<aws::LaunchContext> CloudSource::ResolveLaunch(const LaunchInstances& launch) {
  using R = aws::Result<aws::LaunchContext>;
  auto fail = [](ErrorCode code, std::string message) {
    return R::Fail(aws::AwsError{code, "", std::move(message), 0});
  };
  ResolvedNodeClass entry;
  {
    std::unique_lock lock(mu_);
    // A launch re-driven from the log at start can come before the first resolution pass has
    // run: it waits for that pass instead of failing for want of it.
    wake_.wait_for(lock, options_.first_resolution_wait,
                   [&] { return stop_.load() || resolved_once_; });
    if (!resolved_once_) {
      return fail(ErrorCode::kTransient, "EC2NodeClasses not resolved yet");
    }
    const auto it = resolved_.find(launch.nodeclass);
    if (it == resolved_.end()) return fail(ErrorCode::kInvalid, "not resolved (not Ready)");
    entry = it->second;
  }
  if (state_ == nullptr || launch.overrides.empty()) {
    return fail(ErrorCode::kInvalid, "nothing to launch");
  }
  // The AMI of the cheapest override's architecture; types of another architecture are left
  // out of this fleet (their AMI would differ).
  const auto type_of = [&](const std::string& name) -> const InstanceType* {
    const auto it = state_->catalog->find(name);
    return it == state_->catalog->end() ? nullptr : &it->second.type;
  };
  const InstanceType* first = type_of(launch.overrides.front().instance_type);
  const std::string arch = first != nullptr ? first->arch : "amd64";
  const aws::Image* image = nullptr;
  for (const aws::Image& i : entry.resolution.amis) {
    if (i.arch == arch) image = &i;
  }
  if (image == nullptr) return fail(ErrorCode::kNotFound, "no AMI for architecture " + arch);
  aws::LaunchContext context;
  for (const LaunchOverride& o : launch.overrides) {
    const InstanceType* t = type_of(o.instance_type);
    if (t != nullptr && t->arch == arch) context.instance_types.insert(o.instance_type);
  }
  for (const aws::Subnet& s : entry.resolution.subnets) {
    // Several subnets in a zone: the one with the most free addresses, as Karpenter picks.
    auto [it, added] = context.subnet_by_zone.emplace(s.zone, s.id);
    if (!added) {
      for (const aws::Subnet& other : entry.resolution.subnets) {
        if (other.id == it->second && other.available_ips < s.available_ips) it->second = s.id;
      }
    }
  }
  context.image_id = image->id;
  context.security_groups = entry.resolution.nodeclass.security_groups;

  aws::NodeBootstrap bootstrap;
  bootstrap.custom = entry.user_data;
  bootstrap.max_pods = entry.resolution.nodeclass.max_pods;
  if (const auto pool = state_->nodepools.find(launch.nodepool); pool != state_->nodepools.end()) {
    bootstrap.labels = pool->second.labels;
    bootstrap.taints = pool->second.taints;
    bootstrap.taints.insert(bootstrap.taints.end(), pool->second.startup_taints.begin(),
                            pool->second.startup_taints.end());
  }
  bootstrap.labels[label::kNodePool] = launch.nodepool;
  const aws::ClusterInfo cluster{options_.cluster_name, options_.cluster_endpoint,
                                 options_.cluster_ca_base64};
  const std::optional<std::string> user_data = aws::UserData(entry.ami_family, cluster, bootstrap);
  if (!user_data) return fail(ErrorCode::kInvalid, "unknown AMI family " + entry.ami_family);

  aws::LaunchTemplateSpec spec;
  spec.image_id = image->id;
  spec.instance_profile = entry.instance_profile;
  spec.security_group_ids = context.security_groups;
  spec.user_data = *user_data;
  spec.tags = entry.tags;
  spec.tags["karpenter.k8s.aws/ec2nodeclass"] = launch.nodeclass;
  spec.tags["kubernetes.io/cluster/" + options_.cluster_name] = "owned";
  // The name changes with anything the template holds, so a changed NodeClass or NodePool
  // never launches from a stale template.
  std::string identity = *user_data + "\n" + spec.instance_profile;
  for (const auto& g : spec.security_group_ids) identity += "\n" + g;
  for (const auto& [k, v] : spec.tags) identity += "\n" + k + "=" + v;
  const std::string hash = Hex(XXH3_64bits(identity.data(), identity.size()));
  spec.name = aws::LaunchTemplateName(options_.cluster_name, hash, image->id);
  context.launch_template_name = spec.name;
  if (!templates_.contains(spec.name)) {
    auto ensured = aws::EnsureLaunchTemplate(ec2_, spec);
    if (!ensured.ok()) return R::Fail(ensured.error);
    templates_.insert(spec.name);
  }
  return R::Ok(std::move(context));
}

}  // namespace tenon::controller
