// homa/homa_host.h: HomaHost, the per-socket half of the Homa-style
// receiver-driven protocol (docs/protocol.md, section 4 "Hosts and
// endpoints"). One host per transport::Datagram owns what HomaModule keeps in
// `homa` and `homa_peer`: socket I/O, the peer table, the pacer, the SRPT
// grant scheduler and send queue (ranked across every endpoint's messages),
// the incoming byte budgets, the protocol timer, path errors and counters.
// Endpoints (HomaEndpoint, homa_endpoint.h; HomaModule's `homa_sock`) own
// their RPC tables and event queues; a packet goes to the endpoint its dport
// names.
//
// The protocol itself lives here: this file's .cc holds construction, the
// send pump, grants and RPC lifecycle; handlers.cc the packet handlers;
// timer.cc the timer. It never calls a socket directly (all I/O goes through
// transport::Datagram) and reads time only from the injected Clock, so the
// same code runs on real UDP and on FakeNetwork + SimClock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/node_recycler.h"
#include "homa/config.h"
#include "homa/grant.h"
#include "homa/pacer.h"
#include "homa/peer_table.h"
#include "homa/rpc.h"
#include "homa/send_queue.h"
#include "homa/stats.h"
#include "transport/datagram.h"
#include "transport/large_buffer_pool.h"
#include "transport/message_transport.h"
#include "wharf/buffer.h"
#include "wharf/result.h"
#include "wire/packet.h"

namespace wharf::homa {

// The engine-facing types are the transport interface's own.
using ServerRpcKey = transport::ServerRpcKey;
using ServerRpcKeyHash = transport::ServerRpcKeyHash;
using HomaEvent = transport::MessageEvent;
using PollResult = transport::PollResult;

class HomaEndpoint;

// Owned by the engine (or a test), or by the endpoint HomaEndpoint::Create
// made for it. Single-threaded: every call, to it or to any of its endpoints,
// from the one thread that drives it. Borrows `net` and `clock`, which must
// outlive it. Endpoints should be closed before their host is destroyed; one
// still open then is closed and detached (its calls fail from then on).
class HomaHost {
 public:
  static Result<std::unique_ptr<HomaHost>> Create(const HomaConfig& config,
                                                  transport::Datagram* net, const Clock& clock);
  ~HomaHost();
  HomaHost(const HomaHost&) = delete;
  HomaHost& operator=(const HomaHost&) = delete;

  // Opens endpoint `id` on this socket: packets whose dport is `id` go to it,
  // and it sends with sport `id`. kAlreadyExists if `id` is open. The caller
  // owns the endpoint; destroying it closes it.
  Result<std::unique_ptr<HomaEndpoint>> OpenEndpoint(uint16_t id);
  // Opens the endpoint named `name` (`homa://host:port/name`), whose id is
  // wire::EndpointIdForName(name); the empty name is the default endpoint.
  // A name whose id another open endpoint holds is refused (kAlreadyExists,
  // naming both).
  Result<std::unique_ptr<HomaEndpoint>> OpenEndpoint(std::string_view name);

  // Between BeginBatch and the matching EndBatch (they nest), the packets of
  // SendRequest / SendResponse wait in the transmit batch, which EndBatch,
  // the next Poll or a full batch (32 datagrams) sends with one system call;
  // runs to one peer then coalesce into GSO sends. For callers that send
  // several messages back to back (MessageTransport::BeginBatch).
  void BeginBatch();
  void EndBatch();

  // Receives and dispatches packets, sends what grants and the pacer allow,
  // and runs the protocol timer when due: the work of every endpoint. Any
  // endpoint's Poll() calls it; calling it again at once costs one empty
  // receive.
  PollResult Poll();
  // The host's own next deadline (timer, pacer); endpoints add their events.
  TimeNs NextDeadline() const;
  // Whoever owns the host polls it itself, once per pass, and the
  // endpoints' Poll() only reports their events and the host's deadline
  // (no socket read). For wharfd, whose many endpoints share one socket:
  // otherwise each pass reads the socket once per endpoint. Off by default.
  void set_polled_by_owner(bool yes) { polled_by_owner_ = yes; }
  bool polled_by_owner() const { return polled_by_owner_; }
  // The clock as this host last read it (its last Poll, or a send that
  // paced): for an owner-polled endpoint, no older than the owner's pass.
  TimeNs last_clock_read_ns() const { return now_ns_; }

  const HomaConfig& config() const { return config_; }
  const HomaStats& stats() const { return stats_; }
  transport::Datagram& net() const { return *net_; }
  const Clock& clock() const { return clock_; }
  // Protocol counters (homa.*) then the socket's (udp.*).
  std::vector<std::pair<std::string, uint64_t>> Counters() const;

  size_t num_endpoints() const { return endpoints_.size(); }
  // Over every endpoint.
  size_t num_client_rpcs() const;
  size_t num_server_rpcs() const { return num_server_rpcs_; }
  // Live RPCs, client and server, but for answered ones awaiting an ack.
  size_t unanswered_rpcs() const { return num_live_rpcs_ - num_awaiting_ack_; }
  size_t num_peers() const { return peers_.size(); }
  const PeerTableStats& peer_stats() const { return peers_.stats(); }

 private:
  friend class HomaEndpoint;

  HomaHost(const HomaConfig& config, transport::Datagram* net, const Clock& clock);

  // --- endpoints (homa_host.cc) ---
  // The open endpoint with id `id`, or nullptr. One compare when the packet
  // is for the endpoint the last one was for (always, with one endpoint).
  HomaEndpoint* FindEndpoint(uint16_t id) {
    if (last_endpoint_ != nullptr && last_endpoint_id_ == id) return last_endpoint_;
    return FindEndpointSlow(id);
  }
  HomaEndpoint* FindEndpointSlow(uint16_t id);
  // Ends ep's RPCs: client RPCs fail with `status` (an event in ep's queue;
  // an ack goes to the server), server RPCs are forgotten with tombstones.
  // Then ep's id is free again.
  void CloseEndpoint(HomaEndpoint& ep, const Status& status);

  // --- the endpoints' calls (homa_host.cc) ---
  Result<uint64_t> SendRequest(HomaEndpoint& ep, const transport::NetAddress& server,
                               uint16_t server_port, Buffer request, uint64_t cookie);
  Status SendResponse(HomaEndpoint& ep, const ServerRpcKey& key, Buffer response);
  bool Cancel(HomaEndpoint& ep, uint64_t client_id);

  // --- packet handlers (handlers.cc) ---
  void HandleDatagram(const transport::NetAddress& from, std::span<const std::byte> bytes);
  // A packet for an RPC we keep nothing for, from a source we keep no peer
  // for or to an endpoint id not open here: answered without creating state
  // (RESEND -> RPC_UNKNOWN, NEED_ACK -> ACK), else dropped.
  void HandleStranger(const transport::NetAddress& from, const wire::Packet& packet);
  // The kernel's report that `error.to` cannot be reached: fails that peer's
  // client RPCs and drops its server RPCs at once.
  void HandlePathError(const transport::PathError& error);
  void HandleData(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                  const wire::Data& data);
  void HandleRequestData(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                         const wire::Data& data);
  void HandleResponseData(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                          const wire::Data& data);
  void HandleGrant(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                   const wire::Grant& grant);
  void HandleResend(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common,
                    const wire::Resend& resend);
  void HandleRpcUnknown(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common);
  void HandleBusy(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common);
  void HandleCutoffs(Peer& peer, const wire::Cutoffs& cutoffs);
  void HandleNeedAck(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common);
  // An ack from the client at (peer, client_port) for our endpoint
  // ack.server_port (any of ours, not only the packet's dport).
  void HandleAck(Peer& peer, uint16_t client_port, const wire::Ack& ack);
  // The ClientRecord of `pair` (EndpointPair(our server endpoint, client
  // port)) in `peer`, created if new unless the peer already has
  // max_clients_per_peer (nullptr then).
  ClientRecord* RecordFor(Peer& peer, uint32_t pair);
  void AdvanceFloor(Peer& peer, uint32_t pair, uint64_t floor);
  // Frees the server RPCs that acks and floors finished (handlers.cc).
  void ReleaseFinished();
  // The peer at `addr`, created on first use; nullptr when the table is
  // full of peers with live RPCs (homa.max_peers). No system call.
  Peer* PeerFor(const transport::NetAddress& addr);
  // Asks the transport for the path to `peer` (packet size, pacing) before
  // we first send it DATA. Control path: may make system calls, once per peer.
  void LearnPath(Peer& peer);
  // Forgets peers that are idle and silent for peer_idle_timeout_ns (a few
  // per call: the timer's round-robin walk).
  void SweepIdlePeers(TimeNs now);
  // The RPC of `ep` a packet from `peer` is about, or nullptr.
  Rpc* FindRpcFor(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common);
  Rpc* FindServerRpc(const HomaEndpoint& ep, const ServerRpcKey& key);
  // True if an endpoint other than `ep` holds client RPC `client_id`
  // (checked on hosts with up to 16 endpoints; false beyond).
  bool HeldByAnotherEndpoint(const HomaEndpoint& ep, uint64_t client_id);

  // --- sending (homa_host.cc) ---
  void QueueForSend(Rpc& rpc);
  void DequeueFromSend(Rpc& rpc);
  // Sends what the pacer allows; returns packets produced. `clock_fresh`:
  // now_ns_ was just read (in Poll); otherwise the clock is read if a paced
  // packet needs it.
  int PumpSends(bool clock_fresh);
  // `now` matters only for a paced peer (the pacer's accounting).
  void EmitData(Rpc& rpc, TimeNs now);
  void EmitControl(const transport::NetAddress& to, uint16_t sport, uint16_t dport,
                   uint64_t rpc_id, const wire::Body& body, uint8_t flags = 0);
  std::span<std::byte> NextTxSlot();
  void FlushTx();
  // Flushes only if the batch borrows message bytes (gather sends): before
  // anything frees a message, while a batch is held (BeginBatch).
  void FlushBorrowed() {
    if (tx_borrowed_ > 0) FlushTx();
  }
  void RunGrantPass();
  void SendGrant(Rpc& rpc, uint32_t offset, uint8_t priority);
  // What grants to rpc's incoming message are rounded to: the sender's
  // packet size (it cuts packets at its multiples from offset 0, so any other
  // grant offset would make it send a runt for every grant).
  uint32_t GrantUnit(const Rpc& rpc) const {
    if (uint32_t seen = rpc.in->packet_bytes(); seen > 0) return seen;
    if (rpc.peer->payload_bytes > 0) return rpc.peer->payload_bytes;
    return static_cast<uint32_t>(max_datagram_bytes_ - wire::kDataHeaderBytes);
  }
  // Removes rpc from the grant scheduler and schedules a new grant pass.
  void StopGranting(Rpc& rpc);

  // --- lifecycle (homa_host.cc) ---
  // A fresh Rpc: a recycled one when there is one (an allocation per RPC
  // showed in the round-trip profile).
  std::unique_ptr<Rpc> AllocateRpc();
  void RecycleRpc(std::unique_ptr<Rpc> rpc);
  Rpc& NewClientRpc(HomaEndpoint& ep, uint64_t id, Peer& peer, uint16_t server_port);
  Rpc& NewServerRpc(HomaEndpoint& ep, Peer& peer, ClientRecord& record, uint16_t client_port,
                    uint64_t client_id, RpcState state);
  void InitRpc(Rpc& rpc, HomaEndpoint& ep, uint64_t id, RpcState state, Peer& peer,
               uint16_t peer_port);
  // Takes rpc out of the send queue, the grant scheduler and the list of
  // all RPCs, before its table destroys it.
  void UnlinkRpc(Rpc& rpc);
  void FinishClientRpc(Rpc& rpc);  // removes from queues and tables, records floor
  // Forgets the server side of the client's RPC (if still held) with our
  // endpoint and client port `pair`; with `tombstone`, also remembers it as
  // finished when above the floor.
  void DestroyServerRpc(Peer& peer, uint32_t pair, uint64_t client_id, bool tombstone);
  void DestroyServerRpc(Rpc& rpc, bool tombstone) {
    DestroyServerRpc(*rpc.peer, EndpointPair(rpc.local_port, rpc.peer_port), rpc.client_id(),
                     tombstone);
  }
  void FailClientRpc(Rpc& rpc, Status status);
  void DeliverRequest(Rpc& rpc, const ServerRpcKey& key);
  // The ack floor our endpoint `client_port` reports to the peer's
  // `server_port`.
  uint64_t ClientFloor(Peer& peer, uint16_t client_port, uint16_t server_port) const;
  bool ReserveIncoming(uint32_t length);
  // Creates rpc.in for the message `data` starts: in memory from the
  // endpoint's ReceiveAllocator when the message is whole in this packet
  // and the allocator has room, else in the host's own.
  void StartIncoming(Rpc& rpc, HomaEndpoint& ep, const wire::Data& data);
  void ReleaseIncoming(Rpc& rpc);  // frees rpc.in and its memory reservation
  // Re-counts rpc's granted-but-unreceived bytes into outstanding_bytes_.
  void UpdateOutstanding(Rpc& rpc);

  // --- timer (timer.cc) ---
  void Tick();
  void SendResend(Rpc& rpc);
  // For a message waiting on our own grants: schedules a grant pass and keeps
  // its (otherwise quiet) peer from presuming us dead.
  void KeepAlive(Rpc& rpc, TimeNs now);
  void FlushAcks();
  // Queues an ack for `peer` (piggybacked on the next DATA from its client
  // endpoint, or sent by FlushAcks at the next tick).
  void OweAck(Peer& peer, const OwedAck& ack);
  // How often the timer asks the transport to re-read its path caches (the
  // host's interface addresses): rarely, and never on the receive path.
  static constexpr DurationNs kPathRefreshNs = 10 * kNsPerSec;
  // How often the timer runs while the host has no RPC at all.
  static constexpr DurationNs kIdleTickNs = 50 * kNsPerMs;
  // No RPC, send, or release pending: the timer has only housekeeping.
  bool Idle() const;
  TimeNs last_tick_ns_ = 0;
  // Sends the acks our endpoint `client_port` owes `peer`'s `server_port`
  // (those its floor does not already cover): at least one ACK packet
  // carrying the floor.
  void SendAcks(Peer& peer, uint16_t client_port, uint16_t server_port);

  HomaConfig config_;
  transport::Datagram* net_;
  const Clock& clock_;
  // config_.EffectivePeerTimeoutNs(), and in ticks (rounded up).
  DurationNs peer_timeout_ns_;
  int64_t peer_timeout_ticks_;
  // When the timer next asks the transport to refresh its path caches.
  TimeNs next_path_refresh_ns_;
  std::vector<transport::PathError> path_errors_;  // Poll scratch

  // Open endpoints by id (borrowed: an endpoint unregisters when it
  // closes), and the one FindEndpoint returned last.
  std::unordered_map<uint16_t, HomaEndpoint*> endpoints_;
  HomaEndpoint* last_endpoint_ = nullptr;
  uint16_t last_endpoint_id_ = 0;

  PeerTable peers_;
  // Peers with Peer::owed_acks_listed set: FlushAcks' work list.
  std::vector<Peer*> peers_owed_acks_;
  // Client ids are unique per host, over all its endpoints: a server's
  // packet finds its RPC by id, and its dport must name the RPC's endpoint.
  uint64_t next_client_id_;
  uint64_t next_handle_ = 1;
  // Server RPCs are owned by their client's ClientRecord in the peer table,
  // reached through the peer; client RPCs by their endpoint.
  size_t num_server_rpcs_ = 0;
  // Finished RPCs kept for reuse (reset), client and server alike, and the
  // nodes of ClientRecord::live entries.
  static constexpr size_t kMaxSpareRpcs = 64;
  std::vector<std::unique_ptr<Rpc>> spare_rpcs_;
  // Acks and floors received, whose server RPCs ReleaseFinished frees at the
  // start of the next Poll (see HandleAck).
  struct DeferredRelease {
    Peer* peer;     // a peer with deferred releases is never removed (see PeerFor)
    uint32_t pair;  // EndpointPair(our server endpoint, client port)
    uint64_t id;    // the acked client id, or the new floor
    bool is_floor;
  };
  std::vector<DeferredRelease> deferred_releases_;
  NodeRecycler<std::map<uint64_t, std::unique_ptr<Rpc>>> live_nodes_;
  // Every live RPC of every endpoint, oldest first, linked through
  // Rpc::older/newer: the timer's walk, in a deterministic order.
  Rpc* oldest_rpc_ = nullptr;
  Rpc* newest_rpc_ = nullptr;
  size_t num_live_rpcs_ = 0;       // the list's length
  size_t num_awaiting_ack_ = 0;     // of which in kServerAwaitAck
  // The most live RPCs not awaiting an ack during this tick and the one
  // before (batch cuts).
  size_t live_peak_ = 0;
  size_t live_peak_before_ = 0;

  GrantScheduler grants_;
  std::vector<GrantScheduler::Ranked> active_grants_;  // RunGrantPass scratch
  bool grants_dirty_ = false;
  uint64_t srpt_granted_since_fifo_ = 0;  // bytes, for the FIFO share
  Pacer pacer_;
  SendQueue send_queue_;
  uint64_t incoming_buffer_bytes_ = 0;
  // Blocks that large incoming messages are reassembled in, kept once their
  // holder drops them: a fresh 1 MiB buffer per message cost 256 page
  // faults whenever glibc had handed the last one back (transport/
  // large_buffer_pool.h), which put 1 MiB bulk at a third of its rate in about
  // one run in three. Shared: delivered messages hold it too.
  std::shared_ptr<transport::LargeBufferPool> receive_pool_ =
      transport::LargeBufferPool::Create({});
  // Granted (or unscheduled) but not yet received, over all incoming
  // messages: Homa's max_incoming bound, which keeps incast from filling
  // the network's queues with data we asked for.
  uint64_t outstanding_bytes_ = 0;

  TimeNs next_tick_ns_;
  // The clock read at the start of the current Poll (or API call): packet
  // handlers use it instead of reading the clock once per packet.
  TimeNs now_ns_ = 0;
  int64_t tick_count_ = 0;

  // Transmit batch, flushed with one Send(): packet headers in slots of
  // tx_buffer_, DATA payloads borrowed from their messages. Outside a batch
  // every PumpSends is followed by FlushTx; inside one (BeginBatch) the
  // batch may wait, so everything that frees a message calls FlushBorrowed
  // first and no message is freed while the batch still points into it.
  // kTxBatch datagrams per Send() call: as many as one GSO send may carry
  // (UDP_MAX_SEGMENTS), so that a burst to one peer is one system call.
  static constexpr size_t kTxBatch = 64;
  static constexpr int kMaxTxPacketsPerPump = 256;
  // DATA payloads up to this size are copied next to their header: one
  // contiguous datagram lets the transport use its cheapest send call, which
  // matters more for a short message than a copy of a few hundred bytes.
  // Longer payloads are sent from the message in place (see EmitData).
  static constexpr size_t kInlinePayloadBytes = 512;
  // A transmit slot holds any packet header, or a DATA header and an inline
  // payload.
  static constexpr size_t kTxSlotBytes =
      std::max(wire::kMaxHeaderBytes, wire::kDataHeaderBytes + kInlinePayloadBytes);
  std::vector<std::byte> tx_buffer_;
  std::vector<transport::OutDatagram> tx_batch_;
  // Entries of tx_batch_ whose payload points into a message.
  size_t tx_borrowed_ = 0;
  // BeginBatch nesting: while > 0, the endpoints' sends stay in tx_batch_
  // until EndBatch, the next Poll, or the head cut (HeldPacketsBeforeCut).
  int batch_depth_ = 0;
  // The head of a held batch leaves as soon as it is there, the rest at
  // EndBatch: the head of a burst reaches the peer while its tail is still
  // being made, so both hosts work at once. Bursts held whole travel as one
  // convoy that each host serves while the other waits (64 B RPCs, 32 in
  // flight, managed: 420k -> 570k RPC/s on a 2-CPU VM). The head is half
  // the most RPCs the host had unanswered (live and not awaiting an ack)
  // over the last tick or two, at least kMinHeldPackets and at most a whole
  // transmit batch: two halves of the window keep both hosts busy, and a
  // longer head saves sends where the peer has work queued anyway. The peak, not the count now: much of a
  // busy window sits in applications and rings at any instant (at 256 in
  // flight managed, 48-96 live). Answered RPCs awaiting their ack are no
  // part of the window (a server has up to a window of them). Managed,
  // 64 B RPCs, best fixed head by RPCs in flight: 16 at 32, 32 at 64, 64
  // at 128 and 256 (16 there cost ~15%). One cut per batch: more cost a
  // send each.
  static constexpr size_t kMinHeldPackets = 16;
  size_t HeldPacketsBeforeCut() const {
    return std::clamp<size_t>(std::max(live_peak_, live_peak_before_) / 2, kMinHeldPackets,
                              kTxBatch);
  }
  bool batch_cut_ = false;  // this batch's head has left
  // After an API call queued packets: flushes unless a batch holds them.
  void FlushUnlessHeld();
  size_t max_datagram_bytes_;
  std::vector<transport::InDatagram> rx_batch_;

  HomaStats stats_;
  bool polled_by_owner_ = false;
};

}  // namespace wharf::homa
