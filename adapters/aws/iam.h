// IAM instance profiles for a NodeClass's `role`: get, create when missing, make the role the
// profile's only role, and delete the profile again when its NodeClass goes.
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
  Labels tags;
};

// What DeleteInstanceProfile did.
enum class ProfileRemoval {
  kDeleted,
  kAbsent,    // No profile of that name: nothing to do.
  kNotOwned,  // The profile lacks one of the owner's tags: it was left alone.
};

class Iam {
 public:
  explicit Iam(AwsClient& client) : client_(client) {}
  Result<InstanceProfile> GetInstanceProfile(const std::string& name);
  // Creates the profile when missing and attaches `role` (replacing another role).
  Result<InstanceProfile> EnsureInstanceProfile(const std::string& name, const std::string& role,
                                                const Labels& tags);
  // Deletes the profile, after removing its roles, when it carries every tag in `owner_tags`
  // (the tags EnsureInstanceProfile created it with); a profile without them is left alone.
  Result<ProfileRemoval> DeleteInstanceProfile(const std::string& name, const Labels& owner_tags);

 private:
  AwsClient& client_;
};

// The name of the instance profile tenon makes for an EC2NodeClass's spec.role: CLUSTER_NODECLASS
// (the controller's IAM policy is scoped to the CLUSTER_ prefix).
std::string InstanceProfileName(const std::string& cluster, const std::string& nodeclass);

// The InstanceProfile element of a Get/CreateInstanceProfile answer.
std::optional<InstanceProfile> ParseInstanceProfile(const std::string& xml);

}  // namespace tenon::aws
