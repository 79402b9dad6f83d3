#include "adapters/aws/ssm.h"

#include <nlohmann/json.hpp>

namespace tenon::aws {

Result<std::string> Ssm::GetParameter(const std::string& path) {
  const std::string name = !path.empty() && path.front() == '/' ? path : prefix_ + "/" + path;
  Result<std::string> body =
      client_.Json("ssm", "AmazonSSM.GetParameter", "application/x-amz-json-1.1",
                   nlohmann::json{{"Name", name}}.dump());
  if (!body.ok()) return body;
  const auto answer = nlohmann::json::parse(*body.value, nullptr, false);
  const bool usable = !answer.is_discarded() && answer.is_object() &&
                      answer.contains("Parameter") && answer["Parameter"].is_object() &&
                      answer["Parameter"].contains("Value") &&
                      answer["Parameter"]["Value"].is_string();
  if (!usable) {
    return Result<std::string>::Fail(AwsError{ErrorCode::kTransient, "MalformedResponse",
                                              "GetParameter answer without Parameter.Value", 200});
  }
  return Result<std::string>::Ok(answer["Parameter"]["Value"].get<std::string>());
}

// The SSM parameter that names an alias's AMI, as Karpenter's AWS provider reads it. "latest"
// is the family's recommended release; a pinned version names the release's own parameter, e.g.
// for Kubernetes 1.31:
//   al2023@v20240807 on x86_64: .../amazon-linux-2023/x86_64/standard/
//                                amazon-eks-node-al2023-x86_64-standard-1.31-v20240807
//   al2@v20240807 on arm64:     .../amazon-linux-2-arm64/amazon-eks-arm64-node-1.31-v20240807
//   bottlerocket@v1.20.1:       /bottlerocket/aws-k8s-1.31/x86_64/1.20.1 (no "v")
std::string Ssm::AliasPath(const std::string& alias, const std::string& arch,
                           const std::string& kubernetes_version) const {
  const auto at = alias.find('@');
  const std::string family = alias.substr(0, at);
  const std::string version = at == std::string::npos ? "latest" : alias.substr(at + 1);
  const bool latest = version == "latest";
  const std::string machine = arch == "arm64" ? "arm64" : "x86_64";
  if (family == "al2023") {
    const std::string release = latest ? "recommended"
                                       : "amazon-eks-node-al2023-" + machine + "-standard-" +
                                             kubernetes_version + "-" + version;
    return prefix_ + "/eks/optimized-ami/" + kubernetes_version + "/amazon-linux-2023/" + machine +
           "/standard/" + release + "/image_id";
  }
  if (family == "al2") {
    const std::string variant = arch == "arm64" ? "-arm64" : "";
    const std::string release =
        latest ? "recommended"
               : "amazon-eks" + variant + "-node-" + kubernetes_version + "-" + version;
    return prefix_ + "/eks/optimized-ami/" + kubernetes_version + "/amazon-linux-2" + variant +
           "/" + release + "/image_id";
  }
  if (family == "bottlerocket") {
    const std::string release =
        !latest && version.size() > 1 && version.front() == 'v' ? version.substr(1) : version;
    return prefix_ + "/bottlerocket/aws-k8s-" + kubernetes_version + "/" + machine + "/" + release +
           "/image_id";
  }
  return "";
}

}  // namespace tenon::aws
