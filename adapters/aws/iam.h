// IAM instance profiles for a NodeClass's `role`: get, create when missing, and make the role
// the profile's only role.
#pragma once

#include <string>
#include <vector>

#include "adapters/aws/http.h"

namespace tenon::aws {

inline constexpr char kIamVersion[] = "2010-05-08";

struct InstanceProfile {
  std::string name;
  std::string arn;
  std::vector<std::string> roles;
};

class Iam {
 public:
  explicit Iam(AwsClient& client) : client_(client) {}
  Result<InstanceProfile> GetInstanceProfile(const std::string& name);
  // Creates the profile when missing and attaches `role` (replacing another role).
  Result<InstanceProfile> EnsureInstanceProfile(const std::string& name, const std::string& role,
                                                const Labels& tags);

 private:
  AwsClient& client_;
};

// The InstanceProfile element of a Get/CreateInstanceProfile answer.
std::optional<InstanceProfile> ParseInstanceProfile(const std::string& xml);

}  // namespace tenon::aws
