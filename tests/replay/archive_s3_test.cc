// tenon log export to S3 and import from it, on moto: the archive uploaded by one run imports
// into a fresh folder from the bucket and replays identically; a missing key is named.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include "adapters/aws/connection.h"
#include "adapters/aws/s3.h"
#include "tests/replay/incident.h"

namespace tenon::testing {
namespace {

// A port nobody listens on now: the kernel's pick for a socket bound to port 0.
int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// moto_server on 127.0.0.1 and a free port, killed with the test. (tests/aws/moto.h's Child
// clashes with tests/integration/helpers.h's, so this suite starts its own.)
class MotoServer {
 public:
  MotoServer() {
    port_ = FreeLoopbackPort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      std::freopen("/dev/null", "w", stdout);
      std::freopen("/dev/null", "w", stderr);
      const std::string port = std::to_string(port_);
      ::execlp(TENON_MOTO_SERVER, "moto_server", "-p", port.c_str(), "-H", "127.0.0.1",
               static_cast<char*>(nullptr));
      ::_exit(127);
    }
    aws::CurlTransport probe(
        aws::TransportOptions{.connect_timeout_ms = 200, .total_timeout_ms = 1000});
    aws::HttpRequest request;
    request.scheme = "http";
    request.host = "127.0.0.1:" + std::to_string(port_);
    request.path = "/moto-api/";
    for (int i = 0; i < 300 && probe.Send(request).status == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~MotoServer() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_ = 0;
  pid_t pid_ = -1;
};

TEST(ArchiveS3, ExportToS3ImportFromS3ReplaysIdentically) {
  MotoServer moto;
  // The tenon processes below find moto and dummy keys through the SDKs' environment names.
  ::setenv("AWS_ENDPOINT_URL_S3", moto.url().c_str(), 1);
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDTENONTEST", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "tenon-test-secret", 1);
  ::setenv("AWS_REGION", "us-east-1", 1);
  {
    aws::AwsConnection connection(aws::AwsSettingsFromEnvironment(aws::ProcessEnv()),
                                  aws::ProcessEnv());
    ASSERT_TRUE(aws::S3(connection.client()).CreateBucket("incidents").ok());
  }
  auto run = RunKept(PdbScenario());
  const std::string url = "s3://incidents/2026-01-01/pdb.tenonlog";
  auto exported = Tenon("log export " + run->log().string() + " -o " + url);
  ASSERT_EQ(exported.exit_code, 0) << exported.out;
  EXPECT_NE(exported.out.find("exported " + url), std::string::npos) << exported.out;

  TempDir clean;
  const auto dir = clean.path() / "imported";
  auto imported = Tenon("log import " + url + " -o " + dir.string());
  ASSERT_EQ(imported.exit_code, 0) << imported.out;
  // The same archive both ways: the checksum printed on export is the one checked on import.
  auto checksum = [](const std::string& out) { return out.substr(out.find("checksum")); };
  EXPECT_EQ(checksum(imported.out), checksum(exported.out));

  auto verify = Tenon("replay --verify " + dir.string());
  EXPECT_EQ(verify.exit_code, 0) << verify.out;
  EXPECT_NE(verify.out.find("verdict: identical"), std::string::npos) << verify.out;
  auto original = replay::Verify(*run->Open());
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(original.final_hash));
  EXPECT_NE(verify.out.find(std::string("final state ") + hash), std::string::npos) << verify.out;

  auto missing =
      Tenon("log import s3://incidents/none.tenonlog -o " + (clean.path() / "x").string());
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(clean.path() / "x"));
}

}  // namespace
}  // namespace tenon::testing
