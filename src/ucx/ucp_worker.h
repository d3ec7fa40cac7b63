// ucx/ucp_worker.h: UcpWorker, wharf's adapter over one UCP context and
// worker (UCX 1.13), which ucx:// (ucx/ucx_transport.h) runs on. It hides
// every UCX type behind wharf's: peers are ids, messages are Buffers,
// errors are Status values.
//
// - Connections by socket address: Listen on an IPv4 address (port 0:
//   any), Connect to one; a peer connecting in becomes a peer id too.
// - Whole messages as UCP active messages, each with a small header the
//   caller defines (ucx/ucx_frame.h): UCX sends small ones eagerly and large
//   ones by rendezvous; the receiver gets each whole, in a Buffer of its own
//   or one its allocate handler gives (wharfd: the application's heap), and
//   one over max_message_bytes is refused unread.
// - Driven from the owner's loop: Progress() does the work, fd() is the
//   worker's event fd and Arm() says whether it is safe to sleep on it
//   (ucp_worker_get_efd / ucp_worker_arm: spin, then block).
// - A peer's failure (its process gone, a refused connect) reaches the
//   peer_failed handler, on UCX's word, never on silence alone.
//
// - One-sided operations (the ground of remote memory): local memory is
//   mapped for remote access (MapMemory: a packed remote key to hand a
//   peer), a peer's key is imported (ImportKey), and Put, Get and 64-bit
//   atomics (compare-and-swap, fetch-add) run against the peer's memory
//   without its application. Over UCX's tcp they are emulated with active
//   messages, so the target's worker must progress (it does whenever its
//   loop wakes on fd()).
//
// Which UCX transports and devices to use: UcpOptions (UCX_TLS and
// UCX_NET_DEVICES in UCX's own terms); empty leaves UCX's choice. Between
// processes on one host UCX picks shared memory unless told otherwise.
// Not thread-safe: one thread drives a worker (UCS_THREAD_MODE_SINGLE), and
// the handlers run inside its Progress(). Never use one in a forked child.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "transport/net_address.h"
#include "wharf/buffer.h"
#include "wharf/result.h"

namespace wharf::ucx {

struct UcpOptions {
  std::string tls;      // UCX_TLS, e.g. "tcp" or "sm,tcp"; empty: UCX's default
  std::string devices;  // UCX_NET_DEVICES, e.g. "lo"; empty: UCX's default
  // Ask UCX to report a peer's failure (UCP_ERR_HANDLING_MODE_PEER). UCX
  // 1.13 then leaves out the transports that cannot tell (its shared-memory
  // ones: sysv, posix, cma), so peers on one host talk over tcp; without it
  // they use shared memory, and a dead peer shows only as silence.
  bool detect_peer_failure = true;
  // A message longer than this is not received (the oversized handler
  // hears of it); 0: no limit.
  uint64_t max_message_bytes = 0;
  // Peers connecting in beyond this many peers in all are refused.
  size_t max_peers = 4096;
};

// The longest header Send carries.
inline constexpr size_t kMaxUcpHeaderBytes = 64;

class UcpWorker {
 public:
  using PeerId = uint64_t;
  struct Handlers {
    // A whole message from `peer`, and the header it was sent with.
    std::function<void(PeerId peer, std::string_view header, Buffer message)> message;
    // `peer` failed (kUnavailable, with UCX's reason); it is forgotten.
    std::function<void(PeerId peer, const Status& why)> peer_failed;
    // A message of `bytes` over max_message_bytes from `peer`, not received.
    std::function<void(PeerId peer, std::string_view header, uint64_t bytes)> oversized;
    // Memory for an incoming message of `bytes` (an empty Buffer: none, the
    // worker allocates its own). Optional.
    std::function<Buffer(size_t bytes)> allocate;
  };
  struct Counters {
    uint64_t peers_refused = 0;      // connects beyond max_peers
    uint64_t oversized_dropped = 0;  // messages over max_message_bytes
    uint64_t anonymous_dropped = 0;  // messages from an endpoint we cannot name
  };

  static Result<std::unique_ptr<UcpWorker>> Create(const UcpOptions& options, Handlers handlers);
  ~UcpWorker();
  UcpWorker(const UcpWorker&) = delete;
  UcpWorker& operator=(const UcpWorker&) = delete;

  // Accepts peers at `address` (IPv4; port 0: any); the address bound.
  Result<transport::NetAddress> Listen(const transport::NetAddress& address);
  // A peer at `address`. Returns at once: a connect that fails shows up as
  // peer_failed (or a failed Send).
  Result<PeerId> Connect(const transport::NetAddress& address);

  // Sends `header` (at most kMaxUcpHeaderBytes, copied) and `message` to
  // `peer`; `done(status)` runs once it left (inside a later Progress, or
  // here if UCX finished at once). The Buffer is kept until then.
  void Send(PeerId peer, std::string_view header, Buffer message,
            std::function<void(const Status&)> done);
  // Closes `peer` after what was sent to it has left, without telling the
  // peer_failed handler (its far side hears of it as a failure).
  void Close(PeerId peer);

  // Does the work that is ready (receives, sends, connects, failures);
  // returns how much it found.
  unsigned Progress();
  // Readable when Progress has work, once Arm() returned true.
  int fd() const { return efd_; }
  // True: nothing is pending, sleeping on fd() is safe. False: progress
  // again first.
  bool Arm();

  // --- one-sided operations ---
  // Local memory mapped for peers: its id here, its address and the packed
  // key a peer imports to reach it.
  struct MappedMemory {
    uint64_t id = 0;
    uint64_t address = 0;
    std::string key;
  };
  // Maps [base, base + bytes) for remote reads (and writes when
  // `remote_write`). The memory must stay valid until UnmapMemory(id).
  Result<MappedMemory> MapMemory(void* base, size_t bytes, bool remote_write);
  // Peers' keys to it stop working (their operations fail). False: unknown.
  bool UnmapMemory(uint64_t id);
  // A key `peer` packed (MapMemory's `key`), for operations on `peer`;
  // InvalidArgument when UCX cannot read it. Dropped with its peer.
  Result<uint64_t> ImportKey(PeerId peer, std::string_view packed);
  void DropKey(uint64_t key);

  using RmaDone = std::function<void(const Status&)>;
  // Writes `from` at `remote_address` of `peer` through `key`; `from` must
  // stay valid until `done` runs (here, or inside a later Progress).
  void Put(PeerId peer, uint64_t key, uint64_t remote_address, std::span<const std::byte> from,
           RmaDone done);
  // Reads into `into`, which must stay valid until `done` runs.
  void Get(PeerId peer, uint64_t key, uint64_t remote_address, std::span<std::byte> into,
           RmaDone done);
  enum class AtomicOp { kCompareSwap, kFetchAdd };
  // On the 8-byte word at `remote_address` (8-aligned): compare-and-swap
  // (if it holds `compare`, it becomes `value`) or fetch-add (`value` is
  // added). `done` gets the word as it was before.
  void Atomic(PeerId peer, uint64_t key, uint64_t remote_address, AtomicOp op, uint64_t value,
              uint64_t compare, std::function<void(Result<uint64_t>)> done);

  // What UCX chose for `peer` (its lanes: transports and devices), for
  // `wharf status`; "" for an unknown peer.
  std::string Describe(PeerId peer) const;
  // The same in one line: each data lane's transport/device and what UCX
  // uses it for, in lane order ("tcp/lo(rma_bw,am,am_bw) tcp/eth0(rma_bw)");
  // "" for an unknown peer.
  std::string Lanes(PeerId peer) const;
  // The socket address of `peer`: the one connected to, or the one a peer
  // connecting in came from (port: its ephemeral one). kNone when unknown.
  transport::NetAddress AddressOf(PeerId peer) const;
  size_t peers() const { return peers_.size(); }
  size_t mapped() const { return mapped_.size(); }
  // Closes (Close) still flushing what was sent before them.
  size_t closing();
  size_t keys() const { return keys_.size(); }
  const Counters& counters() const { return counters_; }

 private:
  // The UCX handles and UCX's callbacks, which reach this worker's
  // members (ucx/ucp_worker.cc).
  struct Ucp;

  explicit UcpWorker(Handlers handlers);
  // The id of endpoint `ep`, adding it if new.
  PeerId PeerOf(void* ep, const transport::NetAddress& address = {});
  // Memory for an incoming message: the allocate handler's, or our own.
  Buffer Allocate(size_t bytes);
  void Fail(PeerId peer, const Status& why);
  // Forgets `peer` and closes its endpoint (forced or flushed).
  void Drop(PeerId peer, bool force);
  // Frees the closes that finished.
  void PruneClosing();
  // The endpoint and unpacked key of `key` on `peer`, if both are known.
  struct RmaTarget {
    void* ep;    // ucp_ep_h
    void* rkey;  // ucp_rkey_h
  };
  std::optional<RmaTarget> TargetOf(PeerId peer, uint64_t key) const;

  Handlers handlers_;
  std::unique_ptr<Ucp> ucp_;
  int efd_ = -1;
  int err_mode_ = 0;  // ucp_err_handling_mode_t, from detect_peer_failure
  uint64_t max_message_bytes_ = 0;
  size_t max_peers_ = 0;
  Counters counters_;
  struct PeerEntry {
    void* ep;  // ucp_ep_h
    transport::NetAddress address;
  };
  std::unordered_map<PeerId, PeerEntry> peers_;
  std::unordered_map<uint64_t, void*> mapped_;  // id -> ucp_mem_h
  struct KeyEntry {
    PeerId peer;
    void* rkey;  // ucp_rkey_h
  };
  std::unordered_map<uint64_t, KeyEntry> keys_;
  uint64_t next_mapped_ = 1;
  uint64_t next_key_ = 1;
  std::unordered_map<void*, PeerId> peer_ids_;    // ucp_ep_h -> id
  PeerId next_peer_ = 1;
};

}  // namespace wharf::ucx
