// `wharf serve`.
#include "tools/serve_command.h"

#include <CLI/CLI.hpp>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <map>
#include <algorithm>
#include <set>
#include <vector>
#include <string>
#include <thread>

#include "base/mutex.h"
#include "wharf/endpoint.h"
#include "wharf/remote_memory.h"

namespace wharf::tools {
namespace {

std::atomic<Endpoint*> g_endpoint{nullptr};
std::atomic<bool> g_stop{false};

void OnSignal(int) {
  g_stop = true;
  if (Endpoint* ep = g_endpoint.load()) ep->Shutdown();  // an eventfd write: signal-safe
}

// Execution accounting: a request whose payload starts with an 8-byte id is
// recorded per client; a second run of the same id is a duplicate. `wharf
// ping`'s ids are a random base (the high 32 bits) plus a sequence number,
// so each (client, base) keeps a bitmap of sequence numbers: a bit per
// request (25 KB for 200,000), found through a one-entry cache of the last
// client, where a tree node and a copy of the peer's address per request
// cost more than the echo itself. Ids that are not ping's (a sequence number
// past kMaxSequence) are kept one by one, up to kMaxOthers. Bounded:
// kMaxClients (client, base) pairs; what does not fit is counted as
// untracked.
class ExecutionLog {
 public:
  static constexpr size_t kMaxClients = 4096;
  static constexpr uint64_t kMaxSequence = uint64_t{1} << 26;  // 8 MiB of bits per client
  static constexpr size_t kMaxOthers = size_t{1} << 20;

  void Record(std::string_view peer, const Buffer& request) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    ++executed_;
    if (request.size() < 8) return;
    uint64_t id;
    std::memcpy(&id, request.data(), 8);
    const uint64_t base = id >> 32;
    const uint64_t sequence = id & 0xFFFFFFFFu;
    std::vector<uint64_t>* bits = sequence < kMaxSequence ? Bits(peer, base) : nullptr;
    if (bits == nullptr) {
      if (others_.size() >= kMaxOthers) {
        ++untracked_;
      } else if (!others_.emplace(std::string(peer), id).second) {
        ++duplicates_;
      }
      return;
    }
    const size_t word = sequence / 64;
    if (word >= bits->size()) bits->resize(std::max(word + 1, bits->size() * 2));
    const uint64_t mask = uint64_t{1} << (sequence % 64);
    if (((*bits)[word] & mask) != 0) ++duplicates_;
    (*bits)[word] |= mask;
  }
  std::string Summary() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    std::string s = "executed " + std::to_string(executed_) + " duplicates " +
                    std::to_string(duplicates_);
    if (untracked_ > 0) s += " untracked " + std::to_string(untracked_);
    return s;
  }

 private:
  std::vector<uint64_t>* Bits(std::string_view peer, uint64_t base)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (last_ != nullptr && base == last_base_ && peer == last_peer_) return last_;
    auto it = seen_.find(std::make_pair(std::string(peer), base));
    if (it == seen_.end()) {
      if (seen_.size() >= kMaxClients) return nullptr;
      it = seen_.emplace(std::make_pair(std::string(peer), base), std::vector<uint64_t>()).first;
    }
    last_peer_ = it->first.first;
    last_base_ = base;
    last_ = &it->second;  // map nodes stay put
    return last_;
  }

  Mutex mu_;
  uint64_t executed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t duplicates_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t untracked_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::pair<std::string, uint64_t>, std::vector<uint64_t>> seen_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<std::string, uint64_t>> others_ ABSL_GUARDED_BY(mu_);
  std::string last_peer_ ABSL_GUARDED_BY(mu_);
  uint64_t last_base_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint64_t>* last_ ABSL_GUARDED_BY(mu_) = nullptr;
};

// Answers held calls once their delay has passed, from a thread of its own
// (--handler-delay): a slow server whose engine stays responsive, so clients
// can be tried against handlers that take their time.
class DelayLine {
 public:
  explicit DelayLine(std::chrono::nanoseconds delay)
      : delay_(delay), thread_([this] { Loop(); }) {}
  ~DelayLine() {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_.NotifyOne();
    thread_.join();
  }
  void Hold(Responder responder, Buffer response) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    due_.emplace(std::chrono::steady_clock::now() + delay_,
                 Held{std::move(responder), std::move(response)});
    cv_.NotifyOne();
  }

 private:
  struct Held {
    Responder responder;
    Buffer response;
  };
  void Loop() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    while (!stop_) {
      if (due_.empty()) {
        cv_.Wait(mu_);
        continue;
      }
      auto first = due_.begin();
      if (cv_.WaitUntil(mu_, first->first)) continue;  // woken before it was due
      Held held = std::move(due_.begin()->second);
      due_.erase(due_.begin());
      lock.unlock();
      (void)held.responder.Respond(std::move(held.response));
      lock.lock();
    }
  }
  const std::chrono::nanoseconds delay_;
  Mutex mu_;
  CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::multimap<std::chrono::steady_clock::time_point, Held> due_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// Echoes every message on `conn` until it closes; re-arms itself from the
// completion callback, so one thread serves any number of connections.
void EchoLoop(std::shared_ptr<Connection> conn) {
  Completion recv = conn->IRecv();
  recv.OnComplete([conn, recv](const Status& s) mutable {
    if (!s.ok()) return;  // closed or peer gone: the shared_ptr lets go
    conn->ISend(recv.TakeMessage());
    EchoLoop(conn);
  });
}

// Accepts connections on a thread of its own (the endpoint is thread-safe)
// and starts each one's echo loop, until `stop`. A blocking Accept rather
// than polling: in managed mode every Accept is a command to wharfd, and
// polling would wake wharfd and this process hundreds of times a second
// while idle.
void AcceptLoop(Endpoint& ep, const std::atomic<bool>& stop) {
  while (!stop) {
    auto conn = ep.Accept(std::chrono::milliseconds(250));
    if (conn.ok()) EchoLoop(std::shared_ptr<Connection>(std::move(conn).value()));
  }
}

}  // namespace

void AddServeFlags(CLI::App& app, ServeOptions& options) {
  app.add_option("--listen", options.listen, "Address to serve on: homa://HOST:PORT, tcp://HOST:PORT, ucx://HOST:PORT, or HOST:PORT (endpoint.default_transport)")
      ->capture_default_str();
  app.add_option("--duration", options.duration_s,
                 "Stop after this many seconds (0: run until Ctrl-C / SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--handler-delay", options.handler_delay_ms,
                 "The echo handler answers this many milliseconds after a request arrives, "
                 "from another thread (for trying clients against slow servers)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--lend-bytes", options.lend_bytes,
                 "Lend a block of this many bytes to every `wharf rma` client that asks "
                 "(ucx:// only): try remote memory by hand")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  AddEndpointFlags(app, options.endpoint);
}

int RunServe(const ServeOptions& options) {
  if (options.lend_bytes > 0 && options.listen.rfind("ucx://", 0) != 0) {
    std::fprintf(stderr, "wharf serve: --lend-bytes needs a ucx:// address (--listen %s)\n",
                 options.listen.c_str());
    return 2;
  }
  EndpointFlags flags = options.endpoint;
  if (options.lend_bytes > 0) {
    // Its handler lends from this process's own memory, at once: embedded.
    if (flags.mode == "managed") {
      std::fprintf(stderr, "wharf serve: --lend-bytes runs embedded (not --mode managed)\n");
      return 2;
    }
    flags.mode = "embedded";
  }
  auto endpoint_options = MakeEndpointOptions(flags, options.listen);
  if (!endpoint_options.ok()) {
    std::fprintf(stderr, "wharf serve: %s\n", endpoint_options.status().ToString().c_str());
    return 2;
  }
  auto ep = Endpoint::Open(*endpoint_options);
  if (!ep.ok()) {
    std::fprintf(stderr, "wharf serve: %s\n", ep.status().ToString().c_str());
    return 1;
  }
  Endpoint& endpoint = **ep;
  ExecutionLog log;
  std::unique_ptr<DelayLine> delay_line;
  Status s;
  if (options.handler_delay_ms > 0) {
    delay_line = std::make_unique<DelayLine>(std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double, std::milli>(options.handler_delay_ms)));
    s = endpoint.ServeAsync(kEchoMethod, [&](const RpcContext& ctx, Buffer request,
                                             Responder responder) {
      log.Record(ctx.peer, request);
      delay_line->Hold(std::move(responder), std::move(request));
    });
  } else {
    s = endpoint.Serve(kEchoMethod, [&log](const RpcContext& ctx, Buffer request) {
      log.Record(ctx.peer, request);
      return Result<Buffer>(std::move(request));
    });
  }
  if (s.ok()) {
    s = endpoint.Serve(kServerStatsMethod, [&log](const RpcContext&, Buffer) {
      return Result<Buffer>(Buffer::Copy(log.Summary()));
    });
  }
  // --lend-bytes: the block every `wharf rma` client shares (8-aligned, for
  // its atomics), lent for a minute at a time; a client's exit ends its loan.
  std::vector<uint64_t> lent_block((options.lend_bytes + 7) / 8, 0);
  RemoteMemory memory(endpoint);
  if (s.ok() && options.lend_bytes > 0) {
    auto block = std::as_writable_bytes(std::span<uint64_t>(lent_block)).first(options.lend_bytes);
    s = endpoint.Serve(kLendMethod, [&memory, block](const RpcContext& ctx, Buffer) {
      Result<LocalRegion> lent = memory.LendMemory(ctx.peer, block, kRegionAllAccess,
                                                   std::chrono::seconds(60));
      if (!lent.ok()) return Result<Buffer>(lent.status());
      return Result<Buffer>(Buffer::Copy(std::to_string(block.size())));
    });
  }
  if (s.ok()) s = endpoint.Listen();
  if (!s.ok()) {
    std::fprintf(stderr, "wharf serve: %s\n", s.ToString().c_str());
    return 1;
  }
  g_endpoint = &endpoint;
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::printf("listening on %s\n", endpoint.address().c_str());
  if (options.lend_bytes > 0) {
    std::printf("lending %llu bytes to `wharf rma` clients\n",
                static_cast<unsigned long long>(options.lend_bytes));
  }
  std::fflush(stdout);

  using Clock = std::chrono::steady_clock;
  auto end = options.duration_s > 0
                 ? Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options.duration_s))
                 : Clock::time_point::max();
  std::atomic<bool> stop_accepting{false};
  std::thread acceptor([&] { AcceptLoop(endpoint, stop_accepting); });
  // Slices only to notice --duration and signals.
  while (!g_stop && Clock::now() < end) {
    if (!endpoint.Run(std::chrono::milliseconds(200)).ok()) break;
    // Loans ending and immediates: shown, so they do not pile up.
    while (std::optional<RegionEvent> e = memory.PollEvent()) {
      if (e->kind == RegionEvent::Kind::kImmediate) {
        std::printf("immediate %llu after a write of %llu bytes at offset %llu\n",
                    static_cast<unsigned long long>(e->value),
                    static_cast<unsigned long long>(e->length),
                    static_cast<unsigned long long>(e->offset));
        std::fflush(stdout);
      }
    }
  }
  stop_accepting = true;
  acceptor.join();
  g_endpoint = nullptr;
  std::printf("%s\n", log.Summary().c_str());
  return 0;
}

}  // namespace wharf::tools
