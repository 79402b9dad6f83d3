// Everything one thread needs to call AWS: a transport, the credentials chain and a signing
// client. The pieces are not thread-safe, so every thread that calls AWS owns a connection.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "adapters/aws/credentials.h"
#include "adapters/aws/http.h"

namespace tenon::aws {

// Where to reach AWS: the region and, for VPC endpoints or tests (moto), per-service URLs.
struct AwsSettings {
  std::string region = "us-east-1";
  std::map<std::string, std::string> endpoints;  // Service name -> base URL.
};

// The AWS SDKs' environment: AWS_REGION (else AWS_DEFAULT_REGION), AWS_ENDPOINT_URL for every
// service and AWS_ENDPOINT_URL_<SERVICE> (EC2, SQS, SSM, IAM, STS, PRICING, S3) for one.
AwsSettings AwsSettingsFromEnvironment(const EnvLookup& env);

class AwsConnection {
 public:
  AwsConnection(const AwsSettings& settings, EnvLookup env,
                TransportOptions transport = TransportOptions{});
  AwsConnection(const AwsConnection&) = delete;
  AwsConnection& operator=(const AwsConnection&) = delete;

  AwsClient& client() { return *client_; }
  // The Price List API answers from us-east-1 whatever the cluster's region.
  AwsClient& pricing() { return *pricing_; }

 private:
  CurlTransport transport_;
  std::unique_ptr<AwsClient> sts_;
  std::unique_ptr<ChainProvider> credentials_;
  std::unique_ptr<AwsClient> client_;
  std::unique_ptr<AwsClient> pricing_;
};

}  // namespace tenon::aws
