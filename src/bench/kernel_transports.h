// bench/kernel_transports.h: the kernel baselines of `wharf bench
// cluster` (issue 11), plain sockets with nothing of wharf:
//
// - kernel-udp: a message is cut into datagrams that fit a 1500-byte MTU
//   (kernel_udp_reassembly.h), the server reassembles each message per
//   (client address, RPC id) and echoes it back cut the same way. No
//   retransmission: a lost datagram means the RPC never completes (the
//   driver counts it unfinished). kernel_udp_transport.cc.
// - kernel-tcp: one connection per (client thread, server host), as Homa's
//   cp_node TCP mode; frames of a 16-byte header and the message; the
//   server is one epoll thread echoing each whole message back on its
//   connection. kernel_tcp_transport.cc.
//
// Both servers run on their own thread until Stop; both LoadTransports are
// single-threaded and wait in poll(2) up to the driver's deadline.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/cluster_load.h"
#include "bench/cluster_transports.h"
#include "bench/sockets.h"
#include "wharf/result.h"

namespace wharf::bench {

// kernel-tcp frame header (little-endian): u32 magic, u32 length (of the
// message that follows), u64 rpc id (the client's; echoed unchanged).
inline constexpr size_t kKernelTcpHeaderBytes = 16;
inline constexpr uint32_t kKernelTcpMagic = 0x3154'4b57;  // "WKT1"
// Longer frames are malformed: the server closes the connection. 64 MiB,
// wharf's homa.max_message_bytes: the full workloads reach 29.4 MB.
inline constexpr uint64_t kKernelTcpMaxMessageBytes = 64 << 20;

// An echo server with its bound port and counters, for tests and the
// node's summary.
class KernelEchoServer : public EchoServer {
 public:
  virtual uint16_t port() const = 0;
};

// Serves kernel-udp echo on ip:port (port 0: any). `clock` times the
// reassembly's idle timeout. `response_bytes` > 0: every request is
// answered with that many (filler) bytes under its RPC id instead of its
// echo (--response-size); at most kKernelUdpMaxMessageBytes.
Result<std::unique_ptr<KernelEchoServer>> StartKernelUdpEchoServer(const std::string& ip,
                                                                   uint16_t port,
                                                                   const Clock& clock,
                                                                   uint64_t response_bytes = 0);
// A kernel-udp client bound to local_ip, sending to `servers` (by host).
Result<std::unique_ptr<LoadTransport>> OpenKernelUdpTransport(const std::string& local_ip,
                                                              std::vector<SocketAddress> servers,
                                                              const Clock& clock,
                                                              int max_outstanding);

// Serves kernel-tcp echo on ip:port (port 0: any). `clock` times idle
// connections. `response_bytes` > 0: every request frame is answered with
// a frame of that many (filler) bytes and the request's RPC id instead of
// its echo (--response-size); at most kKernelTcpMaxMessageBytes.
Result<std::unique_ptr<KernelEchoServer>> StartKernelTcpEchoServer(const std::string& ip,
                                                                   uint16_t port,
                                                                   const Clock& clock,
                                                                   uint64_t response_bytes = 0);
// A kernel-tcp client: connects to servers[h] (non-blocking) at the first
// RPC to host h, from local_ip.
Result<std::unique_ptr<LoadTransport>> OpenKernelTcpTransport(const std::string& local_ip,
                                                              std::vector<SocketAddress> servers,
                                                              const Clock& clock,
                                                              int max_outstanding);

}  // namespace wharf::bench
