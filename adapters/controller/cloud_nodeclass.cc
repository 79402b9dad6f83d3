// EC2NodeClass resolution: selector terms to AMIs, subnets, security groups and the instance
// profile, logged as NodeClassResolved (the core writes the status from it); and the termination
// of a deleted EC2NodeClass.
#include "adapters/controller/cloud.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "adapters/aws/iam.h"
#include "adapters/aws/ssm.h"
#include "adapters/kube/objects.h"

namespace tenon::controller {
namespace {

constexpr char kNodeClassesPath[] = "/apis/karpenter.k8s.aws/v1/ec2nodeclasses";
constexpr char kNodeClaimsPath[] = "/apis/karpenter.sh/v1/nodeclaims";
// Karpenter fires its WaitingOnNodeClaimTermination Event again every 10 minutes.
constexpr auto kWaitingReportEvery = std::chrono::minutes(10);
constexpr long kNotFound = 404;
constexpr char kDefaultKubernetesVersion[] = "1.31";

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

NodeClassResolution ResolutionFor(const aws::NodeClassResolutionResult& resolved,
                                  const std::string& instance_profile) {
  NodeClassResolution out;
  out.instance_profile = instance_profile;
  if (!resolved.ok()) {
    out.reason = resolved.reason;
    out.message = resolved.error.message;
    return out;
  }
  for (const aws::Image& image : resolved.value->amis) {
    out.amis.push_back({image.id, image.name, image.arch, image.created});
  }
  for (const aws::Subnet& subnet : resolved.value->subnets) {
    out.subnets.push_back({subnet.id, subnet.zone, subnet.zone_id, subnet.available_ips});
  }
  for (const aws::SecurityGroup& group : resolved.value->security_groups) {
    out.security_groups.push_back({group.id, group.name});
  }
  return out;
}

void CloudSource::PokeNodeClasses() {
  {
    std::lock_guard lock(mu_);
    poke_ = true;
  }
  wake_.notify_all();
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
  std::int64_t published = 0;
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
      std::string instance_profile;
      // Karpenter makes an instance profile for spec.role; spec.instanceProfile is used as is.
      aws::NodeClassResolutionResult resolution =
          aws::ResolveNodeClassDetail(ec2, ssm, nodeclass, terms, version);
      if (spec["instanceProfile"]) {
        instance_profile = spec["instanceProfile"].as<std::string>();
      } else if (resolution.ok()) {
        auto profile = iam.EnsureInstanceProfile(
            aws::InstanceProfileName(options_.cluster_name, name), nodeclass.role,
            aws::NodeClassOwnerTags(options_.cluster_name, name));
        if (profile.ok()) {
          instance_profile = profile.value->name;
        } else {
          resolution = aws::NodeClassResolutionResult::Fail(
              aws::kInstanceProfileNotFound,
              aws::AwsError{
                  profile.error.code, profile.error.aws_code,
                  "instance profile for role " + nodeclass.role + ": " + profile.error.message,
                  profile.error.http_status});
        }
      }
      NodeClassResolution logged = ResolutionFor(resolution, instance_profile);
      if (stop_.load()) return;  // Stop aborted its AWS calls: this pass says nothing.
      if (!resolution.ok()) {
        spdlog::warn("nodeclass {}: not ready: {}", name, logged.message);
      } else {
        ++published;
      }
      // The core launches with it and writes the status from it (PatchNodeClassStatus).
      Push({NodeClassResolved{name, std::move(logged)}});
    } catch (const kube::LeadershipLost&) {
      throw;
    } catch (const std::exception& e) {
      // A NodeClass the informer also rejects (logged there as InputRejected): not ready.
      spdlog::warn("nodeclass {}: {}", name, e.what());
      NodeClassResolution invalid;
      invalid.reason = aws::kInvalidSpec;
      invalid.message = e.what();
      Push({NodeClassResolved{name, std::move(invalid)}});
    }
  }
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

}  // namespace tenon::controller
