// TransportSet: building transports by scheme.
#include "engine/transport_set.h"

#include <string>

#include "homa/homa_transport.h"
#include "stream/tcp_transport.h"
#include "transport/udp/udp_datagram.h"

namespace wharf::engine {

Result<transport::MessageTransport*> TransportSet::Open(std::string_view scheme,
                                                        const transport::NetAddress& bind) {
  std::unique_ptr<transport::MessageTransport> opened;
  if (scheme == "homa") {
    transport::UdpOptions udp;
    udp.bind = bind;
    udp.mtu = config_.mtu;
    udp.recv_buffer_bytes = static_cast<int>(config_.recv_buffer_bytes);
    udp.send_buffer_bytes = static_cast<int>(config_.send_buffer_bytes);
    udp.enable_gso = config_.gso;
    udp.enable_gro = config_.gro;
    udp.hot_peer_socket = config_.hot_peer_socket;
    WHARF_ASSIGN_OR_RETURN(std::unique_ptr<transport::UdpDatagram> socket,
                           transport::UdpDatagram::Open(udp));
    WHARF_ASSIGN_OR_RETURN(opened, homa::HomaTransport::Create(config_.homa, socket.get(), clock_));
    datagrams_.push_back(std::move(socket));
  } else if (scheme == "tcp") {
    stream::TcpConfig tcp = config_.tcp;
    tcp.bind = bind;
    tcp.max_message_bytes = config_.homa.max_message_bytes;  // payload limit + frame
    WHARF_ASSIGN_OR_RETURN(opened, stream::TcpMessageTransport::Open(tcp, clock_));
  } else {
    return InvalidArgumentError("endpoint: no transport for scheme '" + std::string(scheme) + "'");
  }
  transports_.push_back(std::move(opened));
  return transports_.back().get();
}

Result<std::unique_ptr<transport::MessageTransport>> TransportSet::OpenEndpoint(
    transport::MessageTransport* primary, uint16_t endpoint_id) {
  (void)primary;
  return UnimplementedError("endpoint " + std::to_string(endpoint_id) +
                            ": several endpoints on one socket are not supported yet");
}

void TransportSet::AppendReadableFds(std::vector<int>* fds) const {
  for (const auto& t : transports_) t->AppendReadableFds(fds);
}

}  // namespace wharf::engine
