// bench/stream_rpc_bench.cc: what a client stream costs per message against
// typed unary calls carrying the same payloads, on two embedded endpoints
// over loopback (the server on a thread of its own, as an application has
// it), timed in turn in one loop so that the machine's drift hits both
// alike.
//   BM_StreamVsCalls/<message bytes>: each iteration moves kMessages
//     messages from the client to the server twice, in an order that
//     rotates: over one client stream (Bench::Upload: open, Write each,
//     CloseAndRecv; the opening's round trip included), and as typed
//     Exchange calls with up to kInFlight in flight (the server answers
//     each with an empty Blob).
//   Counters: stream_msgs_per_s and calls_msgs_per_s; stream_over_calls,
//   how many times as many messages a second the stream moves.
#include <benchmark/benchmark.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "client/testing/server_thread.h"
#include "typed_rpc_bench.wharf.h"
#include "wharf/endpoint.h"
#include "wharf/rpc.h"
#include "wharf/rpc_stream.h"

namespace wharf::bench {
namespace {

constexpr int kMessages = 256;
constexpr size_t kInFlight = 32;

// Exchange answers an empty Blob; Upload reads every Blob and answers one
// empty Blob at the end.
class StreamBenchService final : public Bench::Service {
 public:
  Result<Blob> Exchange(const rpc::ServerContext&, const Blob&) override { return Blob(); }
  void Upload(rpc::ServerStreamPtr<Blob, Blob> stream) override {
    stream->OnRead([keep = stream](Result<std::optional<Blob>> read) {
      if (read.ok() && !read->has_value()) keep->WriteAndFinish(Blob()).IgnoreError();
    });
  }
};

int64_t NsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start)
      .count();
}

void BM_StreamVsCalls(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  StreamBenchService service;  // outlives the server endpoint
  const EndpointOptions options{.address = "homa://127.0.0.1:0", .hosting = Hosting::kEmbedded};
  auto server = Endpoint::Open(options);
  auto client = Endpoint::Open(options);
  if (!server.ok() || !client.ok() || !service.Register(**server).ok()) {
    state.SkipWithError("cannot open or serve the endpoints");
    return;
  }
  testing::ServerThread driver(**server);
  Bench::Stub stub(**client, (*server)->address());
  Blob message;
  message.set_data(std::string(bytes, 'm'));

  auto over_stream = [&] {
    auto stream = stub.Upload();
    if (!stream.ok()) return false;
    for (int i = 0; i < kMessages; ++i) {
      if (!stream->Write(message).ok()) return false;
    }
    return stream->CloseAndRecv().ok();
  };
  auto as_calls = [&] {
    std::deque<rpc::PendingCall<Blob>> pending;
    for (int i = 0; i < kMessages; ++i) {
      if (pending.size() == kInFlight) {
        if (!pending.front().Wait().ok()) return false;
        pending.pop_front();
      }
      pending.push_back(stub.AsyncExchange(message));
    }
    for (auto& call : pending) {
      if (!call.Wait().ok()) return false;
    }
    return true;
  };

  int64_t stream_ns = 0;
  int64_t calls_ns = 0;
  bool stream_first = true;
  for (auto _ : state) {
    bool ok = true;
    for (int leg = 0; leg < 2; ++leg) {
      const bool stream_leg = (leg == 0) == stream_first;
      const auto start = std::chrono::steady_clock::now();
      ok &= stream_leg ? over_stream() : as_calls();
      (stream_leg ? stream_ns : calls_ns) += NsSince(start);
    }
    stream_first = !stream_first;
    if (!ok) {
      state.SkipWithError("a stream or a call failed");
      break;
    }
  }
  const double messages = static_cast<double>(state.iterations()) * kMessages;
  if (messages == 0 || stream_ns == 0 || calls_ns == 0) return;
  state.counters["stream_msgs_per_s"] = messages / (static_cast<double>(stream_ns) / 1e9);
  state.counters["calls_msgs_per_s"] = messages / (static_cast<double>(calls_ns) / 1e9);
  state.counters["stream_over_calls"] =
      static_cast<double>(calls_ns) / static_cast<double>(stream_ns);
}
BENCHMARK(BM_StreamVsCalls)->ArgNames({"bytes"})->Arg(64)->Arg(4096)->Arg(65536)->UseRealTime();

}  // namespace
}  // namespace wharf::bench
