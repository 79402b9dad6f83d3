// moto in strict mode (every request authenticated): our signatures pass, a tampered one or a
// wrong secret fails with Unauthorized, and a verbose run never logs a secret, token or signature.
// Its own moto: switching auth on is global to the server.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "adapters/aws/credentials.h"
#include "adapters/aws/ec2.h"
#include "adapters/aws/sqs.h"
#include "tests/aws/moto.h"

namespace tenon::aws {
namespace {

using testing::FastHooks;

constexpr char kAllowAll[] =
    R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]})";

// Remembers every Authorization and token header it sends; optionally corrupts the signature.
class RecordingTransport : public Transport {
 public:
  bool tamper = false;
  std::vector<std::string> secrets_sent;
  HttpResponse Send(const HttpRequest& request) override {
    HttpRequest copy = request;
    for (auto& [name, value] : copy.headers) {
      if (name == "Authorization" || name == "X-Amz-Security-Token") {
        if (tamper && name == "Authorization") value.back() = value.back() == '0' ? '1' : '0';
        secrets_sent.push_back(name == "Authorization" ? value.substr(value.find("Signature="))
                                                       : value);
      }
    }
    return inner.Send(copy);
  }
  CurlTransport inner;
};

struct StrictMoto {
  StrictMoto() {
    Credentials bootstrap = testing::DummyCredentials();
    StaticProvider provider(bootstrap);
    CurlTransport transport;
    AwsClient iam(transport, &provider,
                  ClientOptions{.region = "us-east-1", .endpoints = {{"iam", moto.url()}}},
                  FastHooks());
    const auto Q = [&](const std::string& action, const Pairs& params) {
      Result<std::string> r = iam.Query("iam", action, "2010-05-08", params);
      EXPECT_TRUE(r.ok()) << action << ": " << r.error.message;
      return r.ok() ? *r.value : std::string();
    };
    Q("CreateUser", {{"UserName", "tenon"}});
    Q("PutUserPolicy",
      {{"UserName", "tenon"}, {"PolicyName", "all"}, {"PolicyDocument", kAllowAll}});
    const std::string key = Q("CreateAccessKey", {{"UserName", "tenon"}});
    user = Credentials{Between(key, "<AccessKeyId>", "</AccessKeyId>"),
                       Between(key, "<SecretAccessKey>", "</SecretAccessKey>"), "", std::nullopt,
                       "iam user"};
    Q("CreateRole",
      {{"RoleName", "karpenter"},
       {"AssumeRolePolicyDocument",
        R"({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Federated":"oidc"},"Action":"sts:AssumeRoleWithWebIdentity"}]})"}});
    Q("PutRolePolicy",
      {{"RoleName", "karpenter"}, {"PolicyName", "all"}, {"PolicyDocument", kAllowAll}});
    // moto 5.2.1 answers an unsigned AssumeRoleWithWebIdentity with a 500 once auth is on, so
    // the web identity exchange happens before.
    FetchFederated();
    // From here on moto authenticates every request.
    HttpRequest reset;
    reset.method = "POST";
    reset.scheme = "http";
    reset.host = "127.0.0.1:" + std::to_string(moto.port());
    reset.path = "/moto-api/reset-auth";
    reset.body = "0";
    reset.headers = {{"Content-Type", "text/plain"}};  // A form type would hide the body from moto.
    EXPECT_EQ(transport.Send(reset).status, 200);
  }
  void FetchFederated() {
    std::ofstream(token_file) << "eyJhbGciOiJSUzI1NiJ9.web-identity-token-secret.sig";
    CurlTransport transport;
    AwsClient sts(transport, nullptr,
                  ClientOptions{.region = "us-east-1", .endpoints = {{"sts", moto.url()}}},
                  FastHooks());
    std::vector<std::unique_ptr<CredentialsProvider>> links;
    links.push_back(std::make_unique<WebIdentityProvider>(
        [&](const std::string& name) -> std::optional<std::string> {
          if (name == "AWS_ROLE_ARN") return "arn:aws:iam::123456789012:role/karpenter";
          if (name == "AWS_WEB_IDENTITY_TOKEN_FILE") return token_file;
          return std::nullopt;
        },
        sts));
    ChainProvider chain(std::move(links));
    Result<Credentials> got = chain.Get(Instant{});
    EXPECT_TRUE(got.ok()) << got.error.message;
    if (got.ok()) federated = *got.value;
  }
  static std::string Between(const std::string& s, const std::string& a, const std::string& b) {
    const auto i = s.find(a);
    if (i == std::string::npos) return "";
    return s.substr(i + a.size(), s.find(b, i) - i - a.size());
  }
  testing::Moto moto;
  std::string token_file =
      (std::filesystem::temp_directory_path() / ("tenon-strict-wi-" + std::to_string(getpid())))
          .string();
  Credentials user;
  Credentials federated;
};

// Everything the binary logs, from before moto starts until the last test.
std::ostringstream* captured = nullptr;

StrictMoto* strict = nullptr;

class StrictEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    captured = new std::ostringstream();
    auto logger = std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(*captured));
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
    strict = new StrictMoto();
  }
  void TearDown() override {
    delete strict;
    strict = nullptr;
  }
};

ClientOptions Options() {
  return ClientOptions{.region = "us-east-1",
                       .endpoints = {{"ec2", strict->moto.url()},
                                     {"sqs", strict->moto.url()},
                                     {"sts", strict->moto.url()}},
                       .attempts_max = 2};
}

TEST(AwsStrict, SignedRequestsPassAndTamperedOnesFail) {
  ASSERT_FALSE(strict->user.access_key_id.empty());
  RecordingTransport transport;
  StaticProvider good(strict->user);
  AwsClient client(transport, &good, Options(), FastHooks());
  EXPECT_TRUE(Ec2(client).DescribeAvailabilityZones().ok());
  EXPECT_TRUE(SqsCall(client, "CreateQueue", R"({"QueueName":"strict"})").ok());

  transport.tamper = true;
  const auto tampered = Ec2(client).DescribeAvailabilityZones();
  ASSERT_FALSE(tampered.ok());
  EXPECT_EQ(tampered.error.code, ErrorCode::kUnauthorized) << tampered.error.aws_code;
  transport.tamper = false;

  Credentials wrong = strict->user;
  wrong.secret_access_key[0] = wrong.secret_access_key[0] == 'a' ? 'b' : 'a';
  StaticProvider bad(wrong);
  AwsClient bad_client(transport, &bad, Options(), FastHooks());
  const auto rejected = Ec2(bad_client).DescribeAvailabilityZones();
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.error.code, ErrorCode::kUnauthorized);
  // EC2 calls a bad signature AuthFailure (as AWS does); Query services say SignatureDoesNotMatch.
  EXPECT_EQ(rejected.error.aws_code, "AuthFailure");

  StaticProvider unknown(testing::DummyCredentials());
  AwsClient unknown_client(transport, &unknown, Options(), FastHooks());
  EXPECT_EQ(Ec2(unknown_client).DescribeAvailabilityZones().error.code, ErrorCode::kUnauthorized);
}

TEST(AwsStrict, VerboseRunLogsNoSecretTokenOrSignature) {
  ASSERT_FALSE(strict->federated.session_token.empty());
  RecordingTransport transport;
  StaticProvider federated(strict->federated);
  AwsClient client(transport, &federated, Options(), FastHooks());
  Ec2(client).DescribeAvailabilityZones();  // Signed with a session token; allowed or not, it logs.
  StaticProvider user(strict->user);
  AwsClient user_client(transport, &user, Options(), FastHooks());
  EXPECT_TRUE(Ec2(user_client).DescribeAvailabilityZones().ok());
  transport.tamper = true;
  EXPECT_FALSE(Ec2(user_client).DescribeAvailabilityZones().ok());

  const std::string log = captured->str();
  EXPECT_NE(log.find("DescribeAvailabilityZones"), std::string::npos) << "the run logged nothing";
  EXPECT_NE(log.find("aws credentials from web identity"), std::string::npos);
  std::vector<std::string> secrets = transport.secrets_sent;
  secrets.push_back(strict->user.secret_access_key);
  secrets.push_back(strict->federated.secret_access_key);
  secrets.push_back(strict->federated.session_token);
  secrets.push_back("web-identity-token-secret");
  ASSERT_GE(secrets.size(), 8u);
  for (const std::string& secret : secrets) {
    ASSERT_GE(secret.size(), 10u);
    EXPECT_EQ(log.find(secret), std::string::npos) << "logged: " << secret.substr(0, 14) << "...";
  }
  EXPECT_EQ(log.find("Signature="), std::string::npos);
}

}  // namespace
}  // namespace tenon::aws

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tenon::aws::StrictEnvironment());
  return RUN_ALL_TESTS();
}
