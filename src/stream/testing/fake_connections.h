// stream/testing/fake_connections.h: Connections without sockets, for unit
// tests of the TCP transport's parts (ClientRpcs, ServerRpcs, WriteBatcher):
// a test makes connections to a Peer, lets the part under test queue frames
// on them, and reads the frames back as the kernel would take them, as a
// log ("REQUEST id=5 10@0/10 floor=3; ABORT id=5"), so that the test reads
// like the protocol. Test-only; never linked into a production binary.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "stream/config.h"
#include "stream/connection.h"
#include "stream/frame_parser.h"
#include "stream/peer.h"
#include "stream/send_queue.h"
#include "wire/stream_frame.h"

namespace wharf::stream::testing {

// A ConnectionHandler that accepts every frame and keeps nothing (the fake
// connections never read).
class IgnoreFrames final : public ConnectionHandler {
 public:
  Status OnHello(Connection&, const wire::StreamHello&) override { return OkStatus(); }
  Status OnFrame(Connection&, const wire::StreamFrameHeader&) override { return OkStatus(); }
  Result<FrameParser::Decision> OnMessageStart(Connection&,
                                               const wire::StreamFrameHeader&) override {
    return FrameParser::Decision::kAccept;
  }
  void OnMessage(Connection&, wire::StreamFrameType, uint64_t, Buffer) override {}
  void OnMessageRefused(Connection&, wire::StreamFrameType, uint64_t, uint32_t) override {}
};

// Owns the connections it makes (destroyed with it, after the test's parts
// are done with them). Single-threaded.
class FakeConnections {
 public:
  explicit FakeConnections(const TcpConfig& config) : config_(config) {}

  // A connection to `peer` (no socket) in `state`, listed in
  // peer.connections, whose peer process is `remote_instance`.
  Connection& Add(Peer& peer, Connection::State state = Connection::State::kOpen,
                  uint64_t remote_instance = 1, bool outbound = true);
  // Takes up to `max_bytes` of what `conn` has queued as one write would
  // (REQUEST headers carrying `ack_floor`), and describes the frames whose
  // header was taken (wire::DescribeStreamHeader), joined by "; ". Messages
  // whose last byte was taken are appended to *finished when given.
  std::string Take(Connection& conn, uint64_t ack_floor = 0,
                   size_t max_bytes = std::numeric_limits<size_t>::max(),
                   std::vector<SendQueue::Finished>* finished = nullptr);

 private:
  // Where the reading of one connection's stream stands between Takes.
  struct Reader {
    std::vector<std::byte> header;  // bytes of a header not yet whole
    size_t skip = 0;                // payload bytes of the current frame still to come
  };

  const TcpConfig& config_;
  IncomingBudget budget_{.limit = uint64_t{1} << 30};
  IgnoreFrames handler_;
  std::vector<std::unique_ptr<Connection>> conns_;
  std::unordered_map<uint64_t, Reader> readers_;  // by connection id
  uint64_t next_id_ = 1;
};

}  // namespace wharf::stream::testing
