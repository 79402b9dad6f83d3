// A launch's context: the AMI, subnets, security groups and launch template of a
// LaunchInstances, from the EC2NodeClass's resolution.
#include "adapters/controller/cloud.h"

#include <xxhash.h>

#include "adapters/aws/userdata.h"

namespace tenon::controller {
namespace {

std::string Hex(std::uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

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
