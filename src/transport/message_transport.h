// transport/message_transport.h: MessageTransport, the interface the engine
// drives: reliable request/response messages to a peer address. Two
// implementations: homa/ (the receiver-driven protocol over a Datagram) and
// stream/ (framed messages over TCP). The engine picks one per peer by the
// address's URI scheme and never sees packets, sockets or frames.
//
// Semantics every implementation keeps: a request is delivered to the server
// at most once, even across retransmission or reconnection; every request
// ends in exactly one kResponse or kFailed event (unless cancelled); a peer
// that stays silent past the configured timeout fails its RPCs with
// kUnavailable.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "transport/net_address.h"
#include "wharf/buffer.h"
#include "wharf/result.h"

namespace wharf::transport {

class RemoteMemory;  // transport/remote_memory.h

// Identifies a server-side RPC: the client's address, its port (0 where the
// transport has none) and its RPC id.
struct ServerRpcKey {
  NetAddress client;
  uint16_t client_port = 0;
  uint64_t client_id = 0;
  friend bool operator==(const ServerRpcKey&, const ServerRpcKey&) = default;
};

struct ServerRpcKeyHash {
  size_t operator()(const ServerRpcKey& k) const noexcept {
    return std::hash<NetAddress>()(k.client) ^ (k.client_id * 0x9e3779b97f4a7c15ULL) ^
           k.client_port;
  }
};

// The priority a message travels at: 0 (lowest) to 7 (highest), which
// transports over IP mark as the DSCP class selector CS0 to CS7 (udp's
// priority, datagram.h), or kPriorityBySize: the transport's own choice
// (homa://: by the message's length, from the receiver's cutoffs). It
// applies to what the sender chooses: over homa://, the unscheduled part of
// a message; the receiver's grants set the rest. tcp:// carries one stream
// per peer whose packets all have the socket's DSCP, and the same-host
// switch sends no packets: both ignore it.
using MessagePriority = int8_t;
inline constexpr MessagePriority kPriorityBySize = -1;
inline constexpr MessagePriority kMaxMessagePriority = 7;
// 0..7 or kPriorityBySize: what SendOptions and SendResponse accept.
constexpr bool IsMessagePriority(MessagePriority p) {
  return p == kPriorityBySize || (p >= 0 && p <= kMaxMessagePriority);
}

// How a request is to be sent.
struct SendOptions {
  MessagePriority priority = kPriorityBySize;
  // Ask when the request's first packet left this host, by the kernel's
  // transmit stamp (homa:// over UDP with udp.tx_timestamps; others have
  // none): reported with the response as MessageEvent::sent_ns.
  bool stamp_departure = false;
};

// What a transport reports upward, in the order it happened.
struct MessageEvent {
  enum class Kind : uint8_t {
    kRequest,   // server: a complete request, or (status not ok) one refused
                // unread; answer either with SendResponse(key)
    kResponse,  // client: the response to SendRequest's id
    kFailed,    // client: the RPC failed (status says why)
  };
  Kind kind = Kind::kRequest;
  uint64_t client_id = 0;    // the client's RPC id (both sides)
  uint64_t cookie = 0;       // client: as passed to SendRequest
  ServerRpcKey server_key;   // server: the RPC to respond to
  Buffer message;            // kRequest / kResponse payload
  Status status;             // kFailed, or a refused kRequest
  // kRequest / kResponse: when the kernel received the datagram that
  // completed the message (InDatagram::received_ns), on the monotonic
  // clock; 0 when the transport has no such stamp (tcp://, same host, or
  // timestamps off).
  TimeNs received_ns = 0;
  // kResponse: when the kernel sent the request's first packet, on the
  // monotonic clock, where SendOptions::stamp_departure asked and the
  // transport could; 0 otherwise.
  TimeNs sent_ns = 0;
};

struct PollResult {
  int work = 0;                   // packets/frames handled + sent, timers run
  TimeNs next_deadline = kNever;  // when Poll needs to run again at the latest
  TimeNs now = 0;                 // the clock as Poll read it (callers reuse it)
  // Work was handed to another process of this host (wharfd to an
  // application): a loop that yields its CPU to such processes does so now.
  bool handed_off = false;
  // Every process of this host that the loop serves said it spins waiting
  // for the loop with no work of its own (wharfd: each application's idle
  // hint): yielding the CPU to one of them only gets it back. False when
  // unknown.
  bool served_idle = false;
};

// Where a transport may place a message it receives: memory its host wants
// the message in already (wharfd: the application's receive area, so that
// the message needs no second copy there). Called from the transport's Poll.
class ReceiveAllocator {
 public:
  virtual ~ReceiveAllocator() = default;
  // `bytes` of memory for one incoming message, or an empty Buffer when the
  // host has no room (the transport then uses its own memory).
  virtual Buffer AllocateReceive(size_t bytes) = 0;
};

// Owned by the engine's host. Single-threaded: every call from the one thread
// that drives it.
class MessageTransport {
 public:
  virtual ~MessageTransport() = default;

  // The URI scheme peers reach this transport by: "homa", "tcp".
  virtual std::string_view scheme() const = 0;
  // The address peers send requests to (port resolved).
  virtual NetAddress LocalAddress() const = 0;

  // Starts an RPC to the server at `server`. Returns the client RPC id;
  // completion arrives as a kResponse or kFailed event carrying `cookie`.
  virtual Result<uint64_t> SendRequest(const NetAddress& server, Buffer request,
                                       uint64_t cookie) = 0;
  // The same to endpoint `server_endpoint` of the engine at `server` (0: its
  // default endpoint), as `options` say (a transport that applies the
  // priority refuses one outside 0..7 with kInvalidArgument; the engine
  // checks first). Transports without named endpoints refuse others.
  virtual Result<uint64_t> SendRequestTo(const NetAddress& server, uint16_t server_endpoint,
                                         Buffer request, uint64_t cookie,
                                         const SendOptions& /*options*/ = {}) {
    if (server_endpoint != 0) {
      return InvalidArgumentError(std::string(scheme()) +
                                  "://: one endpoint per port; no named endpoints");
    }
    return SendRequest(server, std::move(request), cookie);
  }
  // Answers a request delivered as a kRequest event, at `priority` (as
  // SendRequestTo's). NotFound when the RPC is gone (the client gave up or
  // died), FailedPrecondition when answered twice.
  virtual Status SendResponse(const ServerRpcKey& key, Buffer response,
                              MessagePriority priority = kPriorityBySize) = 0;
  // Batching: between BeginBatch() and the matching EndBatch() (they nest),
  // SendRequest and SendResponse may hold what they would send, and
  // EndBatch (or the next Poll) sends it together, in fewer system calls.
  // For a caller about to send several messages back to back; never needed
  // for correctness, and a transport that does not batch ignores both.
  virtual void BeginBatch() {}
  virtual void EndBatch() {}
  // Client side: abandons an RPC. No event follows. False if unknown.
  virtual bool Cancel(uint64_t client_id) = 0;
  // From now on (null: never again) messages this transport receives may be
  // placed by `allocator`, which must outlive that use. A hint: transports
  // that cannot (tcp://) ignore it; homa:// asks it at a message's first
  // packet, for the whole message.
  virtual void SetReceiveAllocator(ReceiveAllocator* /*allocator*/) {}

  // Does the I/O and protocol work that is due, without blocking.
  virtual PollResult Poll() = 0;
  // When Poll() must run next at the latest (now if work is waiting).
  virtual TimeNs NextDeadline() const = 0;
  // Takes the oldest pending event; false when none.
  virtual bool PopEvent(MessageEvent* out) = 0;

  // A file descriptor that becomes readable when Poll() has work (for the
  // host's epoll); -1 when there is none (fakes).
  virtual int ReadableFd() const = 0;
  // Every fd the host must watch: ReadableFd() and any opened since. The
  // list only grows, so a host compares its length after each Poll.
  virtual void AppendReadableFds(std::vector<int>* fds) const {
    if (ReadableFd() >= 0) fds->push_back(ReadableFd());
  }

  // What carries the traffic to each peer this transport has a connection
  // to, where the transport knows more than its scheme says (ucx://: the
  // transports and devices UCX selected, "tcp/lo"), as (peer address,
  // description) pairs; for `wharf status`. Empty for the others.
  virtual std::vector<std::pair<std::string, std::string>> Paths() const { return {}; }

  // One-sided access to peers' memory (transport/remote_memory.h), for a
  // transport that can: ucx://. Null for the others. Owned by the transport.
  virtual RemoteMemory* remote_memory() { return nullptr; }

  // Counters for `wharf ping --stats` and /metrics, as ("homa.packets_sent",
  // value) pairs prefixed with the scheme.
  virtual std::vector<std::pair<std::string, uint64_t>> Counters() const = 0;
};

}  // namespace wharf::transport
