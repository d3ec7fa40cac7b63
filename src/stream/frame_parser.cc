// FrameParser: header accumulation, chunk bookkeeping, buffer growth under
// the shared budget, and message completion.
#include "stream/frame_parser.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace wharf::stream {
namespace {

std::string U(uint64_t v) { return std::to_string(v); }

}  // namespace

FrameParser::FrameParser(const Limits& limits, IncomingBudget* budget, Sink* sink,
                         transport::LargeBufferPool* pool)
    : limits_(limits), budget_(budget), sink_(sink), pool_(pool) {}

FrameParser::~FrameParser() {
  for (auto& [key, a] : assemblies_) ReleaseBuffer(a);
}

Status FrameParser::Consume(std::span<const std::byte> bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t left = bytes.size() - pos;
    switch (state_) {
      case State::kHeader:
      case State::kHelloBody: {
        const size_t want =
            (state_ == State::kHeader ? wire::kStreamHeaderBytes : wire::kStreamHelloBytes) -
            partial_bytes_;
        const size_t take = std::min(want, left);
        std::memcpy(partial_.data() + partial_bytes_, bytes.data() + pos, take);
        partial_bytes_ += take;
        pos += take;
        if (take < want) break;
        partial_bytes_ = 0;
        if (state_ == State::kHeader) {
          WHARF_RETURN_IF_ERROR(OnHeader());
        } else {
          Result<wire::StreamHello> hello =
              wire::DecodeStreamHello(std::span(partial_).first(wire::kStreamHelloBytes));
          if (!hello.ok()) return hello.status();
          hello_seen_ = true;
          state_ = State::kHeader;
          WHARF_RETURN_IF_ERROR(sink_->OnHello(*hello));
        }
        break;
      }
      case State::kPayload: {
        const size_t take = std::min<size_t>(payload_left_, left);
        Assembly& a = assemblies_.at(chunk_key_);
        if (!a.discard) std::memcpy(a.buffer.data() + a.received, bytes.data() + pos, take);
        a.received += static_cast<uint32_t>(take);
        payload_left_ -= static_cast<uint32_t>(take);
        pos += take;
        if (payload_left_ == 0) WHARF_RETURN_IF_ERROR(FinishChunk());
        break;
      }
    }
  }
  return OkStatus();
}

std::span<std::byte> FrameParser::DirectTarget() {
  if (state_ != State::kPayload || payload_left_ < kMinDirectBytes) return {};
  Assembly& a = assemblies_.at(chunk_key_);
  if (a.discard) return {};
  return {a.buffer.data() + a.received, payload_left_};
}

size_t FrameParser::ScratchLimit() const {
  if (bulk_assemblies_ == 0) return SIZE_MAX;
  switch (state_) {
    case State::kPayload:
      return payload_left_ + wire::kStreamHeaderBytes + kMinDirectBytes;
    case State::kHeader:
      return wire::kStreamHeaderBytes - partial_bytes_ + kMinDirectBytes;
    case State::kHelloBody:
      break;
  }
  return SIZE_MAX;
}

Status FrameParser::CommitDirect(size_t n) {
  if (n == 0) return OkStatus();
  if (state_ != State::kPayload || n > payload_left_) {
    return InternalError("stream: direct read of " + U(n) + " bytes outside the chunk");
  }
  Assembly& a = assemblies_.at(chunk_key_);
  a.received += static_cast<uint32_t>(n);
  payload_left_ -= static_cast<uint32_t>(n);
  if (payload_left_ == 0) return FinishChunk();
  return OkStatus();
}

Status FrameParser::OnEof() const {
  if (state_ == State::kPayload) {
    return InvalidArgumentError("connection closed inside the payload of " +
                                wire::DescribeStreamHeader(chunk_) + " (" + U(payload_left_) +
                                " bytes missing)");
  }
  if (partial_bytes_ > 0) {
    return InvalidArgumentError(
        "connection closed inside a frame " +
        std::string(state_ == State::kHeader ? "header" : "HELLO body") + " (" +
        U(partial_bytes_) + " bytes of it arrived)");
  }
  return OkStatus();
}

Status FrameParser::OnHeader() {
  Result<wire::StreamFrameHeader> decoded =
      wire::DecodeStreamHeader(partial_, limits_.max_chunk_bytes);
  if (!decoded.ok()) return decoded.status();
  const wire::StreamFrameHeader& h = *decoded;
  if (!hello_seen_) {
    if (h.type != wire::StreamFrameType::kHello) {
      return InvalidArgumentError("first frame is " +
                                  std::string(wire::StreamFrameTypeName(h.type)) +
                                  ", expected HELLO");
    }
    state_ = State::kHelloBody;
    return OkStatus();
  }
  if (h.type == wire::StreamFrameType::kHello) return InvalidArgumentError("a second HELLO");
  WHARF_RETURN_IF_ERROR(sink_->OnFrame(h));
  switch (h.type) {
    case wire::StreamFrameType::kRequest:
    case wire::StreamFrameType::kResponse:
      return StartChunk(h);
    case wire::StreamFrameType::kAbort: {
      const wire::StreamFrameType aborted = (h.flags & wire::kStreamFlagAbortResponse) != 0
                                                ? wire::StreamFrameType::kResponse
                                                : wire::StreamFrameType::kRequest;
      auto it = assemblies_.find(Key{aborted, h.rpc_id});
      if (it != assemblies_.end()) {
        ReleaseBuffer(it->second);
        assemblies_.erase(it);
      }
      return OkStatus();
    }
    default:
      return OkStatus();
  }
}

Status FrameParser::StartChunk(const wire::StreamFrameHeader& h) {
  const Key key{h.type, h.rpc_id};
  auto it = assemblies_.find(key);
  if (h.chunk_offset == 0) {
    if (it != assemblies_.end()) {
      return InvalidArgumentError(std::string(wire::StreamFrameTypeName(h.type)) + " id " +
                                  U(h.rpc_id) + " started again before it finished");
    }
    if (assemblies_.size() >= limits_.max_assemblies) {
      return InvalidArgumentError("more than " + U(limits_.max_assemblies) +
                                  " messages started and unfinished on one connection");
    }
    WHARF_ASSIGN_OR_RETURN(Decision decision, sink_->OnMessageStart(h));
    Assembly fresh;
    fresh.total = h.message_length;
    fresh.discard = decision == Decision::kDiscard;
    if (!fresh.discard) {
      TryWhole(fresh);
      if (fresh.total > kBulkBytes) {
        fresh.bulk = true;
        ++bulk_assemblies_;
      }
    }
    it = assemblies_.emplace(key, std::move(fresh)).first;
  } else {
    if (it == assemblies_.end()) {
      return InvalidArgumentError(wire::DescribeStreamHeader(h) +
                                  ": continues a message that never started");
    }
    if (h.message_length != it->second.total) {
      return InvalidArgumentError(wire::DescribeStreamHeader(h) + ": message_length changed from " +
                                  U(it->second.total));
    }
    if (h.chunk_offset != it->second.received) {
      return InvalidArgumentError(wire::DescribeStreamHeader(h) + ": expected offset " +
                                  U(it->second.received));
    }
  }
  Assembly& a = it->second;
  if (!a.discard && h.chunk_length > 0) Grow(key, a, uint64_t{a.received} + h.chunk_length);
  chunk_ = h;
  chunk_key_ = key;
  payload_left_ = h.chunk_length;
  state_ = State::kPayload;
  if (payload_left_ == 0) return FinishChunk();
  return OkStatus();
}

void FrameParser::TryWhole(Assembly& a) {
  if (a.total > limits_.max_whole_bytes || !budget_->TryReserveWhole(a.total)) return;
  buffered_bytes_ += a.total;
  a.whole = true;
  a.buffer = pool_ != nullptr && a.total >= transport::LargeBufferPool::kMinBytes
                 ? pool_->Take(a.total)
                 : Buffer::Allocate(a.total);
}

void FrameParser::Grow(const Key& key, Assembly& a, uint64_t need) {
  const uint64_t have = a.buffer.size();
  if (need <= have) return;
  // Never more than twice what actually arrived (plus this chunk), never
  // more than the message: a claimed length alone buys nothing.
  const uint64_t capacity =
      std::min<uint64_t>(a.total, std::max<uint64_t>(need, 2ull * a.received));
  const uint64_t extra = capacity - have;
  if (!budget_->TryReserve(extra)) {
    Refuse(key, a);
    return;
  }
  buffered_bytes_ += extra;
  Buffer grown = Buffer::Allocate(capacity);
  if (a.received > 0) std::memcpy(grown.data(), a.buffer.data(), a.received);
  a.buffer = std::move(grown);
}

void FrameParser::Discard(wire::StreamFrameType type, uint64_t rpc_id) {
  auto it = assemblies_.find(Key{type, rpc_id});
  if (it == assemblies_.end() || it->second.discard) return;
  ReleaseBuffer(it->second);
  it->second.discard = true;
}

void FrameParser::Refuse(const Key& key, Assembly& a) {
  ReleaseBuffer(a);
  a.discard = true;
  sink_->OnMessageRefused(key.type, key.rpc_id, a.total);
}

void FrameParser::ReleaseBuffer(Assembly& a) {
  if (a.bulk) {
    a.bulk = false;
    --bulk_assemblies_;
  }
  if (a.whole) {
    budget_->ReleaseWhole(a.buffer.size());
    a.whole = false;
  } else {
    budget_->Release(a.buffer.size());
  }
  buffered_bytes_ -= a.buffer.size();
  a.buffer = Buffer();
}

Status FrameParser::FinishChunk() {
  state_ = State::kHeader;
  auto it = assemblies_.find(chunk_key_);
  Assembly& a = it->second;
  if (a.received < a.total) return OkStatus();
  const Key key = chunk_key_;
  const bool discard = a.discard;
  // The message leaves the parser: it is no longer partially received.
  if (a.bulk) --bulk_assemblies_;
  if (a.whole) {
    budget_->ReleaseWhole(a.buffer.size());
  } else {
    budget_->Release(a.buffer.size());
  }
  buffered_bytes_ -= a.buffer.size();
  Buffer message = std::move(a.buffer);
  assemblies_.erase(it);
  if (discard) return OkStatus();
  if (message.size() == 0) message = Buffer::Allocate(0);
  sink_->OnMessage(key.type, key.rpc_id, std::move(message));
  return OkStatus();
}

}  // namespace wharf::stream
