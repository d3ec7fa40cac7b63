// RemoteMemory: the public face of the engine's region operations
// (engine/region_ops.h), on an endpoint's core.
#include "wharf/remote_memory.h"

#include <utility>

#include "client/endpoint_core.h"
#include "client/public_access.h"

namespace wharf {
namespace {

using SteadyClock = std::chrono::steady_clock;

static_assert(static_cast<int>(RegionEvent::Kind::kReturned) ==
              static_cast<int>(transport::RegionEvent::Kind::kReturned));
static_assert(kRegionRead == transport::kRegionRead && kRegionWrite == transport::kRegionWrite &&
              kRegionAtomic == transport::kRegionAtomic);

Result<transport::RegionSpec> SpecOf(const RegionOptions& options) {
  const auto ms = options.lifetime.count();
  if (ms <= 0 || ms > UINT32_MAX) {
    return InvalidArgumentError("region lifetime: " + std::to_string(ms) +
                                " ms (expected 1 ms to an hour)");
  }
  return transport::RegionSpec{.size = options.size,
                               .alignment = options.alignment,
                               .access = options.access,
                               .lifetime_ms = static_cast<uint32_t>(ms)};
}

RemoteRegion PublicRegion(const transport::HeldRegion& held, TimeNs now_ns) {
  const TimeNs left = held.expires_ns > now_ns ? held.expires_ns - now_ns : 0;
  return {.handle = held.handle,
          .size = held.size,
          .access = held.access,
          .expires = SteadyClock::now() + std::chrono::nanoseconds(left)};
}

}  // namespace

RemoteMemory::RemoteMemory(Endpoint& endpoint) : core_(internal::PublicAccess::Core(endpoint)) {}

// ------------------------------------------------------------------ holding

Result<RemoteRegion> RemoteMemory::Ask(std::string_view peer, const RegionOptions& options,
                                       std::chrono::nanoseconds timeout) {
  WHARF_ASSIGN_OR_RETURN(transport::RegionSpec spec, SpecOf(options));
  WHARF_ASSIGN_OR_RETURN(engine::Uri uri, core_->Resolve(peer));
  const auto asked_at = SteadyClock::now();
  auto state = core_->Start(
      [&](engine::EngineApi& e, uint64_t op) { e.AskRegion(op, uri, spec); });
  WHARF_RETURN_IF_ERROR(core_->Await(*state, core_->DeadlineAfter(timeout))
                            .WithContext("region from " + std::string(peer)));
  // Its lifetime counts from the grant, which came after the ask left.
  return RemoteRegion{.handle = state->value,
                      .size = options.size,
                      .access = options.access,
                      .expires = asked_at + options.lifetime};
}

Completion RemoteMemory::IRead(const RemoteRegion& region, uint64_t offset, Buffer into) {
  return internal::PublicAccess::MakeCompletion(core_->Start([&](engine::EngineApi& e, uint64_t op) {
    e.ReadRegion(op, region.handle, offset, std::move(into));
  }));
}

Result<Buffer> RemoteMemory::Read(const RemoteRegion& region, uint64_t offset, size_t length,
                                  std::chrono::nanoseconds timeout) {
  Completion c = IRead(region, offset, core_->AllocateBuffer(length));
  WHARF_RETURN_IF_ERROR(c.Wait(timeout));
  return c.TakeMessage();
}

Completion RemoteMemory::IWrite(const RemoteRegion& region, uint64_t offset, Buffer data) {
  return internal::PublicAccess::MakeCompletion(core_->Start([&](engine::EngineApi& e, uint64_t op) {
    e.WriteRegion(op, region.handle, offset, std::move(data), std::nullopt);
  }));
}

Status RemoteMemory::Write(const RemoteRegion& region, uint64_t offset, Buffer data,
                           std::chrono::nanoseconds timeout) {
  return IWrite(region, offset, std::move(data)).Wait(timeout);
}

Completion RemoteMemory::IWriteWithImmediate(const RemoteRegion& region, uint64_t offset,
                                             Buffer data, uint64_t value) {
  return internal::PublicAccess::MakeCompletion(core_->Start([&](engine::EngineApi& e, uint64_t op) {
    e.WriteRegion(op, region.handle, offset, std::move(data), value);
  }));
}

Status RemoteMemory::WriteWithImmediate(const RemoteRegion& region, uint64_t offset, Buffer data,
                                        uint64_t value, std::chrono::nanoseconds timeout) {
  return IWriteWithImmediate(region, offset, std::move(data), value).Wait(timeout);
}

Result<uint64_t> RemoteMemory::CompareAndSwap(const RemoteRegion& region, uint64_t offset,
                                              uint64_t expected, uint64_t desired,
                                              std::chrono::nanoseconds timeout) {
  auto state = core_->Start([&](engine::EngineApi& e, uint64_t op) {
    e.RegionAtomic(op, region.handle, offset, transport::RegionAtomicOp::kCompareSwap, desired,
                   expected);
  });
  WHARF_RETURN_IF_ERROR(core_->Await(*state, core_->DeadlineAfter(timeout)));
  return state->value;
}

Result<uint64_t> RemoteMemory::FetchAdd(const RemoteRegion& region, uint64_t offset, uint64_t add,
                                        std::chrono::nanoseconds timeout) {
  auto state = core_->Start([&](engine::EngineApi& e, uint64_t op) {
    e.RegionAtomic(op, region.handle, offset, transport::RegionAtomicOp::kFetchAdd, add, 0);
  });
  WHARF_RETURN_IF_ERROR(core_->Await(*state, core_->DeadlineAfter(timeout)));
  return state->value;
}

Status RemoteMemory::Release(const RemoteRegion& region) {
  return core_->WithEngine([&](engine::EngineApi& e) { return e.ReleaseRegion(region.handle); });
}

// ------------------------------------------------------------------ lending

Result<LocalRegion> RemoteMemory::Lend(std::string_view peer, const RegionOptions& options) {
  WHARF_ASSIGN_OR_RETURN(transport::RegionSpec spec, SpecOf(options));
  WHARF_ASSIGN_OR_RETURN(engine::Uri uri, core_->Resolve(peer));
  auto state = core_->Start(
      [&](engine::EngineApi& e, uint64_t op) { e.LendRegion(op, uri, spec); });
  WHARF_RETURN_IF_ERROR(core_->Await(*state, kNever));
  // The message is a view of the region's bytes; the engine owns them.
  Completion done = internal::PublicAccess::MakeCompletion(state);
  Buffer view = done.TakeMessage();
  return LocalRegion{.id = state->value, .bytes = view.span()};
}

Result<LocalRegion> RemoteMemory::LendMemory(std::string_view peer, std::span<std::byte> memory,
                                             uint8_t access, std::chrono::milliseconds lifetime) {
  WHARF_ASSIGN_OR_RETURN(transport::RegionSpec spec,
                         SpecOf({.size = memory.size(), .access = access, .lifetime = lifetime}));
  WHARF_ASSIGN_OR_RETURN(engine::Uri uri, core_->Resolve(peer));
  auto state = core_->Start([&](engine::EngineApi& e, uint64_t op) {
    e.LendMemory(op, uri, memory, spec.access, spec.lifetime_ms);
  });
  WHARF_RETURN_IF_ERROR(core_->Await(*state, kNever));
  return LocalRegion{.id = state->value, .bytes = memory};
}

Status RemoteMemory::Revoke(uint64_t region) {
  return core_->WithEngine([&](engine::EngineApi& e) { return e.RevokeRegion(region); });
}

std::span<std::byte> RemoteMemory::LocalBytes(uint64_t region) {
  return core_->WithEngine([&](engine::EngineApi& e) { return e.LentRegionBytes(region); });
}

// ------------------------------------------------------------------- events

std::optional<RegionEvent> RemoteMemory::PollEvent() {
  transport::RegionEvent e;
  if (!core_->WithEngine([&](engine::EngineApi& engine) { return engine.PopRegionEvent(&e); })) {
    return std::nullopt;
  }
  RegionEvent out{.kind = static_cast<RegionEvent::Kind>(e.kind),
                  .region = e.region,
                  .offset = e.offset,
                  .length = e.length,
                  .value = e.value};
  if (e.kind == transport::RegionEvent::Kind::kLent) out.lent = PublicRegion(e.held, core_->NowNs());
  return out;
}

Result<RegionEvent> RemoteMemory::WaitEvent(std::chrono::nanoseconds timeout) {
  std::optional<RegionEvent> event;
  // The wait may ask more than once after the event came: take one, once.
  core_->AwaitUntil(
      [&] {
        if (!event) event = PollEvent();
        return event.has_value();
      },
      core_->DeadlineAfter(timeout));
  if (!event) return DeadlineExceededError("no region event in time");
  return *event;
}

}  // namespace wharf
