// wharf/remote_memory.h: RemoteMemory, one-sided access to a peer's memory
// (RDMA through UCX; over UCX's tcp and shared memory where there is no
// RDMA NIC). Needs an endpoint at a ucx:// address (or one that has talked
// to a ucx:// peer). Both hostings; managed (through wharfd), writes leave
// from the shared heap and reads land there with no copy in wharfd, and
// every region this side lends (asked for or not) lies in the heap.
//
//   wharf::RemoteMemory memory(*endpoint);
//   auto region = memory.Ask("ucx://198.18.0.2:4002", {.size = 1 << 20});
//   memory.Write(*region, 0, wharf::Buffer::Copy("hello"));
//   auto old = memory.FetchAdd(*region, 64, 1);
//   memory.Release(*region);
//
// A peer serves asks from its pool (the ucx.pool_bytes setting), registered
// with the NIC once, so no application ever handles a memory key. It may
// also lend a region unasked (Lend): the holder gets a kLent event.
//
// Safety: every operation is checked on this side before anything moves:
// the region's rights (a read-only region refuses a write:
// kPermissionDenied), its bounds (kOutOfRange), its lifetime
// (kDeadlineExceeded once expired) and its handle (kNotFound for one never
// granted or already released). A region ends when its holder releases it,
// its lender revokes it, its lifetime passes, or either side exits; the
// other side gets an event (kReleased for the holder, kReturned for the
// lender) and later operations on it fail with kNotFound.
//
// Events (RegionEvent): a write with immediate ends in a kImmediate event
// at the lender, after the data is in place. Take them with PollEvent or
// WaitEvent; to fold them into your own epoll loop, watch the endpoint's
// fd() and call Endpoint::Poll() then PollEvent() when it is readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "wharf/buffer.h"
#include "wharf/completion.h"
#include "wharf/endpoint.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf {

// What a region's holder may do: bits.
inline constexpr uint8_t kRegionRead = 1;
inline constexpr uint8_t kRegionWrite = 2;
inline constexpr uint8_t kRegionAtomic = 4;  // compare-and-swap and fetch-add
inline constexpr uint8_t kRegionAllAccess = kRegionRead | kRegionWrite | kRegionAtomic;

struct RegionOptions {
  uint64_t size = 0;
  uint32_t alignment = 8;  // a power of two, at most 4096
  uint8_t access = kRegionAllAccess;
  // The region ends by itself after this long (at most an hour).
  std::chrono::milliseconds lifetime = std::chrono::seconds(60);
};

// A region of a peer's memory this side holds. Plain data: copies name the
// same region.
struct RemoteRegion {
  uint64_t handle = 0;
  uint64_t size = 0;
  uint8_t access = 0;
  // When its lifetime ends, on this host's steady clock.
  std::chrono::steady_clock::time_point expires;
};

// A region of this side's pool lent to a peer: its bytes are this
// application's to read and write until the region ends (Revoke, or a
// kReturned event); a holder's writes land in them.
struct LocalRegion {
  uint64_t id = 0;
  std::span<std::byte> bytes;
};

struct RegionEvent {
  enum class Kind : uint8_t {
    kImmediate,  // a holder wrote [offset, offset + length) of our region `region`, then `value`
    kLent,       // a peer lent us `lent` unasked
    kReleased,   // our held region `region` (its handle) ended: revoked, expired, or its lender died
    kReturned,   // our lent region `region` ended: released, expired, or its holder died
  };
  Kind kind = Kind::kImmediate;
  uint64_t region = 0;
  uint64_t offset = 0, length = 0, value = 0;  // kImmediate
  RemoteRegion lent;                            // kLent
};

// Owned by the application; may outlive its endpoint (operations then fail
// with kCancelled). Thread-safe like the endpoint. Sync operations wait up
// to `timeout` (kDeadlineExceeded; the operation itself goes on, holding
// its buffer); the I-forms return a Completion at once.
class RemoteMemory {
 public:
  explicit RemoteMemory(Endpoint& endpoint);

  // --- holding ---
  // Asks the endpoint at `peer` ("ucx://HOST:PORT") for a region from its
  // pool: kResourceExhausted when it has no room (or this side holds
  // ucx.max_regions already), kInvalidArgument for a size, alignment or
  // lifetime it does not take.
  Result<RemoteRegion> Ask(std::string_view peer, const RegionOptions& options,
                           std::chrono::nanoseconds timeout = std::chrono::seconds(30));
  // `length` bytes from `offset`, in a Buffer from the endpoint.
  Result<Buffer> Read(const RemoteRegion& region, uint64_t offset, size_t length,
                      std::chrono::nanoseconds timeout = std::chrono::seconds(30));
  // Fills `into` (its whole size) from `offset`; TakeMessage gives it back.
  Completion IRead(const RemoteRegion& region, uint64_t offset, Buffer into);
  // Done once the data is in the peer's memory.
  Status Write(const RemoteRegion& region, uint64_t offset, Buffer data,
               std::chrono::nanoseconds timeout = std::chrono::seconds(30));
  Completion IWrite(const RemoteRegion& region, uint64_t offset, Buffer data);
  // Write, then the lender gets `value` in a kImmediate event.
  Status WriteWithImmediate(const RemoteRegion& region, uint64_t offset, Buffer data,
                            uint64_t value,
                            std::chrono::nanoseconds timeout = std::chrono::seconds(30));
  Completion IWriteWithImmediate(const RemoteRegion& region, uint64_t offset, Buffer data,
                                 uint64_t value);
  // On the 8-byte word at `offset` (8-aligned, the peer's byte order):
  // the word as it was. CompareAndSwap stored `desired` if it was `expected`.
  Result<uint64_t> CompareAndSwap(const RemoteRegion& region, uint64_t offset, uint64_t expected,
                                  uint64_t desired,
                                  std::chrono::nanoseconds timeout = std::chrono::seconds(30));
  Result<uint64_t> FetchAdd(const RemoteRegion& region, uint64_t offset, uint64_t add,
                            std::chrono::nanoseconds timeout = std::chrono::seconds(30));
  // Gives the region back (its lender gets kReturned); kNotFound when not held.
  Status Release(const RemoteRegion& region);

  // --- lending ---
  // Lends the endpoint at `peer` a zeroed region of this endpoint's pool.
  Result<LocalRegion> Lend(std::string_view peer, const RegionOptions& options);
  // Lends the endpoint at `peer` this application's own `memory` (read and
  // written in place; it must stay valid until the region ends: Revoke it
  // before freeing it). Lending the same memory to several peers is
  // allowed: their writes then meet in it. Managed, the memory must come
  // from Endpoint::AllocateBuffer (kInvalidArgument otherwise). Waits for
  // wharfd when managed: not from inside a handler there.
  Result<LocalRegion> LendMemory(std::string_view peer, std::span<std::byte> memory,
                                 uint8_t access = kRegionAllAccess,
                                 std::chrono::milliseconds lifetime = std::chrono::seconds(60));
  // Ends a region we lent (its holder gets kReleased).
  Status Revoke(uint64_t region);
  // The bytes of a region we lent, asked for or not (an event's `region`);
  // empty once it ended.
  std::span<std::byte> LocalBytes(uint64_t region);

  // --- events ---
  std::optional<RegionEvent> PollEvent();
  // Waits (driving the endpoint) for the next event; kDeadlineExceeded.
  Result<RegionEvent> WaitEvent(std::chrono::nanoseconds timeout = Completion::kForever);

 private:
  std::shared_ptr<internal::EndpointCore> core_;
};

}  // namespace wharf
