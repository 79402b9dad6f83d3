// AWS Signature Version 4, header form: the canonical request, the string to sign, the derived
// key and the Authorization header, exactly as the published SigV4 test suite expects.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/model.h"

namespace tenon::aws {

// A set of credentials. `expires` is when they stop working; none for never.
struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // Empty for long-lived keys.
  std::optional<Instant> expires;
  std::string source;  // Which link of the chain produced them (for logs; never a secret).
};

using Pairs = std::vector<std::pair<std::string, std::string>>;

// An HTTP request before signing. Query values are raw (not yet percent-encoded).
struct HttpRequest {
  std::string method = "GET";
  std::string scheme = "https";
  std::string host;  // host[:port], as sent in the Host header.
  std::string path = "/";
  Pairs query;
  Pairs headers;
  std::string body;
};

struct SigningScope {
  std::string region;
  std::string service;
};

std::string Sha256Hex(std::string_view data);
// RFC 3986 percent-encoding: unreserved characters stay, everything else becomes %XX.
std::string UriEncode(std::string_view value, bool encode_slash);
// 20150830T123600Z for a Unix time.
std::string AmzDate(Instant unix_time);
std::string CanonicalQuery(const Pairs& query);
std::string CanonicalRequest(const HttpRequest& request, std::string* signed_headers);
std::string FullUrl(const HttpRequest& request);

// Adds Host (when missing), X-Amz-Date (when missing), X-Amz-Security-Token (with a session
// token) and Authorization to `request`.
void Sign(HttpRequest& request, const Credentials& credentials, const SigningScope& scope,
          Instant now);

}  // namespace tenon::aws
