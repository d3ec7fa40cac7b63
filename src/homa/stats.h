// homa/stats.h: HomaStats, counters of one HomaHost (a socket and all its
// endpoints), and their names in /metrics (stats.cc). Monotonic; read by the
// engine for /metrics and by tests to assert on protocol behaviour.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace wharf::homa {

// Owned by HomaHost; its parts (TxBatcher, Sender) bump their counters in
// it. Single-threaded: the host's thread.
struct HomaStats {
  uint64_t packets_sent = 0;
  // EndBatch calls that found held packets and sent them together.
  uint64_t batched_flushes = 0;
  uint64_t batch_cuts = 0;       // held batches whose head left early
  uint64_t packets_received = 0;
  uint64_t data_sent = 0;
  uint64_t data_retransmitted = 0;
  uint64_t data_received = 0;
  uint64_t duplicate_data = 0;       // DATA whose bytes had all arrived already
  uint64_t grants_sent = 0;
  uint64_t fifo_grants = 0;
  uint64_t resends_sent = 0;
  uint64_t resends_received = 0;
  uint64_t busy_sent = 0;
  uint64_t rpc_unknown_sent = 0;
  uint64_t restarts = 0;             // client requests restarted after RPC_UNKNOWN
  uint64_t cutoffs_sent = 0;
  uint64_t need_acks_sent = 0;
  uint64_t acks_sent = 0;            // explicit ACK packets
  uint64_t acks_received = 0;        // individual acks (piggybacked or not)
  uint64_t requests_delivered = 0;
  uint64_t responses_delivered = 0;
  uint64_t late_duplicates = 0;      // request packets of finished RPCs dropped
  uint64_t client_timeouts = 0;
  uint64_t server_timeouts = 0;
  uint64_t malformed = 0;            // undecodable datagrams
  uint64_t wrong_port = 0;           // dport names no endpoint open on this socket
  uint64_t endpoint_mismatch = 0;    // server packets for our client RPC sent to another endpoint
  uint64_t from_stranger = 0;        // non-request packets from sources we keep no peer for
  uint64_t path_errors = 0;          // ICMP (or fake) reports read from the transport
  uint64_t peers_unreachable = 0;    // of those, reports that ended a known peer's RPCs
  uint64_t unreachable_failures = 0; // client RPCs failed at once by such a report
  uint64_t clients_refused = 0;      // requests from a peer over max_clients_per_peer
  uint64_t tombstones_evicted = 0;   // finished ids forgotten over max_tombstones_per_client
  uint64_t oversize_dropped = 0;     // message_length above max_message_bytes
  uint64_t memory_dropped = 0;       // over max_incoming_buffer_bytes
  // Messages received straight into memory the endpoint's host gave
  // (MessageTransport::SetReceiveAllocator; wharfd: the application's area).
  uint64_t receives_placed = 0;
  uint64_t tx_dropped = 0;           // datagrams the socket did not take
  uint64_t send_errors = 0;
};

// Appends every counter of `stats` as ("homa.<field>", value), in declaration
// order.
void AppendCounters(const HomaStats& stats, std::vector<std::pair<std::string, uint64_t>>* out);

}  // namespace wharf::homa
