// engine/transport_set.h: TransportSet, the sockets an engine runs over and
// the transports on them, built from the engine's configuration by URI
// scheme: "homa" (a UDP socket under a homa::HomaHost, on which any number
// of endpoints open, told apart by endpoint id), "tcp" (a
// TcpMessageTransport, one endpoint per listening port), "ucx" (a ucx://
// transport through ucx/ucx_opener.h, one endpoint per port; refused with
// a clear error by a build without UCX). The only place
// above src/transport/ that names a concrete transport; hosts see
// MessageTransport, fds and counters.
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

namespace wharf::homa {
class HomaHost;
}  // namespace wharf::homa

namespace wharf::engine {

// Owned by the engine's host. Not thread-safe: the host serialises calls, as
// for the engine. Outlives every transport it handed out.
class TransportSet {
 public:
  // Borrows `config` and `clock`, which outlive it.
  TransportSet(const EngineConfig& config, const Clock& clock);
  ~TransportSet();

  // Opens endpoint `endpoint_id` (0: the default) of `scheme` at `bind`: on
  // the socket this set already has bound to exactly that address (homa), or
  // on a new one (port 0: any). The caller owns the endpoint. kAlreadyExists
  // when that endpoint is open; InvalidArgument for a scheme this set has no
  // transport for, or a named endpoint on tcp://.
  Result<std::unique_ptr<transport::MessageTransport>> OpenEndpoint(
      std::string_view scheme, const transport::NetAddress& bind, uint16_t endpoint_id);

  // From now on the owner polls the homa sockets itself (PollSockets), once
  // per pass, and endpoints' Poll() reads none (homa::HomaHost::
  // set_polled_by_owner): for a host serving many endpoints on one socket.
  void SetOwnerPollsSockets();
  // One poll of every homa socket (after SetOwnerPollsSockets); merged.
  transport::PollResult PollSockets();

 private:
  struct HomaSocket {
    std::unique_ptr<transport::Datagram> datagram;
    std::unique_ptr<homa::HomaHost> host;  // borrows datagram
  };

  const EngineConfig& config_;
  const Clock& clock_;
  // The homa sockets and their protocol hosts; the endpoints on them are
  // their callers', destroyed first.
  std::vector<HomaSocket> homa_sockets_;
  bool owner_polls_ = false;
};

}  // namespace wharf::engine
