// shm/control_socket.cc: ControlListener and ControlConnection, the
// non-blocking SOCK_SEQPACKET transport of wharfd's control socket.
#include "shm/control_socket.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace wharf::shm {
namespace {

// SO_PASSRIGHTS (Linux 6.16): 0 makes the kernel refuse SCM_RIGHTS sent to
// the socket. Debian 12's headers predate it; the number is the generic
// one, which x86-64, arm64 and riscv use (others: the option is not tried).
#if !defined(SO_PASSRIGHTS) && (defined(__x86_64__) || defined(__aarch64__) || defined(__riscv))
#define SO_PASSRIGHTS 83
#endif

// Listen backlog: connections the kernel queues before accept. A full
// backlog makes further connects fail at once (EAGAIN), never block.
constexpr int kBacklog = 64;

std::string Quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// A filesystem (never abstract) sockaddr_un for `path`.
Result<sockaddr_un> MakeAddress(std::string_view path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.front() == '\0') {
    return InvalidArgumentError("control socket path must be a filesystem path, got " +
                                Quoted(path));
  }
  if (path.find('\0') != std::string_view::npos || path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgumentError("control socket path " + Quoted(path) + " is longer than " +
                                std::to_string(sizeof(addr.sun_path) - 1) +
                                " bytes or holds a NUL");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

Result<UniqueFd> NewSocket() {
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoToStatus(errno, "socket(AF_UNIX, SOCK_SEQPACKET)");
  return fd;
}

// "1001" -> 1001; a name -> its gid via getgrnam_r; unknown -> kNotFound.
Result<gid_t> ResolveGroup(const std::string& group) {
  gid_t gid = 0;
  auto [end, ec] = std::from_chars(group.data(), group.data() + group.size(), gid);
  if (ec == std::errc() && end == group.data() + group.size()) return gid;
  std::vector<char> buffer(4096);
  for (;;) {
    struct group entry {};
    struct group* found = nullptr;
    int err = ::getgrnam_r(group.c_str(), &entry, buffer.data(), buffer.size(), &found);
    if (err == ERANGE && buffer.size() < (1u << 20)) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (err != 0) return ErrnoToStatus(err, "looking up group " + Quoted(group));
    if (found == nullptr) return NotFoundError("unknown group " + Quoted(group));
    return found->gr_gid;
  }
}

// Is a daemon listening at `addr`? Connect without blocking: ECONNREFUSED
// means a socket file nobody listens on (a dead daemon's), success or a full
// backlog (EAGAIN) means a live one.
Result<bool> SomeoneListens(const sockaddr_un& addr, std::string_view path) {
  WHARF_ASSIGN_OR_RETURN(UniqueFd probe, NewSocket());
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    return true;
  }
  switch (errno) {
    case ECONNREFUSED:
      return false;
    case EAGAIN:
    case EPROTOTYPE:  // a live socket of another type (stream, dgram)
      return true;
    default:
      return ErrnoToStatus(errno, "probing control socket " + Quoted(path));
  }
}

// Creates the parent directory of `path` with 0750 (exactly: chmod after
// mkdir, as the umask may have narrowed it) and `gid` if it is missing. An
// existing directory is the operator's and left alone.
Status EnsureParentDirectory(std::string_view path, std::optional<gid_t> gid) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return OkStatus();
  std::string dir(path.substr(0, slash));
  if (::mkdir(dir.c_str(), 0750) != 0) {
    if (errno == EEXIST) return OkStatus();
    return ErrnoToStatus(errno, "creating directory " + Quoted(dir));
  }
  if (::chmod(dir.c_str(), 0750) != 0) return ErrnoToStatus(errno, "chmod " + Quoted(dir));
  if (gid && ::chown(dir.c_str(), static_cast<uid_t>(-1), *gid) != 0) {
    return ErrnoToStatus(errno, "chown " + Quoted(dir) + " to gid " + std::to_string(*gid));
  }
  return OkStatus();
}

Result<PeerCredentials> ReadPeerCredentials(int fd) {
  ucred cred{};
  socklen_t length = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) {
    return ErrnoToStatus(errno, "getsockopt(SO_PEERCRED)");
  }
  return PeerCredentials{.pid = cred.pid, .uid = cred.uid, .gid = cred.gid};
}

}  // namespace

// ---- ControlConnection ----

ControlConnection::ControlConnection(UniqueFd fd, const Clock& clock,
                                     const ConnectionLimits& limits, const PeerCredentials& peer)
    : fd_(std::move(fd)),
      clock_(clock),
      limits_(limits),
      peer_(peer),
      data_buffer_(limits.max_message_bytes + 1),
      control_buffer_(CMSG_SPACE((limits.max_fds + kSpareFdSlots) * sizeof(int))) {}

ControlConnection::~ControlConnection() {
  // Our queue may hold messages with fds in them: dropping it closes those.
  Dispose(std::move(fd_));
}

void ControlConnection::Dispose(UniqueFd fd) {
  if (closer_ != nullptr) closer_->Close(std::move(fd));
}

Result<std::unique_ptr<ControlConnection>> ControlConnection::Connect(
    std::string_view path, const Clock& clock, const ConnectionLimits& limits) {
  WHARF_ASSIGN_OR_RETURN(sockaddr_un addr, MakeAddress(path));
  WHARF_ASSIGN_OR_RETURN(UniqueFd fd, NewSocket());
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    int err = errno;
    Status status = ErrnoToStatus(err, "connecting to control socket " + Quoted(path));
    // Nobody there, or a backlog that is full: both mean "try later".
    if (err == ENOENT || err == ECONNREFUSED || err == EAGAIN) {
      return UnavailableError(status.message());
    }
    return status;
  }
  return Adopt(std::move(fd), clock, limits);
}

Result<std::unique_ptr<ControlConnection>> ControlConnection::Adopt(
    UniqueFd fd, const Clock& clock, const ConnectionLimits& limits) {
  if (limits.max_message_bytes == 0 || limits.max_fds > kMaxFdsPerMessage) {
    return InvalidArgumentError("connection limits need max_message_bytes > 0 and max_fds <= " +
                                std::to_string(kMaxFdsPerMessage));
  }
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return ErrnoToStatus(errno, "making control connection non-blocking");
  }
  WHARF_ASSIGN_OR_RETURN(PeerCredentials peer, ReadPeerCredentials(fd.get()));
  return std::unique_ptr<ControlConnection>(
      new ControlConnection(std::move(fd), clock, limits, peer));
}

Result<std::pair<std::unique_ptr<ControlConnection>, std::unique_ptr<ControlConnection>>>
ControlConnection::Pair(const Clock& clock, const ConnectionLimits& limits) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    return ErrnoToStatus(errno, "socketpair(AF_UNIX, SOCK_SEQPACKET)");
  }
  UniqueFd a(fds[0]);
  UniqueFd b(fds[1]);
  WHARF_ASSIGN_OR_RETURN(auto first, Adopt(std::move(a), clock, limits));
  WHARF_ASSIGN_OR_RETURN(auto second, Adopt(std::move(b), clock, limits));
  return std::make_pair(std::move(first), std::move(second));
}

Status ControlConnection::Send(std::span<const std::byte> bytes, std::span<const int> fds) {
  const size_t limit =
      limits_.max_send_bytes != 0 ? limits_.max_send_bytes : limits_.max_message_bytes;
  if (bytes.empty() || bytes.size() > limit) {
    return InvalidArgumentError("control message of " + std::to_string(bytes.size()) +
                                " bytes; must be 1 to " + std::to_string(limit));
  }
  if (fds.size() > kMaxFdsPerMessage) {
    return InvalidArgumentError("control message with " + std::to_string(fds.size()) +
                                " fds; at most " + std::to_string(kMaxFdsPerMessage));
  }
  iovec iov{.iov_base = const_cast<std::byte*>(bytes.data()), .iov_len = bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<std::byte> control;
  if (!fds.empty()) {
    control.resize(CMSG_SPACE(fds.size_bytes()));
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(fds.size_bytes());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), fds.size_bytes());
  }
  ssize_t sent;
  do {
    sent = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    if (errno == EAGAIN) {
      return ResourceExhaustedError("control peer is not reading: send would block");
    }
    if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN) {
      return UnavailableError("control peer has gone: " + std::string(std::strerror(errno)));
    }
    return ErrnoToStatus(errno, "sending control message");
  }
  // A SEQPACKET record is sent whole or not at all.
  ++counters_.messages_sent;
  return OkStatus();
}

Result<std::optional<ControlMessage>> ControlConnection::Receive() {
  iovec iov{.iov_base = data_buffer_.data(), .iov_len = data_buffer_.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control_buffer_.data();
  msg.msg_controllen = control_buffer_.size();
  ssize_t received;
  do {
    received = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (received < 0 && errno == EINTR);
  if (received < 0) {
    if (errno == EAGAIN) {
      if (deadline_ns_ != kNever && clock_.NowNs() >= deadline_ns_) {
        ++counters_.deadlines_missed;
        return DeadlineExceededError("control peer (pid " + std::to_string(peer_.pid) +
                                     ") sent nothing by its deadline");
      }
      return std::optional<ControlMessage>();
    }
    if (errno == ECONNRESET || errno == ENOTCONN || errno == EPIPE) {
      return UnavailableError("control peer (pid " + std::to_string(peer_.pid) +
                              ") reset the connection");
    }
    return ErrnoToStatus(errno, "receiving control message");
  }

  // Take ownership of every fd that arrived before looking at anything
  // else, so that each error path below closes them.
  ControlMessage message;
  uint64_t extra = 0;
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const std::byte* data = reinterpret_cast<const std::byte*>(CMSG_DATA(cmsg));
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));
      UniqueFd owned(fd);
      if (message.fds.size() < limits_.max_fds) {
        message.fds.push_back(std::move(owned));
      } else {
        ++extra;
        Dispose(std::move(owned));  // or closed here as `owned` goes out of scope
      }
    }
  }
  counters_.extra_fds_closed += extra;

  if (msg.msg_flags & MSG_CTRUNC) {
    ++counters_.truncated_control;
    return DataLossError("control message from pid " + std::to_string(peer_.pid) +
                         " carried more than " + std::to_string(limits_.max_fds + kSpareFdSlots) +
                         " fds (control data truncated)");
  }
  if ((msg.msg_flags & MSG_TRUNC) || static_cast<size_t>(received) > limits_.max_message_bytes) {
    ++counters_.oversized;
    return ResourceExhaustedError("control message from pid " + std::to_string(peer_.pid) +
                                  " exceeds " + std::to_string(limits_.max_message_bytes) +
                                  " bytes");
  }
  // Our peers never send an empty record (Send refuses), so 0 is EOF.
  if (received == 0) {
    return UnavailableError("control peer (pid " + std::to_string(peer_.pid) + ") hung up");
  }
  message.bytes.assign(data_buffer_.begin(), data_buffer_.begin() + received);
  ++counters_.messages_received;
  deadline_ns_ = kNever;
  return std::optional<ControlMessage>(std::move(message));
}

// ---- ControlListener ----

Result<std::unique_ptr<ControlListener>> ControlListener::Open(std::string_view path,
                                                               const Clock& clock,
                                                               const ListenerOptions& options) {
  WHARF_ASSIGN_OR_RETURN(sockaddr_un addr, MakeAddress(path));
  if ((options.mode & ~07777u) != 0) {
    return InvalidArgumentError("control socket mode " + std::to_string(options.mode) +
                                " is not a permission mode");
  }
  std::optional<gid_t> gid;
  if (!options.group.empty()) {
    WHARF_ASSIGN_OR_RETURN(gid, ResolveGroup(options.group));
  }
  WHARF_RETURN_IF_ERROR(EnsureParentDirectory(path, gid));

  std::string file(path);
  struct stat st {};
  if (::lstat(file.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return FailedPreconditionError(Quoted(file) +
                                     " exists and is not a socket; not replacing it");
    }
    WHARF_ASSIGN_OR_RETURN(bool live, SomeoneListens(addr, file));
    if (live) {
      return AlreadyExistsError("a daemon is already listening on " + Quoted(file));
    }
    if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
      return ErrnoToStatus(errno, "removing stale control socket " + Quoted(file));
    }
  } else if (errno != ENOENT) {
    return ErrnoToStatus(errno, "lstat " + Quoted(file));
  }

  WHARF_ASSIGN_OR_RETURN(UniqueFd fd, NewSocket());
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    // Another daemon bound it between our probe and here.
    if (errno == EADDRINUSE)
      return AlreadyExistsError("control socket " + Quoted(file) + " is in use");
    return ErrnoToStatus(errno, "binding control socket " + Quoted(file));
  }
  // From here the file is ours: remove it on any failure.
  auto fail = [&file](Status status) {
    ::unlink(file.c_str());
    return status;
  };
  // Not listening yet, so nobody can connect while the mode is the umask's.
  if (::chmod(file.c_str(), options.mode) != 0) {
    return fail(ErrnoToStatus(errno, "chmod control socket " + Quoted(file)));
  }
  if (gid && ::chown(file.c_str(), static_cast<uid_t>(-1), *gid) != 0) {
    return fail(ErrnoToStatus(
        errno, "chown control socket " + Quoted(file) + " to group " + Quoted(options.group)));
  }
  if (::lstat(file.c_str(), &st) != 0) return fail(ErrnoToStatus(errno, "lstat " + Quoted(file)));
  // Before listen, so that no connection is ever accepted without it.
  bool refuses_fds = false;
#ifdef SO_PASSRIGHTS
  if (options.refuse_fds && options.limits.max_fds == 0) {
    const int off = 0;
    refuses_fds = ::setsockopt(fd.get(), SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof off) == 0;
  }
#endif
  if (::listen(fd.get(), kBacklog) != 0) {
    return fail(ErrnoToStatus(errno, "listen on control socket " + Quoted(file)));
  }
  return std::unique_ptr<ControlListener>(new ControlListener(
      std::move(fd), std::move(file), clock, options.limits, st.st_dev, st.st_ino, refuses_fds));
}

ControlListener::~ControlListener() {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
    ::unlink(path_.c_str());
  }
}

Result<std::unique_ptr<ControlConnection>> ControlListener::Accept() {
  int fd;
  do {
    fd = ::accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    // Nothing waiting, or a connection that died before we took it.
    if (errno == EAGAIN || errno == ECONNABORTED || errno == EPROTO) {
      return std::unique_ptr<ControlConnection>();
    }
    return ErrnoToStatus(errno, "accepting on control socket " + Quoted(path_));
  }
  Result<std::unique_ptr<ControlConnection>> c = ControlConnection::Adopt(UniqueFd(fd), clock_, limits_);
  if (c.ok()) (*c)->set_closer(closer_);
  return c;
}

}  // namespace wharf::shm
