// The credentials chain: environment first, then profiles from the shared files; cached
// credentials are fetched again before they expire.
#include "adapters/aws/credentials.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tenon::aws {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string TempFile(const std::string& name, const std::string& text) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tenon-aws-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

// A transport that records the requests it is asked to send and answers each with `answer`.
class RecordingTransport : public Transport {
 public:
  HttpResponse Send(const HttpRequest& request) override {
    hosts.push_back(request.scheme + "://" + request.host);
    HttpResponse response;
    response.status = 200;
    response.body = R"({"AccessKeyId":"ASIAEXAMPLE","SecretAccessKey":"s","Token":"t",)"
                    R"("Expiration":"2026-01-01T00:00:00Z"})";
    return response;
  }
  std::vector<std::string> hosts;
};

// The container token goes, as with the AWS SDKs, only over https or to loopback and the ECS
// and EKS Pod Identity agents; any other http address gets no request at all.
TEST(AwsCredentials, ContainerCredentialsOnlyFromTrustedAddresses) {
  for (const std::string uri :
       {"https://creds.example.com/v1", "http://127.0.0.1:8080/creds", "http://localhost/creds",
        "http://[::1]:9000/c", "http://169.254.170.2/v2/credentials/x",
        "http://169.254.170.23/v1/credentials", "http://[fd00:ec2::23]/v1/credentials"}) {
    RecordingTransport transport;
    ContainerProvider provider(Env({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", uri},
                                    {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "secret"}}),
                               transport);
    const auto got = provider.Get(Instant{});
    EXPECT_TRUE(got.ok()) << uri << ": " << got.error.message;
    EXPECT_EQ(transport.hosts.size(), 1u) << uri;
  }
  for (const std::string uri :
       {"http://creds.example.com/v1", "http://169.254.169.254/latest", "http://10.0.0.5/c",
        "ftp://127.0.0.1/c", "not a url", "http://127.0.0.1.example.com/c"}) {
    RecordingTransport transport;
    ContainerProvider provider(Env({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", uri},
                                    {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "secret"}}),
                               transport);
    const auto got = provider.Get(Instant{});
    EXPECT_FALSE(got.ok()) << uri;
    EXPECT_NE(got.error.message.find("no request sent"), std::string::npos) << got.error.message;
    EXPECT_TRUE(transport.hosts.empty()) << uri << " was asked";
  }
}

TEST(AwsCredentials, EnvironmentWithSessionToken) {
  EnvProvider env(Env({{"AWS_ACCESS_KEY_ID", "AKIAENV"},
                       {"AWS_SECRET_ACCESS_KEY", "s"},
                       {"AWS_SESSION_TOKEN", "t"}}));
  const Result<Credentials> c = env.Get(Instant{});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value->access_key_id, "AKIAENV");
  EXPECT_EQ(c.value->session_token, "t");
  EXPECT_FALSE(EnvProvider(Env({})).Get(Instant{}).ok());
}

TEST(AwsCredentials, ProfilesFromCredentialsAndConfigFiles) {
  const std::string credentials =
      TempFile("credentials",
               "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = d\n"
               "# comment\n[work]\naws_access_key_id=AKIAWORK\naws_secret_access_key=w\n");
  const std::string config = TempFile(
      "config",
      "[default]\nregion = us-east-1\n[profile other]\n"
      "aws_access_key_id = AKIAOTHER\naws_secret_access_key = o\naws_session_token = ot\n");
  const auto get = [&](const std::string& profile) {
    std::map<std::string, std::string> vars{{"AWS_SHARED_CREDENTIALS_FILE", credentials},
                                            {"AWS_CONFIG_FILE", config}};
    if (!profile.empty()) vars["AWS_PROFILE"] = profile;
    return ProfileProvider(Env(vars)).Get(Instant{});
  };
  EXPECT_EQ(get("").value->access_key_id, "AKIADEFAULT");
  EXPECT_EQ(get("work").value->access_key_id, "AKIAWORK");
  EXPECT_EQ(get("other").value->session_token, "ot");
  EXPECT_FALSE(get("missing").ok());
  EXPECT_EQ(ParseIni("[profile x]\n a = b \n")["x"]["a"], "b");
}

class CountingProvider : public CredentialsProvider {
 public:
  Duration lifetime{10 * kMinute.value};
  int calls = 0;
  Result<Credentials> Get(Instant now) override {
    ++calls;
    return Result<Credentials>::Ok(
        Credentials{"AKIA" + std::to_string(calls), "s", "t", now + lifetime, "counting"});
  }
};

TEST(AwsCredentials, ChainCachesAndRefreshesBeforeExpiry) {
  std::vector<std::unique_ptr<CredentialsProvider>> links;
  links.push_back(std::make_unique<EnvProvider>(Env({})));
  auto counting = std::make_unique<CountingProvider>();
  CountingProvider* raw = counting.get();
  links.push_back(std::move(counting));
  ChainProvider chain(std::move(links), Duration{5 * kMinute.value});
  EXPECT_EQ(chain.Get(Instant{}).value->access_key_id, "AKIA1");
  EXPECT_EQ(chain.Get(Instant{4 * kMinute.value}).value->access_key_id, "AKIA1");  // 6 min left.
  EXPECT_EQ(chain.Get(Instant{5 * kMinute.value + 1}).value->access_key_id,
            "AKIA2");  // < 5 min left.
  EXPECT_EQ(raw->calls, 2);
}

TEST(AwsCredentials, JsonAnswersAndTimes) {
  const Result<Credentials> c = ParseJsonCredentials(
      R"({"AccessKeyId":"ASIA1","SecretAccessKey":"s","Token":"t","Expiration":"2026-11-23T06:00:00Z"})",
      "container");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value->expires, Instant{1795413600LL * kSecond.value});
  EXPECT_FALSE(ParseJsonCredentials("<html>", "container").ok());
  EXPECT_FALSE(ParseIsoTime("yesterday"));
  EXPECT_FALSE(ParseIsoTime("2026-02-30T00:00:00Z")) << "no such day";
  // EC2's launch times carry milliseconds; they are kept.
  EXPECT_EQ(ParseIsoTime("2026-11-23T06:00:00.250Z"),
            Instant{1795413600LL * kSecond.value + 250'000'000});
  EXPECT_FALSE(ParseIsoTime("2026-02-30T00:00:00Z")) << "no such day";
  // EC2's launch times carry milliseconds; they are kept.
  EXPECT_EQ(ParseIsoTime("2026-11-23T06:00:00.250Z"),
            Instant{1795413600LL * kSecond.value + 250'000'000});
}

}  // namespace
}  // namespace tenon::aws
