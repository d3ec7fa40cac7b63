// The loopback test harness for TcpMessageTransport.
#include "stream/testing/tcp_harness.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace wharf::stream::testing {

transport::NetAddress Loopback4(uint16_t port) {
  return transport::NetAddress::Ipv4(0x7F000001, port);
}

transport::NetAddress Loopback6(uint16_t port) {
  std::array<uint8_t, 16> ip{};
  ip[15] = 1;
  return transport::NetAddress::Ipv6(ip, port);
}

bool Ipv6LoopbackUsable() {
  const int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  address.sin6_addr = in6addr_loopback;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return ok;
}

Buffer Pattern(size_t size, uint8_t seed) {
  Buffer b = Buffer::Allocate(size);
  std::byte* p = b.data();
  uint32_t v = (seed * 7u) % 251u;
  for (size_t i = 0; i < size; ++i) {
    p[i] = static_cast<std::byte>(v);
    v += 131;
    if (v >= 251) v -= 251;
  }
  return b;
}

bool MatchesPattern(const Buffer& buffer, size_t size, uint8_t seed) {
  if (buffer.size() != size) return false;
  const std::byte* p = buffer.data();
  uint32_t v = (seed * 7u) % 251u;
  for (size_t i = 0; i < size; ++i) {
    if (p[i] != static_cast<std::byte>(v)) return false;
    v += 131;
    if (v >= 251) v -= 251;
  }
  return true;
}

int Node::MaxHandled() const {
  int most = 0;
  for (const auto& [key, count] : handled) most = std::max(most, count);
  return most;
}

Harness::Harness() : clock_(&SystemClock::Get()) { epoll_fd_ = epoll_create1(EPOLL_CLOEXEC); }

Harness::Harness(SimClock* clock) : clock_(clock), sim_(clock) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
}

Harness::~Harness() {
  nodes_.clear();
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

Node& Harness::AddNode(TcpConfig config) {
  if (config.bind.family() == transport::NetAddress::Family::kNone) config.bind = Loopback4();
  // On real time, both ends share this thread: if the machine stalls it for
  // 100 ms, each would find the other silent. Timeouts are tested on a
  // SimClock; real-time tests that set their own keep them.
  if (sim_ == nullptr && config.peer_timeout_ns == TcpConfig{}.peer_timeout_ns) {
    config.peer_timeout_ns = 20 * kNsPerSec;
    config.ping_interval_ns = 1 * kNsPerSec;
  }
  auto node = std::make_unique<Node>();
  auto opened = TcpMessageTransport::Open(config, *clock_);
  EXPECT_TRUE(opened.ok()) << opened.status();
  if (opened.ok()) {
    node->t = std::move(opened).value();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = node.get();
    EXPECT_EQ(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, node->t->ReadableFd(), &ev), 0);
  }
  nodes_.push_back(std::move(node));
  return *nodes_.back();
}

void Harness::RemoveNode(Node& node) {
  if (node.t) {
    node.paused = false;
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, node.t->ReadableFd(), nullptr);
    node.t.reset();
  }
}

void Harness::Pause(Node& node) {
  if (node.paused || !node.t) return;
  node.paused = true;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, node.t->ReadableFd(), nullptr);
}

void Harness::Resume(Node& node) {
  if (!node.paused || !node.t) return;
  node.paused = false;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &node;
  EXPECT_EQ(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, node.t->ReadableFd(), &ev), 0);
}

void Harness::HandleEvent(Node& node, transport::MessageEvent& event) {
  using Kind = transport::MessageEvent::Kind;
  if (event.kind == Kind::kRequest) {
    const auto key = std::make_pair(event.server_key.client.ToString(), event.client_id);
    ++node.handled[key];
    node.request_order.push_back(event.client_id);
    if (!event.status.ok()) {
      // As the engine does: answer a refused request with an error.
      Buffer reply = Buffer::Copy("error: " + event.status.ToString());
      transport::ServerRpcKey rkey = event.server_key;
      node.refused.push_back(std::move(event));
      EXPECT_TRUE(node.t->SendResponse(rkey, std::move(reply)).ok());
      return;
    }
    if (!node.auto_respond) {
      node.held.push_back(std::move(event));
      return;
    }
    Buffer reply = node.respond ? node.respond(event) : std::move(event.message);
    Status sent = node.t->SendResponse(event.server_key, std::move(reply));
    EXPECT_TRUE(sent.ok()) << sent;
    return;
  }
  if (node.done.count(event.client_id) != 0) ++node.duplicate_completions;
  node.done_order.push_back(event.client_id);
  node.done[event.client_id] = std::move(event);
}

int Harness::PollOnce() {
  int work = 0;
  for (auto& node : nodes_) {
    if (!node->t || node->paused) continue;
    work += node->t->Poll().work;
    transport::MessageEvent event;
    while (node->t && node->t->PopEvent(&event)) {
      ++work;
      HandleEvent(*node, event);
    }
  }
  return work;
}

bool Harness::WaitForProgress() {
  epoll_event ev;
  const int ready = epoll_wait(epoll_fd_, &ev, 1, sim_ != nullptr ? 0 : 1);
  if (ready > 0) return true;
  TimeNs next = kNever;
  for (auto& node : nodes_) {
    if (node->t && !node->paused) next = std::min(next, node->t->NextDeadline());
  }
  if (sim_ == nullptr) return true;
  // Loopback delivers synchronously, but give the kernel a moment (a
  // connect's handshake) before declaring the sockets idle.
  if (epoll_wait(epoll_fd_, &ev, 1, 1) > 0) return true;
  // RunFor's end is a deadline too: time never jumps past it.
  next = std::min(next, run_for_until_);
  if (next == kNever) return false;
  if (next > sim_->NowNs()) sim_->AdvanceTo(next);
  return true;
}

bool Harness::RunUntil(const std::function<bool()>& done, int max_iterations, DurationNs max_real_ns) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < max_iterations; ++i) {
    const int work = PollOnce();
    if (done()) return true;
    if (std::chrono::steady_clock::now() - start > std::chrono::nanoseconds(max_real_ns)) {
      return false;
    }
    if (work == 0 && !WaitForProgress()) return done();
  }
  return done();
}

void Harness::RunFor(DurationNs duration) {
  const TimeNs until = clock_->NowNs() + duration;
  if (sim_ != nullptr) {
    run_for_until_ = until;
    RunUntil([&] { return sim_->NowNs() >= until; });
    run_for_until_ = kNever;
    return;
  }
  RunUntil([&] { return clock_->NowNs() >= until; });
}

}  // namespace wharf::stream::testing
