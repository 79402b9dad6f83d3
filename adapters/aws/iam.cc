#include "adapters/aws/iam.h"

#include <pugixml.hpp>

namespace tenon::aws {
namespace {

constexpr std::size_t kRolesMax = 10;
constexpr std::size_t kTagsMax = 50;  // IAM's limit per resource.

Result<InstanceProfile> Parsed(const Result<std::string>& body, const char* action) {
  if (!body.ok()) return Result<InstanceProfile>::Fail(body.error);
  std::optional<InstanceProfile> profile = ParseInstanceProfile(*body.value);
  if (!profile) {
    return Result<InstanceProfile>::Fail(AwsError{ErrorCode::kTransient, "MalformedResponse",
                                                  std::string(action) + ": no InstanceProfile",
                                                  200});
  }
  return Result<InstanceProfile>::Ok(std::move(*profile));
}

}  // namespace

std::string InstanceProfileName(const std::string& cluster, const std::string& nodeclass) {
  return cluster + "_" + nodeclass;
}

std::optional<InstanceProfile> ParseInstanceProfile(const std::string& xml) {
  pugi::xml_document doc;
  if (!doc.load_buffer(xml.data(), xml.size())) return std::nullopt;
  const pugi::xml_node p = doc.select_node("//InstanceProfile").node();
  if (!p || std::string_view(p.child_value("InstanceProfileName")).empty()) return std::nullopt;
  InstanceProfile out{p.child_value("InstanceProfileName"), p.child_value("Arn"), {}, {}};
  for (pugi::xml_node member : p.child("Roles").children("member")) {
    if (out.roles.size() >= kRolesMax) break;
    out.roles.emplace_back(member.child_value("RoleName"));
  }
  std::size_t tags = 0;
  for (pugi::xml_node member : p.child("Tags").children("member")) {
    if (tags++ >= kTagsMax) break;
    out.tags[member.child_value("Key")] = member.child_value("Value");
  }
  return out;
}

Result<InstanceProfile> Iam::GetInstanceProfile(const std::string& name) {
  return Parsed(
      client_.Query("iam", "GetInstanceProfile", kIamVersion, {{"InstanceProfileName", name}}),
      "GetInstanceProfile");
}

Result<InstanceProfile> Iam::EnsureInstanceProfile(const std::string& name, const std::string& role,
                                                   const Labels& tags) {
  Result<InstanceProfile> profile = GetInstanceProfile(name);
  if (!profile.ok() && profile.error.code == ErrorCode::kNotFound) {
    Pairs params{{"InstanceProfileName", name}};
    std::int32_t n = 1;
    for (const auto& [key, value] : tags) {
      params.emplace_back("Tags.member." + std::to_string(n) + ".Key", key);
      params.emplace_back("Tags.member." + std::to_string(n++) + ".Value", value);
    }
    profile = Parsed(client_.Query("iam", "CreateInstanceProfile", kIamVersion, params),
                     "CreateInstanceProfile");
  }
  if (!profile.ok()) return profile;
  if (profile.value->roles.size() == 1 && profile.value->roles.front() == role) return profile;
  for (const std::string& other : profile.value->roles) {
    Result<std::string> removed =
        client_.Query("iam", "RemoveRoleFromInstanceProfile", kIamVersion,
                      {{"InstanceProfileName", name}, {"RoleName", other}});
    if (!removed.ok()) return Result<InstanceProfile>::Fail(removed.error);
  }
  Result<std::string> added = client_.Query("iam", "AddRoleToInstanceProfile", kIamVersion,
                                            {{"InstanceProfileName", name}, {"RoleName", role}});
  if (!added.ok()) return Result<InstanceProfile>::Fail(added.error);
  return GetInstanceProfile(name);
}

Result<ProfileRemoval> Iam::DeleteInstanceProfile(const std::string& name,
                                                  const Labels& owner_tags) {
  using R = Result<ProfileRemoval>;
  const Result<InstanceProfile> profile = GetInstanceProfile(name);
  if (!profile.ok()) {
    return profile.error.code == ErrorCode::kNotFound ? R::Ok(ProfileRemoval::kAbsent)
                                                      : R::Fail(profile.error);
  }
  for (const auto& [key, value] : owner_tags) {
    const auto it = profile.value->tags.find(key);
    if (it == profile.value->tags.end() || it->second != value) {
      return R::Ok(ProfileRemoval::kNotOwned);
    }
  }
  // IAM refuses to delete a profile that still holds a role.
  for (const std::string& role : profile.value->roles) {
    Result<std::string> removed =
        client_.Query("iam", "RemoveRoleFromInstanceProfile", kIamVersion,
                      {{"InstanceProfileName", name}, {"RoleName", role}});
    if (!removed.ok() && removed.error.code != ErrorCode::kNotFound) return R::Fail(removed.error);
  }
  Result<std::string> deleted =
      client_.Query("iam", "DeleteInstanceProfile", kIamVersion, {{"InstanceProfileName", name}});
  if (!deleted.ok()) {
    return deleted.error.code == ErrorCode::kNotFound ? R::Ok(ProfileRemoval::kAbsent)
                                                      : R::Fail(deleted.error);
  }
  return R::Ok(ProfileRemoval::kDeleted);
}

}  // namespace tenon::aws
