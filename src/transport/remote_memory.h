// transport/remote_memory.h: RemoteMemory, one-sided access to memory on a
// peer, as a transport that can do it offers it (MessageTransport::
// remote_memory(); today ucx:// through ucx/ucx_remote_memory.h). The
// engine's RegionOps drives it; no UCX type appears here.
//
// A holder asks a target for a region (the target places it in its pool),
// or a target lends one of its own unasked; the holder then reads, writes,
// writes with an immediate value (the target gets it as an event after the
// data is in place), and compare-and-swaps or fetch-adds 8-byte words, each
// checked against the region's rights, bounds and lifetime before anything
// moves. A region ends when its holder releases it, its lender revokes it,
// its lifetime passes or either side dies; the other side gets an event.
// docs/transports.md ("Remote memory") is the specification.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "base/clock.h"
#include "transport/net_address.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::transport {

// What a region's holder may do: bits (the wire's, wire/ucx_region.h).
inline constexpr uint8_t kRegionRead = 1;
inline constexpr uint8_t kRegionWrite = 2;
inline constexpr uint8_t kRegionAtomic = 4;
inline constexpr uint8_t kRegionAllAccess = kRegionRead | kRegionWrite | kRegionAtomic;

// A region to ask for, or to lend from the pool.
struct RegionSpec {
  uint64_t size = 0;
  uint32_t alignment = 8;  // a power of two, at most 4096
  uint8_t access = kRegionAllAccess;
  uint32_t lifetime_ms = 60'000;
};

// A region this side holds (a peer lent it).
struct HeldRegion {
  uint64_t handle = 0;
  uint64_t size = 0;
  uint8_t access = 0;
  TimeNs expires_ns = kNever;  // on the transport's clock
};

// A region this side lent from its pool: its id and its bytes, valid until
// the region ends (a kReturned event, or Revoke).
struct LentRegion {
  uint64_t id = 0;
  std::span<std::byte> bytes;
};

// Something that happened to this side's regions.
struct RegionEvent {
  enum class Kind : uint8_t {
    kImmediate,  // a holder's write with immediate finished in a region we lent
    kLent,       // a peer lent us a region unasked (held: its handle)
    kReleased,   // a region we held ended (released or expired by its lender, or it died)
    kReturned,   // a region we lent ended without our Revoke (its holder released it or
                 // died, or its lifetime passed): its bytes are no longer ours to read
  };
  Kind kind = Kind::kImmediate;
  uint64_t region = 0;  // kImmediate, kReturned: our lent id; else the held handle
  uint64_t offset = 0, length = 0, value = 0;  // kImmediate
  std::span<std::byte> bytes;                   // kImmediate: the whole lent region
  HeldRegion held;                              // kLent
};

// Where a target's regions come from: the blocks a peer's ask and
// LendFromPool take. A transport has its own (ucx.pool_bytes); wharfd gives
// an application's transport that application's shared heap instead, so
// what holders write lands where the application reads it.
class RegionPool {
 public:
  virtual ~RegionPool() = default;
  // A block of `bytes`, aligned to `alignment` (a power of two up to
  // 4096); empty when there is no room.
  virtual std::span<std::byte> Take(uint64_t bytes, uint64_t alignment) = 0;
  // Gives back a block Take handed out.
  virtual void Give(std::span<std::byte> block) = 0;
};

enum class RegionAtomicOp : uint8_t { kCompareSwap, kFetchAdd };

// Owned by its transport; single-threaded like it (driven by its Poll, in
// which the completions run).
class RemoteMemory {
 public:
  using HeldDone = std::function<void(Result<HeldRegion>)>;
  using Done = std::function<void(const Status&)>;
  using WordDone = std::function<void(Result<uint64_t>)>;

  virtual ~RemoteMemory() = default;

  // --- holding ---
  // Asks the engine at `target` for a region; `done` gets its handle.
  virtual void Ask(const NetAddress& target, const RegionSpec& spec, HeldDone done) = 0;
  // `into` and `from` must stay valid until `done`.
  virtual void Read(uint64_t handle, uint64_t offset, std::span<std::byte> into, Done done) = 0;
  virtual void Write(uint64_t handle, uint64_t offset, std::span<const std::byte> from,
                     Done done) = 0;
  // Write, then the target gets `value` as a kImmediate event (after the
  // data is in place); `done` once both happened.
  virtual void WriteWithImmediate(uint64_t handle, uint64_t offset,
                                  std::span<const std::byte> from, uint64_t value, Done done) = 0;
  // On the 8-byte word at `offset` (8-aligned): compare-and-swap puts
  // `value` where `compare` was; fetch-add adds `value`. `done` gets the
  // word as it was.
  virtual void Atomic(uint64_t handle, uint64_t offset, RegionAtomicOp op, uint64_t value,
                      uint64_t compare, WordDone done) = 0;
  // Gives a held region back; NotFound when not held.
  virtual Status Release(uint64_t handle) = 0;

  // --- lending ---
  // Lends the engine at `to` a region from this side's pool, unasked (it
  // gets a kLent event); its bytes start zeroed.
  virtual Result<LentRegion> LendFromPool(const NetAddress& to, const RegionSpec& spec) = 0;
  // Lends `memory` (the caller's own, which must stay valid until the
  // region ends) to the engine at `to`, unasked; returns our id for it.
  virtual Result<uint64_t> LendMemory(const NetAddress& to, std::span<std::byte> memory,
                                      uint8_t access, uint32_t lifetime_ms) = 0;
  // Ends a region we lent (the holder gets kReleased).
  virtual Status Revoke(uint64_t region) = 0;
  // The bytes of a region we lent (asked or not); empty when unknown.
  virtual std::span<std::byte> LentBytes(uint64_t region) = 0;

  virtual bool PopEvent(RegionEvent* out) = 0;

  // From now on regions come from `pool` (borrowed; null: the transport's
  // own). Every region lent so far ends first (its holder told), so no
  // holder can write into memory that changes hands.
  virtual void UsePool(RegionPool* pool) = 0;
};

}  // namespace wharf::transport
