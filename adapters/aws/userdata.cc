#include "adapters/aws/userdata.h"

#include <yaml-cpp/yaml.h>

#include <cctype>

#include "adapters/kube/objects.h"

namespace tenon::aws {
namespace {

std::string Joined(const Labels& labels) {
  std::string out;
  for (const auto& [k, v] : labels) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

std::string JoinedTaints(const std::vector<Taint>& taints) {
  std::string out;
  for (const Taint& t : taints)
    out += (out.empty() ? "" : ",") + t.key + "=" + t.value + ":" + kube::EffectName(t.effect);
  return out;
}

std::string Mime(const std::vector<std::pair<std::string, std::string>>& parts) {
  std::string out = std::string("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"") +
                    kMimeBoundary + "\"\n\n";
  for (const auto& [type, body] : parts) {
    out += std::string("--") + kMimeBoundary + "\nContent-Type: " + type + "\n\n" + body + "\n";
  }
  return out + "--" + kMimeBoundary + "--\n";
}

// A TOML basic string: quotes and backslashes escaped, control characters dropped.
std::string Toml(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) >= 0x20) out.push_back(c);
  }
  return out + "\"";
}

std::string NodeConfig(const ClusterInfo& cluster, const NodeBootstrap& node) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << "node.eks.aws/v1alpha1"
      << YAML::Key << "kind" << YAML::Value << "NodeConfig" << YAML::Key << "spec" << YAML::Value
      << YAML::BeginMap;
  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap << YAML::Key << "name"
      << YAML::Value << cluster.name << YAML::Key << "apiServerEndpoint" << YAML::Value
      << cluster.endpoint << YAML::Key << "certificateAuthority" << YAML::Value
      << cluster.ca_bundle_base64 << YAML::Key << "cidr" << YAML::Value << cluster.service_cidr
      << YAML::EndMap;
  out << YAML::Key << "kubelet" << YAML::Value << YAML::BeginMap << YAML::Key << "config"
      << YAML::Value << YAML::BeginMap << YAML::Key << "clusterDNS" << YAML::Value << YAML::BeginSeq
      << cluster.dns_ip << YAML::EndSeq;
  if (node.max_pods) out << YAML::Key << "maxPods" << YAML::Value << *node.max_pods;
  out << YAML::EndMap << YAML::Key << "flags" << YAML::Value << YAML::BeginSeq;
  if (!node.labels.empty()) out << "--node-labels=" + Joined(node.labels);
  if (!node.taints.empty()) out << "--register-with-taints=" + JoinedTaints(node.taints);
  out << YAML::EndSeq << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return out.c_str();
}

std::string Bottlerocket(const ClusterInfo& cluster, const NodeBootstrap& node) {
  std::string out = node.custom.empty() ? "" : node.custom + "\n";
  out += "[settings.kubernetes]\ncluster-name = " + Toml(cluster.name) +
         "\napi-server = " + Toml(cluster.endpoint) +
         "\ncluster-certificate = " + Toml(cluster.ca_bundle_base64) +
         "\ncluster-dns-ip = " + Toml(cluster.dns_ip) + "\n";
  if (node.max_pods) out += "max-pods = " + std::to_string(*node.max_pods) + "\n";
  out += "\n[settings.kubernetes.node-labels]\n";
  for (const auto& [k, v] : node.labels) out += Toml(k) + " = " + Toml(v) + "\n";
  out += "\n[settings.kubernetes.node-taints]\n";
  for (const Taint& t : node.taints)
    out += Toml(t.key) + " = [" + Toml(t.value + ":" + kube::EffectName(t.effect)) + "]\n";
  return out;
}

std::string Quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Al2(const ClusterInfo& cluster, const NodeBootstrap& node) {
  std::string kubelet_args;
  if (!node.labels.empty()) kubelet_args += "--node-labels=" + Joined(node.labels);
  if (!node.taints.empty()) kubelet_args += " --register-with-taints=" + JoinedTaints(node.taints);
  if (node.max_pods) kubelet_args += " --max-pods=" + std::to_string(*node.max_pods);
  return "#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s "
         "2>/dev/console) 2>&1\n"
         "/etc/eks/bootstrap.sh " +
         Quoted(cluster.name) + " --apiserver-endpoint " + Quoted(cluster.endpoint) +
         " --b64-cluster-ca " + Quoted(cluster.ca_bundle_base64) + " --dns-cluster-ip " +
         Quoted(cluster.dns_ip) + (node.max_pods ? " --use-max-pods false" : "") +
         " --kubelet-extra-args " + Quoted(kubelet_args) + "\n";
}

}  // namespace

std::optional<std::string> UserData(const std::string& ami_family, const ClusterInfo& cluster,
                                    const NodeBootstrap& node) {
  if (ami_family == "Custom") return node.custom;
  if (ami_family == "Bottlerocket") return Bottlerocket(cluster, node);
  std::vector<std::pair<std::string, std::string>> parts;
  if (!node.custom.empty())
    parts.emplace_back("text/x-shellscript; charset=\"us-ascii\"", node.custom);
  if (ami_family == "AL2023") {
    parts.emplace_back("application/node.eks.aws", NodeConfig(cluster, node));
    return Mime(parts);
  }
  if (ami_family == "AL2") {
    parts.emplace_back("text/x-shellscript; charset=\"us-ascii\"", Al2(cluster, node));
    return Mime(parts);
  }
  return std::nullopt;
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

}  // namespace tenon::aws
