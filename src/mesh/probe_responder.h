// mesh/probe_responder.h: MeshResponder, the side of a mesh probe that
// answers: it checks the probe and answers with its sequence number echoed
// and the time the probe spent in this daemon (its dwell), so that the
// prober can take that time out of the round trip, to go back at the
// priority the probe asks for (its class's).
#pragma once

#include <cstdint>
#include <span>

#include "base/clock.h"
#include "transport/message_transport.h"
#include "wharf/buffer.h"
#include "wharf/result.h"

namespace wharf::mesh {

struct ProbeAnswer {
  Buffer message;
  transport::MessagePriority priority = transport::kPriorityBySize;
};

// Owned by wharfd's mesh service; single-threaded (the loop's). Keeps no
// state per prober: any number of hosts may probe it.
class MeshResponder {
 public:
  struct Counters {
    uint64_t answered = 0;
    uint64_t malformed = 0;  // requests that are no probe
  };
  // The answer to `request`, which the engine handed over at `arrived_ns`
  // and which leaves at `now` (the dwell between them, on the monotonic
  // clock), or InvalidArgument for a request that is not a probe.
  Result<ProbeAnswer> Answer(std::span<const std::byte> request, TimeNs arrived_ns, TimeNs now);
  const Counters& counters() const { return counters_; }

 private:
  Counters counters_;
};

}  // namespace wharf::mesh
