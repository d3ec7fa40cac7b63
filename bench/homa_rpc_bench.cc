// bench/homa_rpc_bench.cc: the protocol's own cost per RPC and per byte, with
// no system calls: two HomaTransports joined by an in-memory datagram pipe
// (PipeDatagram below, preallocated, so the pipe itself neither allocates nor
// logs). What is left is the user-space work `wharf bench baseline` pays on
// top of the kernel: packet encode/decode, RPC state, grants, copies.
//   BM_HomaRoundTrip/<bytes>: one echo RPC end to end (both sides' work).
//   BM_HomaIdlePoll: Poll() with nothing to do (the busy-poll loop's floor).
//   BM_HomaMessage/<bytes>: a one-way message with 64 KiB datagrams, as on
//     loopback (bytes/s is the user-space copy and bookkeeping bound, with
//     heap memory recycled; see below).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "base/clock.h"
#include "homa/homa_transport.h"
#include "transport/datagram.h"

namespace wharf::homa {
namespace {

using transport::InDatagram;
using transport::NetAddress;
using transport::OutDatagram;

// One end of an in-memory link: Send copies into the peer's ring of
// preallocated slots; Receive hands out views of its own ring, valid until the
// next Receive (as the Datagram interface allows). Single-threaded.
class PipeDatagram final : public transport::Datagram {
 public:
  PipeDatagram(NetAddress local, size_t max_datagram_bytes)
      : local_(local),
        max_bytes_(max_datagram_bytes),
        // About 8 MiB of slots: room for a full grant window of 64 KiB
        // datagrams, and few enough to stay warm in cache.
        num_slots_(std::clamp<size_t>((8u << 20) / max_datagram_bytes, 128, 4096)),
        slots_(num_slots_) {
    for (Slot& s : slots_) s.bytes.reserve(max_bytes_);
  }
  void Connect(PipeDatagram* peer) { peer_ = peer; }

  NetAddress LocalAddress() const override { return local_; }
  size_t MaxDatagramBytes() const override { return max_bytes_; }
  Result<size_t> Send(std::span<const OutDatagram> batch) override {
    size_t n = 0;
    for (const OutDatagram& d : batch) {
      if (!peer_->Push(local_, d)) break;  // the pipe is full: like a full socket
      ++n;
    }
    return n;
  }
  Result<size_t> Receive(std::span<InDatagram> out) override {
    head_ += handed_;  // the previous batch's views expire now
    handed_ = 0;
    while (handed_ < out.size() && head_ + handed_ < tail_) {
      Slot& s = slots_[(head_ + handed_) % num_slots_];
      out[handed_++] = InDatagram{s.from, s.bytes};
    }
    return handed_;
  }
  int ReadableFd() const override { return -1; }
  // Like loopback: nothing to pace.
  bool IsLocalPath(const NetAddress&) override { return true; }

 private:
  struct Slot {
    NetAddress from;
    std::vector<std::byte> bytes;
  };
  bool Push(const NetAddress& from, const OutDatagram& d) {
    if (tail_ - head_ == num_slots_) return false;
    Slot& s = slots_[tail_++ % num_slots_];
    s.from = from;
    s.bytes.clear();
    s.bytes.insert(s.bytes.end(), d.bytes.begin(), d.bytes.end());
    s.bytes.insert(s.bytes.end(), d.payload.begin(), d.payload.end());
    return true;
  }

  NetAddress local_;
  size_t max_bytes_;
  size_t num_slots_;
  PipeDatagram* peer_ = nullptr;
  std::vector<Slot> slots_;
  size_t head_ = 0;    // oldest slot not yet released
  size_t handed_ = 0;  // slots from head_ handed out by the last Receive
  size_t tail_ = 0;    // next slot to fill
};

// A client and a server transport on one pipe.
struct Pair {
  explicit Pair(size_t max_datagram_bytes)
      : client_net(NetAddress::Ipv4(0x0a000001, 4000), max_datagram_bytes),
        server_net(NetAddress::Ipv4(0x0a000002, 5000), max_datagram_bytes) {
    client_net.Connect(&server_net);
    server_net.Connect(&client_net);
    HomaConfig config;
    auto c = HomaTransport::Create(config, &client_net, SystemClock::Get());
    auto s = HomaTransport::Create(config, &server_net, SystemClock::Get());
    if (!c.ok() || !s.ok()) std::abort();  // a bug in this benchmark
    client = std::move(c).value();
    server = std::move(s).value();
  }

  // One RPC: polls both sides until the client has its response. `echo`
  // answers with the request, otherwise with an empty response.
  void RoundTrip(Buffer request, bool echo) {
    if (!client->SendRequest(server_net.LocalAddress(), std::move(request)).ok()) std::abort();
    HomaEvent event;
    while (true) {
      server->Poll();
      while (server->PopEvent(&event)) {
        Buffer response = echo ? std::move(event.message) : Buffer();
        if (!server->SendResponse(event.server_key, std::move(response)).ok()) std::abort();
      }
      client->Poll();
      if (client->PopEvent(&event)) {
        if (event.kind != HomaEvent::Kind::kResponse) std::abort();
        benchmark::DoNotOptimize(event.message.data());
        return;
      }
    }
  }

  PipeDatagram client_net;
  PipeDatagram server_net;
  std::unique_ptr<HomaTransport> client;
  std::unique_ptr<HomaTransport> server;
};

void BM_HomaRoundTrip(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  Pair pair(1472);
  for (auto _ : state) pair.RoundTrip(Buffer::Allocate(bytes), /*echo=*/true);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HomaRoundTrip)->Arg(64)->Arg(1000)->Arg(16 << 10);

void BM_HomaIdlePoll(benchmark::State& state) {
  Pair pair(1472);
  for (auto _ : state) benchmark::DoNotOptimize(pair.client->Poll());
}
BENCHMARK(BM_HomaIdlePoll);

void BM_HomaMessage(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  // Keep freed message buffers in the heap: otherwise glibc returns them to
  // the kernel and every message pays ~400 us/MiB of fresh page faults on
  // this class of VM, which measures the allocator, not the protocol.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  Pair pair(65507);
  // One message buffer reused, so the benchmark's own page faults stay out.
  Buffer request = Buffer::Allocate(bytes);
  std::memset(request.data(), 0x5a, bytes);
  for (auto _ : state) {
    pair.RoundTrip(Buffer::Copy(request.span()), /*echo=*/false);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  const double n = static_cast<double>(state.iterations());
  state.counters["data/msg"] = static_cast<double>(pair.client->stats().data_sent) / n;
  state.counters["grants/msg"] = static_cast<double>(pair.server->stats().grants_sent) / n;
}
BENCHMARK(BM_HomaMessage)->Arg(1 << 20);

}  // namespace
}  // namespace wharf::homa
