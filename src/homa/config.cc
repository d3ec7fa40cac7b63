// ValidateConfig: the check HomaHost::Create runs on a configuration.
#include "homa/config.h"

#include <string>

namespace wharf::homa {

Status ValidateConfig(const HomaConfig& c, size_t max_datagram_bytes) {
  auto bad = [](std::string key, std::string why) {
    return InvalidArgumentError("homa." + key + ": " + why);
  };
  if (max_datagram_bytes <= wire::kDataHeaderBytes) {
    return InvalidArgumentError("udp.mtu: datagrams of " + std::to_string(max_datagram_bytes) +
                                " bytes cannot carry a DATA header (" +
                                std::to_string(wire::kDataHeaderBytes) + " bytes)");
  }
  if (c.overcommit < 1 || c.overcommit > 64) return bad("overcommit", "expected 1..64");
  if (c.max_sched_priority < 0 || c.max_sched_priority >= wire::kNumPriorities) {
    return bad("max_sched_priority", "expected 0..7");
  }
  if (c.control_priority >= wire::kNumPriorities) return bad("control_priority", "expected 0..7");
  if (c.grant_fifo_permille < 0 || c.grant_fifo_permille > 1000) {
    return bad("grant_fifo_permille", "expected 0..1000");
  }
  if (c.tick_ns <= 0) return bad("tick", "must be positive");
  if (c.resend_ticks < 1 || c.resend_interval_ticks < 1 || c.need_ack_ticks < 1) {
    return bad("resend_ticks",
               "resend_ticks, resend_interval_ticks and need_ack_ticks must be >= 1");
  }
  if (c.timeout_ticks > 0 && c.timeout_ticks <= c.resend_ticks) {
    return bad("timeout_ticks",
               "must exceed resend_ticks (" + std::to_string(c.resend_ticks) + ")");
  }
  // A peer timeout shorter than the probes is harmless (death also needs 3
  // unanswered probes, so it comes after the third), but zero is a typo.
  if (c.peer_timeout_ns <= 0) return bad("peer_timeout", "must be positive");
  if (c.max_peers < 1) return bad("max_peers", "must be at least 1");
  if (c.peer_idle_timeout_ns <= 0) return bad("peer_idle_timeout", "must be positive");
  if (c.max_clients_per_peer < 1) return bad("max_clients_per_peer", "must be at least 1");
  if (c.link_bps == 0) return bad("link_rate", "must be positive");
  return OkStatus();
}

}  // namespace wharf::homa
