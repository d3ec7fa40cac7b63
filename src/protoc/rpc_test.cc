// The code protoc-gen-wharf generated from testdata/rpc_test.proto, against
// the library: each call form, each error code with the method's name,
// malformed bytes and unknown methods, deadlines and cancellation reaching
// the answer-later handler, nested types, sizes up to 64 MiB, and both
// hostings (managed: a wharfd on a thread, and no copy of a typed request
// on its way into the shared heap).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/testing/server_thread.h"
#include "daemon/testing/daemon_thread.h"
#include "protoc/rpc_test_hosting.h"
#include "rpc_test.wharf.h"
#include "wharf/endpoint.h"
#include "wharf/rpc.h"

namespace wharf::rpctest {
namespace {

using namespace std::chrono_literals;

// The server side of the tests, answering at once: Echo and Nest answer;
// Fail answers the asked-for error; Missing and Slow are left as generated.
class TestService final : public Tester::Service {
 public:
  Result<Payload> Echo(const rpc::ServerContext& context, const Payload& request) override {
    EXPECT_EQ(context.method().id, Tester::kEcho.id);
    EXPECT_FALSE(context.peer().empty());
    Payload reply;
    reply.set_data(request.data());
    reply.set_received(request.data().size());
    // Metadata "reply-with" replaces the data (the metadata tests).
    for (const auto& [key, value] : context.metadata()) {
      if (key == "reply-with") reply.set_data(value);
    }
    return reply;
  }
  Result<Empty> Fail(const rpc::ServerContext&, const FailRequest& request) override {
    return Status(static_cast<StatusCode>(request.code()), request.message());
  }
  Result<Outer::Inner> Nest(const rpc::ServerContext&, const Outer::Inner& request) override {
    Outer::Inner reply;
    reply.set_text("re:" + request.text());
    return reply;
  }
};

// The answer-later side: Slow keeps its responder (answered by a thread
// after answer_after_ms, or never); the rest is left as generated.
class SlowService final : public Tester::AsyncService {
 public:
  ~SlowService() override {
    for (std::thread& t : answerers_) t.join();
  }

  void Slow(const rpc::ServerContext& context, SlowRequest request,
            rpc::Responder<Empty> responder) override {
    {
      std::lock_guard lock(mu_);
      slow_deadline_ = context.deadline();
    }
    if (request.answer_after_ms() == 0) {
      // Kept until the client withdraws: the test then looks at cancelled().
      std::lock_guard lock(mu_);
      kept_.push_back(std::move(responder));
      return;
    }
    answerers_.emplace_back([ms = request.answer_after_ms(), r = std::move(responder)]() mutable {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      r.Respond(Empty()).IgnoreError();
    });
  }

  // Whether the kept responder (Slow with 0) says its call was withdrawn,
  // polled until `within` passes.
  bool KeptCancelledWithin(std::chrono::milliseconds within) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
      {
        std::lock_guard lock(mu_);
        if (!kept_.empty() && kept_.back().cancelled()) return true;
      }
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
  std::chrono::steady_clock::time_point slow_deadline() {
    std::lock_guard lock(mu_);
    return slow_deadline_;
  }

 private:
  std::mutex mu_;
  std::vector<rpc::Responder<Empty>> kept_;
  std::chrono::steady_clock::time_point slow_deadline_{};
  std::vector<std::thread> answerers_;  // the test's thread only (handlers run one at a time)
};

class GeneratedRpcTest : public ::testing::TestWithParam<Setup> {
 protected:
  void SetUp() override {
    if (GetParam().mode == Mode::kManaged) {
      // Room in the shared heaps' send halves for the largest messages.
      auto d = daemon::testing::DaemonThread::Start({{"limits.heap_bytes", "144MiB"}});
      ASSERT_TRUE(d.ok()) << d.status();
      daemon_ = std::move(*d);
    }
    // tcp:// has one endpoint per port: no names.
    server_ = Open(Address("tester"));
    slow_server_ = Open(Address("slow"));
    client_ = Open(Address(""));
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(slow_server_, nullptr);
    ASSERT_NE(client_, nullptr);
    ASSERT_TRUE(service_.Register(*server_).ok());
    ASSERT_TRUE(slow_service_.Register(*slow_server_).ok());
    server_thread_.emplace(*server_);
    slow_server_thread_.emplace(*slow_server_);
    stub_.emplace(*client_, server_->address());
    slow_stub_.emplace(*client_, slow_server_->address());
  }
  void TearDown() override {
    stub_.reset();
    slow_stub_.reset();
    server_thread_.reset();
    slow_server_thread_.reset();
    client_.reset();
    server_.reset();
    slow_server_.reset();
    daemon_.reset();
  }
  std::string Address(const std::string& name) const { return LoopbackAddress(GetParam(), name); }
  std::unique_ptr<Endpoint> Open(const std::string& address) {
    return OpenIn(daemon_.get(), address);
  }
  uint64_t Stat(Endpoint& ep, const std::string& name) {
    for (const auto& [key, value] : ep.Stats()) {
      if (key == name) return value;
    }
    return 0;
  }

  std::unique_ptr<daemon::testing::DaemonThread> daemon_;
  TestService service_;
  SlowService slow_service_;
  std::unique_ptr<Endpoint> server_;
  std::unique_ptr<Endpoint> slow_server_;
  std::unique_ptr<Endpoint> client_;
  std::optional<testing::ServerThread> server_thread_;
  std::optional<testing::ServerThread> slow_server_thread_;
  std::optional<Tester::Stub> stub_;
  std::optional<Tester::Stub> slow_stub_;  // to the AsyncService
};

Payload PayloadOf(std::string data) {
  Payload p;
  p.set_data(std::move(data));
  return p;
}

TEST_P(GeneratedRpcTest, TheThreeCallFormsReturnTheAnswer) {
  Result<Payload> blocking = stub_->Echo(PayloadOf("hello"));
  ASSERT_TRUE(blocking.ok()) << blocking.status();
  EXPECT_EQ(blocking->data(), "hello");
  EXPECT_EQ(blocking->received(), 5u);

  rpc::PendingCall<Payload> pending = stub_->AsyncEcho(PayloadOf("async"));
  Result<Payload> waited = pending.Wait(5s);
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_EQ(waited->data(), "async");
  EXPECT_TRUE(pending.done());

  std::mutex mu;
  std::condition_variable cv;
  std::optional<Result<Payload>> called;
  stub_->Echo(PayloadOf("callback"), [&](Result<Payload> answer) {
    std::lock_guard lock(mu);
    called = std::move(answer);
    cv.notify_all();
  });
  // The callback runs on a thread driving the client endpoint: drive it.
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < until) {
    (void)client_->Run(10ms);
    std::lock_guard lock(mu);
    if (called.has_value()) break;
  }
  std::lock_guard lock(mu);
  ASSERT_TRUE(called.has_value());
  ASSERT_TRUE(called->ok()) << called->status();
  EXPECT_EQ((*called)->data(), "callback");
}

TEST_P(GeneratedRpcTest, ANestedTypeTravelsBothWays) {
  Outer::Inner request;
  request.set_text("in");
  Result<Outer::Inner> reply = stub_->Nest(request);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->text(), "re:in");
}

TEST_P(GeneratedRpcTest, EveryErrorCodeReachesTheClientWithTheMethodsName) {
  for (StatusCode code :
       {StatusCode::kCancelled, StatusCode::kUnknown, StatusCode::kInvalidArgument,
        StatusCode::kDeadlineExceeded, StatusCode::kNotFound, StatusCode::kAlreadyExists,
        StatusCode::kPermissionDenied, StatusCode::kResourceExhausted,
        StatusCode::kFailedPrecondition, StatusCode::kAborted, StatusCode::kOutOfRange,
        StatusCode::kUnimplemented, StatusCode::kInternal, StatusCode::kUnavailable,
        StatusCode::kDataLoss}) {
    FailRequest request;
    request.set_code(static_cast<uint32_t>(code));
    request.set_message("told to fail");
    Result<Empty> reply = stub_->Fail(request);
    ASSERT_FALSE(reply.ok()) << static_cast<int>(code);
    EXPECT_EQ(reply.status().code(), code) << reply.status();
    EXPECT_NE(reply.status().message().find("/wharf.rpctest.Tester/Fail"), std::string::npos)
        << reply.status();
    EXPECT_NE(reply.status().message().find("told to fail"), std::string::npos) << reply.status();
  }
}

TEST_P(GeneratedRpcTest, AMethodTheServerDidNotImplementSaysSo) {
  // Left as generated in the Service and in the AsyncService.
  for (Tester::Stub* stub : {&*stub_, &*slow_stub_}) {
    Result<Empty> reply = stub->Missing(Empty());
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(reply.status().message().find("/wharf.rpctest.Tester/Missing: not implemented"),
              std::string::npos)
        << reply.status();
  }
}

TEST_P(GeneratedRpcTest, MalformedRequestBytesAreRefusedNamingTheMethod) {
  // Field 1 (bytes) claims 100 bytes and brings 2: not a Payload.
  const std::string garbage("\x0a\x64\x01\x02", 4);
  Result<Buffer> raw =
      client_->Call(server_->address(), Tester::kEcho.id, Buffer::Copy(garbage), {});
  ASSERT_FALSE(raw.ok());
  EXPECT_EQ(raw.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(raw.status().message().find("/wharf.rpctest.Tester/Echo: malformed request"),
            std::string::npos)
      << raw.status();
  // A server's error that names the method already (as its decode errors
  // do) is not named again by the stub.
  FailRequest named;
  named.set_code(static_cast<uint32_t>(StatusCode::kInvalidArgument));
  named.set_message("/wharf.rpctest.Tester/Fail: malformed request (3 bytes)");
  Result<Empty> reply = stub_->Fail(named);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().message(), named.message());
  // The server goes on serving.
  EXPECT_TRUE(stub_->Echo(PayloadOf("after")).ok());
}

TEST_P(GeneratedRpcTest, MalformedResponseBytesAreAnErrorNamingTheMethod) {
  // A server whose Nest answers bytes that are no Outer.Inner.
  ASSERT_TRUE(server_
                  ->Serve(Tester::kNest.id,
                          [](const RpcContext&, Buffer) -> Result<Buffer> {
                            return Buffer::Copy(std::string("\x0a\x64\x01", 3));
                          })
                  .ok());
  Result<Outer::Inner> reply = stub_->Nest(Outer::Inner());
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(reply.status().message().find("/wharf.rpctest.Tester/Nest: malformed response"),
            std::string::npos)
      << reply.status();
}

TEST_P(GeneratedRpcTest, AMethodTheServerDoesNotServeIsUnimplementedNamingIt) {
  // The stub of a service the server never registered.
  auto other = Open(Address("other"));
  ASSERT_NE(other, nullptr);
  testing::ServerThread other_thread(*other);
  Tester::Stub stub(*client_, other->address());
  Result<Payload> reply = stub.Echo(PayloadOf("x"));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(reply.status().message().find("/wharf.rpctest.Tester/Echo"), std::string::npos)
      << reply.status();
}

TEST_P(GeneratedRpcTest, TheDeadlineReachesTheServerAndExpiresThere) {
  SlowRequest request;
  request.set_answer_after_ms(0);  // never answered
  const auto before = std::chrono::steady_clock::now();
  Result<Empty> reply = slow_stub_->Slow(request, {.deadline = 200ms});
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kDeadlineExceeded) << reply.status();
  EXPECT_NE(reply.status().message().find("/wharf.rpctest.Tester/Slow"), std::string::npos);
  // The handler saw the client's deadline, about 200 ms after the call.
  const auto deadline = slow_service_.slow_deadline();
  EXPECT_GT(deadline, before + 100ms);
  EXPECT_LT(deadline, before + 2s);
  // And its responder learns the call is over.
  EXPECT_TRUE(slow_service_.KeptCancelledWithin(2s));
}

TEST_P(GeneratedRpcTest, ACancelledCallEndsAtTheClientAndReachesTheServer) {
  SlowRequest request;
  request.set_answer_after_ms(0);
  rpc::PendingCall<Empty> pending = slow_stub_->AsyncSlow(request);
  // Wait until the server holds it, then withdraw.
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (slow_service_.slow_deadline() == std::chrono::steady_clock::time_point{} &&
         std::chrono::steady_clock::now() < until) {
    (void)pending.Poll();
    std::this_thread::sleep_for(1ms);
  }
  pending.Cancel();
  Result<Empty> reply = pending.Wait(5s);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kCancelled) << reply.status();
  EXPECT_TRUE(slow_service_.KeptCancelledWithin(3s));
}

TEST_P(GeneratedRpcTest, AnAnswerLaterHandlerAnswersFromAnotherThread) {
  SlowRequest request;
  request.set_answer_after_ms(20);
  Result<Empty> reply = slow_stub_->Slow(request, {.deadline = 5s});
  EXPECT_TRUE(reply.ok()) << reply.status();
}

TEST_P(GeneratedRpcTest, MetadataReachesTheHandlerInEveryCallForm) {
  const CallOptions with{.metadata = {{"trace", "t-1"}, {"reply-with", "from metadata"}}};
  Result<Payload> blocking = stub_->Echo(PayloadOf("request"), with);
  ASSERT_TRUE(blocking.ok()) << blocking.status();
  EXPECT_EQ(blocking->data(), "from metadata");
  EXPECT_EQ(blocking->received(), 7u);  // the request itself arrived intact
  Result<Payload> waited = stub_->AsyncEcho(PayloadOf("async"), with).Wait(10s);
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_EQ(waited->data(), "from metadata");
  // Without metadata, as before.
  Result<Payload> plain = stub_->Echo(PayloadOf("plain"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->data(), "plain");
  // To a method nobody serves: what any call to one gets.
  Result<Buffer> unserved =
      client_->Call(server_->address(), 12345, Buffer::Copy("x"), with);
  EXPECT_EQ(unserved.status().code(), StatusCode::kUnimplemented) << unserved.status();
}

TEST_P(GeneratedRpcTest, MetadataOverTheLimitOrMalformedIsRefused) {
  CallOptions big;
  big.metadata.assign(kMaxMetadataEntries + 1, {"k", "v"});
  Result<Payload> refused = stub_->Echo(PayloadOf("x"), big);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status();
  EXPECT_NE(refused.status().message().find("/wharf.rpctest.Tester/Echo"), std::string::npos);
  CallOptions heavy{.metadata = {{"k", std::string(kMaxMetadataBytes, 'v')}}};
  EXPECT_EQ(stub_->Echo(PayloadOf("x"), heavy).status().code(), StatusCode::kInvalidArgument);
  // Forged on the wire: cut short, a reserved inner method, nothing at all.
  for (std::string_view forged : {std::string_view("\x00\x00\x00\x01\x00\x05", 6),
                                  std::string_view("\xff\xff\x00\x01\x00\x00", 6),
                                  std::string_view("\x00", 1)}) {
    Result<Buffer> answer =
        client_->Call(server_->address(), 0xFFFF0001u, Buffer::Copy(forged), {.deadline = 10s});
    EXPECT_EQ(answer.status().code(), StatusCode::kInvalidArgument) << answer.status();
  }
  EXPECT_TRUE(stub_->Echo(PayloadOf("still serving")).ok());
}

TEST_P(GeneratedRpcTest, SizeLimitsFromTheConfigurationHoldEachWay) {
  // A server taking requests and sending answers up to 1000 bytes, and a
  // client that sends requests up to 3000.
  std::unique_ptr<Endpoint> server =
      OpenIn(daemon_.get(), Address("limited"),
             {{"rpc.max_request_bytes", "1000"}, {"rpc.max_response_bytes", "1000"}});
  std::unique_ptr<Endpoint> client =
      OpenIn(daemon_.get(), Address("small"), {{"rpc.max_request_bytes", "3000"}});
  ASSERT_NE(server, nullptr);
  ASSERT_NE(client, nullptr);
  TestService service;
  ASSERT_TRUE(service.Register(*server).ok());
  testing::ServerThread thread(*server);
  Tester::Stub stub(*client, server->address());
  // Echo's request is its data and 3 bytes; its answer 3 bytes more.
  EXPECT_TRUE(stub.Echo(PayloadOf(std::string(900, 'a'))).ok());
  // Over the client's own limit: refused before it leaves.
  Result<Payload> own = stub.Echo(PayloadOf(std::string(4000, 'b')));
  EXPECT_EQ(own.status().code(), StatusCode::kInvalidArgument) << own.status();
  EXPECT_NE(own.status().message().find("rpc.max_request_bytes (3000)"), std::string::npos);
  EXPECT_NE(own.status().message().find("/wharf.rpctest.Tester/Echo"), std::string::npos);
  // Over the server's: refused there, and the handler never runs.
  Result<Payload> theirs = stub.Echo(PayloadOf(std::string(2000, 'c')));
  EXPECT_EQ(theirs.status().code(), StatusCode::kInvalidArgument) << theirs.status();
  EXPECT_NE(theirs.status().message().find("rpc.max_request_bytes (1000)"), std::string::npos);
  // A request within (998 bytes) whose answer (1001) is over.
  Result<Payload> answer = stub.Echo(PayloadOf(std::string(995, 'd')));
  EXPECT_EQ(answer.status().code(), StatusCode::kResourceExhausted) << answer.status();
  EXPECT_NE(answer.status().message().find("rpc.max_response_bytes (1000)"), std::string::npos);
}

TEST_P(GeneratedRpcTest, MessagesFromEmptyTo64MiBArriveIntact) {
  // The largest: a request whose encoding (1 tag byte, 4 length bytes and
  // the data) and an answer whose encoding (the same, and `received`: 1 tag
  // byte and a 4-byte varint) fit homa.max_message_bytes (64 MiB).
  constexpr size_t kLargest = (size_t{64} << 20) - 10;
  for (size_t size : {size_t{0}, size_t{1}, size_t{1'400}, size_t{65'536}, size_t{1} << 20,
                      kLargest}) {
    std::string data(size, '\0');
    for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>((i * 131 + size) & 0xff);
    Payload request = PayloadOf(data);
    ASSERT_LE(request.ByteSizeLong(), size_t{64} << 20);
    Result<Payload> reply = stub_->Echo(request, {.deadline = 60s});
    ASSERT_TRUE(reply.ok()) << size << ": " << reply.status();
    EXPECT_EQ(reply->received(), size);
    EXPECT_TRUE(reply->data() == data) << size;
  }
}

TEST_P(GeneratedRpcTest, AMessageOverTheLimitIsRefusedNamingTheMethod) {
  Result<Payload> reply = stub_->Echo(PayloadOf(std::string(size_t{64} << 20, 'x')));
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.status().message().find("/wharf.rpctest.Tester/Echo"), std::string::npos)
      << reply.status();
  // The stub and the server still work.
  EXPECT_TRUE(stub_->Echo(PayloadOf("after")).ok());
}

TEST_P(GeneratedRpcTest, ManagedTypedRequestsAreSerializedIntoTheSharedHeap) {
  if (GetParam().mode != Mode::kManaged) GTEST_SKIP() << "managed mode only";
  const uint64_t copied_before = Stat(*client_, "managed.copied_sends");
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(stub_->Echo(PayloadOf(std::string(100 + 1'000 * i, 'x'))).ok());
  }
  // Every request went out of the buffer it was serialized into: no copy.
  EXPECT_EQ(Stat(*client_, "managed.copied_sends"), copied_before);
  // And so did every answer (the server's responses).
  EXPECT_EQ(Stat(*server_, "managed.copied_sends"), 0u);
}

INSTANTIATE_TEST_SUITE_P(Hostings, GeneratedRpcTest, AllHostings(), HostingName);

TEST(GeneratedCodeTest, MethodIdsAreTheCrc32OfTheirPaths) {
  EXPECT_EQ(Tester::kServiceName, "wharf.rpctest.Tester");
  EXPECT_EQ(Tester::kEcho.path, "/wharf.rpctest.Tester/Echo");
  // Python's zlib.crc32(b"/wharf.rpctest.Tester/Echo"): outside the plugin.
  EXPECT_EQ(Tester::kEcho.id, 0x2370508du);
  EXPECT_NE(Tester::kEcho.id, Tester::kFail.id);
  EXPECT_LT(Tester::kEcho.id, kFirstReservedMethod);
}

}  // namespace
}  // namespace wharf::rpctest
