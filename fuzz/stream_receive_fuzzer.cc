// fuzz/stream_receive_fuzzer.cc: hostile byte streams into a TCP
// connection's receive parser (stream::FrameParser), as a peer would write
// them.
//
// The input is the stream, cut into reads at points the input also chooses
// (its first bytes); while a large payload is due, some reads go straight
// into the message's buffer (DirectTarget), as Connection::Read does. The
// sink accepts odd RPC ids and discards even ones, and discards a message
// part-way now and then. Invariants checked after every read: the parser's
// memory is what the shared budget says, never above its limit, whole
// buffers (given at a message's first chunk) never above half of it, and
// the rest never more than 2 x bytes received + one chunk per message; every delivered
// message has the length its first chunk declared; destroying the parser
// returns every byte. Nothing may crash, hang or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>

#include "fuzz_fail.h"
#include "stream/frame_parser.h"

namespace wharf::stream {
namespace {

using wharf::fuzz::Fail;

void Require(bool ok, const char* what) {
  if (!ok) Fail(what);
}

constexpr uint32_t kChunk = 4096;
constexpr uint64_t kBudget = 256 << 10;

class CheckingSink final : public FrameParser::Sink {
 public:
  Status OnHello(const wire::StreamHello&) override { return OkStatus(); }
  Status OnFrame(const wire::StreamFrameHeader& h) override {
    if (h.type == wire::StreamFrameType::kPing && h.rpc_id == 0xDEAD) {
      return InvalidArgumentError("sink refuses");  // callback errors must stop the parse
    }
    return OkStatus();
  }
  Result<FrameParser::Decision> OnMessageStart(const wire::StreamFrameHeader& first) override {
    declared[{first.type, first.rpc_id}] = first.message_length;
    return (first.rpc_id % 2) == 1 ? FrameParser::Decision::kAccept : FrameParser::Decision::kDiscard;
  }
  void OnMessage(wire::StreamFrameType type, uint64_t id, Buffer message) override {
    auto it = declared.find({type, id});
    Require(it != declared.end(), "a message that never started was delivered");
    Require(message.size() == it->second, "delivered length differs from the declared one");
    Require((id % 2) == 1, "a discarded message was delivered");
    declared.erase(it);
  }
  void OnMessageRefused(wire::StreamFrameType, uint64_t, uint32_t) override {}

  std::map<std::pair<wire::StreamFrameType, uint64_t>, uint32_t> declared;
};

void FuzzOne(const uint8_t* data, size_t size) {
  if (size < 2) return;
  // Read sizes cycle through the first two bytes (1..256 each).
  const size_t cuts[2] = {static_cast<size_t>(data[0]) + 1, static_cast<size_t>(data[1]) + 1};
  std::span<const std::byte> stream(reinterpret_cast<const std::byte*>(data + 2), size - 2);
  IncomingBudget budget{.limit = kBudget};
  CheckingSink sink;
  {
    FrameParser parser({.max_chunk_bytes = kChunk, .max_assemblies = 64}, &budget, &sink);
    size_t at = 0;
    size_t step = 0;
    uint64_t received = 0;
    while (at < stream.size()) {
      size_t n = std::min(cuts[step++ % 2], stream.size() - at);
      Status s;
      std::span<std::byte> direct = parser.DirectTarget();
      if (!direct.empty() && (step % 3) == 0) {
        n = std::min(n, direct.size());
        std::memcpy(direct.data(), stream.data() + at, n);
        s = parser.CommitDirect(n);
      } else {
        s = parser.Consume(stream.subspan(at, n));
      }
      at += n;
      received += n;
      Require(budget.used == parser.buffered_bytes(), "budget and parser disagree");
      Require(budget.used <= budget.limit, "budget exceeded");
      // Whole buffers (a message's full length, given at its first chunk)
      // are charged in full but capped at half the budget (whole_used);
      // everything else grows with what arrived.
      Require(budget.whole_used <= budget.limit / 2, "whole buffers beyond half the budget");
      Require(parser.buffered_bytes() <=
                  budget.whole_used + 2 * received + kChunk * (parser.assemblies() + 1),
              "memory beyond whole buffers + 2 x received + a chunk per message");
      if (!s.ok()) {
        Require(!s.message().empty(), "error without a message");
        break;  // the connection would close here
      }
      if ((step % 7) == 0) parser.Discard(wire::StreamFrameType::kRequest, 1);
    }
    (void)parser.OnEof();
  }
  Require(budget.used == 0, "memory not returned when the parser died");
}

}  // namespace
}  // namespace wharf::stream

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  wharf::stream::FuzzOne(data, size);
  return 0;
}
