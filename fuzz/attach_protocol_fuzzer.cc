// libFuzzer target for the control-socket decoder (shm/attach_protocol.h
// DecodeAttach): the bytes of one SOCK_SEQPACKET message from an application
// (or, for libwharf, from a daemon), taken raw.
//
// The checks: nothing crashes or reads past the input (ASan/UBSan), strings
// respect their limits, and whatever decodes re-encodes into bytes that
// decode to the same message (the encoders and the decoder agree).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "shm/attach_protocol.h"

namespace wharf::shm {
namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

std::vector<std::byte> Reencode(const AttachMessage& m) {
  switch (m.type) {
    case ControlType::kHello: return EncodeHello(m.hello);
    case ControlType::kWelcome: return EncodeWelcome(m.welcome);
    case ControlType::kStatsReply: return EncodeStatsReply(m.stats);
    case ControlType::kStatusReply: return EncodeStatusReply(m.text);
    case ControlType::kFault: return EncodeFault(m.fault);
    default: return EncodeRequest(m.type);
  }
}

bool Same(const AttachMessage& a, const AttachMessage& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case ControlType::kHello:
      return a.hello.address == b.hello.address && a.hello.geometry == b.hello.geometry &&
             a.hello.program == b.hello.program;
    case ControlType::kWelcome:
      return a.welcome.status == b.welcome.status && a.welcome.app_id == b.welcome.app_id &&
             a.welcome.geometry == b.welcome.geometry &&
             a.welcome.max_message_bytes == b.welcome.max_message_bytes &&
             a.welcome.address == b.welcome.address;
    case ControlType::kStatsReply:
      if (a.stats.size() != b.stats.size()) return false;
      for (size_t i = 0; i < a.stats.size(); ++i) {
        if (a.stats[i].name != b.stats[i].name || a.stats[i].value != b.stats[i].value) {
          return false;
        }
      }
      return true;
    case ControlType::kStatusReply: return a.text == b.text;
    case ControlType::kFault: return a.fault == b.fault;
    default: return true;
  }
}

}  // namespace
}  // namespace wharf::shm

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf::shm;
  wharf::Result<AttachMessage> m =
      DecodeAttach(std::as_bytes(std::span(data, size)));
  if (!m.ok()) {
    Check(!m.status().message().empty());
    return 0;
  }
  Check(m->hello.address.size() <= kMaxControlString);
  Check(m->hello.program.size() <= kMaxControlString);
  Check(m->welcome.address.size() <= kMaxControlString);
  const std::vector<std::byte> again = Reencode(*m);
  wharf::Result<AttachMessage> m2 = DecodeAttach(again);
  Check(m2.ok());
  Check(Same(*m, *m2));
  return 0;
}
