// ucx/ucx_remote_memory.h: UcxRemoteMemory, one-sided remote memory over a
// ucx:// transport's UCP worker (issue 29): a region a peer asks for (the
// target allocates it from its registered pool) or one a target lends
// unasked; read, write, write with immediate (the target gets the value as
// an event), compare-and-swap and fetch-add on 8-byte words; lifetimes.
// docs/transports.md ("Remote memory") is the specification,
// wire/ucx_region.h the messages.
//
// Safety, since UCX cannot give it over every transport:
//   - a region is mapped on its own with only the rights lent (UCX's
//     verbs transports then refuse the rest in the NIC); over UCX's tcp the
//     target does not check, so the holder checks every operation first
//     (rights, bounds, lifetime: HeldRegions::Check);
//   - keys travel only in the target's own grants: an application never
//     names a key, only a region handle this side was granted;
//   - a released or expired region's pool block is quarantined for
//     kQuarantine before it is reused, so that a write already on its way
//     cannot land in a newer region;
//   - every table is capped (max_regions) and counted.
// Single-threaded: driven by its transport's Poll, as the worker.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "transport/net_address.h"
#include "transport/remote_memory.h"
#include "ucx/owned_region_pool.h"
#include "ucx/region_tables.h"
#include "ucx/ucp_worker.h"
#include "wire/ucx_header.h"
#include "wire/ucx_region.h"

namespace wharf::ucx {

class UcxRemoteMemory final : public transport::RemoteMemory {
 public:
  struct Options {
    uint64_t pool_bytes = 64 << 20;           // ucx.pool_bytes: what peers may ask for, in all
    size_t max_regions = 1024;                // ucx.max_regions: lent, and held, each
    DurationNs max_lifetime_ns = 3600 * kNsPerSec;
  };
  using Held = transport::HeldRegion;
  using Event = transport::RegionEvent;
  using Connector = std::function<Result<UcxPeer>(const transport::NetAddress&)>;

  static constexpr DurationNs kQuarantine = 1 * kNsPerSec;
  // An ask unanswered this long fails with kDeadlineExceeded.
  static constexpr DurationNs kAskTimeout = 30 * kNsPerSec;
  // Events the application has not taken yet; beyond, new ones are
  // dropped (and counted), so a holder cannot grow this side's memory.
  static constexpr size_t kMaxEvents = 65'536;

  // Borrows `worker` and `clock`; `connect` gives the peer for an address
  // (the transport's connection to it).
  static Result<std::unique_ptr<UcxRemoteMemory>> Create(UcpWorker& worker, const Clock& clock,
                                                         Connector connect, Options options);
  ~UcxRemoteMemory() override;

  // transport::RemoteMemory (transport/remote_memory.h says what each does)
  void Ask(const transport::NetAddress& target, const transport::RegionSpec& spec,
           HeldDone done) override;
  void Read(uint64_t handle, uint64_t offset, std::span<std::byte> into, Done done) override;
  void Write(uint64_t handle, uint64_t offset, std::span<const std::byte> from,
             Done done) override;
  void WriteWithImmediate(uint64_t handle, uint64_t offset, std::span<const std::byte> from,
                          uint64_t value, Done done) override;
  void Atomic(uint64_t handle, uint64_t offset, transport::RegionAtomicOp op, uint64_t value,
              uint64_t compare, WordDone done) override;
  Status Release(uint64_t handle) override;
  Result<transport::LentRegion> LendFromPool(const transport::NetAddress& to,
                                             const transport::RegionSpec& spec) override;
  Status Revoke(uint64_t region) override;
  std::span<std::byte> LentBytes(uint64_t region) override;
  bool PopEvent(Event* out) override;
  void UsePool(transport::RegionPool* pool) override;

  void CompareAndSwap(uint64_t handle, uint64_t offset, uint64_t expected, uint64_t desired,
                      WordDone done) {
    Atomic(handle, offset, transport::RegionAtomicOp::kCompareSwap, desired, expected,
           std::move(done));
  }
  void FetchAdd(uint64_t handle, uint64_t offset, uint64_t add, WordDone done) {
    Atomic(handle, offset, transport::RegionAtomicOp::kFetchAdd, add, 0, std::move(done));
  }
  Result<uint64_t> LendMemory(const transport::NetAddress& to, std::span<std::byte> memory,
                              uint8_t access, uint32_t lifetime_ms) override {
    return Lend(to, memory, access, DurationNs{lifetime_ms} * kNsPerMs);
  }
  // Lends `memory` (which must outlive the loan) to the engine at `to`
  // unasked; it gets a kLent event. Returns our id for the region.
  Result<uint64_t> Lend(const transport::NetAddress& to, std::span<std::byte> memory,
                        uint8_t access, DurationNs lifetime_ns);

  // --- from the transport ---
  void OnMessage(UcxPeer peer, const wire::UcxHeader& header, const Buffer& body);
  // An ask of ours refused (REFUSED with an ask's id); false: not an ask.
  bool OnRefused(UcxPeer peer, uint64_t ask_id, StatusCode code);
  void OnPeerFailed(UcxPeer peer);
  // Whether regions tie this peer's connection (it must not idle-close).
  bool Uses(UcxPeer peer) const;
  // Ends what expired and reuses quarantined blocks; work done.
  int Expire(TimeNs now);
  TimeNs NextDeadline() const;
  // Ask ids are drawn from here up, apart from call ids.
  static constexpr uint64_t kFirstAskId = uint64_t{1} << 63;
  static bool IsAskId(uint64_t id) { return id >= kFirstAskId; }

  std::vector<std::pair<std::string, uint64_t>> Counters() const;
  size_t lent() const { return lent_.size(); }
  size_t held() const { return held_.size(); }

 private:
  struct PendingAsk {
    UcxPeer peer;
    TimeNs deadline_ns;
    HeldDone done;
  };
  struct Stats {
    uint64_t asks_sent = 0, asks_refused = 0, asks_answered = 0;
    uint64_t regions_lent = 0, regions_released = 0, regions_expired = 0;
    uint64_t immediates_received = 0, immediates_dropped = 0, malformed_dropped = 0;
    uint64_t events_dropped = 0;
  };

  UcxRemoteMemory(UcpWorker& worker, const Clock& clock, Connector connect, Options options);
  void OnAsk(UcxPeer peer, uint64_t ask_id, const Buffer& body);
  void OnGrant(UcxPeer peer, uint64_t id, const Buffer& body);
  void OnRelease(UcxPeer peer, uint64_t region);
  void OnImmediate(UcxPeer peer, const Buffer& body);
  void Refuse(UcxPeer peer, uint64_t ask_id, StatusCode code);
  void Send(UcxPeer peer, wire::UcxKind kind, uint64_t id, std::string body);
  // A lent region is over: unmapped, its pool block quarantined; the
  // holder told (RELEASE) when `tell`; our application told (kReturned)
  // when it did not end it itself.
  void EndLent(const LentRegions::Region& region, bool tell, bool returned);
  void EndHeld(const HeldRegions::Region& region);
  // The held region for an operation, checked; `done` told when refused.
  std::optional<HeldRegions::Region> Checked(uint64_t handle, uint8_t access, uint64_t offset,
                                             uint64_t length, const std::function<void(Status)>& fail);
  Result<HeldRegions::Region> Hold(UcxPeer lender, const wire::RegionGrant& grant);
  // A zeroed block of `spec.size` from the pool, mapped, recorded as lent
  // to `holder`: for asks and for LendFromPool.
  struct Placed {
    LentRegions::Region region;
    std::string key;  // the mapping's packed key, for the grant
  };
  Result<Placed> PlaceInPool(UcxPeer holder, const transport::RegionSpec& spec);
  void PushEvent(Event event);

  UcpWorker& worker_;
  const Clock& clock_;
  Connector connect_;
  Options options_;
  std::unique_ptr<OwnedRegionPool> own_pool_;  // ucx.pool_bytes of this process's memory
  transport::RegionPool* pool_ = nullptr;      // own_pool_, or the host's (UsePool)
  std::deque<std::pair<TimeNs, std::span<std::byte>>> quarantine_;  // (reusable at, block)
  LentRegions lent_;
  HeldRegions held_;
  std::unordered_map<uint64_t, PendingAsk> asks_;
  uint64_t next_ask_ = kFirstAskId;
  std::deque<Event> events_;
  Stats stats_;
};

}  // namespace wharf::ucx
