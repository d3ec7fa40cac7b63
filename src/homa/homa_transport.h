// homa/homa_transport.h: HomaTransport, one endpoint of the Homa-style
// receiver-driven protocol, bound to one Datagram transport and one homa port.
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
#include <deque>
#include <memory>
#include <set>
#include <span>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "homa/config.h"
#include "homa/grant.h"
#include "homa/pacer.h"
#include "homa/peer_table.h"
#include "homa/rpc.h"
#include "homa/stats.h"
#include "transport/datagram.h"
#include "wharf/buffer.h"
#include "wharf/result.h"
#include "wire/packet.h"

namespace wharf::homa {

// Identifies a server-side RPC: the client's address, its port and its id.
struct ServerRpcKey {
  transport::NetAddress client;
  uint16_t client_port = 0;
  uint64_t client_id = 0;
  friend bool operator==(const ServerRpcKey&, const ServerRpcKey&) = default;
};

struct ServerRpcKeyHash {
  size_t operator()(const ServerRpcKey& k) const noexcept {
    return std::hash<transport::NetAddress>()(k.client) ^ (k.client_id * 0x9e3779b97f4a7c15ULL) ^
           k.client_port;
  }
};

// What the protocol reports upward, in the order it happened.
struct HomaEvent {
  enum class Kind : uint8_t {
    kRequest,   // server: a complete request, or (status not ok) one refused
                // unread; answer either with SendResponse(key)
    kResponse,  // client: the response to SendRequest's id
    kFailed,    // client: the RPC failed (status says why)
  };
  Kind kind = Kind::kRequest;
  uint64_t client_id = 0;    // the client's RPC id (both sides)
  uint64_t cookie = 0;       // client: as passed to SendRequest
  ServerRpcKey server_key;   // server: the RPC to respond to
  Buffer message;            // kRequest / kResponse payload
  Status status;             // kFailed
};

struct PollResult {
  int work = 0;                   // packets handled + sent, timers run
  TimeNs next_deadline = kNever;  // when Poll needs to run again at the latest
  TimeNs now = 0;                 // the clock as Poll read it (callers reuse it)
};

// Owned by the engine (or a test). Single-threaded: every call from the one
// thread that drives it. Borrows `net` and `clock`, which must outlive it.
class HomaTransport {
 public:
  static Result<std::unique_ptr<HomaTransport>> Create(const HomaConfig& config,
                                                       transport::Datagram* net,
                                                       const Clock& clock);
  ~HomaTransport();

  // The homa port: the UDP port of `net` (servers are addressed by it).
  uint16_t port() const { return port_; }
  const HomaConfig& config() const { return config_; }
  const HomaStats& stats() const { return stats_; }

  // Starts an RPC to the server at `server` (its port is the homa port).
  // Returns the client RPC id; completion arrives as a kResponse or kFailed
  // event carrying `cookie`.
  Result<uint64_t> SendRequest(const transport::NetAddress& server, Buffer request,
                               uint64_t cookie = 0);

  // Answers a request delivered as a kRequest event. NotFound when the RPC is
  // gone (the client gave up or died), FailedPrecondition when answered twice.
  Status SendResponse(const ServerRpcKey& key, Buffer response);

  // Client side: abandons an RPC. No event follows. False if unknown.
  bool Cancel(uint64_t client_id);

  // Receives and handles packets, sends what grants and the pacer allow, and
  // runs the protocol timer when due.
  PollResult Poll();

  // When Poll() must run next at the latest (now if work is waiting).
  TimeNs NextDeadline() const;

  // Takes the oldest pending event; false when none.
  bool PopEvent(HomaEvent* out);
  size_t pending_events() const { return events_.size(); }

  size_t num_client_rpcs() const { return client_rpcs_.size(); }
  size_t num_server_rpcs() const { return server_rpcs_.size(); }

 private:
  HomaTransport(const HomaConfig& config, transport::Datagram* net, const Clock& clock);

  // --- packet handlers (handlers.cc) ---
  void HandleDatagram(const transport::NetAddress& from, std::span<const std::byte> bytes);
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
  void AdvanceFloor(Peer& peer, uint16_t client_port, uint64_t floor);
  // The peer at `addr`, created (with its path's packet size) on first use.
  Peer& PeerFor(const transport::NetAddress& addr);
  // The RPC a packet from `peer` is about, or nullptr.
  Rpc* FindRpcFor(Peer& peer, const wire::CommonHeader& common);

  // --- sending (homa_transport.cc) ---
  void QueueForSend(Rpc& rpc);
  void DequeueFromSend(Rpc& rpc);
  // Sends what the pacer allows; returns packets produced.
  int PumpSends(TimeNs now);
  void EmitData(Rpc& rpc, TimeNs now);
  void EmitControl(const transport::NetAddress& to, uint16_t dport, uint64_t rpc_id,
                   const wire::Body& body, uint8_t flags = 0);
  std::span<std::byte> NextTxSlot();
  void FlushTx();
  void RunGrantPass();
  void SendGrant(Rpc& rpc, uint32_t offset, uint8_t priority);
  // Removes rpc from the grant scheduler and schedules a new grant pass.
  void StopGranting(Rpc& rpc);

  // --- lifecycle (homa_transport.cc) ---
  Rpc& NewRpc(uint64_t id, RpcState state, Peer& peer, uint16_t peer_port);
  void FinishClientRpc(Rpc& rpc);  // removes from queues and tables, records floor
  void DestroyServerRpc(const ServerRpcKey& key, bool tombstone);
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
  // Sends the acks `peer` is owed for server port `port` (those its floor
  // does not already cover), at least one ACK packet carrying the floor.
  void SendAcks(Peer& peer, uint16_t port);

  HomaConfig config_;
  transport::Datagram* net_;
  const Clock& clock_;
  uint16_t port_;

  PeerTable peers_;
  uint64_t next_client_id_;
  uint64_t next_handle_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Rpc>> client_rpcs_;  // by our id
  std::unordered_map<ServerRpcKey, std::unique_ptr<Rpc>, ServerRpcKeyHash> server_rpcs_;
  std::unordered_map<uint64_t, Rpc*> by_handle_;

  GrantScheduler grants_;
  bool grants_dirty_ = false;
  uint64_t srpt_granted_since_fifo_ = 0;  // bytes, for the FIFO share
  Pacer pacer_;
  // SRPT send queue: (bytes remaining, handle).
  std::set<std::pair<uint32_t, uint64_t>> send_queue_;
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
  std::deque<HomaEvent> events_;

  // Transmit batch: slots of max datagram size, flushed with one Send().
  std::vector<std::byte> tx_buffer_;
  std::vector<transport::OutDatagram> tx_batch_;
  size_t tx_slot_bytes_;
  std::vector<transport::InDatagram> rx_batch_;

  HomaStats stats_;
};

}  // namespace wharf::homa
