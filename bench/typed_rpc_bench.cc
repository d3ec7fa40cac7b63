// bench/typed_rpc_bench.cc: what the typed layer (protoc-gen-wharf's Stub and
// Service over include/wharf/rpc.h) adds to a unary round trip: a raw
// Endpoint call and a typed call carrying the same payload bytes, on the same
// two embedded endpoints over loopback, timed in turn in one loop so that the
// machine's drift hits both alike (only their ratio within a run means
// anything on a shared VM).
//   BM_TypedVsRaw/<request bytes>/<response bytes>/<server thread>: each
//     iteration makes three calls, in an order that rotates: raw (method
//     kRaw, a Serve handler answering a buffer of the response size), raw
//     answered later (kRawLater, the same answer through ServeAsync's
//     Responder, as a generated AsyncService's methods are served), and typed
//     (Bench::Stub, answered by a Bench::Service whose Exchange returns a
//     Blob of the response size). Server thread 0: one thread drives both
//     endpoints (ICall / AsyncExchange, then Poll until the answer is back),
//     so the times are the CPU work of both sides; 1: the server runs on a
//     thread of its own and the client makes blocking calls (Call /
//     Exchange), the round trip an application sees.
//   Counters: raw_us, raw_later_us and typed_us, the mean round trip of
//   each; typed_over_raw, the ratio the typed layer is judged by, and
//   later_over_raw, the part of it that serving through a Responder costs;
//   raw_allocs, raw_later_allocs and typed_allocs, heap allocations per
//   round trip (both threads').
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "client/testing/server_thread.h"
#include "typed_rpc_bench.wharf.h"
#include "wharf/endpoint.h"
#include "wharf/rpc.h"

#include "counting_new.h"  // g_allocations: heap allocations so far

namespace wharf::bench {
namespace {

// The raw methods' ids: any the generated service does not use.
constexpr uint32_t kRaw = 1;
constexpr uint32_t kRawLater = 2;
static_assert(kRaw != Bench::kExchange.id && kRawLater != Bench::kExchange.id);

// The typed server: answers every request with the same Blob (copied into
// the reply, as the raw handler copies its answer into a buffer).
class BenchService final : public Bench::Service {
 public:
  explicit BenchService(size_t response_bytes) {
    reply_.set_data(std::string(response_bytes, 'r'));
  }
  Result<Blob> Exchange(const rpc::ServerContext&, const Blob&) override { return reply_; }

 private:
  Blob reply_;
};

// One kind of call the loop times: `call()` makes one round trip and says
// whether the answer came back whole; the sums are the loop's.
struct Leg {
  std::function<bool()> call;
  int64_t ns = 0;
  uint64_t allocations = 0;

  bool Timed() {
    const uint64_t allocations_before = g_allocations.load(std::memory_order_relaxed);
    const auto start = std::chrono::steady_clock::now();
    const bool ok = call();
    ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                               start)
              .count();
    allocations += g_allocations.load(std::memory_order_relaxed) - allocations_before;
    return ok;
  }
};

void BM_TypedVsRaw(benchmark::State& state) {
  const size_t request_bytes = static_cast<size_t>(state.range(0));
  const size_t response_bytes = static_cast<size_t>(state.range(1));
  const bool server_thread = state.range(2) != 0;
  // The handlers borrow these: declared before the endpoints, they outlive
  // them.
  const std::string response_payload(response_bytes, 'r');
  BenchService service(response_bytes);
  // One thread polling both ends: no spinning inside Poll-driven calls (the
  // loop below is the spinner). With a server thread, the endpoints' own
  // spin-then-sleep waits, as an application has them.
  EndpointOptions options{.address = "homa://127.0.0.1:0", .hosting = Hosting::kEmbedded};
  if (!server_thread) options.settings.push_back({"endpoint.spin", "0ns"});
  auto server = Endpoint::Open(options);
  auto client = Endpoint::Open(options);
  if (!server.ok() || !client.ok()) {
    state.SkipWithError("cannot open endpoints");
    return;
  }
  // The raw handlers' answer. Each handler keeps a copy, which refers to
  // the endpoint that owns the handler and to a payload that outlives it.
  auto make_answer = [&server, &response_payload] {
    Buffer bytes = (*server)->AllocateBuffer(response_payload.size());
    std::memcpy(bytes.data(), response_payload.data(), response_payload.size());
    return bytes;
  };
  Status served = (*server)->Serve(
      kRaw, [make_answer](const RpcContext&, Buffer) -> Result<Buffer> { return make_answer(); });
  Status served_later = (*server)->ServeAsync(
      kRawLater, [make_answer](const RpcContext&, Buffer, Responder responder) {
        responder.Respond(make_answer()).IgnoreError();
      });
  if (!served.ok() || !served_later.ok() || !service.Register(**server).ok()) {
    state.SkipWithError("cannot serve");
    return;
  }
  std::optional<testing::ServerThread> driver;
  if (server_thread) driver.emplace(**server);
  const std::string target = (*server)->address();
  const std::string request_payload(request_bytes, 'q');
  Blob request;
  request.set_data(request_payload);
  Bench::Stub stub(**client, target);

  // A raw call of `method`.
  auto raw = [&](uint32_t method) {
    Buffer bytes = (*client)->AllocateBuffer(request_bytes);
    std::memcpy(bytes.data(), request_payload.data(), request_bytes);
    if (server_thread) {
      Result<Buffer> answer = (*client)->Call(target, method, std::move(bytes));
      return answer.ok() && answer->size() == response_bytes;
    }
    Completion c = (*client)->ICall(target, method, std::move(bytes));
    while (!c.Poll()) (*server)->Poll();
    return c.status().ok() && c.TakeMessage().size() == response_bytes;
  };
  auto typed = [&] {
    if (server_thread) {
      Result<Blob> answer = stub.Exchange(request);
      return answer.ok() && answer->data().size() == response_bytes;
    }
    rpc::PendingCall<Blob> pending = stub.AsyncExchange(request);
    while (!pending.Poll()) (*server)->Poll();
    Result<Blob> answer = pending.Wait();
    return answer.ok() && answer->data().size() == response_bytes;
  };
  Leg legs[] = {{.call = [&] { return raw(kRaw); }},
                {.call = [&] { return raw(kRawLater); }},
                {.call = typed}};
  Leg& raw_leg = legs[0];
  Leg& later_leg = legs[1];
  Leg& typed_leg = legs[2];

  size_t first = 0;
  for (auto _ : state) {
    // The order rotates: no leg always finds the caches as one other left them.
    bool ok = true;
    for (size_t i = 0; i < std::size(legs); ++i) ok &= legs[(first + i) % std::size(legs)].Timed();
    first = (first + 1) % std::size(legs);
    if (!ok) {
      state.SkipWithError("a call failed or answered the wrong size");
      break;
    }
  }
  const double n = static_cast<double>(state.iterations());
  if (n == 0 || raw_leg.ns == 0) return;
  state.counters["raw_us"] = static_cast<double>(raw_leg.ns) / n / 1e3;
  state.counters["raw_later_us"] = static_cast<double>(later_leg.ns) / n / 1e3;
  state.counters["typed_us"] = static_cast<double>(typed_leg.ns) / n / 1e3;
  state.counters["typed_over_raw"] =
      static_cast<double>(typed_leg.ns) / static_cast<double>(raw_leg.ns);
  state.counters["later_over_raw"] =
      static_cast<double>(later_leg.ns) / static_cast<double>(raw_leg.ns);
  state.counters["raw_allocs"] = static_cast<double>(raw_leg.allocations) / n;
  state.counters["raw_later_allocs"] = static_cast<double>(later_leg.allocations) / n;
  state.counters["typed_allocs"] = static_cast<double>(typed_leg.allocations) / n;
}
BENCHMARK(BM_TypedVsRaw)
    ->ArgNames({"req", "resp", "thread"})
    ->Args({64, 64, 0})
    ->Args({4096, 4096, 0})
    ->Args({65536, 65536, 0})
    ->Args({64, 64, 1})
    ->Args({4096, 4096, 1})
    ->Args({65536, 65536, 1})
    ->UseRealTime();

}  // namespace
}  // namespace wharf::bench
