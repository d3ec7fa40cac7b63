// engine/connection_state.h: ConnState, the engine's record of one
// connection: who the peer is, the receive queue (and, for ordered
// connections, the reorder buffer), and receivers waiting on it.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>

#include "wharf/buffer.h"
#include "wharf/status.h"
#include "engine/peer_ref.h"

namespace wharf::engine {

// Owned by the Engine; single-threaded (the engine's).
struct ConnState {
  uint64_t local_id = 0;  // the handle the application holds
  uint64_t wire_id = 0;   // the id both ends use on the wire (client-chosen)
  PeerRef peer;
  bool ordered = false;
  uint32_t stream_method = 0;  // nonzero: a stream of this method (ConnectionTable)
  bool remote = false;    // opened by the peer (counts against max_connections)
  bool open = true;       // false after Disconnect (either side) or peer death
  Status closed_reason;   // why receives now fail, once !open
  uint64_t next_send_seq = 0;
  uint64_t next_deliver_seq = 0;            // ordered: the next seq to hand out
  std::map<uint64_t, Buffer> early;         // ordered: arrived ahead of order
  std::deque<Buffer> ready;                 // delivered, not yet received
  uint64_t ready_bytes = 0;
  std::deque<uint64_t> receivers;            // op ids of Recvs waiting, oldest first
  bool keepalive_in_flight = false;
};

}  // namespace wharf::engine
