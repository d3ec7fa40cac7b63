// Streaming methods of the code protoc-gen-wharf generated from
// testdata/rpc_test.proto (service Streamer), against the library, in both
// hostings over homa:// and tcp://: each kind of stream, replies in order
// and byte for byte, statuses after replies, metadata, messages up to
// 64 MiB through the flow-control window, cancellation from either side, a
// deadline that passes mid-stream, unknown methods, malformed bytes, a
// server that goes away, and many streams at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
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
#include "wharf/raw_stream.h"
#include "wharf/rpc_stream.h"

namespace wharf::rpctest {
namespace {

using namespace std::chrono_literals;

std::string Pattern(size_t k, size_t bytes) {
  std::string data(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>((k + i) % 251);
  return data;
}

Payload PayloadOf(std::string data) {
  Payload p;
  p.set_data(std::move(data));
  return p;
}

class StreamService final : public Streamer::Service {
 public:
  ~StreamService() override { JoinReaders(); }

  void Range(const RangeRequest& request,
             rpc::ServerStreamPtr<RangeRequest, Payload> stream) override {
    for (uint32_t k = 0; k < request.count(); ++k) {
      // Refused over rpc.max_response_bytes: the call ends with why.
      if (Status wrote = stream->Write(PayloadOf(Pattern(k, request.bytes()))); !wrote.ok()) {
        stream->Finish(wrote).IgnoreError();
        return;
      }
    }
    if (request.hold()) {
      std::lock_guard lock(mu_);
      held_.push_back(std::move(stream));
      return;
    }
    stream->Finish(request.fail_code() == 0
                       ? OkStatus()
                       : Status(static_cast<StatusCode>(request.fail_code()), "asked to fail"))
        .IgnoreError();
  }

  void Sum(rpc::ServerStreamPtr<Payload, Payload> stream) override {
    std::string tag;
    for (const auto& [key, value] : stream->context().metadata()) {
      if (key == "tag") tag = value;
    }
    auto total = std::make_shared<uint64_t>(0);
    // The callback keeps the stream until the client half-closes.
    stream->OnRead([keep = stream, total, tag](Result<std::optional<Payload>> read) {
      if (!read.ok()) return;
      if (!read->has_value()) {
        Payload reply;
        reply.set_received(*total);
        reply.set_data(tag);
        keep->WriteAndFinish(reply).IgnoreError();
        return;
      }
      *total += (*read)->data().size();
    });
  }

  void Chat(rpc::ServerStreamPtr<Payload, Payload> stream) override {
    std::lock_guard lock(mu_);
    readers_.emplace_back([stream] {
      while (true) {
        Result<std::optional<Payload>> read = stream->Read(20s);
        if (!read.ok()) return;
        if (!read->has_value()) {
          stream->Finish().IgnoreError();
          return;
        }
        if (!stream->Write(**read).ok()) return;
      }
    });
  }

  // Whether every held stream says its call was cancelled, polled until
  // `within` passes.
  bool HeldCancelledWithin(std::chrono::milliseconds within) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
      {
        std::lock_guard lock(mu_);
        bool all = !held_.empty();
        for (const auto& s : held_) all = all && s->cancelled();
        if (all) return true;
      }
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
  void DropHeld() {
    std::lock_guard lock(mu_);
    held_.clear();
  }
  void JoinReaders() {
    std::vector<std::thread> readers;
    {
      std::lock_guard lock(mu_);
      readers.swap(readers_);
    }
    for (std::thread& t : readers) t.join();
  }

 private:
  std::mutex mu_;
  std::vector<rpc::ServerStreamPtr<RangeRequest, Payload>> held_;
  std::vector<std::thread> readers_;
};

class GeneratedStreamTest : public ::testing::TestWithParam<Setup> {
 protected:
  void SetUp() override {
    if (GetParam().mode == Mode::kManaged) {
      auto d = daemon::testing::DaemonThread::Start({{"limits.heap_bytes", "160MiB"}});
      ASSERT_TRUE(d.ok()) << d.status();
      daemon_ = std::move(*d);
    }
    server_ = OpenIn(daemon_.get(), LoopbackAddress(GetParam(), "streamer"));
    client_ = OpenIn(daemon_.get(), LoopbackAddress(GetParam(), ""));
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(client_, nullptr);
    ASSERT_TRUE(service_.Register(*server_).ok());
    server_thread_.emplace(*server_);
    stub_.emplace(*client_, server_->address());
  }
  void TearDown() override {
    stub_.reset();
    service_.DropHeld();
    server_thread_.reset();
    service_.JoinReaders();
    client_.reset();
    server_.reset();
    daemon_.reset();
  }

  RangeRequest Range(uint32_t count, uint32_t bytes) {
    RangeRequest r;
    r.set_count(count);
    r.set_bytes(bytes);
    return r;
  }

  std::unique_ptr<daemon::testing::DaemonThread> daemon_;
  StreamService service_;
  std::unique_ptr<Endpoint> server_;
  std::unique_ptr<Endpoint> client_;
  std::optional<testing::ServerThread> server_thread_;
  std::optional<Streamer::Stub> stub_;
};

TEST_P(GeneratedStreamTest, ServerStreamingDeliversEveryReplyInOrderThenOk) {
  auto stream = stub_->Range(Range(200, 1000));
  ASSERT_TRUE(stream.ok()) << stream.status();
  for (uint32_t k = 0; k < 200; ++k) {
    Result<std::optional<Payload>> reply = stream->Read(10s);
    ASSERT_TRUE(reply.ok()) << k << ": " << reply.status();
    ASSERT_TRUE(reply->has_value()) << k;
    ASSERT_EQ((*reply)->data(), Pattern(k, 1000)) << k;
  }
  Result<std::optional<Payload>> end = stream->Read(10s);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_FALSE(end->has_value());
  EXPECT_TRUE(stream->Finish(10s).ok());
}

TEST_P(GeneratedStreamTest, AStatusAfterRepliesReachesTheClientNamingTheMethod) {
  for (StatusCode code : {StatusCode::kNotFound, StatusCode::kCancelled,
                          StatusCode::kResourceExhausted, StatusCode::kInternal}) {
    RangeRequest request = Range(3, 10);
    request.set_fail_code(static_cast<uint32_t>(code));
    auto stream = stub_->Range(request);
    ASSERT_TRUE(stream.ok()) << stream.status();
    for (int k = 0; k < 3; ++k) {
      auto reply = stream->Read(10s);
      ASSERT_TRUE(reply.ok() && reply->has_value()) << reply.status();
    }
    auto end = stream->Read(10s);
    EXPECT_EQ(end.status().code(), code) << end.status();
    EXPECT_NE(end.status().message().find("/wharf.rpctest.Streamer/Range"), std::string::npos)
        << end.status();
    EXPECT_NE(end.status().message().find("asked to fail"), std::string::npos);
    EXPECT_EQ(stream->Finish(10s).code(), code);
  }
}

TEST_P(GeneratedStreamTest, ClientStreamingSumsWhatWasWrittenAndSeesTheMetadata) {
  auto stream = stub_->Sum({.metadata = {{"tag", "abc"}, {"other", std::string(100, 'x')}}});
  ASSERT_TRUE(stream.ok()) << stream.status();
  uint64_t total = 0;
  for (int k = 0; k < 100; ++k) {
    ASSERT_TRUE(stream->Write(PayloadOf(Pattern(k, 777 * k))).ok());
    total += 777 * k;
  }
  Result<Payload> reply = stream->CloseAndRecv();
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->received(), total);
  EXPECT_EQ(reply->data(), "abc");
}

TEST_P(GeneratedStreamTest, MetadataOverTheLimitIsRefusedBeforeAnythingLeaves) {
  rpc::Metadata big(rpc::kMaxMetadataEntries + 1, {"k", "v"});
  auto stream = stub_->Sum({.metadata = big});
  EXPECT_EQ(stream.status().code(), StatusCode::kInvalidArgument) << stream.status();
  EXPECT_NE(stream.status().message().find("/wharf.rpctest.Streamer/Sum"), std::string::npos);
}

TEST_P(GeneratedStreamTest, BidirectionalEchoesEachMessageAsItArrives) {
  auto stream = stub_->Chat();
  ASSERT_TRUE(stream.ok()) << stream.status();
  for (int k = 0; k < 50; ++k) {
    ASSERT_TRUE(stream->Write(PayloadOf(Pattern(k, k * 10))).ok());
    auto echo = stream->Read(10s);
    ASSERT_TRUE(echo.ok() && echo->has_value()) << echo.status();
    EXPECT_EQ((*echo)->data(), Pattern(k, k * 10));
  }
  ASSERT_TRUE(stream->WritesDone().ok());
  auto end = stream->Read(10s);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_FALSE(end->has_value());
  EXPECT_TRUE(stream->Finish(10s).ok());
}

TEST_P(GeneratedStreamTest, MessagesFromEmptyTo64MiBPassTheWindowIntact) {
  auto stream = stub_->Chat();
  ASSERT_TRUE(stream.ok()) << stream.status();
  // The largest: its encoding (1 tag byte, 4 length bytes, the data) and
  // the stream's kind byte fit homa.max_message_bytes (64 MiB).
  const std::vector<size_t> sizes = {0, 1, 1000, 1 << 20, 5 << 20, (size_t{64} << 20) - 6};
  // All written before any is read: the window holds back what the reader
  // has not made room for, in both directions.
  for (size_t k = 0; k < sizes.size(); ++k) {
    ASSERT_TRUE(stream->Write(PayloadOf(Pattern(k, sizes[k]))).ok()) << sizes[k];
  }
  for (size_t k = 0; k < sizes.size(); ++k) {
    auto echo = stream->Read(60s);
    ASSERT_TRUE(echo.ok() && echo->has_value()) << sizes[k] << ": " << echo.status();
    ASSERT_EQ((*echo)->data().size(), sizes[k]);
    EXPECT_TRUE((*echo)->data() == Pattern(k, sizes[k])) << sizes[k];
  }
  EXPECT_TRUE(stream->Finish(30s).ok());
}

TEST_P(GeneratedStreamTest, AMessageOverTheTransportsLimitEndsTheStreamWithTheReason) {
  auto stream = stub_->Chat();
  ASSERT_TRUE(stream.ok()) << stream.status();
  // Refused when it leaves (or at once, managed); the stream ends with why.
  Status wrote = stream->Write(PayloadOf(std::string((size_t{64} << 20) + 1, 'x')));
  auto read = stream->Read(20s);
  const Status failed = wrote.ok() ? read.status() : wrote;
  EXPECT_EQ(failed.code(), StatusCode::kInvalidArgument) << failed;
  EXPECT_NE(failed.message().find("/wharf.rpctest.Streamer/Chat"), std::string::npos) << failed;
  EXPECT_FALSE(read.ok());
}

TEST_P(GeneratedStreamTest, SizeLimitsFromTheConfigurationHoldEachWay) {
  // A server taking requests up to 1000 bytes and answering up to 2000, and
  // a client that sends requests up to 3000.
  std::unique_ptr<Endpoint> server = OpenIn(
      daemon_.get(), LoopbackAddress(GetParam(), "limited"),
      {{"rpc.max_request_bytes", "1000"}, {"rpc.max_response_bytes", "2000"}});
  std::unique_ptr<Endpoint> client = OpenIn(daemon_.get(), LoopbackAddress(GetParam(), "small"),
                                            {{"rpc.max_request_bytes", "3000"}});
  ASSERT_NE(server, nullptr);
  ASSERT_NE(client, nullptr);
  StreamService service;
  ASSERT_TRUE(service.Register(*server).ok());
  testing::ServerThread thread(*server);
  Streamer::Stub stub(*client, server->address());

  // Within every limit: echoed.
  auto ok = stub.Chat();
  ASSERT_TRUE(ok.ok()) << ok.status();
  ASSERT_TRUE(ok->Write(PayloadOf(std::string(900, 'a'))).ok());
  auto echo = ok->Read(10s);
  ASSERT_TRUE(echo.ok() && echo->has_value()) << echo.status();
  EXPECT_TRUE(ok->Finish(10s).ok());

  // Over the client's own limit: refused before it leaves.
  auto own = stub.Chat();
  ASSERT_TRUE(own.ok());
  Status refused = own->Write(PayloadOf(std::string(4000, 'b')));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused;
  EXPECT_NE(refused.message().find("rpc.max_request_bytes (3000)"), std::string::npos) << refused;
  own->Cancel();  // its server-side reader returns at once

  // Within the client's limit, over the server's: the server ends the call.
  auto theirs = stub.Chat();
  ASSERT_TRUE(theirs.ok());
  ASSERT_TRUE(theirs->Write(PayloadOf(std::string(2000, 'c'))).ok());
  auto ended = theirs->Read(10s);
  EXPECT_EQ(ended.status().code(), StatusCode::kInvalidArgument) << ended.status();
  EXPECT_NE(ended.status().message().find("rpc.max_request_bytes (1000)"), std::string::npos)
      << ended.status();

  // Replies over the server's response limit are refused there: Range's
  // handler cannot write them, and the stream ends with what it could.
  auto range = stub.Range(Range(1, 3000));
  ASSERT_TRUE(range.ok());
  auto big = range->Read(10s);
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted) << big.status();
  EXPECT_NE(big.status().message().find("rpc.max_response_bytes (2000)"), std::string::npos)
      << big.status();
  service.JoinReaders();
}

TEST_P(GeneratedStreamTest, ASlowReaderHoldsTheWriterToTheWindow) {
  // 48 MiB of replies, written at once by the handler: the server holds
  // most of them until the client reads, and none is lost or refused.
  auto stream = stub_->Range(Range(48, 1 << 20));
  ASSERT_TRUE(stream.ok()) << stream.status();
  std::this_thread::sleep_for(100ms);  // let the window fill
  for (uint32_t k = 0; k < 48; ++k) {
    auto reply = stream->Read(30s);
    ASSERT_TRUE(reply.ok() && reply->has_value()) << k << ": " << reply.status();
    ASSERT_TRUE((*reply)->data() == Pattern(k, 1 << 20)) << k;
  }
  EXPECT_TRUE(stream->Finish(30s).ok());
}

TEST_P(GeneratedStreamTest, TheClientCancelsMidStreamAndTheServerSeesIt) {
  RangeRequest request = Range(5, 10);
  request.set_hold(true);
  auto stream = stub_->Range(request);
  ASSERT_TRUE(stream.ok()) << stream.status();
  for (int k = 0; k < 5; ++k) ASSERT_TRUE(stream->Read(10s).ok());
  stream->Cancel();
  EXPECT_EQ(stream->Read(1s).status().code(), StatusCode::kCancelled);
  EXPECT_TRUE(service_.HeldCancelledWithin(5s));
}

TEST_P(GeneratedStreamTest, ADeadlinePassingMidStreamEndsItOnBothSides) {
  RangeRequest request = Range(1, 10);
  request.set_hold(true);
  auto stream = stub_->Range(request, {.deadline = 300ms});
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_TRUE(stream->Read(10s).ok());
  auto next = stream->Read();  // bounded by the call's deadline
  EXPECT_EQ(next.status().code(), StatusCode::kDeadlineExceeded) << next.status();
  EXPECT_NE(next.status().message().find("/wharf.rpctest.Streamer/Range"), std::string::npos);
  EXPECT_TRUE(service_.HeldCancelledWithin(5s));
}

TEST_P(GeneratedStreamTest, DroppingAnUnfinishedStreamCancelsIt) {
  RangeRequest request = Range(0, 0);
  request.set_hold(true);
  {
    auto stream = stub_->Range(request);
    ASSERT_TRUE(stream.ok()) << stream.status();
  }
  EXPECT_TRUE(service_.HeldCancelledWithin(5s));
}

TEST_P(GeneratedStreamTest, AMethodNotImplementedOrNotServedSaysWhich) {
  auto missing = stub_->MissingStream();
  ASSERT_TRUE(missing.ok()) << missing.status();
  auto read = missing->Read(10s);
  EXPECT_EQ(read.status().code(), StatusCode::kUnimplemented) << read.status();
  EXPECT_NE(read.status().message().find("/wharf.rpctest.Streamer/MissingStream"),
            std::string::npos);
  // An endpoint that serves no streams refuses the opening itself.
  std::unique_ptr<Endpoint> plain = OpenIn(daemon_.get(), LoopbackAddress(GetParam(), "plain"));
  ASSERT_NE(plain, nullptr);
  testing::ServerThread plain_thread(*plain);
  Streamer::Stub elsewhere(*client_, plain->address());
  auto refused = elsewhere.Chat();
  EXPECT_EQ(refused.status().code(), StatusCode::kUnimplemented) << refused.status();
  EXPECT_NE(refused.status().message().find("/wharf.rpctest.Streamer/Chat"), std::string::npos);
}

TEST_P(GeneratedStreamTest, MalformedRequestBytesFinishTheCallNamingTheMethod) {
  auto raw = rpc::RawStream::Open(*client_, server_->address(), Streamer::kSum.id,
                                  Streamer::kSum.path, 10s, {});
  ASSERT_TRUE(raw.ok()) << raw.status();
  Buffer garbage = (*raw)->NewMessage(3);
  std::memcpy(garbage.data() + 1, "\xff\xff\xff", 3);
  ASSERT_TRUE((*raw)->Write(std::move(garbage)).ok());
  Status status = (*raw)->AwaitStatus(10s);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("/wharf.rpctest.Streamer/Sum: malformed request"),
            std::string::npos)
      << status;
}

// What a server sends back on a raw stream connection: the kind byte, the
// status code and its text.
struct StatusFrame {
  int kind = -1;
  StatusCode code = StatusCode::kOk;
  std::string text;
};
StatusFrame ReadStatusFrame(Connection& connection) {
  StatusFrame frame;
  Result<Buffer> m = connection.Recv(10s);
  if (!m.ok() || m->size() < 2) {
    frame.text = m.ok() ? "a message of " + std::to_string(m->size()) + " bytes" : m.status().ToString();
    return frame;
  }
  frame.kind = static_cast<int>(m->data()[0]);
  frame.code = static_cast<StatusCode>(m->data()[1]);
  frame.text = std::string(m->AsStringView().substr(2));
  return frame;
}

TEST_P(GeneratedStreamTest, GarbageFromTheWireEndsTheStreamWithAClearStatus) {
  const auto open = [&] {
    auto c = client_->Connect(server_->address(), {.stream_method = Streamer::kSum.id});
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(c).value();
  };
  // A first message that is not an opening.
  std::unique_ptr<Connection> first = open();
  ASSERT_TRUE(first->Send(Buffer::Copy("\x02garbage")).ok());
  StatusFrame refused = ReadStatusFrame(*first);
  EXPECT_EQ(refused.kind, int(rpc::StreamFrame::kStatus)) << refused.text;
  EXPECT_EQ(refused.code, StatusCode::kInvalidArgument);
  EXPECT_NE(refused.text.find("not its opening"), std::string::npos) << refused.text;
  // An opening cut short (metadata promised, not there).
  std::unique_ptr<Connection> cut = open();
  Buffer opening = rpc::RawStream::EncodeOpening(0, {{"key", "value"}});
  ASSERT_TRUE(cut->Send(Buffer::Copy(opening.AsStringView().substr(0, opening.size() - 2))).ok());
  EXPECT_EQ(ReadStatusFrame(*cut).code, StatusCode::kInvalidArgument);
  // A kind nobody knows, a credit of the wrong size, a status from a client.
  for (std::string_view bad : {std::string_view("\x63", 1), std::string_view("\x06\x01\x02", 3),
                               std::string_view("\x04\x00", 2)}) {
    std::unique_ptr<Connection> c = open();
    ASSERT_TRUE(c->Send(rpc::RawStream::EncodeOpening(0, {})).ok());
    ASSERT_TRUE(c->Send(Buffer::Copy(bad)).ok());
    StatusFrame ended = ReadStatusFrame(*c);
    EXPECT_EQ(ended.kind, int(rpc::StreamFrame::kStatus));
    EXPECT_EQ(ended.code, StatusCode::kInvalidArgument);
    EXPECT_NE(ended.text.find("/wharf.rpctest.Streamer/Sum: malformed stream message"),
              std::string::npos)
        << ended.text;
  }
  // The server still serves.
  auto good = stub_->Sum();
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(good->CloseAndRecv().ok());
}

TEST_P(GeneratedStreamTest, GarbageFromAServerEndsTheClientsStreamWithAClearStatus) {
  // A raw server speaking for method 77: a status of an unknown code, or a
  // kind nobody knows.
  std::unique_ptr<Endpoint> forger = OpenIn(daemon_.get(), LoopbackAddress(GetParam(), "forger"));
  ASSERT_NE(forger, nullptr);
  std::mutex mu;  // the reply is the test thread's, read by the server's
  std::vector<std::unique_ptr<Connection>> kept;
  std::string next_reply;
  ASSERT_TRUE(forger
                  ->ServeStreams(77,
                                 [&](std::unique_ptr<Connection> c) {
                                   std::lock_guard lock(mu);
                                   c->ISend(Buffer::Copy(next_reply));
                                   kept.push_back(std::move(c));
                                 })
                  .ok());
  testing::ServerThread thread(*forger);
  const rpc::MethodInfo method{"/forged.Service/M", 77};
  {
    std::lock_guard lock(mu);
    next_reply = std::string("\x04\xc8" "forged", 8);
  }
  auto unknown_code = rpc::RawStream::Open(*client_, forger->address(), 77, method.path, 10s, {});
  ASSERT_TRUE(unknown_code.ok()) << unknown_code.status();
  Status status = (*unknown_code)->AwaitStatus(10s);
  EXPECT_EQ(status.code(), StatusCode::kUnknown) << status;
  EXPECT_NE(status.message().find("/forged.Service/M: forged"), std::string::npos) << status;
  {
    std::lock_guard lock(mu);
    next_reply = std::string("\x63", 1);
  }
  auto unknown_kind = rpc::RawStream::Open(*client_, forger->address(), 77, method.path, 10s, {});
  ASSERT_TRUE(unknown_kind.ok()) << unknown_kind.status();
  auto read = (*unknown_kind)->ReadNext(10s);
  EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument) << read.status();
  EXPECT_NE(read.status().message().find("malformed stream message"), std::string::npos);
}

TEST_P(GeneratedStreamTest, AServerThatGoesAwayMidStreamIsUnavailable) {
  RangeRequest request = Range(2, 10);
  request.set_hold(true);
  auto stream = stub_->Range(request);
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_TRUE(stream->Read(10s).ok());
  service_.DropHeld();  // unfinished: the client hears kInternal...
  server_thread_.reset();
  server_.reset();  // ...or, if the endpoint went first, kUnavailable
  ASSERT_TRUE(stream->Read(10s).ok());  // what was sent before still arrives
  auto end = stream->Read(20s);
  EXPECT_TRUE(end.status().code() == StatusCode::kInternal ||
              end.status().code() == StatusCode::kUnavailable)
      << end.status();
}

TEST_P(GeneratedStreamTest, ManyStreamsAtOnceEachKeepTheirOwnMessages) {
  constexpr int kStreams = 24;
  std::vector<rpc::ClientStream<Payload, Payload>> streams;
  for (int s = 0; s < kStreams; ++s) {
    auto stream = stub_->Chat();
    ASSERT_TRUE(stream.ok()) << s << ": " << stream.status();
    streams.push_back(std::move(*stream));
  }
  for (int round = 0; round < 5; ++round) {
    for (int s = 0; s < kStreams; ++s) {
      ASSERT_TRUE(streams[s].Write(PayloadOf(Pattern(s * 10 + round, 100 + s))).ok());
    }
    for (int s = 0; s < kStreams; ++s) {
      auto echo = streams[s].Read(10s);
      ASSERT_TRUE(echo.ok() && echo->has_value()) << s << ": " << echo.status();
      EXPECT_EQ((*echo)->data(), Pattern(s * 10 + round, 100 + s));
    }
  }
  for (auto& stream : streams) EXPECT_TRUE(stream.Finish(10s).ok());
}

TEST_P(GeneratedStreamTest, ManagedStreamsSendFromTheSharedHeapWithoutACopy) {
  if (GetParam().mode != Mode::kManaged) GTEST_SKIP() << "managed mode only";
  auto stat = [](Endpoint& ep) {
    for (const auto& [key, value] : ep.Stats()) {
      if (key == "managed.copied_sends") return value;
    }
    return uint64_t{0};
  };
  const uint64_t client_before = stat(*client_);
  const uint64_t server_before = stat(*server_);
  auto stream = stub_->Chat({.metadata = {{"k", "v"}}});
  ASSERT_TRUE(stream.ok()) << stream.status();
  for (int k = 0; k < 40; ++k) {
    ASSERT_TRUE(stream->Write(PayloadOf(Pattern(k, 50'000))).ok());
    ASSERT_TRUE(stream->Read(10s).ok());
  }
  EXPECT_TRUE(stream->Finish(10s).ok());
  // Every message (the opening, requests, replies, credits, the status)
  // went out of the buffer it was written into.
  EXPECT_EQ(stat(*client_), client_before);
  EXPECT_EQ(stat(*server_), server_before);
}

INSTANTIATE_TEST_SUITE_P(Hostings, GeneratedStreamTest, AllHostings(), HostingName);

}  // namespace
}  // namespace wharf::rpctest
