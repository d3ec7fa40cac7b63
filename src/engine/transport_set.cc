// TransportSet: sockets and transports by scheme.
#include "engine/transport_set.h"

#include <algorithm>

#include <string>

#include "homa/homa_endpoint.h"
#include "homa/homa_host.h"
#include "stream/tcp_transport.h"
#include "transport/udp/udp_datagram.h"
#include "ucx/ucx_opener.h"

namespace wharf::engine {

TransportSet::TransportSet(const EngineConfig& config, const Clock& clock)
    : config_(config), clock_(clock) {}

TransportSet::~TransportSet() = default;

Result<std::unique_ptr<transport::MessageTransport>> TransportSet::OpenEndpoint(
    std::string_view scheme, const transport::NetAddress& bind, uint16_t endpoint_id) {
  if (scheme == "homa") {
    if (bind.port() != 0) {
      for (HomaSocket& socket : homa_sockets_) {
        if (socket.datagram->LocalAddress() == bind) {
          WHARF_ASSIGN_OR_RETURN(std::unique_ptr<homa::HomaEndpoint> endpoint,
                                 socket.host->OpenEndpoint(endpoint_id));
          return std::unique_ptr<transport::MessageTransport>(std::move(endpoint));
        }
      }
    }
    transport::UdpOptions udp;
    udp.bind = bind;
    udp.mtu = config_.mtu;
    udp.recv_buffer_bytes = static_cast<int>(config_.recv_buffer_bytes);
    udp.send_buffer_bytes = static_cast<int>(config_.send_buffer_bytes);
    udp.enable_gso = config_.gso;
    udp.enable_gro = config_.gro;
    switch (config_.gro_loopback) {
      case EngineConfig::GroLoopback::kAdaptive:
        udp.loopback_gro = transport::LoopbackGro::kAdaptive;
        break;
      case EngineConfig::GroLoopback::kAlways:
        udp.loopback_gro = transport::LoopbackGro::kAlways;
        break;
      case EngineConfig::GroLoopback::kNever:
        udp.loopback_gro = transport::LoopbackGro::kNever;
        break;
    }
    udp.hot_peer_socket = config_.hot_peer_socket;
    udp.rx_timestamps = config_.rx_timestamps;
    udp.tx_timestamps = config_.tx_timestamps;
    udp.gso_copy_min_bytes = config_.gso_copy_bytes;
    HomaSocket socket;
    WHARF_ASSIGN_OR_RETURN(std::unique_ptr<transport::UdpDatagram> datagram,
                           transport::UdpDatagram::Open(udp));
    socket.datagram = std::move(datagram);
    WHARF_ASSIGN_OR_RETURN(socket.host,
                           homa::HomaHost::Create(config_.homa, socket.datagram.get(), clock_));
    socket.host->set_polled_by_owner(owner_polls_);
    WHARF_ASSIGN_OR_RETURN(std::unique_ptr<homa::HomaEndpoint> endpoint,
                           socket.host->OpenEndpoint(endpoint_id));
    homa_sockets_.push_back(std::move(socket));
    return std::unique_ptr<transport::MessageTransport>(std::move(endpoint));
  }
  if ((scheme == "tcp" || scheme == "ucx") && endpoint_id != 0) {
    return InvalidArgumentError(std::string(scheme) + "://" + bind.ToString() +
                                ": one endpoint per port; named endpoints are homa:// only");
  }
  if (scheme == "tcp") {
    stream::TcpConfig tcp = config_.tcp;
    tcp.bind = bind;
    tcp.max_message_bytes = config_.homa.max_message_bytes;  // payload limit + frame
    WHARF_ASSIGN_OR_RETURN(std::unique_ptr<stream::TcpMessageTransport> opened,
                           stream::TcpMessageTransport::Open(tcp, clock_));
    return std::unique_ptr<transport::MessageTransport>(std::move(opened));
  }
  if (scheme == "ucx") {
    ucx::UcxConfig ucx = config_.ucx;
    ucx.bind = bind;
    ucx.max_message_bytes = config_.homa.max_message_bytes;
    return ucx::OpenUcxTransport(ucx, clock_);
  }
  return InvalidArgumentError("endpoint: no transport for scheme '" + std::string(scheme) + "'");
}

void TransportSet::SetOwnerPollsSockets() {
  owner_polls_ = true;
  for (HomaSocket& socket : homa_sockets_) socket.host->set_polled_by_owner(true);
}

transport::PollResult TransportSet::PollSockets() {
  transport::PollResult all;
  all.next_deadline = kNever;
  for (HomaSocket& socket : homa_sockets_) {
    transport::PollResult r = socket.host->Poll();
    all.work += r.work;
    all.next_deadline = std::min(all.next_deadline, r.next_deadline);
    all.now = std::max(all.now, r.now);
  }
  return all;
}

}  // namespace wharf::engine
