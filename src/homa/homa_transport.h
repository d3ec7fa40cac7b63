// homa/homa_transport.h: HomaTransport, one endpoint of the Homa-style
// receiver-driven protocol, bound to one Datagram transport and one endpoint
// id within it (docs/protocol.md, "Addressing").
// It turns requests and responses into DATA packets, grants incoming messages
// SRPT-first, paces what it sends, recovers from loss with RESEND/BUSY/
// RPC_UNKNOWN, and keeps server state until the client acknowledges, so a
// request never runs twice. docs/protocol.md is the specification.
//
// It never calls a socket directly: all I/O goes through transport::Datagram,
// and time through the injected Clock, so the same code runs on real UDP and
// on FakeNetwork + SimClock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "base/clock.h"
#include "base/node_recycler.h"
#include "homa/config.h"
#include "homa/grant.h"
#include "homa/id_map.h"
#include "homa/pacer.h"
#include "homa/peer_table.h"
#include "homa/rpc.h"
#include "homa/send_queue.h"
#include "homa/stats.h"
#include "transport/datagram.h"
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

// Owned by the engine (or a test). Single-threaded: every call from the one
// thread that drives it. Borrows `net` and `clock`, which must outlive it.
class HomaTransport final : public transport::MessageTransport {
 public:
  static Result<std::unique_ptr<HomaTransport>> Create(const HomaConfig& config,
                                                       transport::Datagram* net,
                                                       const Clock& clock);
  ~HomaTransport() override;

  // This endpoint's id within its socket (HomaConfig::endpoint_id): the
  // sport of its packets and the only dport it accepts. UDP addresses and
  // ports are never checked: a NAT may rewrite them.
  uint16_t endpoint_id() const { return endpoint_id_; }
  const HomaConfig& config() const { return config_; }
  const HomaStats& stats() const { return stats_; }

  // transport::MessageTransport. A server is addressed by the UDP address of
  // its socket; requests go to its default endpoint.
  std::string_view scheme() const override { return "homa"; }
  transport::NetAddress LocalAddress() const override { return net_->LocalAddress(); }
  Result<uint64_t> SendRequest(const transport::NetAddress& server, Buffer request,
                               uint64_t cookie = 0) override;
  Status SendResponse(const ServerRpcKey& key, Buffer response) override;
  bool Cancel(uint64_t client_id) override;
  // Receives and handles packets, sends what grants and the pacer allow, and
  // runs the protocol timer when due.
  PollResult Poll() override;
  TimeNs NextDeadline() const override;
  bool PopEvent(HomaEvent* out) override;
  int ReadableFd() const override { return net_->ReadableFd(); }
  void AppendReadableFds(std::vector<int>* fds) const override { net_->AppendReadableFds(fds); }
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;

  size_t pending_events() const { return events_.size() - events_head_; }

  size_t num_client_rpcs() const { return client_rpcs_.size(); }
  size_t num_server_rpcs() const { return num_server_rpcs_; }
  size_t num_peers() const { return peers_.size(); }
  const PeerTableStats& peer_stats() const { return peers_.stats(); }

 private:
  HomaTransport(const HomaConfig& config, transport::Datagram* net, const Clock& clock);

  // --- packet handlers (handlers.cc) ---
  void HandleDatagram(const transport::NetAddress& from, std::span<const std::byte> bytes);
  // A packet from a source we keep no peer for: answered without creating
  // one (RESEND -> RPC_UNKNOWN, NEED_ACK -> ACK), else dropped.
  void HandleStranger(const transport::NetAddress& from, const wire::Packet& packet);
  // The kernel's report that `error.to` cannot be reached: fails that peer's
  // client RPCs and drops its server RPCs at once.
  void HandlePathError(const transport::PathError& error);
  void HandleData(Peer& peer, const wire::CommonHeader& common, const wire::Data& data);
  void HandleRequestData(Peer& peer, const wire::CommonHeader& common, const wire::Data& data);
  void HandleResponseData(Peer& peer, const wire::CommonHeader& common, const wire::Data& data);
  void HandleGrant(Peer& peer, const wire::CommonHeader& common, const wire::Grant& grant);
  void HandleResend(Peer& peer, const wire::CommonHeader& common, const wire::Resend& resend);
  void HandleRpcUnknown(Peer& peer, const wire::CommonHeader& common);
  void HandleBusy(Peer& peer, const wire::CommonHeader& common);
  void HandleCutoffs(Peer& peer, const wire::Cutoffs& cutoffs);
  void HandleNeedAck(Peer& peer, const wire::CommonHeader& common);
  void HandleAck(Peer& peer, uint16_t client_port, const wire::Ack& ack);
  // The ClientRecord for `client_port` of `peer`, created if new unless the
  // peer already has max_clients_per_peer (nullptr then).
  ClientRecord* RecordFor(Peer& peer, uint16_t client_port);
  void AdvanceFloor(Peer& peer, uint16_t client_port, uint64_t floor);
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
  // The RPC a packet from `peer` is about, or nullptr.
  Rpc* FindRpcFor(Peer& peer, const wire::CommonHeader& common);
  Rpc* FindServerRpc(const ServerRpcKey& key);

  // --- sending (homa_transport.cc) ---
  void QueueForSend(Rpc& rpc);
  void DequeueFromSend(Rpc& rpc);
  // Sends what the pacer allows; returns packets produced. `clock_fresh`:
  // now_ns_ was just read (in Poll); otherwise the clock is read if a paced
  // packet needs it.
  int PumpSends(bool clock_fresh);
  // `now` matters only for a paced peer (the pacer's accounting).
  void EmitData(Rpc& rpc, TimeNs now);
  void EmitControl(const transport::NetAddress& to, uint16_t dport, uint64_t rpc_id,
                   const wire::Body& body, uint8_t flags = 0);
  std::span<std::byte> NextTxSlot();
  void FlushTx();
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

  // --- lifecycle (homa_transport.cc) ---
  // A fresh Rpc: a recycled one when there is one (an allocation per RPC
  // showed in the round-trip profile).
  std::unique_ptr<Rpc> AllocateRpc();
  void RecycleRpc(std::unique_ptr<Rpc> rpc);
  Rpc& NewClientRpc(uint64_t id, Peer& peer, uint16_t server_port);
  Rpc& NewServerRpc(Peer& peer, ClientRecord& record, uint16_t client_port, uint64_t client_id,
                    RpcState state);
  void InitRpc(Rpc& rpc, uint64_t id, RpcState state, Peer& peer, uint16_t peer_port);
  // Takes rpc out of the send queue, the grant scheduler and the list of
  // all RPCs, before its table destroys it.
  void UnlinkRpc(Rpc& rpc);
  void FinishClientRpc(Rpc& rpc);  // removes from queues and tables, records floor
  // Forgets the server side of the client's RPC (if still held); with
  // `tombstone`, also remembers it as finished when above the floor.
  void DestroyServerRpc(Peer& peer, uint16_t client_port, uint64_t client_id, bool tombstone);
  void FailClientRpc(Rpc& rpc, Status status);
  void DeliverRequest(Rpc& rpc, const ServerRpcKey& key);
  uint64_t ClientFloor(Peer& peer, uint16_t server_port) const;
  bool ReserveIncoming(uint32_t length);
  void ReleaseIncoming(Rpc& rpc);
  // Re-counts rpc's granted-but-unreceived bytes into outstanding_bytes_.
  void UpdateOutstanding(Rpc& rpc);  // frees rpc.in and its memory reservation

  // --- timer (timer.cc) ---
  void Tick();
  void SendResend(Rpc& rpc);
  // For a message waiting on our own grants: schedules a grant pass and keeps
  // its (otherwise quiet) peer from presuming us dead.
  void KeepAlive(Rpc& rpc, TimeNs now);
  void FlushAcks();
  // Queues an ack for `peer` (piggybacked on the next DATA, or sent by
  // FlushAcks at the next tick).
  void OweAck(Peer& peer, const wire::Ack& ack);
  // How often the timer asks the transport to re-read its path caches (the
  // host's interface addresses): rarely, and never on the receive path.
  static constexpr DurationNs kPathRefreshNs = 10 * kNsPerSec;
  // Sends the acks `peer` is owed for server port `port` (those its floor
  // does not already cover), at least one ACK packet carrying the floor.
  void SendAcks(Peer& peer, uint16_t port);

  HomaConfig config_;
  transport::Datagram* net_;
  const Clock& clock_;
  uint16_t endpoint_id_;
  // config_.EffectivePeerTimeoutNs(), and in ticks (rounded up).
  DurationNs peer_timeout_ns_;
  int64_t peer_timeout_ticks_;
  // When the timer next asks the transport to refresh its path caches.
  TimeNs next_path_refresh_ns_;
  std::vector<transport::PathError> path_errors_;  // Poll scratch

  PeerTable peers_;
  // Peers with Peer::owed_acks_listed set: FlushAcks' work list.
  std::vector<Peer*> peers_owed_acks_;
  uint64_t next_client_id_;
  uint64_t next_handle_ = 1;
  // Client RPCs by our id (owning). Server RPCs are owned by their client's
  // ClientRecord in the peer table, reached through the peer.
  IdMap<std::unique_ptr<Rpc>> client_rpcs_;
  size_t num_server_rpcs_ = 0;
  // Finished RPCs kept for reuse (reset), client and server alike, and the
  // nodes of ClientRecord::live entries.
  static constexpr size_t kMaxSpareRpcs = 64;
  std::vector<std::unique_ptr<Rpc>> spare_rpcs_;
  // Acks and floors received, whose server RPCs ReleaseFinished frees at the
  // start of the next Poll (see HandleAck).
  struct DeferredRelease {
    Peer* peer;  // a peer with deferred releases is never removed (see PeerFor)
    uint16_t client_port;
    uint64_t id;  // the acked client id, or the new floor
    bool is_floor;
  };
  std::vector<DeferredRelease> deferred_releases_;
  NodeRecycler<std::map<uint64_t, std::unique_ptr<Rpc>>> live_nodes_;
  // Every live RPC, oldest first, linked through Rpc::older/newer: the
  // timer's walk, in a deterministic order.
  Rpc* oldest_rpc_ = nullptr;
  Rpc* newest_rpc_ = nullptr;

  GrantScheduler grants_;
  std::vector<GrantScheduler::Ranked> active_grants_;  // RunGrantPass scratch
  bool grants_dirty_ = false;
  uint64_t srpt_granted_since_fifo_ = 0;  // bytes, for the FIFO share
  Pacer pacer_;
  SendQueue send_queue_;
  uint64_t incoming_buffer_bytes_ = 0;
  // Granted (or unscheduled) but not yet received, over all incoming
  // messages: Homa's max_incoming bound, which keeps incast from filling
  // the network's queues with data we asked for.
  uint64_t outstanding_bytes_ = 0;

  TimeNs next_tick_ns_;
  // The clock read at the start of the current Poll (or API call): packet
  // handlers use it instead of reading the clock once per packet.
  TimeNs now_ns_ = 0;
  int64_t tick_count_ = 0;
  // Events not yet popped: events_[events_head_ ..]. A vector used as a
  // queue (cleared whenever drained), so steady traffic never allocates.
  std::vector<HomaEvent> events_;
  size_t events_head_ = 0;

  // Transmit batch, flushed with one Send(): packet headers in slots of
  // tx_buffer_, DATA payloads borrowed from their messages. Every PumpSends
  // is followed by FlushTx before anything else runs, so no message is freed
  // while the batch still points into it.
  std::vector<std::byte> tx_buffer_;
  std::vector<transport::OutDatagram> tx_batch_;
  size_t max_datagram_bytes_;
  std::vector<transport::InDatagram> rx_batch_;

  HomaStats stats_;
};

}  // namespace wharf::homa
