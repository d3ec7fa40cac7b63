// shm/attach_protocol.h: the messages of wharfd's control socket (the slow
// path; the data path is the rings, commands.h). One message per
// SOCK_SEQPACKET datagram (control_socket.h), encoded as a small header and
// fields in host byte order (both ends are on one host):
//
//   magic u32 "WHCP" | version u16 | type u16 | fields...
//   fields: u32/u64 integers and strings (u32 length, then the bytes)
//
// Conversation: the application connects and sends kHello; wharfd answers
// kWelcome carrying the region's memfd, or a kWelcome with an error and no
// fd. Afterwards either side may ask: kStatsRequest ->
// kStatsReply (the endpoint's counters), kStatusRequest -> kStatusReply
// (the whole daemon, as JSON, for `wharf status`; needs no attach), either
// side sends kWake when the other sleeps on a ring it just filled, and
// wharfd may send kFault before it closes a session it gave up on.
//
// Decoding checks every length against the bytes received: the other end
// may be hostile.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "shm/layout.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::shm {

inline constexpr uint32_t kControlMagic = 0x50434857;  // "WHCP" little-endian
inline constexpr uint16_t kControlVersion = 1;
// Longest string field accepted (addresses, names, messages); the status
// JSON is the exception and may use the whole message.
inline constexpr uint32_t kMaxControlString = 4096;

enum class ControlType : uint16_t {
  kHello = 1,
  kWelcome = 2,
  kStatsRequest = 3,
  kStatsReply = 4,
  kStatusRequest = 5,
  kStatusReply = 6,
  kFault = 7,
  // "Entries are waiting in a ring you sleep on": the doorbell, in both
  // directions. Sent only when the other side raised its waiting flag
  // (spsc_ring.h). A socket, not an eventfd: each end of a socket pair is
  // its own open file, so a peer cannot make our send block (it could
  // clear O_NONBLOCK on a shared eventfd); a full socket means "already
  // rung".
  kWake = 8,
};

struct HelloMsg {
  // The endpoint to open, as in EndpointOptions::address.
  std::string address;
  // The region the application asks for; wharfd may shrink the heap to its
  // limit (limits.heap_bytes) and says so in kWelcome.
  Geometry geometry;
  std::string program;  // for logs and `wharf status`
};

struct WelcomeMsg {
  Status status;  // not ok: refused (no fds follow)
  uint64_t app_id = 0;
  Geometry geometry;               // the region's, as created
  uint64_t max_message_bytes = 0;  // payload limit of the daemon's engine
  std::string address;             // the endpoint's address for peers
};

struct Counter {
  std::string name;
  uint64_t value = 0;
};

// A decoded message: its type and the fields of that type.
struct AttachMessage {
  ControlType type = ControlType::kHello;
  HelloMsg hello;                // kHello
  WelcomeMsg welcome;            // kWelcome
  std::vector<Counter> stats;    // kStatsReply
  std::string text;              // kStatusReply: JSON; kFault: why
  Status fault;                  // kFault
};

std::vector<std::byte> EncodeHello(const HelloMsg& hello);
std::vector<std::byte> EncodeWelcome(const WelcomeMsg& welcome);
std::vector<std::byte> EncodeStatsReply(const std::vector<Counter>& stats);
std::vector<std::byte> EncodeStatusReply(const std::string& json);
std::vector<std::byte> EncodeFault(const Status& why);
// Messages without fields.
std::vector<std::byte> EncodeRequest(ControlType type);

// kInvalidArgument naming what is wrong: short message, bad magic, version
// or type, a length past the end, trailing bytes.
Result<AttachMessage> DecodeAttach(std::span<const std::byte> bytes);

}  // namespace wharf::shm
