// S3, as much as tenon needs: shipping log archives (tenon log export/import) to and from a
// bucket. Path-style addressing (https://s3.REGION.amazonaws.com/BUCKET/KEY), which works for
// every bucket name tenon would use and for moto.
#pragma once

#include <string>

#include "adapters/aws/http.h"

namespace tenon::aws {

// "s3://bucket/key/with/slashes" -> bucket and key; false when it is not such a URL.
bool ParseS3Url(const std::string& url, std::string* bucket, std::string* key);

class S3 {
 public:
  explicit S3(AwsClient& client) : client_(client) {}
  Result<Unit> CreateBucket(const std::string& bucket);
  Result<Unit> PutObject(const std::string& bucket, const std::string& key, std::string body);
  // Bounded by the transport's response_bytes_max (64 MiB by default).
  Result<std::string> GetObject(const std::string& bucket, const std::string& key);

 private:
  AwsClient& client_;
};

}  // namespace tenon::aws
