// User data per AMI family, as Karpenter writes it: AL2023 a nodeadm NodeConfig in a MIME
// multipart document, Bottlerocket TOML settings, AL2 the EKS bootstrap script (in MIME), and
// Custom exactly as the NodeClass gives it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/model.h"

namespace tenon::aws {

struct ClusterInfo {
  std::string name;
  std::string endpoint;
  std::string ca_bundle_base64;
  std::string service_cidr = "10.100.0.0/16";
  std::string dns_ip = "10.100.0.10";
};

struct NodeBootstrap {
  Labels labels;
  std::vector<Taint> taints;
  std::optional<std::int32_t> max_pods;
  std::string custom;  // The NodeClass's userData; the whole user data for Custom.
};

inline constexpr char kMimeBoundary[] = "//";

// "al2023@latest" / "AL2023" -> "AL2023"; the family names UserData knows.
std::string AmiFamily(const std::string& family_or_alias);

// nullopt for an unknown family.
std::optional<std::string> UserData(const std::string& ami_family, const ClusterInfo& cluster,
                                    const NodeBootstrap& node);

}  // namespace tenon::aws
