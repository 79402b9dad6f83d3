#include "adapters/aws/sigv4.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <ctime>
#include <map>

namespace tenon::aws {
namespace {

constexpr char kAlgorithm[] = "AWS4-HMAC-SHA256";

std::string Hex(const unsigned char* data, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[data[i] >> 4]);
    out.push_back(kDigits[data[i] & 0xf]);
  }
  return out;
}

std::string Hmac(std::string_view key, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, &size);
  assert(size == 32);
  return std::string(reinterpret_cast<const char*>(digest), size);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Trims the value and folds runs of spaces into one, as the canonical header form requires.
std::string TrimValue(std::string_view value) {
  std::string out;
  bool space = false;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

bool HasHeader(const Pairs& headers, std::string_view name) {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return Lower(h.first) == name; });
}

std::string CanonicalPath(std::string_view path) {
  if (path.empty()) return "/";
  return UriEncode(path, false);
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr);
  return Hex(digest, size);
}

std::string UriEncode(std::string_view value, bool encode_slash) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (unsigned char c : value) {
    const bool unreserved = std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved || (c == '/' && !encode_slash)) {
      out.push_back(static_cast<char>(c));
      continue;
    }
    out.push_back('%');
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

std::string AmzDate(Instant unix_time) {
  const std::time_t seconds = static_cast<std::time_t>(unix_time.value / kSecond.value);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  const std::size_t n = std::strftime(buffer, sizeof buffer, "%Y%m%dT%H%M%SZ", &tm);
  assert(n == 16);
  return std::string(buffer, n);
}

std::string CanonicalQuery(const Pairs& query) {
  std::vector<std::pair<std::string, std::string>> encoded;
  encoded.reserve(query.size());
  for (const auto& [k, v] : query) encoded.emplace_back(UriEncode(k, true), UriEncode(v, true));
  std::sort(encoded.begin(), encoded.end());
  std::string out;
  for (const auto& [k, v] : encoded) {
    if (!out.empty()) out.push_back('&');
    out += k + "=" + v;
  }
  return out;
}

std::string CanonicalRequest(const HttpRequest& request, std::string* signed_headers) {
  // Header names are lower-cased and sorted; repeated names join their values with commas.
  std::map<std::string, std::string> headers;
  for (const auto& [name, value] : request.headers) {
    std::string& slot = headers[Lower(name)];
    if (!slot.empty()) slot.push_back(',');
    slot += TrimValue(value);
  }
  std::string canonical_headers;
  signed_headers->clear();
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + value + "\n";
    if (!signed_headers->empty()) signed_headers->push_back(';');
    *signed_headers += name;
  }
  return request.method + "\n" + CanonicalPath(request.path) + "\n" +
         CanonicalQuery(request.query) + "\n" + canonical_headers + "\n" + *signed_headers + "\n" +
         Sha256Hex(request.body);
}

std::string FullUrl(const HttpRequest& request) {
  std::string url = request.scheme + "://" + request.host + CanonicalPath(request.path);
  const std::string query = CanonicalQuery(request.query);
  if (!query.empty()) url += "?" + query;
  return url;
}

void Sign(HttpRequest& request, const Credentials& credentials, const SigningScope& scope,
          Instant now) {
  assert(!credentials.access_key_id.empty());
  assert(!scope.region.empty() && !scope.service.empty());
  if (!HasHeader(request.headers, "host")) request.headers.emplace_back("Host", request.host);
  std::string amz_date = AmzDate(now);
  for (const auto& [name, value] : request.headers) {
    if (Lower(name) == "x-amz-date") amz_date = value;
  }
  if (!HasHeader(request.headers, "x-amz-date"))
    request.headers.emplace_back("X-Amz-Date", amz_date);
  if (!credentials.session_token.empty() && !HasHeader(request.headers, "x-amz-security-token")) {
    request.headers.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  const std::string date = amz_date.substr(0, 8);
  const std::string credential_scope =
      date + "/" + scope.region + "/" + scope.service + "/aws4_request";
  std::string signed_headers;
  const std::string canonical = CanonicalRequest(request, &signed_headers);
  const std::string string_to_sign = std::string(kAlgorithm) + "\n" + amz_date + "\n" +
                                     credential_scope + "\n" + Sha256Hex(canonical);
  std::string key = Hmac("AWS4" + credentials.secret_access_key, date);
  key = Hmac(key, scope.region);
  key = Hmac(key, scope.service);
  key = Hmac(key, "aws4_request");
  const std::string mac = Hmac(key, string_to_sign);
  const std::string signature = Hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
  request.headers.emplace_back(
      "Authorization", std::string(kAlgorithm) + " Credential=" + credentials.access_key_id + "/" +
                           credential_scope + ", SignedHeaders=" + signed_headers +
                           ", Signature=" + signature);
}

}  // namespace tenon::aws
