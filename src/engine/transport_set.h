// engine/transport_set.h: TransportSet, the transports an engine runs over
// and the sockets under them, built from the engine's configuration by URI
// scheme: "homa" (a UDP socket under a HomaTransport), "tcp" (a
// TcpMessageTransport). The only place above src/transport/ that names a
// concrete transport; hosts see MessageTransport, fds and counters.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "engine/engine_config.h"
#include "transport/datagram.h"
#include "transport/message_transport.h"
#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::engine {

// Owned by the engine's host, next to the engine (which borrows the
// transports). Not thread-safe: the host serialises calls, as for the engine.
class TransportSet {
 public:
  // Borrows `config` and `clock`, which outlive it.
  TransportSet(const EngineConfig& config, const Clock& clock) : config_(config), clock_(clock) {}

  // Opens the transport for `scheme` bound to `bind` (port 0: any). The set
  // owns it. InvalidArgument for a scheme it has no transport for.
  Result<transport::MessageTransport*> Open(std::string_view scheme,
                                            const transport::NetAddress& bind);
  // Another endpoint on `primary`'s socket (one this set opened), with the
  // wire endpoint id `endpoint_id`. The caller owns it; it must not outlive
  // the set.
  Result<std::unique_ptr<transport::MessageTransport>> OpenEndpoint(
      transport::MessageTransport* primary, uint16_t endpoint_id);
  // Every fd a waiter must watch. The set only grows (a transport opened, a
  // hot-peer socket), but not always at the end of the list.
  void AppendReadableFds(std::vector<int>* fds) const;

 private:
  const EngineConfig& config_;
  const Clock& clock_;
  // Declared before transports_, so they outlive the transports over them.
  std::vector<std::unique_ptr<transport::Datagram>> datagrams_;
  std::vector<std::unique_ptr<transport::MessageTransport>> transports_;
};

}  // namespace wharf::engine
