#include "adapters/aws/connection.h"

namespace tenon::aws {

AwsSettings AwsSettingsFromEnvironment(const EnvLookup& env) {
  AwsSettings settings;
  auto get = [&](const std::string& name) -> std::string {
    const auto value = env(name);
    return value ? *value : "";
  };
  if (std::string region = get("AWS_REGION"); !region.empty()) {
    settings.region = region;
  } else if (std::string fallback = get("AWS_DEFAULT_REGION"); !fallback.empty()) {
    settings.region = fallback;
  }
  const std::string all = get("AWS_ENDPOINT_URL");
  for (const auto& [service, suffix] : std::map<std::string, std::string>{{"ec2", "EC2"},
                                                                          {"sqs", "SQS"},
                                                                          {"ssm", "SSM"},
                                                                          {"iam", "IAM"},
                                                                          {"sts", "STS"},
                                                                          {"pricing", "PRICING"},
                                                                          {"s3", "S3"}}) {
    std::string url = get("AWS_ENDPOINT_URL_" + suffix);
    if (url.empty()) url = all;
    if (!url.empty()) settings.endpoints[service] = url;
  }
  return settings;
}

AwsConnection::AwsConnection(const AwsSettings& settings, EnvLookup env, TransportOptions transport)
    : transport_(transport) {
  ClientOptions options;
  options.region = settings.region;
  options.endpoints = settings.endpoints;
  sts_ = std::make_unique<AwsClient>(transport_, nullptr, options, RealHooks());
  credentials_ = DefaultChain(std::move(env), transport_, *sts_);
  client_ = std::make_unique<AwsClient>(transport_, credentials_.get(), options, RealHooks());
  ClientOptions pricing_options = options;
  pricing_options.region = "us-east-1";
  pricing_ =
      std::make_unique<AwsClient>(transport_, credentials_.get(), pricing_options, RealHooks());
}

}  // namespace tenon::aws
