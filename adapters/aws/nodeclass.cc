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

Result<NodeClass> Fail(ErrorCode code, const std::string& message) {
  return Result<NodeClass>::Fail(AwsError{code, "", message, 0});
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

Result<NodeClass> ResolveNodeClass(Ec2& ec2, Ssm& ssm, const NodeClass& nodeclass,
                                   const NodeClassTerms& terms,
                                   const std::string& kubernetes_version) {
  if (terms.amis.empty()) return Fail(ErrorCode::kInvalid, "spec.amiSelectorTerms is empty");
  if (terms.subnets.empty()) return Fail(ErrorCode::kInvalid, "spec.subnetSelectorTerms is empty");
  if (terms.security_groups.empty()) {
    return Fail(ErrorCode::kInvalid, "spec.securityGroupSelectorTerms is empty");
  }
  NodeClass out = nodeclass;
  out.amis.clear();
  std::vector<SelectorTerm> image_terms;
  for (const AmiTerm& t : terms.amis) {
    if (t.alias.empty()) {
      image_terms.push_back(t.term);
      continue;
    }
    for (const char* arch : {"amd64", "arm64"}) {
      std::string path = ssm.AliasPath(t.alias, arch, kubernetes_version);
      if (path.empty()) return Fail(ErrorCode::kInvalid, "unknown AMI alias " + t.alias);
      Result<std::string> id = ssm.GetParameter(path);
      if (!id.ok() && id.error.code == ErrorCode::kNotFound) continue;
      if (!id.ok()) return Result<NodeClass>::Fail(id.error);
      out.amis.push_back(*id.value);
    }
  }
  if (!image_terms.empty()) {
    Result<std::vector<Image>> images = ec2.DescribeImages(image_terms);
    if (!images.ok()) return Result<NodeClass>::Fail(images.error);
    for (const Image& image : NewestPerArch(*images.value)) out.amis.push_back(image.id);
  }
  Result<std::vector<Subnet>> subnets = ec2.DescribeSubnets(terms.subnets);
  if (!subnets.ok()) return Result<NodeClass>::Fail(subnets.error);
  out.subnets.clear();
  for (const Subnet& s : *subnets.value) out.subnets.push_back(s.id);
  Result<std::vector<SecurityGroup>> groups = ec2.DescribeSecurityGroups(terms.security_groups);
  if (!groups.ok()) return Result<NodeClass>::Fail(groups.error);
  out.security_groups.clear();
  for (const SecurityGroup& g : *groups.value) out.security_groups.push_back(g.id);
  for (auto* ids : {&out.amis, &out.subnets, &out.security_groups}) {
    std::sort(ids->begin(), ids->end());
    ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
  }
  if (out.amis.empty()) return Fail(ErrorCode::kNotFound, "no AMI matches amiSelectorTerms");
  if (out.subnets.empty()) {
    return Fail(ErrorCode::kNotFound, "no subnet matches subnetSelectorTerms");
  }
  if (out.security_groups.empty()) {
    return Fail(ErrorCode::kNotFound, "no security group matches securityGroupSelectorTerms");
  }
  return Result<NodeClass>::Ok(std::move(out));
}

}  // namespace tenon::aws
