// Tests for the gRPC cluster-node transport: echoes through the real echo
// server on loopback (up to 2 MB), an echo of the wrong size fails the RPC
// and names the mismatch, and a tag the driver abandoned and issued again is
// reported once, for the new call.
#include "bench/grpc/grpc_load_transport.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "base/mutex.h"
#include "bench/grpc/echo_server.h"

namespace wharf::bench::grpc_node {
namespace {

constexpr DurationNs kBoundNs = 20 * kNsPerSec;

struct RecordingSink final : bench::CompletionSink {
  void Done(uint32_t tag, bool ok) override { done.emplace_back(tag, ok); }
  std::vector<std::pair<uint32_t, bool>> done;
};

bench::NodeTransportConfig Config(int port) {
  return {.proto = "grpc", .addresses = {"127.0.0.1", "127.0.0.1"}, .port = port, .host = 0};
}

// Waits (bounded) until `sink` has `count` completions.
void WaitFor(GrpcLoadTransport& t, RecordingSink& sink, size_t count) {
  const Clock& clock = SystemClock::Get();
  const TimeNs until = clock.NowNs() + kBoundNs;
  while (sink.done.size() < count && clock.NowNs() < until) t.Wait(until, sink);
}

// Answers Echo with one byte more than it was sent.
class WrongSizeService final : public wharf::bench::Echo::Service {
  grpc::Status Echo(grpc::ServerContext*, const wharf::bench::EchoRequest* request,
                    wharf::bench::EchoResponse* response) override {
    response->set_payload(request->payload() + "x");
    return grpc::Status::OK;
  }
};

// Echoes, but holds every request of more than 1 byte until Release().
class GatedService final : public wharf::bench::Echo::Service {
 public:
  void Release() {
    MutexLock lock(mu_);
    open_ = true;
    cv_.NotifyAll();
  }
  int held() {
    MutexLock lock(mu_);
    return held_;
  }

 private:
  grpc::Status Echo(grpc::ServerContext*, const wharf::bench::EchoRequest* request,
                    wharf::bench::EchoResponse* response) override {
    if (request->payload().size() > 1) {
      const auto until = CondVar::Clock::now() + std::chrono::seconds(20);
      MutexLock lock(mu_);
      ++held_;
      while (!open_ && cv_.WaitUntil(mu_, until)) {
      }
    }
    response->set_payload(request->payload());
    return grpc::Status::OK;
  }
  Mutex mu_;
  CondVar cv_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  int held_ ABSL_GUARDED_BY(mu_) = 0;
};

std::unique_ptr<grpc::Server> Serve(grpc::Service* service, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

TEST(GrpcLoadTransport, EchoesThroughTheEchoServer) {
  Result<std::unique_ptr<EchoServer>> server = EchoServer::Start("127.0.0.1:0", 1);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  Result<std::unique_ptr<GrpcLoadTransport>> t =
      GrpcLoadTransport::Open(Config((*server)->port()), SystemClock::Get(), 4);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE((*t)->Issue(0, 1, 10).ok());
  ASSERT_TRUE((*t)->Issue(3, 1, 2'000'000).ok());  // above 1 MB
  RecordingSink sink;
  WaitFor(**t, sink, 2);
  ASSERT_EQ(sink.done.size(), 2u);
  for (const auto& [tag, ok] : sink.done) {
    EXPECT_TRUE(tag == 0 || tag == 3) << tag;
    EXPECT_TRUE(ok) << tag;
  }
  EXPECT_EQ((*t)->first_error(), "");
}

// --response-size: the server answers N bytes whatever was sent, and the
// client accepts exactly N (a client expecting another size fails the RPC).
TEST(GrpcLoadTransport, FixedResponseSize) {
  Result<std::unique_ptr<EchoServer>> server = EchoServer::Start("127.0.0.1:0", 1, 100);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  bench::NodeTransportConfig config = Config((*server)->port());
  config.response_bytes = 100;
  Result<std::unique_ptr<GrpcLoadTransport>> t =
      GrpcLoadTransport::Open(config, SystemClock::Get(), 4);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE((*t)->Issue(0, 1, 10).ok());
  ASSERT_TRUE((*t)->Issue(1, 1, 5000).ok());
  RecordingSink sink;
  WaitFor(**t, sink, 2);
  ASSERT_EQ(sink.done.size(), 2u);
  for (const auto& [tag, ok] : sink.done) EXPECT_TRUE(ok) << tag;
  EXPECT_EQ((*t)->first_error(), "");

  config.response_bytes = 50;  // not what the server sends
  Result<std::unique_ptr<GrpcLoadTransport>> wrong =
      GrpcLoadTransport::Open(config, SystemClock::Get(), 4);
  ASSERT_TRUE(wrong.ok()) << wrong.status().ToString();
  ASSERT_TRUE((*wrong)->Issue(2, 1, 10).ok());
  RecordingSink wrong_sink;
  WaitFor(**wrong, wrong_sink, 1);
  ASSERT_EQ(wrong_sink.done.size(), 1u);
  EXPECT_EQ(wrong_sink.done[0], std::make_pair(2u, false));
  EXPECT_EQ((*wrong)->first_error(),
            "grpc: echo mismatch: sent 10 B, expected 50 B back, got 100 B");
  EXPECT_FALSE(EchoServer::Start("127.0.0.1:0", 1, kMaxEchoBytes + 1).ok());
}

TEST(GrpcLoadTransport, RefusesBadTagsAndServers) {
  Result<std::unique_ptr<GrpcLoadTransport>> t =
      GrpcLoadTransport::Open(Config(1), SystemClock::Get(), 2, /*warm_up_ns=*/0);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE((*t)->Issue(2, 1, 10).ok());  // tag >= max_outstanding
  EXPECT_FALSE((*t)->Issue(0, 0, 10).ok());  // itself
  EXPECT_FALSE((*t)->Issue(0, 2, 10).ok());  // no such host
  EXPECT_FALSE((*t)->Issue(0, 1, kMaxEchoBytes + 1).ok());
  bench::NodeTransportConfig udp = Config(1);
  udp.proto = "udp";
  EXPECT_FALSE(GrpcLoadTransport::Open(udp, SystemClock::Get(), 2).ok());
}

TEST(GrpcLoadTransport, EchoOfTheWrongSizeFails) {
  WrongSizeService service;
  int port = 0;
  std::unique_ptr<grpc::Server> server = Serve(&service, &port);
  ASSERT_NE(server, nullptr);
  Result<std::unique_ptr<GrpcLoadTransport>> t =
      GrpcLoadTransport::Open(Config(port), SystemClock::Get(), 4);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE((*t)->Issue(1, 1, 100).ok());
  RecordingSink sink;
  WaitFor(**t, sink, 1);
  ASSERT_EQ(sink.done.size(), 1u);
  EXPECT_EQ(sink.done[0], std::make_pair(1u, false));
  EXPECT_EQ((*t)->first_error(), "grpc: echo mismatch: sent 100 B, expected 100 B back, got 101 B");
  server->Shutdown();
}

TEST(GrpcLoadTransport, AbandonedTagIsReportedOnceForItsNewCall) {
  GatedService service;
  int port = 0;
  std::unique_ptr<grpc::Server> server = Serve(&service, &port);
  ASSERT_NE(server, nullptr);
  Result<std::unique_ptr<GrpcLoadTransport>> t =
      GrpcLoadTransport::Open(Config(port), SystemClock::Get(), 1);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE((*t)->Issue(0, 1, 10).ok());
  // The driver gives up on tag 0 (RunUnloaded's timeout) and reuses it.
  ASSERT_TRUE((*t)->Issue(0, 1, 20).ok());
  RecordingSink sink;
  // The first call's cancellation comes back and is not reported.
  (*t)->Wait(SystemClock::Get().NowNs() + 200 * kNsPerMs, sink);
  EXPECT_TRUE(sink.done.empty());
  service.Release();
  WaitFor(**t, sink, 1);
  ASSERT_EQ(sink.done.size(), 1u);
  EXPECT_EQ(sink.done[0], std::make_pair(0u, true));
  EXPECT_EQ((*t)->first_error(), "");
  t->reset();  // cancels nothing more; drains
  server->Shutdown();
}

}  // namespace
}  // namespace wharf::bench::grpc_node
