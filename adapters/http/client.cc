#include "adapters/http/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <optional>

namespace tenon::http {
namespace {

// The longest a transfer waits in one poll: curl's own timers, an AbortSignal's wake-up and the
// cancel flag (read after every poll) end it sooner.
constexpr int kPollMillis = 1000;

// What the callbacks of one transfer write into.
struct Received {
  CURL* curl;
  Response* response;
  const Transfer* transfer;
  bool over_limit = false;  // The body passed response_bytes_max.
  bool stopped = false;     // The body sink asked to stop.
};

std::size_t OnBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* received = static_cast<Received*>(user);
  const std::size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(received->curl, CURLINFO_RESPONSE_CODE, &status);
  if (received->transfer->on_body && status >= 200 && status < 300) {
    if (received->transfer->on_body(std::string_view(data, n))) return n;
    received->stopped = true;
    return 0;  // Ends the transfer with CURLE_WRITE_ERROR.
  }
  std::string& body = received->response->body;
  const std::int64_t limit = received->transfer->response_bytes_max;
  if (limit > 0 && static_cast<std::int64_t>(body.size() + n) > limit) {
    received->over_limit = true;
    return 0;
  }
  body.append(data, n);
  return n;
}

std::size_t OnHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto* received = static_cast<Received*>(user);
  const std::size_t n = size * count;
  std::string line(data, n);
  const auto colon = line.find(':');
  if (colon == std::string::npos) return n;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string value = line.substr(colon + 1);
  const auto first = value.find_first_not_of(" \t");
  const auto last = value.find_last_not_of(" \t\r\n");
  value = first == std::string::npos ? "" : value.substr(first, last - first + 1);
  received->response->headers[name] = value;
  return n;
}

Failure FailureOf(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
      return Failure::kConnect;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return Failure::kConnection;
    case CURLE_OPERATION_TIMEDOUT:
      return Failure::kTimeout;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
      return Failure::kTls;
    default:
      return Failure::kOther;
  }
}

void SetTls(CURL* curl, const TlsOptions& tls) {
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, tls.verify ? 1L : 0L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, tls.verify ? 2L : 0L);
  if (!tls.ca_data.empty()) {
    curl_blob blob{const_cast<char*>(tls.ca_data.data()), tls.ca_data.size(), CURL_BLOB_COPY};
    curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob);
  } else if (!tls.ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, tls.ca_file.c_str());
  }
  if (!tls.client_cert_data.empty()) {
    curl_blob cert{const_cast<char*>(tls.client_cert_data.data()), tls.client_cert_data.size(),
                   CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(tls.client_key_data.data()), tls.client_key_data.size(),
                  CURL_BLOB_COPY};
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!tls.client_cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, tls.client_cert_file.c_str());
    curl_easy_setopt(curl, CURLOPT_SSLKEY, tls.client_key_file.c_str());
  }
}

// The options of one request on a handle just reset. `headers` must outlive the transfer.
void Prepare(CURL* curl, const Request& request, const Transfer& transfer, curl_slist* headers,
             Received& received, char* error) {
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  if (request.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
  if (!transfer.user_agent.empty()) {
    curl_easy_setopt(curl, CURLOPT_USERAGENT, transfer.user_agent.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);  // h2 over TLS if offered.
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);  // A dead peer of a quiet watch is noticed.
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(transfer.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(transfer.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &received);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &received);
  SetTls(curl, transfer.tls);
}

}  // namespace

void AbortSignal::Trigger() {
  std::lock_guard lock(mu_);
  triggered_ = true;
  // Thread-safe in libcurl; the wake-up stays pending until the poll it ends takes it.
  for (void* multi : multis_) curl_multi_wakeup(static_cast<CURLM*>(multi));
}

void AbortSignal::Attach(void* multi) {
  std::lock_guard lock(mu_);
  multis_.insert(multi);
}

void AbortSignal::Detach(void* multi) {
  std::lock_guard lock(mu_);
  multis_.erase(multi);
}

Connection::Connection(AbortSignal* abort) : abort_(abort) {
  static const CURLcode global = curl_global_init(CURL_GLOBAL_DEFAULT);
  assert(global == CURLE_OK);
  (void)global;
  curl_ = curl_easy_init();
  assert(curl_ != nullptr);
  multi_ = curl_multi_init();
  assert(multi_ != nullptr);
  if (abort_ != nullptr) abort_->Attach(multi_);
}

Connection::~Connection() {
  if (abort_ != nullptr) abort_->Detach(multi_);
  curl_easy_cleanup(static_cast<CURL*>(curl_));
  curl_multi_cleanup(static_cast<CURLM*>(multi_));  // Closes the cached connections.
}

Response Connection::Perform(const Request& request, const Transfer& transfer) {
  Response response;
  const auto ending = [&] {
    return (abort_ != nullptr && abort_->triggered()) ||
           (transfer.cancel != nullptr && transfer.cancel->load());
  };
  const auto aborted = [&] {
    response = Response{};
    response.aborted = true;
    response.failure = Failure::kAborted;
    response.transport_error = "aborted: the process is stopping";
    return response;
  };
  if (ending()) return aborted();
  CURL* curl = static_cast<CURL*>(curl_);
  CURLM* multi = static_cast<CURLM*>(multi_);
  curl_easy_reset(curl);  // The connections stay in the multi handle's cache.
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers) {
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  }
  headers = curl_slist_append(headers, "Expect:");  // No 100-continue round trip.
  Received received{curl, &response, &transfer};
  char error[CURL_ERROR_SIZE] = {};  // libcurl's detail of a failure (TLS alerts, verification).
  Prepare(curl, request, transfer, headers, received, error);
  // curl_easy_perform's loop, on a multi handle an AbortSignal can wake from its poll.
  curl_multi_add_handle(multi, curl);
  std::optional<CURLcode> code;
  std::string failure;
  bool abort = false;
  while (!code && failure.empty() && !abort) {
    int running = 0;
    CURLMcode step = curl_multi_perform(multi, &running);
    int queued = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
      if (message->msg == CURLMSG_DONE) code = message->data.result;
    }
    if (code) break;
    abort = ending();
    if (step == CURLM_OK && running == 0) failure = "the transfer ended without a result";
    if (step == CURLM_OK && running > 0 && !abort) {
      step = curl_multi_poll(multi, nullptr, 0, kPollMillis, nullptr);
    }
    if (step != CURLM_OK) failure = curl_multi_strerror(step);
  }
  curl_multi_remove_handle(multi, curl);  // Mid-transfer, this closes the connection.
  curl_slist_free_all(headers);
  if (abort && !code) return aborted();
  if (code && *code == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    return response;
  }
  if (!code) {
    response.failure = Failure::kOther;
    response.transport_error = failure;
    return response;
  }
  response.transport_error = curl_easy_strerror(*code);
  if (error[0] != '\0') response.transport_error += std::string(": ") + error;
  if (*code == CURLE_WRITE_ERROR && received.stopped) {
    response.failure = Failure::kStopped;  // Stopped by the caller: the answer's status stays.
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    return response;
  }
  response.failure = FailureOf(*code);
  if (received.over_limit) {
    response.transport_error =
        "the answer exceeds " + std::to_string(transfer.response_bytes_max) + " bytes";
  }
  return response;
}

std::string Excerpt(std::string_view body, std::size_t bytes_max) {
  std::string out;
  for (char c : body.substr(0, bytes_max)) {
    out.push_back(std::isprint(static_cast<unsigned char>(c)) ? c : ' ');
  }
  return out;
}

}  // namespace tenon::http
