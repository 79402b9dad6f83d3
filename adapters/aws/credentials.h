// The standard AWS credentials chain: environment, shared config/credentials files with
// profiles, web identity (IRSA) through STS, EKS Pod Identity, and IMDSv2. Temporary credentials
// are cached and fetched again before they expire. Nothing here logs a key, token or signature.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/aws/http.h"

namespace tenon::aws {

class CredentialsProvider {
 public:
  virtual ~CredentialsProvider() = default;
  virtual Result<Credentials> Get(Instant now) = 0;
  // The service said the credentials expired: the next Get must fetch fresh ones.
  virtual void Invalidate() {}
};

// Reads an environment variable; injected so tests never touch the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup ProcessEnv();

// A fixed set of credentials (tests, or keys handed over by the operator).
class StaticProvider : public CredentialsProvider {
 public:
  explicit StaticProvider(Credentials credentials) : credentials_(std::move(credentials)) {}
  Result<Credentials> Get(Instant) override { return Result<Credentials>::Ok(credentials_); }

 private:
  Credentials credentials_;
};

// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.
class EnvProvider : public CredentialsProvider {
 public:
  explicit EnvProvider(EnvLookup env) : env_(std::move(env)) {}
  Result<Credentials> Get(Instant now) override;

 private:
  EnvLookup env_;
};

// ~/.aws/credentials and ~/.aws/config (or AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE), the
// profile from AWS_PROFILE or "default".
class ProfileProvider : public CredentialsProvider {
 public:
  explicit ProfileProvider(EnvLookup env) : env_(std::move(env)) {}
  Result<Credentials> Get(Instant now) override;

 private:
  EnvLookup env_;
};

// The sections of an INI file: section name -> key -> value. "[profile x]" becomes "x".
using IniSections = std::map<std::string, std::map<std::string, std::string>>;
IniSections ParseIni(const std::string& text);

// AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE -> STS AssumeRoleWithWebIdentity (unsigned).
class WebIdentityProvider : public CredentialsProvider {
 public:
  WebIdentityProvider(EnvLookup env, AwsClient& sts) : env_(std::move(env)), sts_(sts) {}
  Result<Credentials> Get(Instant now) override;

 private:
  EnvLookup env_;
  AwsClient& sts_;
};

// AWS_CONTAINER_CREDENTIALS_FULL_URI with the token from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE
// (EKS Pod Identity), answered in JSON.
class ContainerProvider : public CredentialsProvider {
 public:
  ContainerProvider(EnvLookup env, Transport& transport)
      : env_(std::move(env)), transport_(transport) {}
  Result<Credentials> Get(Instant now) override;

 private:
  EnvLookup env_;
  Transport& transport_;
};

// IMDSv2: PUT /latest/api/token, then the role's credentials under that token.
class ImdsProvider : public CredentialsProvider {
 public:
  ImdsProvider(std::string endpoint, Transport& transport)
      : endpoint_(std::move(endpoint)), transport_(transport) {}
  Result<Credentials> Get(Instant now) override;

 private:
  std::string endpoint_;  // http://169.254.169.254 unless overridden.
  Transport& transport_;
};

// Tries each provider in order; the first with credentials wins. Credentials are cached until
// `refresh_before` ahead of their expiry, then fetched again.
class ChainProvider : public CredentialsProvider {
 public:
  explicit ChainProvider(std::vector<std::unique_ptr<CredentialsProvider>> links,
                         Duration refresh_before = Duration{5 * kMinute.value});
  Result<Credentials> Get(Instant now) override;
  void Invalidate() override { cached_.reset(); }
  std::int64_t fetches() const { return fetches_; }

 private:
  std::vector<std::unique_ptr<CredentialsProvider>> links_;
  Duration refresh_before_;
  std::optional<Credentials> cached_;
  std::int64_t fetches_ = 0;
};

// The standard order: environment, web identity, Pod Identity, profile files, then IMDSv2
// (at `imds_endpoint`). `sts` signs nothing (AssumeRoleWithWebIdentity is unsigned).
std::unique_ptr<ChainProvider> DefaultChain(EnvLookup env, Transport& transport, AwsClient& sts,
                                            std::string imds_endpoint = "http://169.254.169.254");

// An RFC 3339 time (2026-11-23T06:00:00Z, fractions and offsets allowed) as Unix nanos, or
// nullopt (ParseRfc3339).
std::optional<Instant> ParseIsoTime(const std::string& text);
// Parses the JSON answer of the container endpoint or IMDS.
Result<Credentials> ParseJsonCredentials(const std::string& body, const std::string& source);

}  // namespace tenon::aws
