// SigV4 reproduces the signatures of AWS's published test suite (aws-sig-v4-test-suite).
#include "adapters/aws/sigv4.h"

#include <gtest/gtest.h>

namespace tenon::aws {
namespace {

const Credentials kSuite{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "",
                         std::nullopt, "suite"};
const SigningScope kScope{"us-east-1", "service"};
// 2015-08-30T12:36:00Z
constexpr Instant kSuiteTime{1440938160LL * 1'000'000'000};

HttpRequest SuiteRequest(std::string method, Pairs query = {}, Pairs headers = {},
                         std::string body = "") {
  HttpRequest r;
  r.method = std::move(method);
  r.host = "example.amazonaws.com";
  r.query = std::move(query);
  r.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  r.headers.insert(r.headers.end(), headers.begin(), headers.end());
  r.body = std::move(body);
  return r;
}

std::string Authorization(HttpRequest r, const Credentials& c = kSuite) {
  Sign(r, c, kScope, kSuiteTime);
  for (const auto& [name, value] : r.headers) {
    if (name == "Authorization") return value;
  }
  return "";
}

std::string Expected(const std::string& signed_headers, const std::string& signature) {
  return "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
         "SignedHeaders=" +
         signed_headers + ", Signature=" + signature;
}

TEST(AwsSigV4, GetVanilla) {
  EXPECT_EQ(Authorization(SuiteRequest("GET")),
            Expected("host;x-amz-date",
                     "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"));
}

TEST(AwsSigV4, GetVanillaQueryOrderKeyCase) {
  EXPECT_EQ(Authorization(SuiteRequest("GET", {{"Param2", "value2"}, {"Param1", "value1"}})),
            Expected("host;x-amz-date",
                     "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"));
}

TEST(AwsSigV4, PostVanilla) {
  EXPECT_EQ(Authorization(SuiteRequest("POST")),
            Expected("host;x-amz-date",
                     "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"));
}

TEST(AwsSigV4, PostVanillaQuery) {
  EXPECT_EQ(Authorization(SuiteRequest("POST", {{"Param1", "value1"}})),
            Expected("host;x-amz-date",
                     "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"));
}

TEST(AwsSigV4, PostVanillaQuerySpace) {
  EXPECT_EQ(Authorization(SuiteRequest("POST", {{"p", ""}})),
            Expected("host;x-amz-date",
                     "e71688addb58a26418614085fb730ba3faa623b461c17f48f2fbdb9361b94a9b"));
}

TEST(AwsSigV4, PostXWwwFormUrlencoded) {
  EXPECT_EQ(
      Authorization(SuiteRequest(
          "POST", {}, {{"Content-Type", "application/x-www-form-urlencoded"}}, "Param1=value1")),
      Expected("content-type;host;x-amz-date",
               "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"));
}

TEST(AwsSigV4, PostHeaderValueCase) {
  EXPECT_EQ(Authorization(SuiteRequest("POST", {}, {{"My-Header1", "VALUE1"}})),
            Expected("host;my-header1;x-amz-date",
                     "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"));
}

TEST(AwsSigV4, GetHeaderValueTrim) {
  EXPECT_EQ(Authorization(SuiteRequest(
                "GET", {}, {{"My-Header1", " value1"}, {"My-Header2", "\"a   b   c\""}})),
            Expected("host;my-header1;my-header2;x-amz-date",
                     "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"));
}

TEST(AwsSigV4, CanonicalRequestOfTheSuite) {
  std::string signed_headers;
  EXPECT_EQ(
      CanonicalRequest(SuiteRequest("GET", {{"Param2", "value2"}, {"Param1", "value1"}}),
                       &signed_headers),
      "GET\n/"
      "\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
      "host;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(AwsSigV4, SessionTokenIsSignedAndSent) {
  Credentials c = kSuite;
  c.session_token = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQW";
  HttpRequest r = SuiteRequest("GET");
  Sign(r, c, kScope, kSuiteTime);
  bool token_sent = false;
  std::string authorization;
  for (const auto& [name, value] : r.headers) {
    token_sent |= name == "X-Amz-Security-Token" && value == c.session_token;
    if (name == "Authorization") authorization = value;
  }
  EXPECT_TRUE(token_sent);
  EXPECT_NE(authorization.find("SignedHeaders=host;x-amz-date;x-amz-security-token,"),
            std::string::npos);
}

TEST(AwsSigV4, AddsDateFromTheClockAndQueryEncodingIsRfc3986) {
  HttpRequest r;
  r.host = "ec2.us-east-1.amazonaws.com";
  Sign(r, kSuite, kScope, kSuiteTime);
  bool dated = false;
  for (const auto& [name, value] : r.headers)
    dated |= name == "X-Amz-Date" && value == "20150830T123600Z";
  EXPECT_TRUE(dated);
  EXPECT_EQ(CanonicalQuery({{"b", "a b/c~"}, {"a", "$Latest"}}), "a=%24Latest&b=a%20b%2Fc~");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace tenon::aws
