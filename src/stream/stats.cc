// CounterList: TcpStats as named counters.
#include "stream/stats.h"

namespace wharf::stream {

std::vector<std::pair<std::string, uint64_t>> CounterList(const TcpStats& s) {
  return {
      {"tcp.connections_opened", s.connections_opened},
      {"tcp.connections_accepted", s.connections_accepted},
      {"tcp.connect_failures", s.connect_failures},
      {"tcp.connections_closed", s.connections_closed},
      {"tcp.connections_reset", s.connections_reset},
      {"tcp.protocol_errors", s.protocol_errors},
      {"tcp.reconnects", s.reconnects},
      {"tcp.peer_restarts", s.peer_restarts},
      {"tcp.requests_sent", s.requests_sent},
      {"tcp.requests_resent", s.requests_resent},
      {"tcp.requests_delivered", s.requests_delivered},
      {"tcp.responses_sent", s.responses_sent},
      {"tcp.responses_resent", s.responses_resent},
      {"tcp.responses_delivered", s.responses_delivered},
      {"tcp.duplicate_requests", s.duplicate_requests},
      {"tcp.late_responses", s.late_responses},
      {"tcp.oversize_refused", s.oversize_refused},
      {"tcp.memory_refused", s.memory_refused},
      {"tcp.responses_evicted", s.responses_evicted},
      {"tcp.responses_lost", s.responses_lost},
      {"tcp.client_timeouts", s.client_timeouts},
      {"tcp.peer_gone_failures", s.peer_gone_failures},
      {"tcp.connections_refused", s.connections_refused},
      {"tcp.peers_refused", s.peers_refused},
      {"tcp.connections_idle_closed", s.connections_idle_closed},
      {"tcp.peers_expired", s.peers_expired},
      {"tcp.clients_expired", s.clients_expired},
      {"tcp.traffic_class_marks", s.traffic_class_marks},
      {"tcp.pings_sent", s.pings_sent},
      {"tcp.pongs_sent", s.pongs_sent},
      {"tcp.acks_sent", s.acks_sent},
      {"tcp.aborts_sent", s.aborts_sent},
      {"tcp.bytes_sent", s.bytes_sent},
      {"tcp.bytes_received", s.bytes_received},
      {"tcp.writes", s.writes},
      {"tcp.batched_flushes", s.batched_flushes},
      {"tcp.batch_cuts", s.batch_cuts},
      {"tcp.reads", s.reads},
      {"tcp.receive_buffers_reused", s.receive_buffers_reused},
      {"tcp.receive_buffers_allocated", s.receive_buffers_allocated},
      {"tcp.receive_pool_bytes", s.receive_pool_bytes},
  };
}

}  // namespace wharf::stream
