// The kube client's TLS against a real TLS peer: tests/kube/apiserver.py serving HTTPS with
// certificates made at test time by the openssl command line tool (a CA, a server certificate
// for 127.0.0.1, a client certificate, and an unrelated CA with a client certificate of its own).
// Server verification, CA files and PEM data, insecure-skip-tls-verify, client certificates as
// files, PEM data and kubeconfig data, and a watch stream, all over TLS.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "adapters/kube/client.h"
#include "tests/kube/apiserver.h"
#include "tests/support/temp_dir.h"

namespace tenon::kube {
namespace {

using nlohmann::json;
using std::filesystem::path;
using testing::ApiServer;
using testing::TlsFiles;

constexpr char kPods[] = "/api/v1/namespaces/default/pods";

// The extensions of what the tests sign: CAs, a server certificate for the IP 127.0.0.1 (so the
// client's host check is against an IP subjectAltName) and client certificates.
constexpr char kOpensslConfig[] = R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
)";

std::string ReadFile(const path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool HaveOpenssl() {
  return std::system("command -v openssl >/dev/null 2>&1") == 0;
}

// The certificates, in a temporary folder that goes with it. Throws, with openssl's output, when
// a step fails.
class Pki {
 public:
  Pki() {
    std::ofstream(dir_.path() / "openssl.cnf") << kOpensslConfig;
    MakeCa("ca", "tenon-test-ca");
    MakeCa("other-ca", "tenon-other-ca");
    Sign("server", "/CN=127.0.0.1", "ca", "server", 2);
    Sign("client", "/O=system:masters/CN=tenon-test-client", "ca", "client", 3);
    Sign("stranger", "/O=system:masters/CN=tenon-stranger", "other-ca", "client", 4);
  }
  path Cert(const std::string& name) const { return dir_.path() / (name + ".crt"); }
  path Key(const std::string& name) const { return dir_.path() / (name + ".key"); }
  path File(const std::string& name) const { return dir_.path() / name; }
  // A file's contents base64-encoded on one line, as kubeconfig's *-data fields have them.
  std::string Base64(const path& file) const {
    const path out = dir_.path() / (file.filename().string() + ".b64");
    Openssl("base64 -A -in '" + file.string() + "' -out '" + out.string() + "'");
    return ReadFile(out);
  }

 private:
  static constexpr char kNewKey[] = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

  void Openssl(const std::string& args) const {
    const path log = dir_.path() / "openssl.log";
    const std::string command =
        "cd '" + dir_.path().string() + "' && openssl " + args + " >'" + log.string() + "' 2>&1";
    if (std::system(command.c_str()) != 0) {
      throw std::runtime_error("openssl " + args + " failed:\n" + ReadFile(log));
    }
  }
  void MakeCa(const std::string& name, const std::string& cn) const {
    Openssl("req -x509 -config openssl.cnf -extensions ca " + std::string(kNewKey) + " -keyout " +
            name + ".key -out " + name + ".crt -days 2 -subj /CN=" + cn);
  }
  void Sign(const std::string& name, const std::string& subject, const std::string& ca,
            const std::string& extensions, int serial) const {
    Openssl("req -new -config openssl.cnf " + std::string(kNewKey) + " -keyout " + name +
            ".key -out " + name + ".csr -subj " + subject);
    Openssl("x509 -req -in " + name + ".csr -CA " + ca + ".crt -CAkey " + ca + ".key -set_serial " +
            std::to_string(serial) + " -days 2 -extfile openssl.cnf -extensions " + extensions +
            " -out " + name + ".crt");
  }

  tenon::testing::TempDir dir_;
};

class KubeTls : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(HaveOpenssl()) << "the openssl command line tool is not on PATH: these tests "
                                  "make their certificates with it (apt-get install openssl)";
    try {
      pki();
    } catch (const std::exception& e) {
      FAIL() << "cannot make the test certificates: " << e.what();
    }
  }
  // Made once per process (ctest runs each test in one of its own).
  static const Pki& pki() {
    static const Pki instance;
    return instance;
  }
  // The server's certificate and key; with `client_ca`, client certificates are required.
  static TlsFiles Tls(bool require_client_certificate = false) {
    return {pki().Cert("server"), pki().Key("server"),
            require_client_certificate ? pki().Cert("ca").string() : std::string()};
  }
  // https to `server`, verifying it against `ca_file` (none: the system's bundle), no credentials.
  static ClusterConfig Https(const ApiServer& server, const std::string& ca_file = "") {
    ClusterConfig config;
    config.server = "https://127.0.0.1:" + std::to_string(server.port());
    config.ca_file = ca_file;
    config.request_timeout = std::chrono::seconds(5);
    return config;
  }
  static ClusterConfig WithToken(ClusterConfig config) {
    config.token = testing::kToken;
    return config;
  }
  static ClusterConfig WithClientCertificateData(ClusterConfig config) {
    config.client_cert_data = ReadFile(pki().Cert("client"));
    config.client_key_data = ReadFile(pki().Key("client"));
    return config;
  }
  // The API requests the server has seen, read over a connection that skips verification.
  static json RequestsSeen(const ApiServer& server) {
    ClusterConfig config = WithClientCertificateData(Https(server));
    config.insecure_skip_tls_verify = true;
    const Response response = Client(config).Request("GET", "/_test/requests");
    EXPECT_EQ(response.status, 200) << Describe(response);
    return json::parse(response.body, nullptr, false);
  }
};

// 200 with a PodList, or the failure described.
void ExpectPodList(const ClusterConfig& config) {
  const Response response = Client(config).Request("GET", kPods);
  EXPECT_EQ(response.status, 200) << Describe(response);
  const json body = json::parse(response.body, nullptr, false);
  EXPECT_TRUE(body.is_object() && body.value("kind", "") == "PodList") << response.body;
}

// No HTTP answer; the transport error names the certificate and libcurl's detail of why.
void ExpectServerCertificateRefused(const ClusterConfig& config, const std::string& why) {
  const Response response = Client(config).Request("GET", kPods);
  EXPECT_EQ(response.status, 0) << Describe(response);
  EXPECT_NE(response.transport_error.find("certificate"), std::string::npos)
      << response.transport_error;
  EXPECT_NE(response.transport_error.find(why), std::string::npos) << response.transport_error;
}

// No HTTP answer. Under TLS 1.3 the client learns that the server refused its certificate only
// after the handshake, so the error is the server's alert ("certificate required", "unknown ca")
// or a failed send, as the race goes: only its presence is checked.
void ExpectRefusedByTheServer(const ClusterConfig& config) {
  const Response response = Client(config).Request("GET", kPods);
  EXPECT_EQ(response.status, 0) << Describe(response);
  EXPECT_FALSE(response.transport_error.empty());
}

TEST_F(KubeTls, VerifiesTheServerAgainstTheCaFile) {
  ApiServer server(Tls());
  ExpectPodList(WithToken(Https(server, pki().Cert("ca"))));
}

TEST_F(KubeTls, VerifiesTheServerAgainstCaData) {
  ApiServer server(Tls());
  ClusterConfig config = WithToken(Https(server));
  config.ca_data = ReadFile(pki().Cert("ca"));
  ExpectPodList(config);
}

TEST_F(KubeTls, RefusesAServerItCannotVerify) {
  ApiServer server(Tls());
  constexpr char kUnknownIssuer[] = "unable to get local issuer certificate";
  ExpectServerCertificateRefused(WithToken(Https(server)), kUnknownIssuer);  // The system's CAs.
  ExpectServerCertificateRefused(WithToken(Https(server, pki().Cert("other-ca"))), kUnknownIssuer);
  ClusterConfig data = WithToken(Https(server));
  data.ca_data = ReadFile(pki().Cert("other-ca"));
  ExpectServerCertificateRefused(data, kUnknownIssuer);
  // The right CA, but the certificate is for 127.0.0.1, not "localhost": the host is checked.
  ClusterConfig by_name = WithToken(Https(server, pki().Cert("ca")));
  by_name.server = "https://localhost:" + std::to_string(server.port());
  ExpectServerCertificateRefused(by_name, "localhost");
  EXPECT_EQ(RequestsSeen(server), json::array()) << "no request may reach an unverified server";
}

TEST_F(KubeTls, InsecureSkipTlsVerifyIsHonoured) {
  ApiServer server(Tls());
  ClusterConfig config = WithToken(Https(server, pki().Cert("other-ca")));
  config.insecure_skip_tls_verify = true;
  ExpectPodList(config);
}

TEST_F(KubeTls, ClientCertificateFilesAuthenticateWithoutAToken) {
  ApiServer server(Tls(true));
  ClusterConfig config = Https(server, pki().Cert("ca"));
  config.client_cert_file = pki().Cert("client");
  config.client_key_file = pki().Key("client");
  ExpectPodList(config);
}

TEST_F(KubeTls, ClientCertificateDataAuthenticatesWithoutAToken) {
  ApiServer server(Tls(true));
  ExpectPodList(WithClientCertificateData(Https(server, pki().Cert("ca"))));
}

TEST_F(KubeTls, WithoutAClientCertificateTheServerRefuses) {
  ApiServer server(Tls(true));
  ExpectRefusedByTheServer(WithToken(Https(server, pki().Cert("ca"))));  // A token is no help.
  ClusterConfig stranger = WithToken(Https(server, pki().Cert("ca")));
  stranger.client_cert_file = pki().Cert("stranger");  // Signed by a CA the server does not know.
  stranger.client_key_file = pki().Key("stranger");
  ExpectRefusedByTheServer(stranger);
  EXPECT_EQ(RequestsSeen(server), json::array());
}

TEST_F(KubeTls, KubeconfigWithEmbeddedCertificates) {
  ApiServer server(Tls(true));
  const path kubeconfig = pki().File("kubeconfig-" + std::to_string(server.port()));
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\ncurrent-context: tls\n"
                            << "clusters:\n- name: tls\n  cluster:\n    server: https://127.0.0.1:"
                            << server.port() << "\n    certificate-authority-data: "
                            << pki().Base64(pki().Cert("ca")) << "\n"
                            << "users:\n- name: cert\n  user:\n    client-certificate-data: "
                            << pki().Base64(pki().Cert("client"))
                            << "\n    client-key-data: " << pki().Base64(pki().Key("client"))
                            << "\ncontexts:\n- name: tls\n  context:\n    cluster: tls\n"
                            << "    user: cert\n";
  const ClusterConfig config = LoadKubeconfig(kubeconfig.string());
  EXPECT_EQ(config.ca_data, ReadFile(pki().Cert("ca")));
  EXPECT_EQ(config.client_key_data, ReadFile(pki().Key("client")));
  EXPECT_TRUE(config.token.empty());
  ExpectPodList(config);
}

TEST_F(KubeTls, AStalledHandshakeHoldsUpNoOtherConnection) {
  ApiServer server(Tls());
  const int silent = socket(AF_INET, SOCK_STREAM, 0);  // Connects and never says hello.
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(server.port()));
  ASSERT_EQ(connect(silent, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // Accepted, handshake pending.
  ClusterConfig config = WithToken(Https(server, pki().Cert("ca")));
  config.request_timeout = std::chrono::seconds(2);
  ExpectPodList(config);
  close(silent);
}

TEST_F(KubeTls, WatchStreamsOverTls) {
  ApiServer server(Tls(true));
  Client client(WithClientCertificateData(Https(server, pki().Cert("ca"))));
  std::mutex mu;
  std::vector<json> events;
  Response ended;
  std::thread watcher([&] {
    ended = client.Stream(
        std::string(kPods) + "?watch=true&resourceVersion=0&allowWatchBookmarks=true",
        [&](std::string_view line) {
          const json event = json::parse(line);
          std::lock_guard lock(mu);
          events.push_back(event);
          return !(event["type"] == "ADDED" && event["object"]["metadata"]["name"] == "over-tls");
        },
        std::chrono::seconds(10));
  });
  // The pod is created once the watch is open, so its ADDED comes live, not from a first list.
  int open_watches = 0;
  for (int i = 0; i < 250 && open_watches == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const Response stats = client.Request("GET", "/_test/stats");
    if (stats.status == 200) open_watches = json::parse(stats.body).value("openWatches", 0);
  }
  EXPECT_EQ(open_watches, 1);
  const json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata", {{"name", "over-tls"}}},
                    {"spec", {{"containers", {{{"name", "c"}, {"image", "nginx"}}}}}}};
  const Response created = client.Request("POST", kPods, pod.dump());
  EXPECT_EQ(created.status, 201) << Describe(created);
  watcher.join();
  EXPECT_EQ(ended.status, 200) << Describe(ended);  // Stopped by the callback, not broken.
  std::lock_guard lock(mu);
  ASSERT_FALSE(events.empty());
  const json& added = events.back();
  EXPECT_EQ(added["type"], "ADDED");
  EXPECT_EQ(added["object"]["metadata"]["name"], "over-tls");
  EXPECT_EQ(added["object"]["metadata"]["resourceVersion"],
            json::parse(created.body)["metadata"]["resourceVersion"]);
}

}  // namespace
}  // namespace tenon::kube
