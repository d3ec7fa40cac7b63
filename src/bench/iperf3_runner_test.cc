#include "bench/iperf3_runner.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "bench/child_process.h"
#include "bench/sockets.h"

namespace wharf::bench {
namespace {

constexpr const char* kClientJson = R"({
  "start": {"version": "iperf 3.12", "test_start": {"protocol": "TCP", "duration": 1}},
  "intervals": [],
  "end": {
    "sum_sent": {"seconds": 1.0004, "bytes": 1668546560, "bits_per_second": 13342648483.8,
                 "retransmits": 7, "sender": true},
    "sum_received": {"seconds": 1.0005, "bytes": 1662910464, "bits_per_second": 13297087269.3,
                     "sender": true},
    "cpu_utilization_percent": {"host_total": 41.5, "host_user": 1.2, "host_system": 40.3,
                                "remote_total": 63.25, "remote_user": 2, "remote_system": 61.25}
  }
})";

TEST(Iperf3ParseTest, ReadsReceiverGoodput) {
  auto r = ParseIperf3ClientJson(kClientJson);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->received_bits_per_second, 13297087269.3);
  EXPECT_DOUBLE_EQ(r->sent_bits_per_second, 13342648483.8);
  EXPECT_DOUBLE_EQ(r->seconds, 1.0005);
  EXPECT_EQ(r->retransmits, 7);
  EXPECT_EQ(r->version, "iperf 3.12");
  EXPECT_DOUBLE_EQ(r->client_cpu_percent, 41.5);
  EXPECT_DOUBLE_EQ(r->server_cpu_percent, 63.25);
}

TEST(Iperf3ParseTest, CpuUnknownWithoutUtilization) {
  auto r = ParseIperf3ClientJson(R"({"end": {"sum_received": {"bits_per_second": 5}}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->client_cpu_percent, -1);
  EXPECT_EQ(r->server_cpu_percent, -1);
}

TEST(Iperf3ParseTest, ToleratesStderrAroundTheDocument) {
  auto r = ParseIperf3ClientJson(std::string("warning: something\n") + kClientJson + "\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->retransmits, 7);
}

TEST(Iperf3ParseTest, QuotesIperf3sError) {
  auto r = ParseIperf3ClientJson(
      R"({"start": {}, "intervals": [], "end": {}, "error": "unable to connect to server: Connection refused"})");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("Connection refused"), std::string::npos);
}

TEST(Iperf3ParseTest, RejectsGarbageAndMissingFields) {
  EXPECT_EQ(ParseIperf3ClientJson("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseIperf3ClientJson("iperf3: error - boom").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseIperf3ClientJson("{ not json }").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseIperf3ClientJson(R"({"end": {"sum_received": {"bits_per_second": "fast"}}})")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseIperf3ClientJson(R"({"end": []})").status().code(), StatusCode::kInvalidArgument);
}

TEST(Iperf3RunnerTest, MissingBinarySaysHowToInstall) {
  Iperf3Options o;
  o.binary = "/nonexistent/iperf3";
  auto r = RunIperf3(o, SystemClock::Get());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "/nonexistent/iperf3 not installed: run scripts/setup");
}

bool HaveIperf3() { return ChildProcess::FindExecutable("iperf3").ok(); }

TEST(Iperf3RunnerTest, OneSecondOnLoopback) {
  if (!HaveIperf3()) GTEST_SKIP() << "iperf3 not installed";
  Iperf3Options o;
  o.port = 0;
  o.seconds = 1;
  auto r = RunIperf3(o, SystemClock::Get());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->received_bits_per_second, 1e8);  // anything alive does far better on loopback
  EXPECT_GT(r->seconds, 0.5);
  EXPECT_NE(r->port, 0);
  EXPECT_TRUE(r->note.empty());
}

// A listener on the port makes iperf3's server fail to bind; with fallback a
// free port is used, without it the run is refused up front.
TEST(Iperf3RunnerTest, BusyPort) {
  if (!HaveIperf3()) GTEST_SKIP() << "iperf3 not installed";
  auto address = ParseSocketAddress("127.0.0.1", 0);
  ASSERT_TRUE(address.ok());
  auto listener = OpenSocket(AF_INET, SOCK_STREAM);
  ASSERT_TRUE(listener.ok());
  ASSERT_EQ(::bind(listener->get(), address->get(), address->length), 0);
  ASSERT_EQ(::listen(listener->get(), 1), 0);
  auto port = LocalPort(listener->get());
  ASSERT_TRUE(port.ok());

  Iperf3Options o;
  o.port = *port;
  o.seconds = 1;
  o.fallback_if_busy = false;
  auto refused = RunIperf3(o, SystemClock::Get());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("in use"), std::string::npos) << refused.status();

  o.fallback_if_busy = true;
  auto r = RunIperf3(o, SystemClock::Get());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(r->port, *port);
  EXPECT_NE(r->note.find("busy"), std::string::npos);
}

}  // namespace
}  // namespace wharf::bench
