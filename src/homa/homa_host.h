// homa/homa_host.h: HomaHost, the per-socket half of the Homa-style
// receiver-driven protocol (docs/protocol.md, section 4 "Hosts and
// endpoints"): HomaModule's `homa`. One host per transport::Datagram reads
// its packets and dispatches them: to the endpoint their dport names
// (HomaEndpoint, homa_endpoint.h; HomaModule's `homa_sock`), and to the
// handler of their type, which updates the RPC they are about and answers.
//
// The host's state lives in parts it owns, each with its own file and tests:
//   EndpointTable   endpoint_table.h  its open endpoints, by id
//   PeerTable       peer_table.h      what it remembers per remote address
//   RpcRegistry     rpc_registry.h    the live RPCs of all its endpoints
//   GrantScheduler  grant.h           SRPT grants, the incoming byte budgets
//   Sender          sender.h          the SRPT send queue, the pacer, owed acks
//   TxBatcher       tx_batcher.h      the transmit batch and its hand-off
//   LivenessTimer   timer.h           resends, keep-alives, peer death
//   ReleaseQueue    release_queue.h   acked and floor-finished server RPCs
// The host keeps the packet handlers, the endpoints' calls, the RPC
// lifecycle that ties the parts together, and Poll. It never calls a socket
// directly (all I/O goes through transport::Datagram) and reads time only
// from the injected Clock, so the same code runs on real UDP and on
// FakeNetwork + SimClock.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "homa/config.h"
#include "homa/endpoint_table.h"
#include "homa/grant.h"
#include "homa/peer_table.h"
#include "homa/release_queue.h"
#include "homa/rpc.h"
#include "homa/rpc_registry.h"
#include "homa/sender.h"
#include "homa/stats.h"
#include "homa/timer.h"
#include "homa/tx_batcher.h"
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
  // the next Poll or a full batch sends with one system call (TxBatcher);
  // runs to one peer then coalesce into GSO sends. For callers that send
  // several messages back to back (MessageTransport::BeginBatch).
  void BeginBatch() { tx_.Begin(); }
  void EndBatch() { tx_.End(); }

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
  size_t num_client_rpcs() const { return rpcs_.num_client_rpcs(); }
  size_t num_server_rpcs() const { return rpcs_.num_server_rpcs(); }
  // Live RPCs, client and server, but for answered ones awaiting an ack.
  size_t unanswered_rpcs() const { return rpcs_.unanswered(); }
  size_t num_peers() const { return peers_.size(); }
  const PeerTableStats& peer_stats() const { return peers_.stats(); }

  // --- The service it gives its endpoints (HomaEndpoint's calls land here;
  // nothing else needs them) ---

  // Routes packets for ep.endpoint_id() to `ep` until CloseEndpoint(ep).
  // kAlreadyExists if that id is open. HomaEndpoint::Open calls it.
  Status Register(HomaEndpoint& ep);
  // Ends ep's RPCs: client RPCs fail with `status` (an event in ep's queue;
  // an ack goes to the server), server RPCs are forgotten with tombstones.
  // Then ep's id is free again.
  void CloseEndpoint(HomaEndpoint& ep, const Status& status);
  // options.priority: the unscheduled packets' (kPriorityBySize: the
  // peer's cutoffs choose by length); kInvalidArgument outside 0..7.
  // options.stamp_departure: the first DATA packet asks the socket for its
  // transmit stamp, which the response's event carries (sent_ns).
  Result<uint64_t> SendRequest(HomaEndpoint& ep, const transport::NetAddress& server,
                               uint16_t server_port, Buffer request, uint64_t cookie,
                               const transport::SendOptions& options);
  Status SendResponse(HomaEndpoint& ep, const ServerRpcKey& key, Buffer response,
                      transport::MessagePriority priority);
  // False unless `client_id` is a live client RPC of `ep`.
  bool Cancel(HomaEndpoint& ep, uint64_t client_id);
  // ep's live RPCs (a walk over all of them: for tests and diagnostics).
  RpcRegistry::Counts RpcsOf(const HomaEndpoint& ep) const { return rpcs_.CountOf(&ep); }

 private:
  HomaHost(const HomaConfig& config, transport::Datagram* net, const Clock& clock);

  // --- packet handlers ---
  void HandleDatagram(const transport::NetAddress& from, std::span<const std::byte> bytes);
  // A packet for an RPC we keep nothing for, from a source we keep no peer
  // for or to an endpoint id not open here: answered without creating state
  // (RESEND -> RPC_UNKNOWN, NEED_ACK -> ACK), else dropped.
  void HandleStranger(const transport::NetAddress& from, const wire::Packet& packet);
  // The kernel's report that `error.to` cannot be reached: fails that peer's
  // client RPCs and drops its server RPCs at once.
  void HandlePathError(const transport::PathError& error);
  // Notes on their client RPCs when the requests that asked
  // (SendOptions::stamp_departure) left, as the socket reports it.
  void TakeDepartures();
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
  void HandleNeedAck(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common);
  // An ack from the client at (peer, client_port) for our endpoint
  // ack.server_port (any of ours, not only the packet's dport): queued in
  // releases_, which frees its RPC at the next Poll.
  void HandleAck(Peer& peer, uint16_t client_port, const wire::Ack& ack);
  // The peer at `addr`, created on first use; nullptr when the table is
  // full of peers with live RPCs (homa.max_peers). No system call.
  Peer* PeerFor(const transport::NetAddress& addr);
  // The RPC of `ep` a packet from `peer` is about, or nullptr.
  Rpc* FindRpcFor(HomaEndpoint& ep, Peer& peer, const wire::CommonHeader& common);
  Rpc* FindServerRpc(const HomaEndpoint& ep, const ServerRpcKey& key);

  // --- RPC lifecycle: the parts an RPC is in, in step ---
  // Creates rpc.in for the message `data` starts: in memory from the
  // endpoint's ReceiveAllocator when it has room, else in the host's own.
  void StartIncoming(Rpc& rpc, HomaEndpoint& ep, const wire::Data& data);
  // Adds one DATA packet to rpc.in (a duplicate if it brought nothing new)
  // and tells the grant scheduler; false (dropped, counted malformed) when
  // its message length contradicts the earlier packets'.
  bool AddData(Rpc& rpc, const wire::Data& data);
  void ReleaseIncoming(Rpc& rpc);  // frees rpc.in and its budgets
  void DeliverRequest(Rpc& rpc, const ServerRpcKey& key);
  // Takes rpc out of the send queue and the grant scheduler, and sends what
  // may borrow its bytes: before the registry frees it.
  void Detach(Rpc& rpc);
  void FinishClientRpc(Rpc& rpc);  // frees it; the server is owed an ack
  void FailClientRpc(Rpc& rpc, Status status);
  // Forgets the server side of the client's RPC (if still held) with our
  // endpoint and client port `pair`; with `tombstone`, also remembers it as
  // finished when above the floor.
  void DestroyServerRpc(Peer& peer, uint32_t pair, uint64_t client_id, bool tombstone);
  void DestroyServerRpc(Rpc& rpc, bool tombstone) {
    DestroyServerRpc(*rpc.peer, EndpointPair(rpc.local_port, rpc.peer_port), rpc.client_id(),
                     tombstone);
  }

  // --- what the parts decided, put on the wire ---
  void SendGrants();
  // Runs the timer's tick and carries out its plan.
  void Tick(TimeNs now);
  // After an API call queued packets: flushes unless a batch holds them.
  void FlushUnlessHeld() { tx_.FlushUnlessHeld(rpcs_.recent_unanswered_peak()); }
  // No RPC, send, or release pending: the timer has only housekeeping.
  bool Idle() const;

  // Constant after construction.
  const HomaConfig config_;
  transport::Datagram* const net_;
  const Clock& clock_;
  const size_t max_datagram_bytes_;

  // Counters of the host and its parts (TxBatcher and Sender bump theirs).
  HomaStats stats_;
  // Open endpoints by id (borrowed: an endpoint unregisters when it
  // closes).
  EndpointTable endpoints_;

  PeerTable peers_;  // outlives every RPC (server RPCs live in its records)
  RpcRegistry rpcs_;
  GrantScheduler grants_;
  TxBatcher tx_;
  Sender sender_;  // borrows tx_ and rpcs_
  LivenessTimer timer_;

  // Acks and floors received, whose server RPCs it frees (through
  // DestroyServerRpc) at the start of the next Poll. Names peers: released
  // before any peer is removed (PeerFor, Poll before Tick).
  ReleaseQueue releases_;
  // Blocks that large incoming messages are reassembled in, kept once their
  // holder drops them: a fresh 1 MiB buffer per message cost 256 page
  // faults whenever glibc had handed the last one back (transport/
  // large_buffer_pool.h). Shared: delivered messages hold it too.
  std::shared_ptr<transport::LargeBufferPool> receive_pool_ =
      transport::LargeBufferPool::Create({});

  // The clock read at the start of the current Poll (or API call): packet
  // handlers use it instead of reading the clock once per packet.
  TimeNs now_ns_ = 0;
  // The kernel's receive time of the datagram being handled (0: none), for
  // the events it completes (MessageEvent::received_ns).
  TimeNs rx_received_ns_ = 0;
  std::vector<transport::InDatagram> rx_batch_;    // Poll scratch
  std::vector<transport::PathError> path_errors_;  // Poll scratch
  std::vector<transport::Departure> departures_;   // Poll scratch
  bool polled_by_owner_ = false;
};

}  // namespace wharf::homa
