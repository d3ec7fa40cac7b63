// stream/connection.h: Connection, one TCP connection of the TCP message
// transport: its socket, its state (below), its send side (SendQueue) and its
// receive side (FrameParser). It moves bytes and frames; what the frames mean
// (RPCs, at-most-once, liveness) is the transport's business, reached through
// ConnectionHandler.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/clock.h"
#include "stream/frame_parser.h"
#include "stream/send_queue.h"
#include "transport/net_address.h"
#include "transport/tcp/tcp_syscalls.h"
#include "wharf/result.h"

namespace wharf::stream {

class Connection;
struct Peer;

// What a connection's parser found, with the connection it came from.
// Implemented by TcpMessageTransport. A non-ok Status closes the connection
// as a protocol error. Callbacks may queue frames on any connection and close
// other connections, never the one calling.
class ConnectionHandler {
 public:
  virtual ~ConnectionHandler() = default;
  virtual Status OnHello(Connection& conn, const wire::StreamHello& hello) = 0;
  virtual Status OnFrame(Connection& conn, const wire::StreamFrameHeader& header) = 0;
  virtual Result<FrameParser::Decision> OnMessageStart(Connection& conn,
                                                       const wire::StreamFrameHeader& first) = 0;
  virtual void OnMessage(Connection& conn, wire::StreamFrameType type, uint64_t rpc_id,
                         Buffer message) = 0;
  virtual void OnMessageRefused(Connection& conn, wire::StreamFrameType type, uint64_t rpc_id,
                                uint32_t length) = 0;
};

// Owned by ConnectionTable (which destroys it only outside of its callbacks).
// Single-threaded.
class Connection final : private FrameParser::Sink {
 public:
  // kConnecting -> kHandshake -> kOpen -> kClosed; any state may go to
  // kClosed. Inbound connections start in kHandshake.
  enum class State : uint8_t {
    kConnecting,  // outbound: non-blocking connect under way
    kHandshake,   // TCP is up and our HELLO queued; the peer's HELLO not yet read
    kOpen,        // HELLOs exchanged: requests and responses may be queued
    kClosed,      // socket closed; kept only until the transport drops it
  };

  // How a Read or Write ended.
  enum class Io : uint8_t {
    kOk,             // did what it could (possibly nothing: EAGAIN)
    kPeerClosed,     // orderly EOF between frames
    kSocketError,    // the kernel reported an error (reset, timeout...)
    kProtocolError,  // the peer sent something malformed (error says what)
  };
  struct IoResult {
    Io io = Io::kOk;
    size_t bytes = 0;
    size_t calls = 0;            // system calls that moved bytes
    bool drained = false;        // Read: the socket had no more (EAGAIN or a short read)
    bool blocked = false;        // Write: the kernel took less than offered
    bool carried_floor = false;  // Write: a REQUEST header carried the floor
    Status error;
    int sys_error = 0;           // kSocketError: the errno (transport::tcp::PeerGone reads it)
  };

  Connection(uint64_t id, int fd, bool outbound, const transport::NetAddress& remote,
             State initial, uint32_t chunk_bytes, const FrameParser::Limits& limits,
             IncomingBudget* budget, transport::LargeBufferPool* pool,
             ConnectionHandler* handler, transport::tcp::TcpSyscalls* syscalls);
  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  uint64_t id() const { return id_; }
  int fd() const { return fd_; }
  bool outbound() const { return outbound_; }
  State state() const { return state_; }
  bool open() const { return state_ == State::kOpen; }
  bool closed() const { return state_ == State::kClosed; }
  // The socket's remote address (for inbound connections an ephemeral port).
  const transport::NetAddress& remote() const { return remote_; }

  void set_state(State state) { state_ = state; }
  // Closes the socket (idempotent); the object lives on as kClosed.
  void CloseSocket();

  SendQueue& queue() { return queue_; }
  const SendQueue& queue() const { return queue_; }
  FrameParser& parser() { return parser_; }
  const FrameParser& parser() const { return parser_; }

  // Reads until about `max_bytes` arrived or the socket is drained, feeding
  // the parser; large payloads are read straight into their message. Other
  // bytes go through `scratch` (borrowed for the call), at most its size per
  // system call, and less between chunks of a bulk message
  // (FrameParser::ScratchLimit).
  IoResult Read(std::span<std::byte> scratch, size_t max_bytes);
  // Writes what the queue holds, in writev batches of about `batch_bytes`,
  // until it is empty or the kernel stops taking bytes. Messages whose last
  // byte went out are appended to *finished.
  IoResult Write(size_t batch_bytes, uint64_t ack_floor, std::vector<SendQueue::Finished>* finished);

  // --- the transport's bookkeeping, kept here to avoid side tables ---
  // Set by ConnectionTable: opened_ns, last_read_ns (then by reads),
  // deadline_ns, epoll_out. By WriteBatcher and the transport: dirty. By
  // the transport: the rest.
  Peer* peer = nullptr;          // set at connect (outbound) or HELLO (inbound)
  uint64_t remote_instance = 0;  // from the peer's HELLO
  TimeNs opened_ns = 0;          // when TCP came up (or the dial started)
  TimeNs last_read_ns = 0;       // when bytes last arrived (opened_ns before any): idleness
  TimeNs deadline_ns = kNever;   // kConnecting/kHandshake: give up at this time
  bool epoll_out = false;        // EPOLLOUT registered
  bool dirty = false;            // on the WriteBatcher's dirty list
  bool refused = false;          // a handler refused it for a cap (closed as such, not as bad input)

 private:
  // FrameParser::Sink: forwards to the handler with this connection.
  Status OnHello(const wire::StreamHello& hello) override;
  Status OnFrame(const wire::StreamFrameHeader& header) override;
  Result<FrameParser::Decision> OnMessageStart(const wire::StreamFrameHeader& first) override;
  void OnMessage(wire::StreamFrameType type, uint64_t rpc_id, Buffer message) override;
  void OnMessageRefused(wire::StreamFrameType type, uint64_t rpc_id, uint32_t length) override;

  uint64_t id_;
  int fd_;
  bool outbound_;
  transport::NetAddress remote_;
  State state_;
  ConnectionHandler* handler_;
  transport::tcp::TcpSyscalls* syscalls_;
  SendQueue queue_;
  FrameParser parser_;
  // Enough for a tail, the control run and about 30 chunks per writev.
  std::array<iovec, 64> iov_{};
};

}  // namespace wharf::stream
