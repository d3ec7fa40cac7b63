// client/managed_engine.h: ManagedEngine, the engine of a managed endpoint
// as the application sees it: the same EngineApi as the embedded Engine,
// but every operation becomes a command in the shared command ring and the
// real engine runs inside wharfd (shm/commands.h is the protocol). Its Poll
// reads the completion ring and calls the same EngineSink the embedded
// engine would, so EndpointCore and the public API are the same in both
// modes.
//
// Zero copy: a Buffer from AllocateBuffer lives in the send area of the
// shared heap; sending it passes only its offset, and it is freed when
// wharfd says it no longer reads it (kSendReleased). Other Buffers are
// copied into the send area first. Received messages are Buffers over the
// receive area, returned to wharfd when the application drops them.
//
// When wharfd goes away, pending operations fail with kUnavailable, new
// ones too, and the engine attaches again (at most every kReattachInterval)
// once the daemon is back: the served methods and Listen are restored;
// connections are gone.
//
// Single-threaded like Engine (the host's lock), except the Buffers'
// releases, which any thread may do (their owners lock).
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

#include "client/daemon_link.h"
#include "client/managed_regions.h"
#include "engine/engine_api.h"

namespace wharf::internal {

struct ManagedOptions {
  std::string socket_path;  // DaemonSocketPath() already applied
  std::string address;      // the endpoint asked for
  shm::Geometry geometry{.command_entries = 0, .completion_entries = 0, .heap_bytes = 0};
  std::chrono::milliseconds attach_timeout{2000};
};

class ManagedEngine final : public engine::EngineApi {
 public:
  static constexpr DurationNs kReattachInterval = 200 * kNsPerMs;

  // Attaches now; fails (kUnavailable) when no daemon answers.
  static Result<std::unique_ptr<ManagedEngine>> Attach(const ManagedOptions& options,
                                                       const Clock& clock,
                                                       engine::EngineSink* sink);
  ~ManagedEngine() override;

  // The endpoint's address as wharfd assigned it.
  const std::string& address() const { return address_; }

  // engine::EngineApi
  void Connect(uint64_t op_id, const engine::Uri& peer, bool ordered, uint32_t stream_method,
               TimeNs deadline_ns) override;
  void Listen() override;
  void Accept(uint64_t op_id, TimeNs deadline_ns) override;
  void ServeStreams(uint32_t method, bool served) override;
  void AcceptStream(uint64_t op_id, TimeNs deadline_ns) override;
  Result<uint32_t> StreamMethodOf(uint64_t conn) const override;
  void Send(uint64_t op_id, uint64_t conn, Buffer message) override;
  void Recv(uint64_t op_id, uint64_t conn) override;
  // Options other than the defaults fail with kUnimplemented: the ring
  // does not carry them (engine_api.h).
  void Call(uint64_t op_id, const engine::Uri& peer, uint32_t method, Buffer request,
            TimeNs deadline_ns, const transport::SendOptions& options = {}) override;
  void CallOnConnection(uint64_t op_id, uint64_t conn, uint32_t method, Buffer request,
                        TimeNs deadline_ns) override;
  void Disconnect(uint64_t op_id, uint64_t conn) override;
  void BarrierArrive(uint64_t op_id, const engine::Uri& coordinator, bool is_coordinator,
                     uint64_t group, uint64_t round, uint32_t members,
                     TimeNs deadline_ns) override;
  void Release(uint64_t conn) override;
  Result<std::string> PeerOf(uint64_t conn) const override;
  void SetServed(uint32_t method, bool served) override;
  // `priority` is not carried (engine_api.h): the answer goes at the
  // transport's choice.
  void Respond(const engine::ServerCallRef& call, Status status, Buffer payload,
               transport::MessagePriority priority = transport::kPriorityBySize) override;
  // Remote memory as kRegion* commands (shm/commands.h): data moves
  // between the send area and the region; a holder's writes into a region
  // a peer asked for land in the receive area, in place, and into one this
  // endpoint lent in the send area, where it lent it.
  void AskRegion(uint64_t op_id, const engine::Uri& peer,
                 const transport::RegionSpec& spec) override;
  void ReadRegion(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer into) override;
  void WriteRegion(uint64_t op_id, uint64_t handle, uint64_t offset, Buffer from,
                   std::optional<uint64_t> immediate) override;
  void RegionAtomic(uint64_t op_id, uint64_t handle, uint64_t offset, transport::RegionAtomicOp op,
                    uint64_t value, uint64_t compare) override;
  Status ReleaseRegion(uint64_t handle) override;
  void LendRegion(uint64_t op_id, const engine::Uri& peer,
                  const transport::RegionSpec& spec) override;
  // `memory` must lie in the send area (kInvalidArgument otherwise).
  void LendMemory(uint64_t op_id, const engine::Uri& peer, std::span<std::byte> memory,
                  uint8_t access, uint32_t lifetime_ms) override;
  Status RevokeRegion(uint64_t region) override;
  std::span<std::byte> LentRegionBytes(uint64_t region) override;
  bool PopRegionEvent(transport::RegionEvent* out) override;
  void Cancel(uint64_t op_id) override;
  void Sync(uint64_t op_id) override;
  void Shutdown(const Status& why) override;
  // Commands between them wait in the outbox and reach the ring together,
  // with one doorbell, at the outer EndBatch (or the next Poll, which
  // sends what waits).
  void BeginBatch() override;
  void EndBatch() override;
  transport::PollResult Poll() override;
  TimeNs NextDeadline() const override;
  void AppendReadableFds(std::vector<int>* fds) const override;
  bool PrepareToSleep() override;
  void SetIdle(bool idle) override;
  void KeepAwake() override;
  Buffer AllocateBuffer(size_t size) override;
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;

 private:
  ManagedEngine(const ManagedOptions& options, const Clock& clock, engine::EngineSink* sink)
      : options_(options), clock_(clock), sink_(sink) {}

  // Adopts a fresh link: resets per-link state, restores served methods.
  void Adopt(std::unique_ptr<DaemonLink> link);
  // The link is gone: fail everything pending with `why`.
  void Broken(const Status& why);
  // A live link, re-attaching if it is time; false (op failed) otherwise.
  bool Usable(uint64_t op_id);
  // Queues a command (in order, after any that did not fit in the ring).
  void Push(const shm::Descriptor& d);
  // Moves queued commands into the ring; rings wharfd if it sleeps and
  // `urgent` (buffer and connection releases are not: nobody waits on them).
  void FlushCommands(bool urgent = true);
  // FlushCommands, unless a batch is open (its EndBatch flushes).
  void FlushUnlessBatching(bool urgent = true);
  // The peer handle for `uri`, naming it to wharfd first if new.
  uint64_t PeerHandle(const engine::Uri& uri);
  // Puts `payload` in the send area (no copy if it is there already) and
  // keeps it until kSendReleased for `tag`. kResourceExhausted when the
  // area is full, kInvalidArgument over wharfd's message size limit.
  Status Lend(uint64_t tag, Buffer payload, shm::Descriptor* d);
  // The send-area Buffer for `payload`: itself, or a copy in the area
  // (counted); its range goes into `d`.
  Result<Buffer> PlaceInSendArea(Buffer payload, shm::Descriptor* d);
  void StartOp(uint64_t op_id, shm::Descriptor d, Buffer payload = Buffer());
  void Dispatch(const shm::Descriptor& e);
  // The text of a completion-ring range (copied; the range is released).
  std::string TakeText(const shm::Descriptor& e);

  const ManagedOptions options_;
  const Clock& clock_;
  engine::EngineSink* const sink_;
  std::string address_;
  std::unique_ptr<DaemonLink> link_;
  std::optional<Status> broken_;  // set while no link works
  // Which link a served request came over (its ServerCallRef carries it), so
  // an answer to a request from before a re-attach goes nowhere.
  uint16_t generation_ = 0;
  uint16_t link_generation() const { return generation_; }
  TimeNs next_attach_ns_ = 0;

  std::deque<shm::Descriptor> outbox_;  // commands waiting for ring room or a batch's end
  int batch_depth_ = 0;                 // BeginBatch nesting
  std::vector<shm::Descriptor> batch_;
  std::vector<std::pair<uint64_t, uint64_t>> releases_;  // scratch
  bool waiting_flag_ = false;   // our "wake me" flag is up
  uint32_t sleep_token_ = 0;    // numbers our sleeps (the flag's value)
  uint32_t woke_token_ = 0;     // wharfd's sleep we last woke
  // A fresh token for the next sleep (never 0).
  uint32_t NextSleepToken() { return ++sleep_token_ == 0 ? ++sleep_token_ : sleep_token_; }
  bool keep_awake_ = false;     // an application epolls fd(): flag always up
  uint32_t idle_polls_ = 0;
  bool more_completions_ = false;  // the last Poll left entries in the ring

  absl::flat_hash_set<uint64_t> pending_;          // op ids wharfd owes an answer
  struct Opening {
    std::string peer;  // its address text
    uint32_t stream_method = 0;
  };
  std::unordered_map<uint64_t, Opening> opening_;  // connect op -> what it opens
  std::unordered_set<uint64_t> accepting_;
  std::unordered_set<uint64_t> accepting_streams_;  // a subset of accepting_
  std::unordered_map<uint64_t, uint32_t> conn_stream_methods_;  // streams only
  absl::flat_hash_map<uint64_t, Buffer> lent_;     // tag -> payload wharfd reads
  uint64_t next_tag_ = 1ull << 62;                // tags of responses' payloads
  std::unordered_map<uint64_t, std::string> conn_peers_;
  // Region reads and lendings in flight, lent blocks, region events.
  ManagedRegions regions_;
  // Keyed by the packed address ADD_PEER carries: no text per call.
  std::unordered_map<engine::PackedUri, uint64_t, engine::PackedUriHash> peer_handles_;
  std::unordered_map<uint64_t, std::string> peer_names_;
  std::deque<uint64_t> peer_name_order_;
  std::set<uint32_t> served_;
  std::set<uint32_t> served_streams_;
  bool listening_ = false;

  struct Counts {
    uint64_t commands = 0;
    uint64_t completions = 0;
    uint64_t copied_sends = 0;  // payloads not in the send area
    uint64_t batched_commands = 0;  // held in the outbox by an open batch
    uint64_t faults = 0;        // kFault entries from wharfd
    uint64_t reattaches = 0;
    uint64_t doorbells_rung = 0;
  } counts_;
};

}  // namespace wharf::internal
