// SSM Parameter Store over the JSON protocol: AMI aliases resolve through public parameters
// (/aws/service/eks/optimized-ami/..., /aws/service/bottlerocket/...), under a configurable
// prefix so tests and air-gapped installs can use their own.
#pragma once

#include <string>

#include "adapters/aws/http.h"

namespace tenon::aws {

class Ssm {
 public:
  explicit Ssm(AwsClient& client, std::string prefix = "/aws/service")
      : client_(client), prefix_(std::move(prefix)) {}
  // The value of `path` (relative to the prefix when it does not start with '/').
  Result<std::string> GetParameter(const std::string& path);
  // The parameter path of an AMI alias such as al2023@latest for an architecture; empty when
  // the family is unknown.
  std::string AliasPath(const std::string& alias, const std::string& arch,
                        const std::string& kubernetes_version) const;

 private:
  AwsClient& client_;
  std::string prefix_;
};

}  // namespace tenon::aws
