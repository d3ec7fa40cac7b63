// FakeConnections: socketless connections and the log of what they would
// write.
#include "stream/testing/fake_connections.h"

#include <algorithm>

#include "transport/tcp/tcp_syscalls.h"

namespace wharf::stream::testing {

Connection& FakeConnections::Add(Peer& peer, Connection::State state, uint64_t remote_instance,
                                 bool outbound) {
  FrameParser::Limits limits;
  limits.max_chunk_bytes = config_.chunk_bytes;
  auto conn = std::make_unique<Connection>(
      next_id_++, /*fd=*/-1, outbound, peer.identity, state, config_.chunk_bytes, limits, &budget_,
      /*pool=*/nullptr, &handler_, &transport::tcp::TcpSyscalls::Kernel());
  conn->peer = &peer;
  conn->remote_instance = remote_instance;
  peer.connections.push_back(conn.get());
  conns_.push_back(std::move(conn));
  return *conns_.back();
}

std::string FakeConnections::Take(Connection& conn, uint64_t ack_floor, size_t max_bytes,
                                  std::vector<SendQueue::Finished>* finished) {
  std::vector<SendQueue::Finished> ignored;
  std::vector<std::byte> stream;
  size_t taken = 0;
  while (conn.queue().HasWork() && taken < max_bytes) {
    std::array<iovec, 64> iov{};
    bool carried = false;
    const size_t count = conn.queue().Prepare(iov, max_bytes - taken, ack_floor, &carried);
    if (count == 0) break;
    size_t batch = 0;
    for (size_t i = 0; i < count && taken + batch < max_bytes; ++i) {
      const size_t n = std::min(iov[i].iov_len, max_bytes - taken - batch);
      const auto* base = static_cast<const std::byte*>(iov[i].iov_base);
      stream.insert(stream.end(), base, base + n);
      batch += n;
    }
    conn.queue().Commit(batch, finished != nullptr ? finished : &ignored);
    taken += batch;
  }

  Reader& reader = readers_[conn.id()];
  std::string log;
  size_t pos = 0;
  while (pos < stream.size()) {
    if (reader.skip > 0) {
      const size_t n = std::min(reader.skip, stream.size() - pos);
      reader.skip -= n;
      pos += n;
      continue;
    }
    const size_t n = std::min(wire::kStreamHeaderBytes - reader.header.size(), stream.size() - pos);
    reader.header.insert(reader.header.end(), stream.begin() + static_cast<std::ptrdiff_t>(pos),
                         stream.begin() + static_cast<std::ptrdiff_t>(pos + n));
    pos += n;
    if (reader.header.size() < wire::kStreamHeaderBytes) break;
    Result<wire::StreamFrameHeader> header =
        wire::DecodeStreamHeader(reader.header, wire::kStreamMaxChunkLimit);
    reader.header.clear();
    if (!log.empty()) log += "; ";
    if (!header.ok()) {
      log += "BAD " + std::string(header.status().message());
      break;
    }
    log += wire::DescribeStreamHeader(*header);
    reader.skip = header->chunk_length;
  }
  return log;
}

}  // namespace wharf::stream::testing
