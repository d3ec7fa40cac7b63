// shm/control_socket.h: the transport of wharfd's control socket. A
// ControlListener owns the Unix socket file applications connect to; a
// ControlConnection sends and receives one message (bytes plus file
// descriptors) at a time. It holds no daemon logic: no message formats, no
// allow-lists, no per-application state beyond what one socket needs.
//
// The socket is SOCK_SEQPACKET, not SOCK_STREAM with framing: the kernel
// keeps message boundaries and delivers a message whole or not at all, and
// the SCM_RIGHTS fds travel with exactly the message they were sent with. So
// there is no reassembly buffer per connection and no "half a message" a
// slow or hostile peer can leave us holding; a peer that sends nothing just
// leaves Receive() returning "nothing yet" until the caller's deadline.
//
// Everything is non-blocking (accept, send, receive). The daemon's loop
// polls fd() and calls Accept()/Receive(); neither ever waits. Closing can
// block (a passed file's last close runs in the closer's thread:
// background_closer.h), so a listener that wants no fds has the kernel
// refuse them (SO_PASSRIGHTS), and where it cannot, its connections hand
// every fd a peer could have passed, their own included, to an FdCloser.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/unique_fd.h"
#include "shm/background_closer.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::shm {

// The kernel's cap on fds in one SCM_RIGHTS message (SCM_MAX_FD).
inline constexpr size_t kMaxFdsPerMessage = 253;

// Who is at the other end, from SO_PEERCRED: the credentials of the peer at
// connect() (or socketpair()) time. The pid may be reused once that process
// dies; the connection itself, not the number, is the identity.
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

// What one connection accepts from its peer.
struct ConnectionLimits {
  // Largest message Receive() accepts; a longer one is consumed, dropped and
  // reported as kResourceExhausted.
  size_t max_message_bytes = 64 * 1024;
  // Largest message Send() accepts; 0: max_message_bytes. For a side that
  // receives only small messages but may answer with a large one (wharfd's
  // status JSON), without a receive buffer that large.
  size_t max_send_bytes = 0;
  // Fds the caller expects per message. Up to kSpareFdSlots more are
  // received, closed and counted; beyond that the control message is
  // truncated (MSG_CTRUNC), which is an error.
  size_t max_fds = 4;
};

// Room for fds a peer sends beyond max_fds, so that a few unexpected ones are
// closed and counted rather than turned into a MSG_CTRUNC error.
inline constexpr size_t kSpareFdSlots = 8;

// One received message. The fds are ours (CLOEXEC, closed with the message).
struct ControlMessage {
  std::vector<std::byte> bytes;
  std::vector<UniqueFd> fds;
};

// Per-connection counts of what the peer did wrong or unexpectedly.
struct ConnectionCounters {
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  // Fds beyond max_fds that arrived and were closed.
  uint64_t extra_fds_closed = 0;
  // Messages whose control data was truncated (MSG_CTRUNC).
  uint64_t truncated_control = 0;
  // Messages longer than max_message_bytes.
  uint64_t oversized = 0;
  // Receive() calls that found the deadline passed.
  uint64_t deadlines_missed = 0;
};

// One connected SOCK_SEQPACKET Unix socket. Owned by whoever handles the
// peer (the daemon's per-application state, or the application's client);
// single-threaded: all calls from the thread that polls it.
class ControlConnection {
 public:
  // Connects to the listener at `path` without blocking. kUnavailable when
  // nothing listens there or its backlog is full.
  static Result<std::unique_ptr<ControlConnection>> Connect(std::string_view path,
                                                            const Clock& clock,
                                                            const ConnectionLimits& limits = {});
  // Takes a connected SOCK_SEQPACKET Unix socket (from accept4 or
  // socketpair), makes it non-blocking and reads its peer's credentials.
  static Result<std::unique_ptr<ControlConnection>> Adopt(UniqueFd fd, const Clock& clock,
                                                          const ConnectionLimits& limits = {});
  // A connected pair (socketpair), for tests and for a daemon talking to a
  // child it forks.
  static Result<std::pair<std::unique_ptr<ControlConnection>, std::unique_ptr<ControlConnection>>>
  Pair(const Clock& clock, const ConnectionLimits& limits = {});

  ControlConnection(const ControlConnection&) = delete;
  ControlConnection& operator=(const ControlConnection&) = delete;

  // Sends `bytes` (1 to max_message_bytes; an empty record would read as EOF
  // on the other side) and `fds` (borrowed; the kernel duplicates them into
  // the peer) as one message, with MSG_NOSIGNAL so a dead peer is a Status,
  // not SIGPIPE. kResourceExhausted when the peer is not draining its socket
  // (the send would block): the caller decides, it never waits. kUnavailable
  // when the peer has gone.
  Status Send(std::span<const std::byte> bytes, std::span<const int> fds = {});

  // Receives one message if one is waiting. nullopt when none is and the
  // deadline (if any) has not passed; kDeadlineExceeded when it has.
  // kUnavailable on EOF or reset. kResourceExhausted for an oversized
  // message, kDataLoss for a truncated control message; in both cases the
  // message is consumed and every fd that came with it is closed, so the
  // connection stays usable (the caller usually drops the peer anyway).
  Result<std::optional<ControlMessage>> Receive();

  // The next message must arrive by `deadline_ns` on the injected clock;
  // kNever (the default) for no deadline. Cleared when a message arrives.
  void set_receive_deadline(TimeNs deadline_ns) { deadline_ns_ = deadline_ns; }

  // Where fds beyond max_fds, and this connection's own fd when it is
  // destroyed, are closed (borrowed; must outlive the connection). Null,
  // the default: on the spot.
  void set_closer(FdCloser* closer) { closer_ = closer; }
  ~ControlConnection();

  int fd() const { return fd_.get(); }
  const PeerCredentials& peer() const { return peer_; }
  const ConnectionCounters& counters() const { return counters_; }

 private:
  ControlConnection(UniqueFd fd, const Clock& clock, const ConnectionLimits& limits,
                    const PeerCredentials& peer);
  void Dispose(UniqueFd fd);

  UniqueFd fd_;
  const Clock& clock_;
  const ConnectionLimits limits_;
  const PeerCredentials peer_;
  TimeNs deadline_ns_ = kNever;
  FdCloser* closer_ = nullptr;
  // Receive buffers, sized once: one byte more than the cap (to see an
  // oversized message without MSG_TRUNC games) and room for max_fds +
  // kSpareFdSlots fds.
  std::vector<std::byte> data_buffer_;
  std::vector<std::byte> control_buffer_;
  ConnectionCounters counters_;
};

struct ListenerOptions {
  // Permissions of the socket file: who may connect (connect needs write).
  mode_t mode = 0660;
  // Group owning the socket file: a name ("wharf") or a numeric gid ("1001");
  // empty keeps the process's group. An unknown name is kNotFound.
  std::string group;
  // Limits for every accepted connection.
  ConnectionLimits limits;
  // With limits.max_fds 0: have the kernel refuse fds sent to the accepted
  // connections (SO_PASSRIGHTS off on the listener, inherited by each; a
  // peer's sendmsg with SCM_RIGHTS then fails with EPERM), so that no file
  // a peer sends is ever ours to close. Linux 6.16 and later; on older
  // kernels refuses_fds() says it did not take.
  bool refuse_fds = true;
};

// The listening socket at a filesystem path (never abstract: an abstract
// socket ignores file permissions and is visible to the whole network
// namespace). Owned by the daemon; single-threaded.
class ControlListener {
 public:
  // Creates `path`'s parent directory (0750, and `options.group`) if missing;
  // removes a stale socket file left by a dead daemon but refuses a live one
  // (it answers a connect) with kAlreadyExists; refuses a non-socket file at
  // `path` with kFailedPrecondition. The socket is non-blocking and CLOEXEC,
  // and gets its mode and group before it starts listening, so no peer can
  // connect through looser permissions in between.
  static Result<std::unique_ptr<ControlListener>> Open(std::string_view path, const Clock& clock,
                                                       const ListenerOptions& options = {});
  // Closes the socket and removes the socket file if it is still ours.
  ~ControlListener();
  ControlListener(const ControlListener&) = delete;
  ControlListener& operator=(const ControlListener&) = delete;

  // Accepts one waiting connection, non-blocking. nullptr when none is
  // waiting (or it vanished before we took it). kResourceExhausted when out
  // of fds: the connection stays queued, so the caller should back off.
  Result<std::unique_ptr<ControlConnection>> Accept();

  // Whether the kernel refuses fds sent to our connections (see
  // ListenerOptions::refuse_fds). When not, set_closer says where the
  // accepted connections close what they may hold.
  bool refuses_fds() const { return refuses_fds_; }
  // Given to every connection accepted from now on (borrowed; outlives them).
  void set_closer(FdCloser* closer) { closer_ = closer; }

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }

 private:
  ControlListener(UniqueFd fd, std::string path, const Clock& clock, const ConnectionLimits& limits,
                  dev_t dev, ino_t ino, bool refuses_fds)
      : fd_(std::move(fd)),
        path_(std::move(path)),
        clock_(clock),
        limits_(limits),
        dev_(dev),
        ino_(ino),
        refuses_fds_(refuses_fds) {}

  UniqueFd fd_;
  const std::string path_;
  const Clock& clock_;
  const ConnectionLimits limits_;
  // Identity of the socket file we bound, so the destructor removes only
  // that file and not one a successor daemon created at the same path.
  const dev_t dev_;
  const ino_t ino_;
  const bool refuses_fds_;
  FdCloser* closer_ = nullptr;
};

}  // namespace wharf::shm
