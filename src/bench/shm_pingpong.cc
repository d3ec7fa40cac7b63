// Shared-memory ping-pong: a Region's two rings, eventfd doorbells, and an
// echo server that attaches the memfd in a forked child. A request whose
// cookie is 0 tells the server to exit.
#include "bench/shm_pingpong.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "shm/doorbell.h"
#include "shm/layout.h"
#include "shm/region.h"
#include "shm/spsc_ring.h"
#include "bench/child_process.h"

namespace wharf::bench {
namespace {

using shm::Descriptor;
using shm::Doorbell;
using shm::Region;

// Exit codes of the echo server (besides kChildPinFailedExitCode).
constexpr int kServerDeadlineExitCode = 3;
constexpr int kServerAttachExitCode = 4;
constexpr int kServerProtocolExitCode = 5;  // bad request or full ring

constexpr uint64_t kStopCookie = 0;
// A sleeping server wakes up this often to notice its deadline.
constexpr DurationNs kServerMaxSleepNs = 100 * kNsPerMs;
constexpr uint32_t kRingEntries = 64;  // one entry is in flight at a time

// Each half of the heap holds one message, rounded up to a page.
shm::Geometry GeometryFor(size_t size_bytes) {
  const uint64_t half =
      (uint64_t{size_bytes} + shm::kPageBytes - 1) / shm::kPageBytes * shm::kPageBytes;
  return shm::Geometry{
      .command_entries = kRingEntries, .completion_entries = kRingEntries, .heap_bytes = 2 * half};
}

// One side's consuming end and the doorbell it sleeps on. The owner's
// thread only.
class Receiver {
 public:
  Receiver(shm::RingMemory ring, Doorbell& bell, WaitMode mode)
      : ring_(ring), bell_(bell), sleep_(mode == WaitMode::kBlocking) {}

  // Pops one descriptor into `out`: true, or false when `deadline_ns`
  // passes first. A sleep lasts at most `max_sleep_ns`.
  Result<bool> Pop(Descriptor& out, const Clock& clock, TimeNs deadline_ns,
                   DurationNs max_sleep_ns) {
    const std::span<Descriptor> one(&out, 1);
    uint32_t spins = 0;
    while (true) {
      if (ring_.TryPop(one) == 1) return true;
      ++spins;
      if (!sleep_ || spins < kShmBlockSpinPolls) {
        if (spins % kSpinsPerClockCheck == 0 && clock.NowNs() >= deadline_ns) return false;
        continue;
      }
      // Announce, look once more, then sleep (spsc_ring.h explains why this
      // order cannot lose a wake-up).
      ring_.SetWaiting(true);
      if (ring_.TryPop(one) == 1) {
        ring_.SetWaiting(false);
        return true;
      }
      const TimeNs now = clock.NowNs();
      if (now >= deadline_ns) {
        ring_.SetWaiting(false);
        return false;
      }
      const DurationNs sleep_ns = std::min(deadline_ns - now, max_sleep_ns);
      Result<bool> rung = bell_.Wait(static_cast<int>((sleep_ns + kNsPerMs - 1) / kNsPerMs));
      ring_.SetWaiting(false);
      if (!rung.ok()) return rung.status();
      bell_.Drain();
      spins = kShmBlockSpinPolls;  // woken: one look, then back to sleep if empty
    }
  }

 private:
  shm::SpscConsumer ring_;
  Doorbell& bell_;
  const bool sleep_;
};

// One side's producing end and the peer's doorbell.
class Sender {
 public:
  Sender(shm::RingMemory ring, Doorbell& peer_bell, WaitMode mode)
      : ring_(ring), peer_bell_(peer_bell), ring_bell_(mode == WaitMode::kBlocking) {}

  Status Push(const Descriptor& d) {
    if (!ring_.TryPush(d)) return ResourceExhaustedError("shm ping-pong: ring full");
    // A polling peer never sleeps: skip the fence and the load.
    if (ring_bell_ && ring_.PeerWaiting()) return peer_bell_.Ring();
    return OkStatus();
  }

 private:
  shm::SpscProducer ring_;
  Doorbell& peer_bell_;
  const bool ring_bell_;
};

// The forked child's loop: maps the inherited memfd itself (the parent's
// mapping is MADV_DONTFORK) and echoes each request from the first heap
// half into the second.
int ServeShmEcho(int fd, const shm::Geometry& geometry, WaitMode mode, Doorbell& my_bell,
                 Doorbell& client_bell, const Clock& clock, TimeNs deadline_ns) {
  Result<std::unique_ptr<Region>> attached = Region::Attach(fd, geometry);
  if (!attached.ok()) return kServerAttachExitCode;
  Region& region = **attached;
  const uint64_t half = geometry.heap_bytes / 2;
  Receiver requests(region.command_ring(), my_bell, mode);
  Sender replies(region.completion_ring(), client_bell, mode);
  while (true) {
    Descriptor d;
    Result<bool> got = requests.Pop(d, clock, deadline_ns, kServerMaxSleepNs);
    if (!got.ok()) return kServerProtocolExitCode;
    if (!*got) return kServerDeadlineExitCode;
    if (d.cookie == kStopCookie) return 0;
    // The request must lie in the client's half; the reply goes to ours.
    if (d.heap_offset > half || d.length > half - d.heap_offset) return kServerProtocolExitCode;
    Result<std::span<std::byte>> in = region.HeapRange(d.heap_offset, d.length);
    Result<std::span<std::byte>> out = region.HeapRange(half, d.length);
    if (!in.ok() || !out.ok()) return kServerProtocolExitCode;
    std::memcpy(out->data(), in->data(), d.length);
    Descriptor reply = d;
    reply.heap_offset = half;
    if (!replies.Push(reply).ok()) return kServerProtocolExitCode;
  }
}

// The client half: stamps the request in place in the first heap half and
// waits for the echo in the second. Owned by RunShmPingPong for one run;
// the calling thread only.
class ShmClient final : public PingPongClient {
 public:
  ShmClient(Region& region, Doorbell& my_bell, Doorbell& server_bell,
            const PingPongOptions& options, const Clock& clock)
      : region_(region),
        requests_(region.command_ring(), server_bell, options.mode),
        replies_(region.completion_ring(), my_bell, options.mode),
        clock_(clock),
        size_bytes_(options.size_bytes),
        half_(region.heap().size() / 2) {
    std::memset(region_.heap().data(), 0x5a, size_bytes_);
  }

  Result<Outcome> RoundTrip(uint64_t seq, TimeNs deadline_ns) override {
    StampSequence(seq, region_.heap().data(), size_bytes_);
    Descriptor d{};
    d.opcode = static_cast<uint16_t>(shm::Opcode::kNop);
    d.cookie = seq;
    d.heap_offset = 0;
    d.length = size_bytes_;
    WHARF_RETURN_IF_ERROR(requests_.Push(d));
    Descriptor reply;
    WHARF_ASSIGN_OR_RETURN(bool got,
                           replies_.Pop(reply, clock_, deadline_ns, deadline_ns - clock_.NowNs()));
    // A ring does not lose entries: no reply in time means the server is
    // stuck or gone, and the loop reports it (as TCP does).
    if (!got) return DeadlineExceededError("no echo from the shm server in time");
    if (reply.cookie != seq || reply.heap_offset != half_ || reply.length != size_bytes_ ||
        !HasSequence(seq, region_.heap().data() + half_, size_bytes_)) {
      return DataLossError("shm echo of request " + std::to_string(seq) + " is wrong (cookie " +
                           std::to_string(reply.cookie) + ", offset " +
                           std::to_string(reply.heap_offset) + ", length " +
                           std::to_string(reply.length) + ")");
    }
    return Outcome::kOk;
  }

  void Finish() override {
    Descriptor stop{};
    stop.opcode = static_cast<uint16_t>(shm::Opcode::kNop);
    stop.cookie = kStopCookie;
    requests_.Push(stop).IgnoreError();  // the server also has a deadline
  }

 private:
  Region& region_;
  Sender requests_;
  Receiver replies_;
  const Clock& clock_;
  const size_t size_bytes_;
  const uint64_t half_;
};

}  // namespace

Result<PingPongResult> RunShmPingPong(const PingPongOptions& options, const Clock& clock,
                                      const ProgressFn& progress) {
  WHARF_RETURN_IF_ERROR(ValidatePingPongOptions(options, kMaxShmRequestBytes));
  const shm::Geometry geometry = GeometryFor(options.size_bytes);
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Region> region,
                         Region::Create(geometry, "bench-pingpong"));
  WHARF_ASSIGN_OR_RETURN(Doorbell client_bell, Doorbell::Create());
  WHARF_ASSIGN_OR_RETURN(Doorbell server_bell, Doorbell::Create());

  const PinPlan pinning = PlanPinning(options.pin, options.client_cpu, options.server_cpu);
  const TimeNs server_deadline_ns = ServerDeadline(options, clock);
  const int fd = region->fd();
  WHARF_ASSIGN_OR_RETURN(ChildProcess server,
                         ChildProcess::Fork(pinning.pin ? pinning.server_cpu : -1, [&]() {
                           return ServeShmEcho(fd, geometry, options.mode, server_bell, client_bell,
                                               clock, server_deadline_ns);
                         }));

  ShmClient client(*region, client_bell, server_bell, options, clock);
  const std::string what = "shm " + std::string(WaitModeName(options.mode)) + " " +
                           std::to_string(options.size_bytes) + " B";
  return RunPingPongLoop(options, pinning, clock, progress, what, server, client);
}

}  // namespace wharf::bench
