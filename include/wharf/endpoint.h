// wharf/endpoint.h: Endpoint and Connection, wharf's socket-like message API.
// Start here.
//
//   auto ep = wharf::Endpoint::Open({.address = "homa://0.0.0.0:4000"});
//   auto conn = (*ep)->Connect("homa://198.18.0.2:4000");
//   (*conn)->Send(wharf::Buffer::Copy("hello"));
//
// Messages are reliable, keep their boundaries and may be any size up to
// homa.max_message_bytes (64 MiB by default); on one connection short
// messages may overtake long ones unless the connection is opened ordered.
// RPCs are request/response with deadlines and at-most-once execution.
// Errors are Status values; no exception crosses this API.
//
// Hosting: the engine runs either inside this process (embedded mode) or in
// wharfd, the host's daemon, reached through shared memory (managed mode);
// EndpointOptions::hosting picks, and the API is the same. Progress happens
// inside wharf calls: blocking calls, Completion waits, Poll() and Run(). To
// fold wharf into your own epoll loop, watch fd() and call Poll() when it is
// readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wharf/buffer.h"
#include "wharf/completion.h"
#include "wharf/result.h"

namespace wharf {

namespace internal {
class EndpointCore;
struct ResponderState;
class PublicAccess;
}  // namespace internal

// Where an endpoint's engine runs (EndpointOptions::hosting).
enum class Hosting {
  // Managed if a wharfd control socket exists (daemon_socket, else
  // $WHARF_SOCKET, else /run/wharf/wharfd.sock), embedded otherwise.
  kAuto,
  // In this process: no daemon, lowest latency; the endpoint owns its socket.
  kEmbedded,
  // In wharfd, through shared memory: Open fails (kUnavailable) without a
  // daemon. The daemon's configuration governs the protocol settings.
  kManaged,
};

struct EndpointOptions {
  // Where this endpoint receives: "homa://HOST:PORT" (or plain "HOST:PORT",
  // which uses homa). HOST is a numeric IPv4/IPv6 address ([..] for IPv6) or a
  // name resolved once at Open; port 0 picks a free port. "homa://HOST:PORT/
  // NAME" is one of several endpoints on that socket: endpoints this process
  // opens on the same address share one engine and socket (kAlreadyExists
  // for a name, or the default endpoint, already open there).
  std::string address = "homa://0.0.0.0:0";
  // A YAML file of settings (docs/configuration.md lists every key), and
  // overrides applied after it: {"homa.unsched_bytes", "60000"}.
  std::string config_file;
  std::vector<std::pair<std::string, std::string>> settings;
  Hosting hosting = Hosting::kAuto;
  // wharfd's control socket; empty: $WHARF_SOCKET, else /run/wharf/wharfd.sock.
  std::string daemon_socket;
};

struct ConnectOptions {
  // Deliver this connection's messages in the order they were sent (costs
  // head-of-line blocking: a short message waits for a long one before it).
  bool ordered = false;
  std::chrono::nanoseconds timeout = std::chrono::seconds(5);
  // Nonzero: open a stream of this method instead of a plain connection.
  // A stream is ordered; the peer's endpoint hands it to the handler its
  // ServeStreams registered for the method (never to Accept), and refuses
  // it (kUnimplemented) when it serves no streams of that method. Typed
  // streaming RPCs (wharf/rpc.h) are built on streams.
  uint32_t stream_method = 0;
};

// Key/value pairs a call or stream carries beside its request (trace ids,
// tenants, auth tokens); the server's handler reads them from its context.
// At most kMaxMetadataEntries, and kMaxMetadataBytes of keys and values
// together: more is refused (kInvalidArgument) before anything leaves.
using Metadata = std::vector<std::pair<std::string, std::string>>;
inline constexpr size_t kMaxMetadataEntries = 64;
inline constexpr size_t kMaxMetadataBytes = 16 * 1024;

struct CallOptions {
  // The call fails with kDeadlineExceeded after this long (0 = no deadline;
  // peer death still fails it with kUnavailable).
  std::chrono::nanoseconds deadline = std::chrono::seconds(30);
  // Sent with the request (a call with metadata copies its request once).
  Metadata metadata;
};

// What a server handler learns about the call it serves.
struct RpcContext {
  // The client's address, "homa://1.2.3.4:5678"; valid during the handler
  // call (copy it to keep it).
  std::string_view peer;
  uint32_t method = 0;     // the method id the client called
  // When the client stops waiting (its CallOptions::deadline as it was
  // when the request left, on this host's steady clock); time_point::max()
  // when the client set none. Work past it is wasted: the answer is dropped.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // What the client sent in CallOptions::metadata (null: nothing); valid
  // during the handler call.
  const Metadata* metadata = nullptr;
};

// Serves one method: returns the response or a Status for the client.
// Runs on a thread driving the endpoint, outside the endpoint's lock: it may
// take its time (the endpoint keeps answering the client's liveness probes
// meanwhile, so a long handler is not taken for a dead server) and may start
// asynchronous operations, but must not block waiting on this endpoint.
// Handlers of one endpoint run one at a time.
using RpcHandler = std::function<Result<Buffer>(const RpcContext&, Buffer request)>;

class Responder;
// Serves one method whose answer comes later: keep `responder` (it is
// move-only) and call Respond() on it from any thread, when ready.
using AsyncRpcHandler =
    std::function<void(const RpcContext&, Buffer request, Responder responder)>;

class Connection;

// Takes a stream a peer opened (ConnectOptions::stream_method); the handler
// owns it from now on. Runs on the thread driving the endpoint, like a
// completion callback: it must not block on this endpoint (keep the stream
// and use it from another thread, or asynchronously).
using StreamHandler = std::function<void(std::unique_ptr<Connection> stream)>;

// Method ids at or above this are reserved for wharf itself (e.g. barriers).
inline constexpr uint32_t kFirstReservedMethod = 0xFFFF0000u;

// The right to answer one RPC, handed to an AsyncRpcHandler. Move-only; owned
// by the application; any thread may use it. Dropped unanswered, it answers
// kInternal so the client is not left waiting. It may outlive the endpoint
// (answering then does nothing).
class Responder {
 public:
  Responder() = default;
  Responder(Responder&&) noexcept;
  Responder& operator=(Responder&&) noexcept;
  ~Responder();

  // Sends the response (or, for a Status, the error) to the client. Once:
  // later calls return kFailedPrecondition. kCancelled when the endpoint is
  // closed. An answer the client no longer wants is dropped (still OK).
  Status Respond(Result<Buffer> response);
  // True once the client withdrew the call (Completion::Cancel) or its
  // deadline passed: the answer would be dropped, so stop working on it.
  bool cancelled() const;
  std::chrono::steady_clock::time_point deadline() const;
  bool valid() const { return state_ != nullptr; }

 private:
  // Made by the endpoint (through internal::PublicAccess).
  friend class internal::PublicAccess;
  explicit Responder(std::shared_ptr<internal::ResponderState> state) : state_(std::move(state)) {}

  std::shared_ptr<internal::ResponderState> state_;
};

// Owned by the application. Thread-safe: calls from several threads are
// serialised internally. Connections and Completions may outlive it; their
// operations then fail with kCancelled.
class Endpoint {
 public:
  static Result<std::unique_ptr<Endpoint>> Open(const EndpointOptions& options = {});
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // The address peers use to reach this endpoint, e.g. "homa://127.0.0.1:4000".
  std::string address() const;
  // True when the engine runs in wharfd (managed mode).
  bool managed() const;

  // A Buffer of `size` bytes to fill and send. In managed mode it lives in
  // the memory this process shares with wharfd, so sending it copies
  // nothing (any other Buffer is copied there once); embedded, one of
  // 64 KiB or more comes from a pool of kept blocks (no page faults when it
  // is first written or sent; the pool keeps at most 16 blocks, 32 MiB) and
  // smaller ones are Buffer::Allocate(size). Any thread may call it.
  Buffer AllocateBuffer(size_t size);

  // --- connections ---
  Result<std::unique_ptr<Connection>> Connect(std::string_view address,
                                              const ConnectOptions& options = {});
  // Accept connections from now on (before Listen, connects are refused).
  Status Listen();
  // Waits for the next incoming connection.
  Result<std::unique_ptr<Connection>> Accept(
      std::chrono::nanoseconds timeout = Completion::kForever);

  // --- RPCs ---
  Result<Buffer> Call(std::string_view address, uint32_t method, Buffer request,
                      const CallOptions& options = {});
  Completion ICall(std::string_view address, uint32_t method, Buffer request,
                   const CallOptions& options = {});
  // Registers the handler for `method` (replacing any earlier one).
  Status Serve(uint32_t method, RpcHandler handler);
  // The same for a handler that answers later, through a Responder.
  Status ServeAsync(uint32_t method, AsyncRpcHandler handler);
  // Peers may open streams of `method` from now on; each goes to `handler`
  // (replacing any earlier one). Needs no Listen: plain connections still
  // wait for Accept, and only those.
  Status ServeStreams(uint32_t method, StreamHandler handler);

  // --- batching ---
  // What calls, sends and responses send between BeginBatch() and the
  // matching EndBatch() (they nest; any thread) may wait there and then
  // leave together: over homa:// one system call, and one GSO send for a
  // run of packets to one peer, instead of one call per packet; managed,
  // one doorbell to wharfd. For a loop that issues many operations at once;
  // around a single operation it only costs the two calls. Waiting on the
  // endpoint (Wait, Run, Poll, WaitForAny) also sends what waits. Prefer the
  // scoped SendBatch below.
  void BeginBatch();
  void EndBatch();

  // --- progress ---
  // One non-blocking pass of the engine; returns the work it did.
  int Poll();
  // Drives the endpoint until `timeout` passes or Shutdown() is called from
  // another thread (or a handler). Spins briefly when idle, then sleeps.
  Status Run(std::chrono::nanoseconds timeout = Completion::kForever);
  // Drives the endpoint until one of its operations completes (any
  // Completion it returned, or a callback's) or `timeout` passes or
  // Shutdown(); returns how many completed since the previous WaitForAny
  // returned (0: none, the timeout passed). For a loop with many operations
  // in flight that then reaps them with done(): like Run, it sleeps in the
  // endpoint's own wait (armed timers only while asleep), which costs less
  // than an epoll loop on fd(). One thread at a time.
  int WaitForAny(std::chrono::nanoseconds timeout = Completion::kForever);
  void Shutdown();
  // Readable when Poll() has work (packets, timers, wake-ups): for epoll.
  int fd() const;

  // Counters for tools and tests ("homa.requests_delivered" -> n, ...).
  std::vector<std::pair<std::string, uint64_t>> Stats() const;

 private:
  // Group reaches core_ through internal::PublicAccess.
  friend class internal::PublicAccess;
  explicit Endpoint(std::shared_ptr<internal::EndpointCore> core) : core_(std::move(core)) {}
  // Shared with Connections and Completions so they stay safe after the
  // Endpoint is destroyed (they then fail with kCancelled).
  std::shared_ptr<internal::EndpointCore> core_;
};

// Batches the sends of `endpoint` for its lifetime (Endpoint::BeginBatch):
//   { wharf::SendBatch batch(*endpoint);
//     for (auto& r : requests) completions.push_back(endpoint->ICall(...)); }
class SendBatch {
 public:
  explicit SendBatch(Endpoint& endpoint) : endpoint_(endpoint) { endpoint_.BeginBatch(); }
  ~SendBatch() { endpoint_.EndBatch(); }
  SendBatch(const SendBatch&) = delete;
  SendBatch& operator=(const SendBatch&) = delete;

 private:
  Endpoint& endpoint_;
};

// A logical session with one peer endpoint. Owned by the application;
// thread-safe like Endpoint.
class Connection {
 public:
  ~Connection();  // disconnects if still open
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  std::string peer() const;

  // Sends one message; done when the peer's endpoint holds it.
  Status Send(Buffer message);
  Completion ISend(Buffer message);
  // Receives the next message (kUnavailable once the peer disconnected or
  // died and everything queued was read).
  Result<Buffer> Recv(std::chrono::nanoseconds timeout = Completion::kForever);
  Completion IRecv();
  // An RPC to the connection's peer.
  Result<Buffer> Call(uint32_t method, Buffer request, const CallOptions& options = {});
  Completion ICall(uint32_t method, Buffer request, const CallOptions& options = {});
  // Tells the peer and closes; later calls fail with kFailedPrecondition.
  Status Disconnect();

 private:
  friend class Endpoint;
  friend class internal::PublicAccess;
  Connection(std::shared_ptr<internal::EndpointCore> core, uint64_t local_id)
      : core_(std::move(core)), id_(local_id) {}
  std::shared_ptr<internal::EndpointCore> core_;
  uint64_t id_;
};

}  // namespace wharf
