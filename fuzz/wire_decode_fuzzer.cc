// fuzz/wire_decode_fuzzer.cc: libFuzzer target for wire::Decode and
// wire::DecodeUcxHeader and the ucx:// region bodies.
//
// Feeds arbitrary bytes to Decode, Describe and DescribeVerbose (none may
// crash or read out of bounds). When Decode accepts the bytes, the packet must
// survive a round trip: Encode succeeds with exactly the input's size, the
// encoding differs from the input only in reserved/pad bytes (which Encode
// zeroes), and decoding it again yields the same fields. Any violation aborts,
// because it is a real codec bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "fuzz_fail.h"
#include "wire/packet.h"
#include "wire/ucx_header.h"
#include "wire/ucx_region.h"

namespace wharf::wire {
namespace {

using wharf::fuzz::Fail;

void Require(bool ok, const char* what) {
  if (!ok) Fail(what);
}

bool SameCommon(const CommonHeader& a, const CommonHeader& b) {
  return a.type == b.type && a.flags == b.flags && a.sport == b.sport && a.dport == b.dport &&
         a.rpc_id == b.rpc_id;
}

bool SameBody(const Body& a, const Body& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<Data>(&a)) {
    const auto& y = std::get<Data>(b);
    const DataHeader& h = x->header;
    const DataHeader& k = y.header;
    if (h.message_length != k.message_length || h.offset != k.offset || h.incoming != k.incoming ||
        h.cutoff_version != k.cutoff_version || h.ack != k.ack || h.ack_floor != k.ack_floor ||
        x->payload.size() != y.payload.size()) {
      return false;
    }
    for (size_t i = 0; i < x->payload.size(); ++i) {
      if (x->payload[i] != y.payload[i]) return false;
    }
    return true;
  }
  if (const auto* x = std::get_if<Grant>(&a)) {
    const auto& y = std::get<Grant>(b);
    return x->offset == y.offset && x->priority == y.priority && x->flags == y.flags;
  }
  if (const auto* x = std::get_if<Resend>(&a)) {
    const auto& y = std::get<Resend>(b);
    return x->offset == y.offset && x->length == y.length && x->priority == y.priority;
  }
  if (const auto* x = std::get_if<Cutoffs>(&a)) {
    const auto& y = std::get<Cutoffs>(b);
    return x->unsched_cutoffs == y.unsched_cutoffs && x->version == y.version;
  }
  if (const auto* x = std::get_if<AckList>(&a)) {
    const auto& y = std::get<AckList>(b);
    if (x->count != y.count) return false;
    for (size_t i = 0; i < x->count; ++i) {
      if (!(x->acks[i] == y.acks[i])) return false;
    }
    return true;
  }
  return true;  // RPC_UNKNOWN, BUSY, NEED_ACK carry no fields
}

// Reserved/pad byte offsets, written out from the drawing in packet.h rather
// than taken from packet.cc, so the check is independent of the code under test.
bool IsPadByte(PacketType type, size_t at) {
  if (at == 3) return true;  // common header: reserved
  switch (type) {
    case PacketType::kGrant:
      return at == 22 || at == 23;
    case PacketType::kResend:
      return at >= 25 && at <= 27;
    case PacketType::kCutoffs:
      return at == 50 || at == 51;
    case PacketType::kAck:
      if (at == 18 || at == 19) return true;
      return at >= 20 && (at - 20) % 12 >= 10;  // each entry's trailing pad u16
    default:
      return false;
  }
}

void CheckRoundTrip(std::span<const std::byte> in, const Packet& first) {
  std::vector<std::byte> out(in.size());
  Result<size_t> n = Encode(first, out);
  Require(n.ok(), "Encode rejected a packet that Decode accepted");
  Require(*n == in.size(), "Encode wrote a different size than was decoded");
  for (size_t i = 0; i < in.size(); ++i) {
    if (IsPadByte(first.common.type, i)) {
      Require(out[i] == std::byte{0}, "Encode left a pad byte non-zero");
    } else {
      Require(out[i] == in[i], "re-encoded bytes differ from the input outside pad bytes");
    }
  }
  Result<Packet> second = Decode(out);
  Require(second.ok(), "Decode rejected what Encode produced");
  Require(SameCommon(first.common, second->common), "common header changed in round trip");
  Require(SameBody(first.body, second->body), "body changed in round trip");
  Require(Describe(out) == Describe(in), "Describe changed in round trip");

  if (const auto* d = std::get_if<Data>(&first.body)) {
    std::vector<std::byte> header(kDataHeaderBytes);
    Require(EncodeDataHeader(first.common, d->header, header).ok(),
            "EncodeDataHeader rejected a decoded DATA header");
    for (size_t i = 0; i < kDataHeaderBytes; ++i) {
      Require(header[i] == out[i], "EncodeDataHeader differs from Encode");
    }
  }
}

void FuzzOne(std::span<const std::byte> in) {
  const std::string brief = Describe(in);
  const std::string verbose = DescribeVerbose(in);
  Result<CommonHeader> common = DecodeCommonHeader(in);
  Result<Packet> packet = Decode(in);

  Require((brief == "MALFORMED") == !packet.ok(), "Describe disagrees with Decode");
  Require((verbose.rfind("MALFORMED: ", 0) == 0) == !packet.ok(),
          "DescribeVerbose disagrees with Decode");
  if (!packet.ok()) {
    Require(packet.status().code() == StatusCode::kInvalidArgument,
            "Decode failed with a code other than InvalidArgument");
    Require(!packet.status().message().empty(), "Decode error without a message");
    return;
  }
  Require(common.ok(), "DecodeCommonHeader rejected a packet that Decode accepted");
  Require(SameCommon(*common, packet->common), "DecodeCommonHeader disagrees with Decode");
  CheckRoundTrip(in, *packet);
}

// The same bytes as a ucx:// header (wire/ucx_header.h): a header that
// decodes must encode back to exactly those bytes (it has no bytes that
// encoding would change).
void FuzzUcxHeader(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Result<UcxHeader> h = DecodeUcxHeader(bytes);
  if (!h.ok()) return;
  const UcxHeaderBytes again = EncodeUcxHeader(*h);
  Require(std::string_view(again.data(), again.size()) == bytes, "ucx header round trip");
}

// The same bytes as each remote-memory body (wire/ucx_region.h): one that
// decodes encodes back to exactly those bytes.
void FuzzUcxRegionBodies(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto ask = DecodeRegionAsk(bytes); ask.ok()) {
    Require(EncodeRegionAsk(*ask) == bytes, "region ask round trip");
  }
  if (auto grant = DecodeRegionGrant(bytes); grant.ok()) {
    Require(EncodeRegionGrant(*grant) == bytes, "region grant round trip");
  }
  if (auto release = DecodeRegionRelease(bytes); release.ok()) {
    Require(EncodeRegionRelease(*release) == bytes, "region release round trip");
  }
  if (auto imm = DecodeRegionImmediate(bytes); imm.ok()) {
    Require(EncodeRegionImmediate(*imm) == bytes, "immediate round trip");
  }
}

}  // namespace
}  // namespace wharf::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  wharf::wire::FuzzOne(std::span(reinterpret_cast<const std::byte*>(data), size));
  wharf::wire::FuzzUcxHeader(data, size);
  wharf::wire::FuzzUcxRegionBodies(data, size);
  return 0;
}
