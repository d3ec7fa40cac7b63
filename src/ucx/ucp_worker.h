// ucx/ucp_worker.h: UcpWorker, wharf's adapter over one UCP context and
// worker (UCX 1.13), the groundwork of ucx:// (issue 29). It hides every
// UCX type behind wharf's: peers are ids, messages are Buffers, errors are
// Status values.
//
// - Connections by socket address: Listen on an IPv4 address (port 0:
//   any), Connect to one; a peer connecting in becomes a peer id too.
// - Whole messages as UCP active messages: UCX sends small ones eagerly and
//   large ones by rendezvous; the receiver gets each whole, in a Buffer of
//   its own.
// - Driven from the owner's loop: Progress() does the work, fd() is the
//   worker's event fd and Arm() says whether it is safe to sleep on it
//   (ucp_worker_get_efd / ucp_worker_arm: spin, then block).
// - A peer's failure (its process gone, a refused connect) reaches the
//   peer_failed handler, on UCX's word, never on silence alone.
//
// Which UCX transports and devices to use: UcpOptions (UCX_TLS and
// UCX_NET_DEVICES in UCX's own terms); empty leaves UCX's choice. Between
// processes on one host UCX picks shared memory unless told otherwise.
// Not thread-safe: one thread drives a worker (UCS_THREAD_MODE_SINGLE), and
// the handlers run inside its Progress(). Never use one in a forked child.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "transport/net_address.h"
#include "wharf/buffer.h"
#include "wharf/result.h"

namespace wharf::ucx {

struct UcpOptions {
  std::string tls;      // UCX_TLS, e.g. "tcp" or "sm,tcp"; empty: UCX's default
  std::string devices;  // UCX_NET_DEVICES, e.g. "lo"; empty: UCX's default
  // Ask UCX to report a peer's failure (UCP_ERR_HANDLING_MODE_PEER). UCX
  // 1.13 then leaves out the transports that cannot tell (its shared-memory
  // ones: sysv, posix, cma), so peers on one host talk over tcp; without it
  // they use shared memory, and a dead peer shows only as silence.
  bool detect_peer_failure = true;
};

class UcpWorker {
 public:
  using PeerId = uint64_t;
  struct Handlers {
    // A whole message from `peer`.
    std::function<void(PeerId peer, Buffer message)> message;
    // `peer` failed (kUnavailable, with UCX's reason); it is forgotten.
    std::function<void(PeerId peer, const Status& why)> peer_failed;
  };

  static Result<std::unique_ptr<UcpWorker>> Create(const UcpOptions& options, Handlers handlers);
  ~UcpWorker();
  UcpWorker(const UcpWorker&) = delete;
  UcpWorker& operator=(const UcpWorker&) = delete;

  // Accepts peers at `address` (IPv4; port 0: any); the address bound.
  Result<transport::NetAddress> Listen(const transport::NetAddress& address);
  // A peer at `address`. Returns at once: a connect that fails shows up as
  // peer_failed (or a failed Send).
  Result<PeerId> Connect(const transport::NetAddress& address);

  // Sends `message` to `peer`; `done(status)` runs once it left (inside a
  // later Progress, or here if UCX finished at once). The Buffer is kept
  // until then.
  void Send(PeerId peer, Buffer message, std::function<void(const Status&)> done);

  // Does the work that is ready (receives, sends, connects, failures);
  // returns how much it found.
  unsigned Progress();
  // Readable when Progress has work, once Arm() returned true.
  int fd() const { return efd_; }
  // True: nothing is pending, sleeping on fd() is safe. False: progress
  // again first.
  bool Arm();

  // What UCX chose for `peer` (its lanes: transports and devices), for
  // `wharf status`; "" for an unknown peer.
  std::string Describe(PeerId peer) const;
  size_t peers() const { return peers_.size(); }

 private:
  // The UCX handles and UCX's callbacks, which reach this worker's
  // members (ucx/ucp_worker.cc).
  struct Ucp;

  explicit UcpWorker(Handlers handlers);
  // The id of endpoint `ep`, adding it if new.
  PeerId PeerOf(void* ep);
  void Fail(PeerId peer, const Status& why);

  Handlers handlers_;
  std::unique_ptr<Ucp> ucp_;
  int efd_ = -1;
  int err_mode_ = 0;  // ucp_err_handling_mode_t, from detect_peer_failure
  std::unordered_map<PeerId, void*> peers_;       // id -> ucp_ep_h
  std::unordered_map<void*, PeerId> peer_ids_;    // ucp_ep_h -> id
  PeerId next_peer_ = 1;
};

}  // namespace wharf::ucx
