// Connection: the read and write loops over one socket.
#include "stream/connection.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace wharf::stream {

Connection::Connection(uint64_t id, int fd, bool outbound, const transport::NetAddress& remote,
                       State initial, uint32_t chunk_bytes, const FrameParser::Limits& limits,
                       IncomingBudget* budget, transport::LargeBufferPool* pool,
                       ConnectionHandler* handler, transport::tcp::TcpSyscalls* syscalls)
    : id_(id),
      fd_(fd),
      outbound_(outbound),
      remote_(remote),
      state_(initial),
      handler_(handler),
      syscalls_(syscalls),
      queue_(chunk_bytes),
      parser_(limits, budget, this, pool) {}

Connection::~Connection() { CloseSocket(); }

void Connection::CloseSocket() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  state_ = State::kClosed;
}

Connection::IoResult Connection::Read(std::span<std::byte> scratch, size_t max_bytes) {
  IoResult result;
  while (result.bytes < max_bytes && !closed()) {
    std::span<std::byte> direct = parser_.DirectTarget();
    iovec iov[2];
    int count = 0;
    // While a large payload lands in its message, read only a little past
    // it into scratch (the next header and the start of the next chunk),
    // so that most bytes are never copied. Between chunks of a large
    // message, likewise only up to a little past the next header.
    const size_t scratch_bytes =
        std::min(scratch.size(), direct.empty() ? parser_.ScratchLimit() : FrameParser::kMinDirectBytes);
    if (!direct.empty()) iov[count++] = {direct.data(), direct.size()};
    iov[count++] = {scratch.data(), scratch_bytes};
    const size_t offered = direct.size() + scratch_bytes;
    const ssize_t got = syscalls_->Readv(fd_, iov, count);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        result.drained = true;
        return result;
      }
      result.io = Io::kSocketError;
      result.sys_error = errno;
      result.error = ErrnoToStatus(result.sys_error, "read from " + remote_.ToString());
      return result;
    }
    if (got == 0) {
      result.error = parser_.OnEof();
      result.io = result.error.ok() ? Io::kPeerClosed : Io::kProtocolError;
      return result;
    }
    const size_t n = static_cast<size_t>(got);
    result.bytes += n;
    ++result.calls;
    const size_t into_message = std::min(n, direct.size());
    Status parsed = parser_.CommitDirect(into_message);
    if (parsed.ok() && n > into_message) parsed = parser_.Consume(scratch.first(n - into_message));
    if (!parsed.ok()) {
      result.io = Io::kProtocolError;
      result.error = std::move(parsed);
      return result;
    }
    if (n < offered) {
      result.drained = true;
      return result;
    }
  }
  return result;
}

Connection::IoResult Connection::Write(size_t batch_bytes, uint64_t ack_floor,
                                       std::vector<SendQueue::Finished>* finished) {
  IoResult result;
  while (queue_.HasWork() && !closed()) {
    bool carried = false;
    const size_t count = queue_.Prepare(iov_, batch_bytes, ack_floor, &carried);
    if (count == 0) break;
    size_t offered = 0;
    for (size_t i = 0; i < count; ++i) offered += iov_[i].iov_len;
    const ssize_t sent = syscalls_->Writev(fd_, iov_.data(), static_cast<int>(count));
    if (sent < 0) {
      const int err = errno;
      queue_.Commit(0, finished);
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
        result.blocked = true;
        return result;
      }
      result.io = Io::kSocketError;
      result.sys_error = err;
      result.error = ErrnoToStatus(err, "write to " + remote_.ToString());
      return result;
    }
    const size_t n = static_cast<size_t>(sent);
    queue_.Commit(n, finished);
    result.bytes += n;
    if (n > 0) ++result.calls;
    if (carried && n > 0) result.carried_floor = true;
    if (n < offered) {
      result.blocked = true;
      return result;
    }
  }
  return result;
}

Status Connection::OnHello(const wire::StreamHello& hello) { return handler_->OnHello(*this, hello); }

Status Connection::OnFrame(const wire::StreamFrameHeader& header) {
  return handler_->OnFrame(*this, header);
}

Result<FrameParser::Decision> Connection::OnMessageStart(const wire::StreamFrameHeader& first) {
  return handler_->OnMessageStart(*this, first);
}

void Connection::OnMessage(wire::StreamFrameType type, uint64_t rpc_id, Buffer message) {
  handler_->OnMessage(*this, type, rpc_id, std::move(message));
}

void Connection::OnMessageRefused(wire::StreamFrameType type, uint64_t rpc_id, uint32_t length) {
  handler_->OnMessageRefused(*this, type, rpc_id, length);
}

}  // namespace wharf::stream
