// EC2NodeClass resolution: selector terms to AMIs, subnets, security groups and the instance
// profile, logged as NodeClassResolved. It only reads: the core writes the status from it, and
// has the finalizer added, a missing instance profile made and a deleted EC2NodeClass cleaned up
// (reducers/nodeclass.cc), each as a command.
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

}  // namespace

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
  while (!stop_.load()) {
    ResolveAll(connection);
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, options_.nodeclass_every, [&] { return stop_.load() || poke_; });
    poke_ = false;
  }
}

void CloudSource::ResolveAll(aws::AwsConnection& connection) {
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
    // A deleted EC2NodeClass launches nothing more: the core only waits to let it go.
    if (BeingDeleted(item)) continue;
    try {
      const YAML::Node object = YAML::Load(item.dump());
      const NodeClass nodeclass = kube::ParseNodeClass(object);
      const aws::NodeClassTerms terms = aws::ParseNodeClassTerms(object);
      const YAML::Node spec = object["spec"];
      std::string instance_profile;
      aws::NodeClassResolutionResult resolution =
          aws::ResolveNodeClassDetail(ec2, ssm, nodeclass, terms, version);
      std::string profile_missing;
      // spec.instanceProfile is used as is. For spec.role, tenon's profile must hold the role
      // alone; when it does not (or is not there), the core has it made (EnsureInstanceProfile)
      // and the next pass finds it.
      if (spec["instanceProfile"]) {
        instance_profile = spec["instanceProfile"].as<std::string>();
      } else if (resolution.ok()) {
        const std::string wanted = aws::InstanceProfileName(options_.cluster_name, name);
        const auto profile = iam.GetInstanceProfile(wanted);
        if (profile.ok() && profile.value->roles == std::vector<std::string>{nodeclass.role}) {
          instance_profile = wanted;
        } else if (profile.ok()) {
          profile_missing = "instance profile " + wanted + " does not hold role " + nodeclass.role;
        } else if (profile.error.code == ErrorCode::kNotFound) {
          profile_missing =
              "instance profile " + wanted + " for role " + nodeclass.role + " does not exist yet";
        } else {
          resolution = aws::NodeClassResolutionResult::Fail(
              kInstanceProfileNotFound,
              aws::AwsError{profile.error.code, profile.error.aws_code,
                            "instance profile " + wanted + ": " + profile.error.message,
                            profile.error.http_status});
        }
      }
      NodeClassResolution logged = ResolutionFor(resolution, instance_profile);
      if (!profile_missing.empty()) {
        logged.reason = kInstanceProfileNotFound;
        logged.message = profile_missing;
      }
      if (stop_.load()) return;  // Stop aborted its AWS calls: this pass says nothing.
      if (!logged.reason.empty()) {
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
      invalid.reason = kInvalidSpec;
      invalid.message = e.what();
      Push({NodeClassResolved{name, std::move(invalid)}});
    }
  }
  nodeclasses_resolved_ += published;
}

}  // namespace tenon::controller
