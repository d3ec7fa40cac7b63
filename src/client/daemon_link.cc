// DaemonLink: attaching to wharfd over its control socket, and the two heap
// areas' owners.
#include "client/daemon_link.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace wharf::internal {
namespace {

constexpr const char* kDefaultSocket = "/run/wharf/wharfd.sock";

// Waits (poll(2), the control path only) for one message on `c`.
Result<shm::ControlMessage> ReceiveWithin(shm::ControlConnection& c,
                                          std::chrono::milliseconds timeout) {
  const TimeNs deadline = SystemClock::Get().NowNs() + timeout.count() * kNsPerMs;
  while (true) {
    WHARF_ASSIGN_OR_RETURN(std::optional<shm::ControlMessage> m, c.Receive());
    if (m.has_value()) return std::move(*m);
    const TimeNs now = SystemClock::Get().NowNs();
    if (now >= deadline) return DeadlineExceededError("wharfd did not answer in time");
    pollfd p{.fd = c.fd(), .events = POLLIN, .revents = 0};
    (void)::poll(&p, 1, static_cast<int>((deadline - now + kNsPerMs - 1) / kNsPerMs));
  }
}

std::string ProgramName() {
  char buf[256];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(path.rfind('/') + 1);
}

}  // namespace

std::string DaemonSocketPath(std::string_view configured) {
  if (!configured.empty()) return std::string(configured);
  const char* env = std::getenv("WHARF_SOCKET");
  if (env != nullptr && *env != '\0') return env;
  return kDefaultSocket;
}

bool DaemonSocketExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

Result<std::string> QueryDaemonStatus(const std::string& path, std::chrono::milliseconds timeout) {
  shm::ConnectionLimits limits;
  limits.max_message_bytes = 16 << 20;
  limits.max_fds = 0;
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<shm::ControlConnection> c,
                         shm::ControlConnection::Connect(path, SystemClock::Get(), limits));
  WHARF_RETURN_IF_ERROR(c->Send(shm::EncodeRequest(shm::ControlType::kStatusRequest)));
  WHARF_ASSIGN_OR_RETURN(shm::ControlMessage m, ReceiveWithin(*c, timeout));
  WHARF_ASSIGN_OR_RETURN(shm::AttachMessage reply, shm::DecodeAttach(m.bytes));
  // Refused (too many status requests this second): wharfd says why.
  if (reply.type == shm::ControlType::kFault) return reply.fault.WithContext("wharfd");
  if (reply.type != shm::ControlType::kStatusReply) {
    return DataLossError("wharfd answered a status request with message type " +
                         std::to_string(static_cast<int>(reply.type)));
  }
  return std::move(reply.text);
}

// ------------------------------------------------------------- heap areas

std::optional<Buffer> SendArea::Allocate(size_t size) {
  MutexLock lock(mu_);
  Result<uint64_t> at = allocator_.Allocate(size + Buffer::kHeadroom);
  if (!at.ok()) return std::nullopt;
  std::span<std::byte> whole = *region_->HeapRange(*at, size + Buffer::kHeadroom);
  return Buffer::Wrap(whole, shared_from_this(), Buffer::kHeadroom);
}

std::optional<std::pair<uint64_t, uint64_t>> SendArea::RangeOf(const Buffer& b) const {
  if (b.owner() != this) return std::nullopt;
  return std::pair<uint64_t, uint64_t>(
      static_cast<uint64_t>(b.data() - region_->heap().data()), b.size());
}

std::optional<uint64_t> SendArea::OffsetOf(std::span<const std::byte> bytes) const {
  const std::byte* base = region_->heap().data();
  const uint64_t area = region_->layout().heap_bytes / 2;
  if (bytes.empty() || bytes.data() < base || bytes.data() + bytes.size() > base + area) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(bytes.data() - base);
}

void SendArea::Release(std::span<std::byte> whole) noexcept {
  MutexLock lock(mu_);
  (void)allocator_.Free(static_cast<uint64_t>(whole.data() - region_->heap().data()));
}

uint64_t SendArea::bytes_in_use() const {
  MutexLock lock(mu_);
  return allocator_.bytes_in_use();
}

Buffer ReceiveArea::Wrap(uint64_t heap_offset, uint64_t length) {
  // The daemon is trusted not to lend outside the heap, but a range that
  // does not fit is refused rather than mapped.
  Result<std::span<std::byte>> range = region_->HeapRange(heap_offset, length);
  if (!range.ok()) return Buffer();
  return Buffer::Wrap(*range, shared_from_this());
}

void ReceiveArea::Release(std::span<std::byte> whole) noexcept {
  MutexLock lock(mu_);
  if (detached_) return;
  released_.emplace_back(static_cast<uint64_t>(whole.data() - region_->heap().data()),
                         whole.size());
}

void ReceiveArea::TakeReleased(std::vector<std::pair<uint64_t, uint64_t>>* out) {
  MutexLock lock(mu_);
  out->insert(out->end(), released_.begin(), released_.end());
  released_.clear();
}

void ReceiveArea::Detach() {
  MutexLock lock(mu_);
  detached_ = true;
  released_.clear();
}

// ------------------------------------------------------------------- link

Result<std::unique_ptr<DaemonLink>> DaemonLink::Attach(const std::string& socket_path,
                                                       const std::string& address,
                                                       const shm::Geometry& wanted,
                                                       std::chrono::milliseconds timeout) {
  std::unique_ptr<DaemonLink> link(new DaemonLink());
  shm::ConnectionLimits limits;
  limits.max_fds = 1;
  limits.max_message_bytes = 1 << 20;
  Result<std::unique_ptr<shm::ControlConnection>> c =
      shm::ControlConnection::Connect(socket_path, SystemClock::Get(), limits);
  if (!c.ok()) {
    return Status(c.status().code(),
                  "no wharfd at " + socket_path + " (" + c.status().message() + ")");
  }
  link->control_ = std::move(*c);
  shm::HelloMsg hello{.address = address, .geometry = wanted, .program = ProgramName()};
  WHARF_RETURN_IF_ERROR(link->control_->Send(shm::EncodeHello(hello)));
  WHARF_ASSIGN_OR_RETURN(shm::ControlMessage m, ReceiveWithin(*link->control_, timeout));
  WHARF_ASSIGN_OR_RETURN(shm::AttachMessage reply, shm::DecodeAttach(m.bytes));
  if (reply.type != shm::ControlType::kWelcome) {
    return DataLossError("wharfd answered hello with message type " +
                         std::to_string(static_cast<int>(reply.type)));
  }
  link->welcome_ = std::move(reply.welcome);
  if (!link->welcome_.status.ok()) {
    return link->welcome_.status.WithContext("wharfd refused to attach");
  }
  if (m.fds.size() != 1) {
    return DataLossError("wharfd's welcome carried " + std::to_string(m.fds.size()) +
                         " fds, expected 1");
  }
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<shm::Region> region,
                         shm::Region::Attach(m.fds[0].get(), link->welcome_.geometry));
  link->region_ = std::shared_ptr<shm::Region>(std::move(region));
  link->commands_.emplace(link->region_->command_ring());
  link->completions_.emplace(link->region_->completion_ring());
  const uint64_t heap = link->region_->layout().heap_bytes;
  WHARF_ASSIGN_OR_RETURN(shm::HeapAllocator send, shm::HeapAllocator::Create(0, heap / 2));
  link->send_area_ = std::make_shared<SendArea>(link->region_, std::move(send));
  link->receive_area_ = std::make_shared<ReceiveArea>(link->region_);
  return link;
}

void DaemonLink::WakeDaemon() {
  (void)control_->Send(shm::EncodeRequest(shm::ControlType::kWake));
}

DaemonLink::~DaemonLink() {
  if (receive_area_ != nullptr) receive_area_->Detach();
}

std::optional<Status> DaemonLink::CheckControl() {
  if (gone_.has_value()) return gone_;
  for (int i = 0; i < 16; ++i) {
    Result<std::optional<shm::ControlMessage>> got = control_->Receive();
    if (!got.ok()) {
      gone_ = got.status().code() == StatusCode::kUnavailable
                  ? UnavailableError("wharfd went away (its control socket closed)")
                  : got.status();
      return gone_;
    }
    if (!got->has_value()) return std::nullopt;
    Result<shm::AttachMessage> m = shm::DecodeAttach((*got)->bytes);
    if (!m.ok()) continue;
    if (m->type == shm::ControlType::kFault) {
      gone_ = m->fault.WithContext("wharfd closed this application's session");
      return gone_;
    }
    if (m->type == shm::ControlType::kStatsReply) {
      stats_reply_ = std::move(m->stats);
      stats_arrived_ = true;
    }
  }
  return std::nullopt;
}

Result<std::vector<shm::Counter>> DaemonLink::Stats(std::chrono::milliseconds timeout) {
  stats_arrived_ = false;
  WHARF_RETURN_IF_ERROR(control_->Send(shm::EncodeRequest(shm::ControlType::kStatsRequest)));
  const TimeNs deadline = SystemClock::Get().NowNs() + timeout.count() * kNsPerMs;
  while (!stats_arrived_) {
    if (std::optional<Status> gone = CheckControl()) return *gone;
    if (stats_arrived_) break;
    const TimeNs now = SystemClock::Get().NowNs();
    if (now >= deadline) return DeadlineExceededError("wharfd did not send its counters in time");
    pollfd p{.fd = control_->fd(), .events = POLLIN, .revents = 0};
    (void)::poll(&p, 1, static_cast<int>((deadline - now + kNsPerMs - 1) / kNsPerMs));
  }
  return std::move(stats_reply_);
}

}  // namespace wharf::internal
