#include "adapters/aws/s3.h"

namespace tenon::aws {

bool ParseS3Url(const std::string& url, std::string* bucket, std::string* key) {
  constexpr std::string_view kScheme = "s3://";
  if (url.rfind(kScheme, 0) != 0) return false;
  const std::string rest = url.substr(kScheme.size());
  const auto slash = rest.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size()) return false;
  *bucket = rest.substr(0, slash);
  *key = rest.substr(slash + 1);
  return true;
}

Result<Unit> S3::CreateBucket(const std::string& bucket) {
  auto result = client_.Rest("s3", "PUT", "/" + bucket, "");
  if (!result.ok()) return Result<Unit>::Fail(result.error);
  return Result<Unit>::Ok(Unit{});
}

Result<Unit> S3::PutObject(const std::string& bucket, const std::string& key, std::string body) {
  auto result = client_.Rest("s3", "PUT", "/" + bucket + "/" + key, std::move(body));
  if (!result.ok()) return Result<Unit>::Fail(result.error);
  return Result<Unit>::Ok(Unit{});
}

Result<std::string> S3::GetObject(const std::string& bucket, const std::string& key) {
  return client_.Rest("s3", "GET", "/" + bucket + "/" + key, "");
}

}  // namespace tenon::aws
