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

std::string Ssm::AliasPath(const std::string& alias, const std::string& arch,
                           const std::string& kubernetes_version) const {
  const std::string family = alias.substr(0, alias.find('@'));
  const std::string version =
      alias.find('@') == std::string::npos ? "latest" : alias.substr(alias.find('@') + 1);
  const bool arm = arch == "arm64";
  const std::string release = version == "latest" ? "recommended" : version;
  if (family == "al2023") {
    return prefix_ + "/eks/optimized-ami/" + kubernetes_version + "/amazon-linux-2023/" +
           (arm ? "arm64" : "x86_64") + "/standard/" + release + "/image_id";
  }
  if (family == "al2") {
    return prefix_ + "/eks/optimized-ami/" + kubernetes_version + "/amazon-linux-2" +
           (arm ? "-arm64" : "") + "/" + release + "/image_id";
  }
  if (family == "bottlerocket") {
    return prefix_ + "/bottlerocket/aws-k8s-" + kubernetes_version + "/" +
           (arm ? "arm64" : "x86_64") + "/" + version + "/image_id";
  }
  return "";
}

}  // namespace tenon::aws
