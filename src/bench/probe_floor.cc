// The probe floor: a prober thread and a responder thread on kernel UDP
// sockets, measured from a third (the caller's) that only sleeps.
#include "bench/probe_floor.h"

#include <linux/net_tstamp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "bench/affinity.h"
#include "bench/sockets.h"

namespace wharf::bench {
namespace {

constexpr size_t kMaxProbeBytes = 1024;
constexpr int kBatch = 64;

// Counts what the prober did; read by the measuring thread at the window's
// two ends (relaxed: each count is a separate figure).
struct ProberCounts {
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> answers{0};
  std::atomic<uint64_t> transmit_stamps{0};
  std::atomic<uint64_t> receive_stamps{0};
};

void Bump(std::atomic<uint64_t>& counter, uint64_t by = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

Status EnableStamps(int fd, bool transmit) {
  int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
  // Numbered, data-less transmit stamps, as wharf's UDP socket asks them.
  if (transmit) flags |= SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
  if (::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof(flags)) != 0) {
    return ErrnoToStatus(errno, "SO_TIMESTAMPING");
  }
  return OkStatus();
}

// Up to kBatch datagrams read in one recvmmsg, with their sources and
// control messages. Reused for every read of one thread.
class DatagramBatch {
 public:
  DatagramBatch() : data_(kBatch * kMaxProbeBytes) {}

  // Reads what is there without blocking: the count (0 when nothing was),
  // or -1 with errno set for any other failure.
  int Read(int fd, int flags) {
    for (int i = 0; i < kBatch; ++i) {
      iov_[i] = {data_.data() + i * kMaxProbeBytes, kMaxProbeBytes};
      headers_[i] = {};
      headers_[i].msg_hdr.msg_iov = &iov_[i];
      headers_[i].msg_hdr.msg_iovlen = 1;
      headers_[i].msg_hdr.msg_name = &from_[i];
      headers_[i].msg_hdr.msg_namelen = sizeof(from_[i]);
      headers_[i].msg_hdr.msg_control = control_[i].data();
      headers_[i].msg_hdr.msg_controllen = control_[i].size();
    }
    const int n = ::recvmmsg(fd, headers_.data(), kBatch, flags | MSG_DONTWAIT, nullptr);
    if (n >= 0) return n;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
  }

  const std::byte* data(int i) const { return data_.data() + i * kMaxProbeBytes; }
  size_t length(int i) const { return headers_[i].msg_len; }
  const sockaddr* from(int i) const { return reinterpret_cast<const sockaddr*>(&from_[i]); }
  socklen_t from_length(int i) const { return headers_[i].msg_hdr.msg_namelen; }

  // True when datagram i carries a software stamp (receive or transmit).
  bool Stamped(int i) {
    msghdr& h = headers_[i].msg_hdr;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) return true;
    }
    return false;
  }

 private:
  std::vector<std::byte> data_;
  std::array<mmsghdr, kBatch> headers_{};
  std::array<iovec, kBatch> iov_{};
  std::array<sockaddr_storage, kBatch> from_{};
  struct alignas(cmsghdr) Control : std::array<char, 256> {};
  std::array<Control, kBatch> control_{};
};

// Waits on `epoll_fd` until something is ready or `timeout_ns` passed;
// returns the events of the first ready fd's data (0: timed out).
uint32_t WaitReady(int epoll_fd, DurationNs timeout_ns, uint64_t* which) {
  if (timeout_ns < 0) timeout_ns = 0;
  const timespec timeout{static_cast<time_t>(timeout_ns / kNsPerSec),
                         static_cast<long>(timeout_ns % kNsPerSec)};
  epoll_event event{};
  const int n = ::epoll_pwait2(epoll_fd, &event, 1, &timeout, nullptr);
  if (n <= 0) return 0;
  *which = event.data.u64;
  return event.events;
}

Status Watch(int epoll_fd, int fd, uint64_t tag) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = tag;
  if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) return ErrnoToStatus(errno, "epoll_ctl");
  return OkStatus();
}

// The prober's loop until `stop` is set (it sleeps at most a pass).
Status RunProber(int fd, const SocketAddress& target, const ProbeFloorOptions& options,
                 const std::atomic<bool>& stop, ProberCounts& counts) {
  UniqueFd epoll_fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_fd.valid()) return ErrnoToStatus(errno, "epoll_create1");
  WHARF_RETURN_IF_ERROR(Watch(epoll_fd.get(), fd, 0));
  const uint64_t per_pass =
      std::max<uint64_t>(1, static_cast<uint64_t>(options.rate) * options.pass_ns / kNsPerSec);
  std::vector<std::byte> probe(options.probe_bytes);
  struct alignas(cmsghdr) {
    char bytes[CMSG_SPACE(sizeof(int))];
  } control{};
  DatagramBatch batch;
  const Clock& clock = SystemClock::Get();
  uint64_t seq = 0;
  TimeNs next_pass_ns = clock.NowNs();
  auto drain_stamps = [&]() -> Status {
    int n;
    while ((n = batch.Read(fd, MSG_ERRQUEUE)) > 0) {
      for (int i = 0; i < n; ++i) Bump(counts.transmit_stamps, batch.Stamped(i) ? 1 : 0);
      if (n < kBatch) break;
    }
    return n < 0 ? ErrnoToStatus(errno, "recvmmsg(MSG_ERRQUEUE)") : OkStatus();
  };
  auto read_answers = [&]() -> Status {
    int n;
    while ((n = batch.Read(fd, 0)) > 0) {
      Bump(counts.answers, static_cast<uint64_t>(n));
      for (int i = 0; i < n; ++i) Bump(counts.receive_stamps, batch.Stamped(i) ? 1 : 0);
      if (n < kBatch) break;
    }
    return n < 0 ? ErrnoToStatus(errno, "recvmmsg") : OkStatus();
  };
  bool behind = false;
  for (TimeNs now = next_pass_ns; !stop.load(std::memory_order_relaxed); now = clock.NowNs()) {
    if (now >= next_pass_ns) {
      // A prober that fell behind (a slow machine, strace) still reads its
      // answers between passes: unread ones fill the receive buffer, which
      // the transmit stamps are charged to as well.
      if (behind) WHARF_RETURN_IF_ERROR(read_answers());
      behind = true;
      for (uint64_t i = 0; i < per_pass; ++i, ++seq) {
        std::memcpy(probe.data(), &seq, std::min(sizeof(seq), probe.size()));
        iovec iov{probe.data(), probe.size()};
        msghdr message{};
        message.msg_name = const_cast<sockaddr*>(target.get());
        message.msg_namelen = target.length;
        message.msg_iov = &iov;
        message.msg_iovlen = 1;
        if (options.transmit_stamps) {
          message.msg_control = control.bytes;
          message.msg_controllen = sizeof(control.bytes);
          cmsghdr* c = CMSG_FIRSTHDR(&message);
          c->cmsg_level = SOL_SOCKET;
          c->cmsg_type = SO_TIMESTAMPING;
          c->cmsg_len = CMSG_LEN(sizeof(int));
          const int flags = SOF_TIMESTAMPING_TX_SOFTWARE;
          std::memcpy(CMSG_DATA(c), &flags, sizeof(flags));
        }
        if (::sendmsg(fd, &message, 0) < 0 && errno != EAGAIN && errno != ENOBUFS) {
          return ErrnoToStatus(errno, "sendmsg to " + target.ToString());
        }
        Bump(counts.sent);
      }
      // The pass's stamps are in the error queue by now (loopback and veth
      // stamp inside the send): one read takes them all, before sleeping.
      if (options.transmit_stamps) WHARF_RETURN_IF_ERROR(drain_stamps());
      next_pass_ns += options.pass_ns;
      continue;
    }
    behind = false;
    uint64_t which = 0;
    const uint32_t events = WaitReady(epoll_fd.get(), next_pass_ns - now, &which);
    if (events & EPOLLERR) WHARF_RETURN_IF_ERROR(drain_stamps());
    if (events & EPOLLIN) WHARF_RETURN_IF_ERROR(read_answers());
  }
  return OkStatus();
}

// The responder's loop until `stop_fd` becomes readable.
Status RunResponder(int fd, int stop_fd) {
  UniqueFd epoll_fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_fd.valid()) return ErrnoToStatus(errno, "epoll_create1");
  WHARF_RETURN_IF_ERROR(Watch(epoll_fd.get(), fd, 0));
  WHARF_RETURN_IF_ERROR(Watch(epoll_fd.get(), stop_fd, 1));
  DatagramBatch batch;
  while (true) {
    uint64_t which = 0;
    const uint32_t events = WaitReady(epoll_fd.get(), kNsPerSec, &which);
    if (events == 0) continue;
    if (which == 1) return OkStatus();
    int n;
    while ((n = batch.Read(fd, 0)) > 0) {
      for (int i = 0; i < n; ++i) {
        // One send per answer, as wharfd answers (see the header).
        if (::sendto(fd, batch.data(i), batch.length(i), 0, batch.from(i), batch.from_length(i)) <
                0 &&
            errno != EAGAIN && errno != ENOBUFS) {
          return ErrnoToStatus(errno, "sendto");
        }
      }
      if (n < kBatch) break;
    }
    if (n < 0) return ErrnoToStatus(errno, "recvmmsg");
  }
}

Result<UniqueFd> BoundSocket(const SocketAddress& address, bool transmit_stamps) {
  WHARF_ASSIGN_OR_RETURN(UniqueFd fd, OpenSocket(address.family(), SOCK_DGRAM));
  if (::bind(fd.get(), address.get(), address.length) != 0) {
    return ErrnoToStatus(errno, "bind " + address.ToString());
  }
  WHARF_RETURN_IF_ERROR(EnableStamps(fd.get(), transmit_stamps));
  return fd;
}

DurationNs ThreadCpuNs(std::thread& thread) {
  clockid_t id;
  timespec t{};
  if (pthread_getcpuclockid(thread.native_handle(), &id) != 0 || ::clock_gettime(id, &t) != 0) {
    return -1;
  }
  return t.tv_sec * kNsPerSec + t.tv_nsec;
}

// Keeps the first failure of either thread.
class FirstFailure {
 public:
  void Record(Status status) {
    std::lock_guard lock(mutex_);
    if (status_.ok()) status_ = std::move(status);
  }
  Status Take() {
    std::lock_guard lock(mutex_);
    return status_;
  }

 private:
  std::mutex mutex_;
  Status status_;
};

}  // namespace

double ProbeFloorResult::ProberNsPerProbe() const {
  return probes_sent == 0 ? 0 : static_cast<double>(prober_cpu_ns) / static_cast<double>(probes_sent);
}

double ProbeFloorResult::ResponderNsPerProbe() const {
  return probes_sent == 0 ? 0
                          : static_cast<double>(responder_cpu_ns) / static_cast<double>(probes_sent);
}

Result<ProbeFloorResult> MeasureProbeFloor(const ProbeFloorOptions& options) {
  if (options.rate == 0 || options.pass_ns <= 0 || options.duration_ns <= 0 ||
      options.probe_bytes == 0 || options.probe_bytes > kMaxProbeBytes) {
    return InvalidArgumentError(
        "probe floor: rate, pass and duration must be positive and the probe 1..1024 bytes");
  }
  WHARF_ASSIGN_OR_RETURN(SocketAddress any, ParseSocketAddress(options.host, 0));
  WHARF_ASSIGN_OR_RETURN(UniqueFd prober_fd, BoundSocket(any, options.transmit_stamps));
  WHARF_ASSIGN_OR_RETURN(UniqueFd responder_fd, BoundSocket(any, false));
  WHARF_ASSIGN_OR_RETURN(uint16_t responder_port, LocalPort(responder_fd.get()));
  SocketAddress target = any;
  target.set_port(responder_port);
  UniqueFd stop_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop_fd.valid()) return ErrnoToStatus(errno, "eventfd");

  const Clock& clock = SystemClock::Get();
  std::atomic<bool> stop_prober{false};
  ProberCounts counts;
  FirstFailure failure;
  auto pinned = [&](int cpu, auto&& body) {
    if (cpu >= 0 && !PinCallingThread(cpu)) {
      failure.Record(FailedPreconditionError("probe floor: cannot pin a thread to CPU " +
                                                std::to_string(cpu)));
      return;
    }
    failure.Record(body());
  };
  std::thread responder([&] {
    pinned(options.responder_cpu, [&] { return RunResponder(responder_fd.get(), stop_fd.get()); });
  });
  std::thread prober([&] {
    pinned(options.prober_cpu,
           [&] { return RunProber(prober_fd.get(), target, options, stop_prober, counts); });
  });

  // The measuring window: warm-up first, then CPU and counts at both ends.
  std::this_thread::sleep_for(std::chrono::nanoseconds(options.warmup_ns));
  ProbeFloorResult result;
  const DurationNs prober_start = ThreadCpuNs(prober);
  const DurationNs responder_start = ThreadCpuNs(responder);
  const uint64_t sent_start = counts.sent.load(std::memory_order_relaxed);
  const uint64_t answers_start = counts.answers.load(std::memory_order_relaxed);
  const uint64_t tx_start = counts.transmit_stamps.load(std::memory_order_relaxed);
  const uint64_t rx_start = counts.receive_stamps.load(std::memory_order_relaxed);
  const TimeNs window_start = clock.NowNs();
  std::this_thread::sleep_for(std::chrono::nanoseconds(options.duration_ns));
  result.prober_cpu_ns = ThreadCpuNs(prober) - prober_start;
  result.responder_cpu_ns = ThreadCpuNs(responder) - responder_start;
  result.measured_ns = clock.NowNs() - window_start;
  result.probes_sent = counts.sent.load(std::memory_order_relaxed) - sent_start;
  result.answers = counts.answers.load(std::memory_order_relaxed) - answers_start;
  result.transmit_stamps = counts.transmit_stamps.load(std::memory_order_relaxed) - tx_start;
  result.receive_stamps = counts.receive_stamps.load(std::memory_order_relaxed) - rx_start;

  stop_prober.store(true, std::memory_order_relaxed);
  prober.join();
  const uint64_t one = 1;
  if (::write(stop_fd.get(), &one, sizeof(one)) != sizeof(one)) {
    failure.Record(ErrnoToStatus(errno, "eventfd write"));
  }
  responder.join();
  WHARF_RETURN_IF_ERROR(failure.Take());
  return result;
}

}  // namespace wharf::bench
