// AppendCounters: HomaStats as named counters ("homa.packets_sent").
#include "homa/stats.h"

namespace wharf::homa {

void AppendCounters(const HomaStats& s, std::vector<std::pair<std::string, uint64_t>>* out) {
  out->insert(out->end(), {
                              {"homa.packets_sent", s.packets_sent},
                              {"homa.batched_flushes", s.batched_flushes},
                              {"homa.batch_cuts", s.batch_cuts},
                              {"homa.packets_received", s.packets_received},
                              {"homa.data_sent", s.data_sent},
                              {"homa.data_retransmitted", s.data_retransmitted},
                              {"homa.data_received", s.data_received},
                              {"homa.duplicate_data", s.duplicate_data},
                              {"homa.grants_sent", s.grants_sent},
                              {"homa.fifo_grants", s.fifo_grants},
                              {"homa.resends_sent", s.resends_sent},
                              {"homa.resends_received", s.resends_received},
                              {"homa.busy_sent", s.busy_sent},
                              {"homa.rpc_unknown_sent", s.rpc_unknown_sent},
                              {"homa.restarts", s.restarts},
                              {"homa.cutoffs_sent", s.cutoffs_sent},
                              {"homa.need_acks_sent", s.need_acks_sent},
                              {"homa.acks_sent", s.acks_sent},
                              {"homa.acks_received", s.acks_received},
                              {"homa.requests_delivered", s.requests_delivered},
                              {"homa.responses_delivered", s.responses_delivered},
                              {"homa.late_duplicates", s.late_duplicates},
                              {"homa.client_timeouts", s.client_timeouts},
                              {"homa.server_timeouts", s.server_timeouts},
                              {"homa.malformed", s.malformed},
                              {"homa.wrong_port", s.wrong_port},
                              {"homa.endpoint_mismatch", s.endpoint_mismatch},
                              {"homa.from_stranger", s.from_stranger},
                              {"homa.path_errors", s.path_errors},
                              {"homa.peers_unreachable", s.peers_unreachable},
                              {"homa.unreachable_failures", s.unreachable_failures},
                              {"homa.clients_refused", s.clients_refused},
                              {"homa.tombstones_evicted", s.tombstones_evicted},
                              {"homa.oversize_dropped", s.oversize_dropped},
                              {"homa.memory_dropped", s.memory_dropped},
                              {"homa.receives_placed", s.receives_placed},
                              {"homa.tx_dropped", s.tx_dropped},
                              {"homa.send_errors", s.send_errors},
                          });
}

}  // namespace wharf::homa
