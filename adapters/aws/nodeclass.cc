#include "adapters/aws/nodeclass.h"

#include <algorithm>
#include <stdexcept>

namespace tenon::aws {
namespace {

constexpr std::size_t kTermsMax = 30;  // Karpenter's CRD allows at most 30 terms per list.

SelectorTerm ParseTerm(const YAML::Node& node, const std::string& field) {
  if (!node.IsMap()) throw std::invalid_argument(field + ": a term must be a map");
  SelectorTerm term;
  if (node["tags"]) {
    for (const auto& kv : node["tags"]) {
      term.tags[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
  }
  if (node["id"]) term.id = node["id"].as<std::string>();
  if (node["name"]) term.name = node["name"].as<std::string>();
  if (node["owner"]) term.owner = node["owner"].as<std::string>();
  return term;
}

std::vector<SelectorTerm> ParseTerms(const YAML::Node& list, const std::string& field) {
  std::vector<SelectorTerm> out;
  if (!list) return out;
  if (!list.IsSequence()) throw std::invalid_argument(field + ": must be a list");
  for (const auto& node : list) {
    if (out.size() >= kTermsMax) throw std::invalid_argument(field + ": more than 30 terms");
    SelectorTerm term = ParseTerm(node, field);
    if (term.tags.empty() && term.id.empty() && term.name.empty() && term.owner.empty() &&
        !node["alias"]) {
      throw std::invalid_argument(field + ": a term must set tags, id, name, owner or alias");
    }
    out.push_back(std::move(term));
  }
  return out;
}

}  // namespace

NodeClassTerms ParseNodeClassTerms(const YAML::Node& object) {
  const YAML::Node& spec = object["spec"];
  NodeClassTerms terms;
  if (!spec) return terms;
  std::vector<SelectorTerm> amis = ParseTerms(spec["amiSelectorTerms"], "spec.amiSelectorTerms");
  for (std::size_t i = 0; i < amis.size(); ++i) {
    const YAML::Node& node = spec["amiSelectorTerms"][i];
    terms.amis.push_back({node["alias"] ? node["alias"].as<std::string>() : "", amis[i]});
  }
  terms.subnets = ParseTerms(spec["subnetSelectorTerms"], "spec.subnetSelectorTerms");
  terms.security_groups =
      ParseTerms(spec["securityGroupSelectorTerms"], "spec.securityGroupSelectorTerms");
  return terms;
}

NodeClassResolutionResult ResolveNodeClassDetail(Ec2& ec2, Ssm& ssm, const NodeClass& nodeclass,
                                                 const NodeClassTerms& terms,
                                                 const std::string& kubernetes_version) {
  using R = NodeClassResolutionResult;
  auto fail = [](const char* reason, ErrorCode code, std::string message) {
    return R::Fail(reason, AwsError{code, "", std::move(message), 0});
  };
  if (terms.amis.empty()) {
    return fail(kInvalidSpec, ErrorCode::kInvalid, "spec.amiSelectorTerms is empty");
  }
  if (terms.subnets.empty()) {
    return fail(kInvalidSpec, ErrorCode::kInvalid, "spec.subnetSelectorTerms is empty");
  }
  if (terms.security_groups.empty()) {
    return fail(kInvalidSpec, ErrorCode::kInvalid, "spec.securityGroupSelectorTerms is empty");
  }
  NodeClassResolution out;
  out.nodeclass = nodeclass;
  std::vector<SelectorTerm> image_terms;
  for (const AmiTerm& t : terms.amis) {
    if (t.alias.empty()) {
      image_terms.push_back(t.term);
      continue;
    }
    for (const char* arch : {"amd64", "arm64"}) {
      std::string path = ssm.AliasPath(t.alias, arch, kubernetes_version);
      if (path.empty()) {
        return fail(kAmiNotFound, ErrorCode::kInvalid, "unknown AMI alias " + t.alias);
      }
      Result<std::string> id = ssm.GetParameter(path);
      if (!id.ok() && id.error.code == ErrorCode::kNotFound) continue;
      if (!id.ok()) return R::Fail(kAmiNotFound, id.error);
      out.amis.push_back(Image{*id.value, t.alias, arch, "", "", {}});
    }
  }
  if (!image_terms.empty()) {
    Result<std::vector<Image>> images = ec2.DescribeImages(image_terms);
    if (!images.ok()) return R::Fail(kAmiNotFound, images.error);
    for (Image& image : NewestPerArch(*images.value)) out.amis.push_back(std::move(image));
  }
  Result<std::vector<Subnet>> subnets = ec2.DescribeSubnets(terms.subnets);
  if (!subnets.ok()) return R::Fail(kSubnetsNotFound, subnets.error);
  out.subnets = std::move(*subnets.value);
  Result<std::vector<SecurityGroup>> groups = ec2.DescribeSecurityGroups(terms.security_groups);
  if (!groups.ok()) return R::Fail(kSecurityGroupsNotFound, groups.error);
  out.security_groups = std::move(*groups.value);
  auto by_id = [](const auto& a, const auto& b) { return a.id < b.id; };
  auto same_id = [](const auto& a, const auto& b) { return a.id == b.id; };
  std::sort(out.amis.begin(), out.amis.end(), by_id);
  out.amis.erase(std::unique(out.amis.begin(), out.amis.end(), same_id), out.amis.end());
  std::sort(out.subnets.begin(), out.subnets.end(), by_id);
  out.subnets.erase(std::unique(out.subnets.begin(), out.subnets.end(), same_id),
                    out.subnets.end());
  std::sort(out.security_groups.begin(), out.security_groups.end(), by_id);
  out.security_groups.erase(
      std::unique(out.security_groups.begin(), out.security_groups.end(), same_id),
      out.security_groups.end());
  if (out.amis.empty()) {
    return fail(kAmiNotFound, ErrorCode::kNotFound, "no AMI matches amiSelectorTerms");
  }
  if (out.subnets.empty()) {
    return fail(kSubnetsNotFound, ErrorCode::kNotFound, "no subnet matches subnetSelectorTerms");
  }
  if (out.security_groups.empty()) {
    return fail(kSecurityGroupsNotFound, ErrorCode::kNotFound,
                "no security group matches securityGroupSelectorTerms");
  }
  NodeClass& ids = out.nodeclass;
  ids.amis.clear();
  ids.subnets.clear();
  ids.security_groups.clear();
  for (const Image& i : out.amis) ids.amis.push_back(i.id);
  for (const Subnet& s : out.subnets) ids.subnets.push_back(s.id);
  for (const SecurityGroup& g : out.security_groups) ids.security_groups.push_back(g.id);
  return R{std::move(out), "", {}};
}

Result<NodeClass> ResolveNodeClass(Ec2& ec2, Ssm& ssm, const NodeClass& nodeclass,
                                   const NodeClassTerms& terms,
                                   const std::string& kubernetes_version) {
  NodeClassResolutionResult resolved =
      ResolveNodeClassDetail(ec2, ssm, nodeclass, terms, kubernetes_version);
  if (!resolved.ok()) return Result<NodeClass>::Fail(resolved.error);
  return Result<NodeClass>::Ok(std::move(resolved.value->nodeclass));
}

}  // namespace tenon::aws
