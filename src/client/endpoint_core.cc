// EndpointCore: opening the socket/protocol/engine stack, and the
// spin-then-block wait loop every blocking call uses.
#include "client/endpoint_core.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "engine/uri.h"
#include "homa/homa_transport.h"
#include "stream/tcp_transport.h"

namespace wharf::internal {

thread_local const EndpointCore* EndpointCore::polling_ = nullptr;

namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

Result<std::shared_ptr<EndpointCore>> EndpointCore::Open(const EndpointOptions& options) {
  std::shared_ptr<EndpointCore> core(new EndpointCore());
  WHARF_ASSIGN_OR_RETURN(core->config_,
                         engine::LoadEngineConfig(options.config_file, options.settings));
  WHARF_ASSIGN_OR_RETURN(engine::Uri uri,
                         engine::ParseUri(options.address, core->config_.default_scheme));
  // homa.max_message_bytes is the application's payload limit on every
  // transport; the transports also carry the engine's frame header.
  core->config_.limits.max_message_bytes = core->config_.homa.max_message_bytes;
  core->config_.homa.max_message_bytes = static_cast<uint32_t>(std::min<uint64_t>(
      uint64_t{core->config_.homa.max_message_bytes} + engine::kFrameBytes, UINT32_MAX));

  core->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  core->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  core->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (core->wake_fd_ < 0 || core->timer_fd_ < 0 || core->epoll_fd_ < 0) {
    return ErrnoToStatus(errno, "endpoint: epoll setup");
  }
  for (int fd : {core->wake_fd_, core->timer_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (epoll_ctl(core->epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      return ErrnoToStatus(errno, "endpoint: epoll_ctl");
    }
  }

  WHARF_ASSIGN_OR_RETURN(transport::MessageTransport * primary,
                         core->OpenTransport(uri.scheme, uri.address));
  core->secondary_bind_ = uri.address.WithPort(0);
  // Transports for other schemes open on first use, under the engine's lock
  // (the engine asks from inside a call the core serialises).
  EndpointCore* raw = core.get();
  engine::TransportOpener opener = [raw](std::string_view scheme) {
    return raw->OpenTransport(scheme, raw->secondary_bind_);
  };
  std::weak_ptr<EndpointCore> weak = core;
  core->engine_ = std::make_unique<engine::Engine>(
      primary, std::move(opener), core->clock_, core->config_.limits,
      std::weak_ptr<engine::ProgressDriver>(weak), [raw] { raw->WakeSleepers(); });
  core->address_ = core->engine_->UriOf(engine::PeerRef{0, primary->LocalAddress()});
  return core;
}

Result<transport::MessageTransport*> EndpointCore::OpenTransport(
    std::string_view scheme, const transport::NetAddress& bind) {
  std::unique_ptr<transport::MessageTransport> opened;
  if (scheme == "homa") {
    if (udp_ != nullptr) return FailedPreconditionError("endpoint: homa transport already open");
    transport::UdpOptions udp;
    udp.bind = bind;
    udp.mtu = config_.mtu;
    udp.recv_buffer_bytes = static_cast<int>(config_.recv_buffer_bytes);
    udp.send_buffer_bytes = static_cast<int>(config_.send_buffer_bytes);
    udp.enable_gso = config_.gso;
    udp.enable_gro = config_.gro;
    udp.hot_peer_socket = config_.hot_peer_socket;
    WHARF_ASSIGN_OR_RETURN(udp_, transport::UdpDatagram::Open(udp));
    WHARF_ASSIGN_OR_RETURN(opened, homa::HomaTransport::Create(config_.homa, udp_.get(), clock_));
  } else if (scheme == "tcp") {
    stream::TcpConfig tcp = config_.tcp;
    tcp.bind = bind;
    tcp.max_message_bytes = config_.homa.max_message_bytes;  // payload limit + frame
    WHARF_ASSIGN_OR_RETURN(opened, stream::TcpMessageTransport::Open(tcp, clock_));
  } else {
    return InvalidArgumentError("endpoint: no transport for scheme '" + std::string(scheme) + "'");
  }
  {
    std::lock_guard<std::mutex> lock(epoll_mu_);
    const int fd = opened->ReadableFd();
    if (fds_in_epoll_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        return ErrnoToStatus(errno, "endpoint: epoll_ctl");
      }
    }
    transport_fds_.push_back(fd);
  }
  transports_.push_back(std::move(opened));
  return transports_.back().get();
}

std::vector<std::pair<std::string, uint64_t>> EndpointCore::Counters() const {
  std::vector<std::pair<std::string, uint64_t>> all;
  for (const auto& t : transports_) {
    auto counters = t->Counters();
    all.insert(all.end(), counters.begin(), counters.end());
  }
  if (udp_ != nullptr) {
    const transport::UdpStats& u = udp_->stats();
    all.insert(all.end(), {{"udp.sent", u.sent},
                           {"udp.received", u.received},
                           {"udp.send_dropped", u.send_dropped},
                           {"udp.gso_sends", u.gso_sends},
                           {"udp.gro_coalesced", u.gro_coalesced},
                           {"udp.hot_sends", u.hot_sends},
                           {"udp.hot_sockets_opened", u.hot_sockets_opened}});
  }
  return all;
}

EndpointCore::~EndpointCore() {
  Close();
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
  if (timer_fd_ >= 0) close(timer_fd_);
}

void EndpointCore::Close() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (closed_.exchange(true)) return;
  if (engine_ == nullptr) return;  // Open failed part-way
  engine_->Shutdown(CancelledError("endpoint " + address_ + " closed"));
  shutdown_ = true;
  WakeSleepers();
}

int EndpointCore::fd() const {
  {
    std::lock_guard<std::mutex> lock(epoll_mu_);
    fd_exposed_ = true;
    SetTransportFdsInEpoll(true);
  }
  // From now on the timer keeps fd() readable at each deadline; start with
  // the one pending (ArmTimer runs under mu_, like every call into it).
  std::lock_guard<std::recursive_mutex> lock(mu_);
  const_cast<EndpointCore*>(this)->ArmTimer(engine_deadline_ns_.load());
  return epoll_fd_;
}

void EndpointCore::SetTransportFdsInEpoll(bool in) const {
  if (fds_in_epoll_ == in) return;
  for (int fd : transport_fds_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    // Cannot fail for a valid fd and epoll set; a failure would only cost
    // wake-ups (sleeps are bounded), so it is not worth a Status here.
    (void)epoll_ctl(epoll_fd_, in ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev);
  }
  fds_in_epoll_ = in;
}

Result<engine::Uri> EndpointCore::Resolve(std::string_view address) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  WHARF_ASSIGN_OR_RETURN(const engine::Uri* uri, ResolveLocked(address));
  return *uri;
}

Result<const engine::Uri*> EndpointCore::ResolveLocked(std::string_view address) {
  constexpr size_t kMaxRemembered = 1024;
  auto it = resolved_.find(address);
  if (it != resolved_.end()) return &it->second;
  WHARF_ASSIGN_OR_RETURN(engine::Uri uri, engine::ParseUri(address, config_.default_scheme));
  if (resolved_.size() >= kMaxRemembered) resolved_.clear();
  return &resolved_.emplace(std::string(address), std::move(uri)).first->second;
}

TimeNs EndpointCore::DeadlineAfter(std::chrono::nanoseconds timeout) const {
  if (timeout == std::chrono::nanoseconds::max()) return kNever;
  TimeNs now = clock_.NowNs();
  if (timeout.count() > kNever - now) return kNever;
  return now + timeout.count();
}

int EndpointCore::PollOnce() {
  if (polling_ == this) return 0;  // a callback inside our own Poll
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (closed_) return 0;
  // Clear a fired timer and the wake counter: fd() is level-triggered.
  uint64_t drained;
  if (timer_armed_ns_ != kNever && read(timer_fd_, &drained, sizeof(drained)) > 0) {
    timer_armed_ns_ = kNever;
  }
  if (wake_pending_.exchange(false) && read(wake_fd_, &drained, sizeof(drained)) < 0) drained = 0;
  polling_ = this;
  transport::PollResult r = engine_->Poll();
  polling_ = nullptr;
  ArmTimer(r.next_deadline);
  WatchHotPeerSocket();
  return r.work;
}

void EndpointCore::WatchHotPeerSocket() {
  if (hot_fd_watched_ || udp_ == nullptr || udp_->hot_fd() < 0) return;
  hot_fd_watched_ = true;
  const int fd = udp_->hot_fd();  // open until udp_ is destroyed, with the core
  std::lock_guard<std::mutex> lock(epoll_mu_);
  if (fds_in_epoll_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    (void)epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);  // see SetTransportFdsInEpoll
  }
  transport_fds_.push_back(fd);
}

void EndpointCore::ArmTimer(TimeNs deadline_ns) {
  // Threads about to sleep read this; one already asleep, or an application
  // asleep in its own epoll on fd(), must be woken for the deadline by the
  // timer. A spinning thread needs neither, and a timerfd_settime costs
  // more than a whole round trip (a VM exit here), so with no one asleep and
  // fd() never handed out no timer is armed. Dekker-style with Sleep(): a
  // thread either sees sleepers_ > 0 here or its deadline there.
  engine_deadline_ns_.store(deadline_ns);
  if (sleepers_.load() == 0 && !fd_exposed_.load()) return;
  // Re-arm only when the deadline moved earlier or the timer fired.
  TimeNs armed = timer_armed_ns_;
  if (deadline_ns == kNever || (armed != kNever && deadline_ns >= armed)) return;
  itimerspec spec{};
  TimeNs at = std::max<TimeNs>(deadline_ns, 1);  // 0 would disarm
  spec.it_value.tv_sec = static_cast<time_t>(at / kNsPerSec);
  spec.it_value.tv_nsec = static_cast<long>(at % kNsPerSec);
  if (timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) == 0) {
    timer_armed_ns_ = deadline_ns;
  }
}

void EndpointCore::CancelOp(uint64_t op_id) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  engine_->Cancel(op_id);
}

void EndpointCore::WakeSleepers() {
  if (sleepers_.load() == 0) return;
  wake_pending_ = true;
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof(one));
  (void)n;  // a full counter already wakes everyone
}

void EndpointCore::Sleep(TimeNs until_ns) {
  // A deadline another thread set since our caller looked (see ArmTimer).
  until_ns = std::min(until_ns, engine_deadline_ns_.load());
  TimeNs now = clock_.NowNs();
  TimeNs span = until_ns == kNever ? 100 * kNsPerMs : std::max<TimeNs>(0, until_ns - now);
  timespec ts{static_cast<time_t>(span / kNsPerSec), static_cast<long>(span % kNsPerSec)};
  {
    // Added while the socket already holds data, a level-triggered fd is
    // reported at once: nothing that arrived since the last poll is missed.
    std::lock_guard<std::mutex> lock(epoll_mu_);
    if (sleeping_in_epoll_++ == 0) SetTransportFdsInEpoll(true);
  }
  epoll_event events[4];
  int n = epoll_pwait2(epoll_fd_, events, 4, &ts, nullptr);
  {
    std::lock_guard<std::mutex> lock(epoll_mu_);
    if (--sleeping_in_epoll_ == 0 && !fd_exposed_) SetTransportFdsInEpoll(false);
  }
  for (int i = 0; i < n; ++i) {
    int fd = events[i].data.fd;
    if (fd == wake_fd_ || fd == timer_fd_) {
      uint64_t drained;
      if (read(fd, &drained, sizeof(drained)) > 0 && fd == timer_fd_) timer_armed_ns_ = kNever;
    }
  }
}

bool EndpointCore::AwaitUntil(const std::function<bool()>& done, TimeNs deadline_ns) {
  // Inside our own handler or callback only that same thread could make the
  // progress we would wait for.
  if (polling_ == this) return done();
  TimeNs spin_until = clock_.NowNs() + config_.spin_ns;
  while (true) {
    if (done()) return true;
    TimeNs next = kNever;
    TimeNs now = 0;  // the poll's reading of the clock, when it polled
    {
      std::unique_lock<std::recursive_mutex> lock(mu_, std::try_to_lock);
      if (lock.owns_lock() && !closed_) {
        polling_ = this;
        transport::PollResult r = engine_->Poll();
        polling_ = nullptr;
        next = r.next_deadline;
        now = r.now;
        ArmTimer(next);  // a syscall only when the deadline moved earlier
        WatchHotPeerSocket();
        if (r.work > 0) spin_until = r.now + config_.spin_ns;
      }
    }
    if (done()) return true;
    // One clock read per turn: reading it costs as much here (a VM's clock
    // source) as a fifth of the turn.
    if (now == 0) now = clock_.NowNs();
    if (now >= deadline_ns || closed_) return done();
    if (now < spin_until) {
      CpuRelax();
      continue;
    }
    // Nothing for a while: sleep until a packet, a wake-up or a deadline.
    sleepers_.fetch_add(1);
    if (!done()) Sleep(std::min({deadline_ns, next, now + 100 * kNsPerMs}));
    sleepers_.fetch_sub(1);
    spin_until = clock_.NowNs() + config_.spin_ns;
  }
}

Status EndpointCore::Await(CompletionState& state, TimeNs deadline_ns) {
  if (polling_ == this && !state.done.load(std::memory_order_acquire)) {
    return FailedPreconditionError(
        "blocking wait inside a handler or callback of the same endpoint would deadlock");
  }
  bool finished =
      AwaitUntil([&state] { return state.done.load(std::memory_order_acquire); }, deadline_ns);
  if (!finished) return DeadlineExceededError("wait timed out");
  std::lock_guard<std::mutex> lock(state.mu);
  return state.status;
}

Status EndpointCore::RunUntil(TimeNs deadline_ns) {
  AwaitUntil([this] { return shutdown_.load(); }, deadline_ns);
  // A Shutdown ends this Run only; a later Run drives the endpoint again.
  if (!closed_) shutdown_ = false;
  return closed_ ? CancelledError("endpoint " + address_ + " closed") : OkStatus();
}

void EndpointCore::Shutdown() {
  shutdown_ = true;
  // The runner may be asleep in epoll: wake it regardless of the counter.
  wake_pending_ = true;
  uint64_t one = 1;
  ssize_t n = write(wake_fd_, &one, sizeof(one));
  (void)n;
}

}  // namespace wharf::internal
