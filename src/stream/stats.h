// stream/stats.h: TcpStats, the counters of one TcpMessageTransport, and
// their names. Monotonic unless marked as a gauge; read by Counters() (as
// "tcp.<name>", CounterList) for /metrics and by tests to assert on
// behaviour. The transport's parts count into one TcpStats they borrow.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace wharf::stream {

struct TcpStats {
  uint64_t connections_opened = 0;    // TCP connections established (both directions)
  uint64_t connections_accepted = 0;  // of which inbound
  uint64_t connect_failures = 0;      // dials that failed (refused, unreachable, timed out)
  uint64_t connections_closed = 0;    // every close, including resets
  uint64_t connections_reset = 0;     // closed by an error, the peer, or bad input
  uint64_t protocol_errors = 0;       // connections closed for malformed input
  uint64_t reconnects = 0;            // handshakes to a peer after losing a connection to it
  uint64_t peer_restarts = 0;         // HELLOs with a new instance id for a known peer
  uint64_t requests_sent = 0;         // SendRequest calls accepted
  uint64_t requests_resent = 0;       // requests queued again after a connection died
  uint64_t requests_delivered = 0;    // kRequest events with a complete request
  uint64_t responses_sent = 0;        // SendResponse calls accepted
  uint64_t responses_resent = 0;      // stored responses sent again for a re-sent request
  uint64_t responses_delivered = 0;   // kResponse events
  uint64_t duplicate_requests = 0;    // re-sent requests not run again (at-most-once)
  uint64_t late_responses = 0;        // responses for RPCs no longer pending, dropped
  uint64_t oversize_refused = 0;      // requests over max_message_bytes, refused unread
  uint64_t memory_refused = 0;        // messages dropped for max_incoming_bytes
  uint64_t responses_evicted = 0;     // stored responses dropped for max_stored_response_bytes
  uint64_t responses_lost = 0;        // RPCs failed because the server no longer held the response
  uint64_t client_timeouts = 0;       // RPCs failed for peer death by silence (tcp.peer_timeout)
  uint64_t peer_gone_failures = 0;    // RPCs failed on the kernel's word (refused, unreachable)
  uint64_t connections_refused = 0;   // inbound connections closed at once: tcp.max_inbound_connections
  uint64_t peers_refused = 0;         // HELLOs naming a new peer past tcp.max_peers (connection closed)
  uint64_t connections_idle_closed = 0;  // closed after tcp.idle_timeout with nothing pending
  uint64_t peers_expired = 0;         // peers forgotten after 2 x tcp.peer_timeout without a connection
  uint64_t clients_expired = 0;       // of those, ones whose at-most-once records were dropped
  uint64_t traffic_class_marks = 0;  // connections given a peer's DSCP (a message's priority)
  uint64_t pings_sent = 0;
  uint64_t pongs_sent = 0;
  uint64_t acks_sent = 0;             // explicit ACK frames (floors on requests are free)
  uint64_t aborts_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t writes = 0;                // writev calls that moved bytes
  uint64_t batched_flushes = 0;       // EndBatch calls that found frames queued
  uint64_t batch_cuts = 0;            // held batches whose head left early
  uint64_t reads = 0;                 // readv calls that moved bytes
  uint64_t peak_incoming_buffer_bytes = 0;  // gauge: highest partial-message memory seen
  uint64_t receive_buffers_reused = 0;      // large messages received into a kept buffer
  uint64_t receive_buffers_allocated = 0;   // large messages that needed a new one
  uint64_t receive_pool_bytes = 0;          // gauge: buffers kept for reuse
};

// `stats` as (name, value) pairs, names "tcp.<field>". The gauge
// peak_incoming_buffer_bytes is not among them (stats() only).
std::vector<std::pair<std::string, uint64_t>> CounterList(const TcpStats& stats);

}  // namespace wharf::stream
