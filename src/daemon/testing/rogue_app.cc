// RogueApp: attaching by hand, raw ring access and bounded waits on wharfd's
// answers (rogue_app.h).
#include "daemon/testing/rogue_app.h"

#include <poll.h>

#include <atomic>
#include <cstring>

#include "base/clock.h"
#include "client/daemon_link.h"

namespace wharf::daemon::testing {
namespace {

TimeNs Now() { return SystemClock::Get().NowNs(); }

void StoreRelease(uint64_t& word, uint64_t value) {
  std::atomic_ref<uint64_t>(word).store(value, std::memory_order_release);
}
uint64_t LoadAcquire(uint64_t& word) {
  return std::atomic_ref<uint64_t>(word).load(std::memory_order_acquire);
}

}  // namespace

Result<std::unique_ptr<RogueApp>> RogueApp::Attach(const std::string& socket_path,
                                                   const Options& options) {
  std::unique_ptr<RogueApp> app(new RogueApp());
  shm::ConnectionLimits limits;
  limits.max_fds = 1;
  limits.max_message_bytes = 1 << 20;
  WHARF_ASSIGN_OR_RETURN(app->control_,
                         shm::ControlConnection::Connect(socket_path, SystemClock::Get(), limits));
  shm::HelloMsg hello{.address = options.address, .geometry = options.geometry,
                      .program = options.program};
  WHARF_RETURN_IF_ERROR(app->control_->Send(shm::EncodeHello(hello)));
  const TimeNs deadline = Now() + options.timeout.count() * kNsPerMs;
  while (true) {
    WHARF_ASSIGN_OR_RETURN(std::optional<shm::ControlMessage> m, app->control_->Receive());
    if (m.has_value()) {
      WHARF_ASSIGN_OR_RETURN(shm::AttachMessage reply, shm::DecodeAttach(m->bytes));
      if (reply.type != shm::ControlType::kWelcome) {
        return DataLossError("expected kWelcome, got type " +
                             std::to_string(static_cast<int>(reply.type)));
      }
      app->welcome_ = std::move(reply.welcome);
      WHARF_RETURN_IF_ERROR(app->welcome_.status);
      if (m->fds.size() != 1) return DataLossError("kWelcome without the region's fd");
      WHARF_ASSIGN_OR_RETURN(app->region_,
                             shm::Region::Attach(m->fds[0].get(), app->welcome_.geometry));
      return app;
    }
    if (Now() >= deadline) return DeadlineExceededError("no kWelcome from wharfd");
    pollfd p{.fd = app->control_->fd(), .events = POLLIN, .revents = 0};
    (void)::poll(&p, 1, 10);
  }
}

std::span<shm::Descriptor> RogueApp::command_slots() {
  shm::RingMemory m = region_->command_ring();
  return {m.slots, m.entries};
}

std::span<shm::Descriptor> RogueApp::completion_slots() {
  shm::RingMemory m = region_->completion_ring();
  return {m.slots, m.entries};
}

void RogueApp::WriteCommandSlot(uint64_t index, const shm::Descriptor& d) {
  std::span<shm::Descriptor> slots = command_slots();
  std::memcpy(&slots[index & (slots.size() - 1)], &d, sizeof(d));
}

void RogueApp::StoreCommandProducer(uint64_t value) {
  StoreRelease(command_control().producer.value, value);
}

void RogueApp::StoreCompletionConsumer(uint64_t value) {
  StoreRelease(completion_control().consumer.value, value);
}

uint64_t RogueApp::LoadCommandConsumer() { return LoadAcquire(command_control().consumer.value); }

bool RogueApp::Push(const shm::Descriptor& d) {
  if (next_command_ - LoadCommandConsumer() >= command_slots().size()) return false;
  WriteCommandSlot(next_command_, d);
  StoreCommandProducer(++next_command_);
  Wake();
  return true;
}

shm::Descriptor RogueApp::Command(shm::Opcode op, uint64_t cookie, uint64_t handle) {
  shm::Descriptor d{};
  d.opcode = static_cast<uint16_t>(op);
  d.cookie = cookie;
  d.handle = handle;
  return d;
}

std::pair<uint64_t, uint64_t> RogueApp::PutText(uint64_t heap_offset, std::string_view text) {
  std::span<std::byte> heap = region_->heap();
  std::memcpy(heap.data() + heap_offset, text.data(), text.size());
  return {heap_offset, text.size()};
}

std::optional<shm::Descriptor> RogueApp::PopCompletion() {
  std::span<shm::Descriptor> slots = completion_slots();
  if (LoadAcquire(completion_control().producer.value) <= next_completion_) return std::nullopt;
  shm::Descriptor d;
  std::memcpy(&d, &slots[next_completion_ & (slots.size() - 1)], sizeof(d));
  StoreCompletionConsumer(++next_completion_);
  return d;
}

void RogueApp::PumpControl(int wait_ms) {
  if (closed_.has_value()) return;
  if (wait_ms > 0) {
    pollfd p{.fd = control_->fd(), .events = POLLIN, .revents = 0};
    (void)::poll(&p, 1, wait_ms);
  }
  for (int i = 0; i < 64; ++i) {
    Result<std::optional<shm::ControlMessage>> got = control_->Receive();
    if (!got.ok()) {
      closed_ = got.status();
      return;
    }
    if (!got->has_value()) return;
    Result<shm::AttachMessage> m = shm::DecodeAttach((*got)->bytes);
    if (!m.ok()) continue;
    if (m->type == shm::ControlType::kFault) {
      closed_ = m->fault;
      return;
    }
    if (m->type == shm::ControlType::kStatsReply) stats_ = std::move(m->stats);
  }
}

Result<shm::Descriptor> RogueApp::WaitFor(const std::function<bool(const shm::Descriptor&)>& match,
                                          std::chrono::milliseconds timeout) {
  const TimeNs deadline = Now() + timeout.count() * kNsPerMs;
  uint32_t& waiting = completion_control().consumer.waiting;
  while (true) {
    while (std::optional<shm::Descriptor> d = PopCompletion()) {
      if (match(*d)) return *d;
      seen_.push_back(*d);
    }
    PumpControl(0);
    if (closed_.has_value()) return *closed_;
    if (Now() >= deadline) return DeadlineExceededError("no matching completion-ring entry");
    // Ask for a doorbell, look once more, then sleep on the socket.
    std::atomic_ref<uint32_t>(waiting).store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (LoadAcquire(completion_control().producer.value) == next_completion_) PumpControl(20);
    std::atomic_ref<uint32_t>(waiting).store(0, std::memory_order_relaxed);
  }
}

Result<shm::Descriptor> RogueApp::WaitForCookie(uint64_t cookie,
                                                std::chrono::milliseconds timeout) {
  return WaitFor(
      [cookie](const shm::Descriptor& d) {
        return d.cookie == cookie && (d.opcode == static_cast<uint16_t>(shm::Opcode::kCompletion) ||
                                      d.opcode == static_cast<uint16_t>(shm::Opcode::kFault));
      },
      timeout);
}

std::string RogueApp::Text(const shm::Descriptor& d) {
  Result<std::span<std::byte>> range = region_->HeapRange(d.heap_offset, d.length);
  if (!range.ok()) return "";
  return std::string(reinterpret_cast<const char*>(range->data()), range->size());
}

bool RogueApp::Release(const shm::Descriptor& d) {
  shm::Descriptor r = Command(shm::Opcode::kReleaseBuffer);
  r.heap_offset = d.heap_offset;
  r.length = d.length;
  return Push(r);
}

void RogueApp::Wake() { (void)control_->Send(shm::EncodeRequest(shm::ControlType::kWake)); }

Status RogueApp::WaitForClose(std::chrono::milliseconds timeout) {
  const TimeNs deadline = Now() + timeout.count() * kNsPerMs;
  while (!closed_.has_value()) {
    const TimeNs now = Now();
    if (now >= deadline) return DeadlineExceededError("wharfd kept the session open");
    PumpControl(static_cast<int>(std::min<TimeNs>((deadline - now) / kNsPerMs + 1, 50)));
  }
  return *closed_;
}

Result<std::map<std::string, uint64_t>> RogueApp::Stats(std::chrono::milliseconds timeout) {
  stats_.reset();
  WHARF_RETURN_IF_ERROR(control_->Send(shm::EncodeRequest(shm::ControlType::kStatsRequest)));
  const TimeNs deadline = Now() + timeout.count() * kNsPerMs;
  while (!stats_.has_value()) {
    if (closed_.has_value()) return *closed_;
    if (Now() >= deadline) return DeadlineExceededError("no kStatsReply");
    PumpControl(20);
  }
  std::map<std::string, uint64_t> out;
  for (const shm::Counter& c : *stats_) out[c.name] = c.value;
  return out;
}

Result<std::string> DaemonStatus(const std::string& socket_path) {
  return internal::QueryDaemonStatus(socket_path, std::chrono::seconds(5));
}

}  // namespace wharf::daemon::testing
