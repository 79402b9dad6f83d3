#include "adapters/aws/credentials.h"

#include "model/timestamp.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include <cassert>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>
#include <sstream>

namespace tenon::aws {
namespace {

constexpr std::size_t kFileBytesMax = 1 << 20;
constexpr std::int32_t kLinesMax = 100'000;

AwsError Missing(std::string message) {
  return AwsError{ErrorCode::kUnauthorized, "NoCredentials", std::move(message), 0};
}

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(kFileBytesMax, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

std::string Trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

std::string EnvOr(const EnvLookup& env, const std::string& name, std::string fallback) {
  auto value = env(name);
  return value && !value->empty() ? *value : std::move(fallback);
}

std::optional<Credentials> FromSection(const IniSections& sections, const std::string& name,
                                       const std::string& source) {
  const auto it = sections.find(name);
  if (it == sections.end()) return std::nullopt;
  const auto& keys = it->second;
  const auto id = keys.find("aws_access_key_id");
  const auto secret = keys.find("aws_secret_access_key");
  if (id == keys.end() || secret == keys.end()) return std::nullopt;
  Credentials out{id->second, secret->second, "", std::nullopt, source};
  if (const auto token = keys.find("aws_session_token"); token != keys.end()) {
    out.session_token = token->second;
  }
  return out;
}

Result<Credentials> FetchJson(Transport& transport, HttpRequest request,
                              const std::string& source) {
  const HttpResponse response = transport.Send(request);
  if (response.status != 200) {
    AwsError error = ParseError(response);
    error.code = response.status == 0 || response.status >= 500 ? ErrorCode::kTransient
                                                                : ErrorCode::kUnauthorized;
    return Result<Credentials>::Fail(error);
  }
  return ParseJsonCredentials(response.body, source);
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<Instant> ParseIsoTime(const std::string& text) {
  return ParseRfc3339(text);
}

Result<Credentials> ParseJsonCredentials(const std::string& body, const std::string& source) {
  const auto json = nlohmann::json::parse(body, nullptr, false);
  const auto field = [&](const char* name) {
    return json.is_object() && json.contains(name) && json[name].is_string()
               ? json[name].get<std::string>()
               : std::string();
  };
  Credentials out{field("AccessKeyId"), field("SecretAccessKey"), field("Token"), std::nullopt,
                  source};
  if (out.access_key_id.empty() || out.secret_access_key.empty()) {
    return Result<Credentials>::Fail(
        Missing(source + ": answer without AccessKeyId/SecretAccessKey"));
  }
  if (const auto expires = ParseIsoTime(field("Expiration"))) out.expires = *expires;
  return Result<Credentials>::Ok(out);
}

IniSections ParseIni(const std::string& text) {
  IniSections sections;
  std::istringstream in(text);
  std::string line;
  std::string section;
  for (std::int32_t n = 0; n < kLinesMax && std::getline(in, line); ++n) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = Trim(line.substr(1, line.size() - 2));
      if (section.rfind("profile ", 0) == 0) section = Trim(section.substr(8));
      sections[section];
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos || section.empty()) continue;
    sections[section][Trim(line.substr(0, eq))] = Trim(line.substr(eq + 1));
  }
  return sections;
}

Result<Credentials> EnvProvider::Get(Instant) {
  const auto id = env_("AWS_ACCESS_KEY_ID");
  const auto secret = env_("AWS_SECRET_ACCESS_KEY");
  if (!id || !secret || id->empty() || secret->empty()) {
    return Result<Credentials>::Fail(Missing("environment: AWS_ACCESS_KEY_ID not set"));
  }
  return Result<Credentials>::Ok(
      Credentials{*id, *secret, EnvOr(env_, "AWS_SESSION_TOKEN", ""), std::nullopt, "environment"});
}

Result<Credentials> ProfileProvider::Get(Instant) {
  const std::string home = EnvOr(env_, "HOME", "");
  const std::string profile = EnvOr(env_, "AWS_PROFILE", "default");
  const std::string credentials_file =
      EnvOr(env_, "AWS_SHARED_CREDENTIALS_FILE", home + "/.aws/credentials");
  const std::string config_file = EnvOr(env_, "AWS_CONFIG_FILE", home + "/.aws/config");
  // The credentials file wins over the config file, as in the AWS SDKs.
  for (const auto& [path, label] :
       {std::pair{credentials_file, "credentials file"}, std::pair{config_file, "config file"}}) {
    const auto text = ReadSmallFile(path);
    if (!text) continue;
    if (auto found = FromSection(ParseIni(*text), profile,
                                 std::string("profile ") + profile + " (" + label + ")")) {
      return Result<Credentials>::Ok(*found);
    }
  }
  return Result<Credentials>::Fail(Missing("profile " + profile + ": no keys in the shared files"));
}

Result<Credentials> WebIdentityProvider::Get(Instant) {
  const auto role = env_("AWS_ROLE_ARN");
  const auto token_file = env_("AWS_WEB_IDENTITY_TOKEN_FILE");
  if (!role || !token_file || role->empty() || token_file->empty()) {
    return Result<Credentials>::Fail(Missing("web identity: AWS_ROLE_ARN not set"));
  }
  const auto token = ReadSmallFile(*token_file);
  if (!token) return Result<Credentials>::Fail(Missing("web identity: token file unreadable"));
  const std::string session = EnvOr(env_, "AWS_ROLE_SESSION_NAME", "tenon");
  auto body = sts_.Query(
      "sts", "AssumeRoleWithWebIdentity", "2011-06-15",
      {{"RoleArn", *role}, {"RoleSessionName", session}, {"WebIdentityToken", Trim(*token)}});
  if (!body.ok()) return Result<Credentials>::Fail(body.error);
  pugi::xml_document doc;
  if (!doc.load_buffer(body.value->data(), body.value->size())) {
    return Result<Credentials>::Fail(
        AwsError{ErrorCode::kInvalid, "MalformedResponse", "STS answer is not XML", 200});
  }
  const pugi::xml_node c = doc.select_node("//Credentials").node();
  Credentials out{c.child_value("AccessKeyId"), c.child_value("SecretAccessKey"),
                  c.child_value("SessionToken"), std::nullopt, "web identity"};
  if (out.access_key_id.empty() || out.secret_access_key.empty()) {
    return Result<Credentials>::Fail(Missing("web identity: STS answer without credentials"));
  }
  if (const auto expires = ParseIsoTime(c.child_value("Expiration"))) out.expires = *expires;
  return Result<Credentials>::Ok(out);
}

namespace {

// Where the AWS SDKs let a container credentials request (and its token) go: anywhere over
// https; over http only to this host (loopback) or to the agents of ECS (169.254.170.2) and of
// EKS Pod Identity (169.254.170.23, fd00:ec2::23).
bool TrustedContainerEndpoint(const std::string& uri) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> url(curl_url(), curl_url_cleanup);
  if (!url || curl_url_set(url.get(), CURLUPART_URL, uri.c_str(), 0) != CURLUE_OK) return false;
  auto part = [&](CURLUPart which) {
    char* text = nullptr;
    std::string out;
    if (curl_url_get(url.get(), which, &text, 0) == CURLUE_OK && text != nullptr) out = text;
    curl_free(text);
    return out;
  };
  const std::string scheme = part(CURLUPART_SCHEME), host = part(CURLUPART_HOST);
  if (scheme == "https") return true;
  if (scheme != "http") return false;
  in_addr v4{};
  const bool loopback_v4 =
      ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
  return loopback_v4 || host == "localhost" || host == "[::1]" || host == "169.254.170.2" ||
         host == "169.254.170.23" || host == "[fd00:ec2::23]";
}

}  // namespace

Result<Credentials> ContainerProvider::Get(Instant) {
  const auto uri = env_("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (!uri || uri->empty()) {
    return Result<Credentials>::Fail(
        Missing("container: AWS_CONTAINER_CREDENTIALS_FULL_URI not set"));
  }
  if (!TrustedContainerEndpoint(*uri)) {
    return Result<Credentials>::Fail(Missing(
        "container: AWS_CONTAINER_CREDENTIALS_FULL_URI '" + *uri +
        "' is not https, loopback, or the ECS or EKS Pod Identity agent's address; no request "
        "sent"));
  }
  HttpRequest request;
  request.method = "GET";
  std::tie(request.scheme, request.host) = SplitUrl(*uri);
  const auto path_at = uri->find('/', uri->find("://") + 3);
  request.path = path_at == std::string::npos ? "/" : uri->substr(path_at);
  std::string authorization = EnvOr(env_, "AWS_CONTAINER_AUTHORIZATION_TOKEN", "");
  if (const auto file = env_("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); file && !file->empty()) {
    const auto token = ReadSmallFile(*file);
    if (!token) return Result<Credentials>::Fail(Missing("container: token file unreadable"));
    authorization = Trim(*token);
  }
  if (!authorization.empty()) request.headers.emplace_back("Authorization", authorization);
  return FetchJson(transport_, std::move(request), "container");
}

Result<Credentials> ImdsProvider::Get(Instant) {
  HttpRequest token_request;
  token_request.method = "PUT";
  std::tie(token_request.scheme, token_request.host) = SplitUrl(endpoint_);
  token_request.path = "/latest/api/token";
  token_request.headers.emplace_back("X-aws-ec2-metadata-token-ttl-seconds", "21600");
  const HttpResponse token = transport_.Send(token_request);
  if (token.status != 200) {
    return Result<Credentials>::Fail(
        Missing("imds: no session token (HTTP " + std::to_string(token.status) + ")"));
  }
  HttpRequest role_request = token_request;
  role_request.method = "GET";
  role_request.headers = {{"X-aws-ec2-metadata-token", token.body}};
  role_request.path = "/latest/meta-data/iam/security-credentials/";
  const HttpResponse role = transport_.Send(role_request);
  const std::string role_name = Trim(role.body.substr(0, role.body.find('\n')));
  if (role.status != 200 || role_name.empty()) {
    return Result<Credentials>::Fail(Missing("imds: no instance profile role"));
  }
  role_request.path += UriEncode(role_name, true);
  return FetchJson(transport_, std::move(role_request), "imds");
}

ChainProvider::ChainProvider(std::vector<std::unique_ptr<CredentialsProvider>> links,
                             Duration refresh_before)
    : links_(std::move(links)), refresh_before_(refresh_before) {
  assert(!links_.empty());
}

Result<Credentials> ChainProvider::Get(Instant now) {
  const bool fresh = cached_ && (!cached_->expires || now + refresh_before_ < *cached_->expires);
  if (fresh) return Result<Credentials>::Ok(*cached_);
  ++fetches_;
  std::string tried;
  for (const auto& link : links_) {
    Result<Credentials> got = link->Get(now);
    if (got.ok()) {
      spdlog::info("aws credentials from {} (key id ending {})", got.value->source,
                   got.value->access_key_id.substr(
                       got.value->access_key_id.size() -
                       std::min<std::size_t>(4, got.value->access_key_id.size())));
      cached_ = got.value;
      return got;
    }
    // A link that is configured but failing (STS down) keeps the old credentials, if any.
    if (got.error.code == ErrorCode::kTransient && cached_)
      return Result<Credentials>::Ok(*cached_);
    tried += (tried.empty() ? "" : "; ") + got.error.message;
  }
  return Result<Credentials>::Fail(Missing("no credentials: " + tried));
}

std::unique_ptr<ChainProvider> DefaultChain(EnvLookup env, Transport& transport, AwsClient& sts,
                                            std::string imds_endpoint) {
  std::vector<std::unique_ptr<CredentialsProvider>> links;
  links.push_back(std::make_unique<EnvProvider>(env));
  links.push_back(std::make_unique<WebIdentityProvider>(env, sts));
  links.push_back(std::make_unique<ContainerProvider>(env, transport));
  links.push_back(std::make_unique<ProfileProvider>(env));
  links.push_back(std::make_unique<ImdsProvider>(std::move(imds_endpoint), transport));
  return std::make_unique<ChainProvider>(std::move(links));
}

}  // namespace tenon::aws
