// UcxRemoteMemory: regions asked, granted, lent, used and ended.
#include "ucx/ucx_remote_memory.h"

#include <algorithm>
#include <cstring>

namespace wharf::ucx {
namespace {

// The public access bits are the wire's.
static_assert(transport::kRegionRead == wire::kRegionRead);
static_assert(transport::kRegionWrite == wire::kRegionWrite);
static_assert(transport::kRegionAtomic == wire::kRegionAtomic);

// Asks may request alignment up to this much.
constexpr uint64_t kPoolAlignment = OwnedRegionPool::kAlignment;

std::string U(uint64_t v) { return std::to_string(v); }

uint32_t LifetimeMs(DurationNs ns) {
  return static_cast<uint32_t>(std::min<DurationNs>(ns / kNsPerMs, UINT32_MAX));
}

std::string_view View(const wire::UcxHeaderBytes& b) { return {b.data(), b.size()}; }

}  // namespace

UcxRemoteMemory::UcxRemoteMemory(UcpWorker& worker, const Clock& clock, Connector connect,
                                 Options options)
    : worker_(worker),
      clock_(clock),
      connect_(std::move(connect)),
      options_(options),
      lent_(options.max_regions, static_cast<uint64_t>(clock.WallNs())),
      held_(options.max_regions) {}

UcxRemoteMemory::~UcxRemoteMemory() = default;

Result<std::unique_ptr<UcxRemoteMemory>> UcxRemoteMemory::Create(UcpWorker& worker,
                                                                 const Clock& clock,
                                                                 Connector connect,
                                                                 Options options) {
  if (options.max_regions == 0) return InvalidArgumentError("ucx.max_regions: expected at least 1");
  std::unique_ptr<UcxRemoteMemory> m(
      new UcxRemoteMemory(worker, clock, std::move(connect), options));
  WHARF_ASSIGN_OR_RETURN(m->own_pool_, OwnedRegionPool::Create(options.pool_bytes));
  m->pool_ = m->own_pool_.get();
  return m;
}

// ------------------------------------------------------------------ holding

void UcxRemoteMemory::Ask(const transport::NetAddress& target, const transport::RegionSpec& spec,
                          HeldDone done) {
  Result<UcxPeer> peer = connect_(target);
  if (!peer.ok()) {
    done(peer.status());
    return;
  }
  if (asks_.size() + held_.size() >= options_.max_regions) {
    done(ResourceExhaustedError("ucx: " + U(options_.max_regions) +
                                " regions held or asked for already (ucx.max_regions)"));
    return;
  }
  const uint64_t id = next_ask_++;
  asks_.emplace(id, PendingAsk{*peer, clock_.NowNs() + kAskTimeout, std::move(done)});
  ++stats_.asks_sent;
  Send(*peer, wire::UcxKind::kRegionAsk, id,
       wire::EncodeRegionAsk({spec.size, spec.alignment, spec.access, spec.lifetime_ms}));
}

std::optional<HeldRegions::Region> UcxRemoteMemory::Checked(
    uint64_t handle, uint8_t access, uint64_t offset, uint64_t length,
    const std::function<void(Status)>& fail) {
  Result<HeldRegions::Region> r = held_.Check(handle, access, offset, length, clock_.NowNs());
  if (!r.ok()) {
    fail(r.status());
    return std::nullopt;
  }
  return *r;
}

void UcxRemoteMemory::Read(uint64_t handle, uint64_t offset, std::span<std::byte> into,
                           Done done) {
  auto r = Checked(handle, wire::kRegionRead, offset, into.size(), done);
  if (r) worker_.Get(r->lender, r->key, r->address + offset, into, std::move(done));
}

void UcxRemoteMemory::Write(uint64_t handle, uint64_t offset, std::span<const std::byte> from,
                            Done done) {
  auto r = Checked(handle, wire::kRegionWrite, offset, from.size(), done);
  if (r) worker_.Put(r->lender, r->key, r->address + offset, from, std::move(done));
}

void UcxRemoteMemory::WriteWithImmediate(uint64_t handle, uint64_t offset,
                                         std::span<const std::byte> from, uint64_t value,
                                         Done done) {
  auto r = Checked(handle, wire::kRegionWrite, offset, from.size(), done);
  if (!r) return;
  // The put completes once the data is in place (a flush); only then does
  // the immediate leave, on the same connection.
  const HeldRegions::Region region = *r;
  worker_.Put(region.lender, region.key, region.address + offset, from,
              [this, region, offset, length = from.size(), value,
               done = std::move(done)](const Status& put) {
                if (!put.ok()) {
                  done(put);
                  return;
                }
                Send(region.lender, wire::UcxKind::kImmediate, region.remote_id,
                     wire::EncodeRegionImmediate({region.remote_id, offset, length, value}));
                done(OkStatus());
              });
}

void UcxRemoteMemory::Atomic(uint64_t handle, uint64_t offset, transport::RegionAtomicOp op,
                             uint64_t value, uint64_t compare, WordDone done) {
  auto fail = [&done](Status s) { done(std::move(s)); };
  if (offset % 8 != 0) {
    return fail(InvalidArgumentError("region " + U(handle) + ": atomic at offset " + U(offset) +
                                     ", not 8-aligned"));
  }
  if (auto r = Checked(handle, wire::kRegionAtomic, offset, 8, fail)) {
    const UcpWorker::AtomicOp worker_op = op == transport::RegionAtomicOp::kCompareSwap
                                              ? UcpWorker::AtomicOp::kCompareSwap
                                              : UcpWorker::AtomicOp::kFetchAdd;
    worker_.Atomic(r->lender, r->key, r->address + offset, worker_op, value, compare,
                   std::move(done));
  }
}

Status UcxRemoteMemory::Release(uint64_t handle) {
  std::optional<HeldRegions::Region> r = held_.Take(handle);
  if (!r) return NotFoundError("region " + U(handle) + ": not held");
  worker_.DropKey(r->key);
  Send(r->lender, wire::UcxKind::kRegionRelease, r->remote_id,
       wire::EncodeRegionRelease(r->remote_id));
  return OkStatus();
}

Result<HeldRegions::Region> UcxRemoteMemory::Hold(UcxPeer lender, const wire::RegionGrant& grant) {
  WHARF_ASSIGN_OR_RETURN(uint64_t key, worker_.ImportKey(lender, grant.key));
  Result<HeldRegions::Region> held =
      held_.Add({.lender = lender,
                 .remote_id = grant.region,
                 .key = key,
                 .address = grant.address,
                 .size = grant.size,
                 .access = grant.access,
                 .expires_ns = clock_.NowNs() + DurationNs{grant.lifetime_ms} * kNsPerMs});
  if (!held.ok()) worker_.DropKey(key);
  return held;
}

// ------------------------------------------------------------------ lending

Result<uint64_t> UcxRemoteMemory::Lend(const transport::NetAddress& to, std::span<std::byte> memory,
                                       uint8_t access, DurationNs lifetime_ns) {
  if (memory.empty()) return InvalidArgumentError("ucx: lending no memory");
  if (access == 0 || (access & ~wire::kRegionAllAccess) != 0) {
    return InvalidArgumentError("ucx: access bits " + U(access));
  }
  if (lifetime_ns <= 0 || lifetime_ns > options_.max_lifetime_ns) {
    return InvalidArgumentError("ucx: a lifetime of " + U(lifetime_ns / kNsPerMs) + " ms");
  }
  WHARF_ASSIGN_OR_RETURN(UcxPeer peer, connect_(to));
  WHARF_ASSIGN_OR_RETURN(UcpWorker::MappedMemory mapped,
                         worker_.MapMemory(memory.data(), memory.size(),
                                           (access & (wire::kRegionWrite | wire::kRegionAtomic)) != 0));
  Result<LentRegions::Region> region = lent_.Add({.holder = peer,
                                                  .mapped_id = mapped.id,
                                                  .address = mapped.address,
                                                  .size = memory.size(),
                                                  .access = access,
                                                  .expires_ns = clock_.NowNs() + lifetime_ns});
  if (!region.ok()) {
    worker_.UnmapMemory(mapped.id);
    return region.status();
  }
  ++stats_.regions_lent;
  // Unasked: the grant carries the region's own id.
  Send(peer, wire::UcxKind::kRegionGrant, region->id,
       wire::EncodeRegionGrant({region->id, mapped.address, memory.size(), access,
                                LifetimeMs(lifetime_ns), mapped.key}));
  return region->id;
}

Status UcxRemoteMemory::Revoke(uint64_t region) {
  std::optional<LentRegions::Region> r = lent_.Take(region);
  if (!r) return NotFoundError("region " + U(region) + ": not lent");
  EndLent(*r, /*tell=*/true, /*returned=*/false);
  return OkStatus();
}

std::span<std::byte> UcxRemoteMemory::LentBytes(uint64_t region) {
  const LentRegions::Region* r = lent_.Find(region);
  if (r == nullptr) return {};
  return {reinterpret_cast<std::byte*>(r->address), r->size};
}

void UcxRemoteMemory::EndLent(const LentRegions::Region& region, bool tell, bool returned) {
  ++stats_.regions_released;
  if (returned) PushEvent({.kind = Event::Kind::kReturned, .region = region.id});
  worker_.UnmapMemory(region.mapped_id);
  if (!region.pool_block.empty()) {
    quarantine_.emplace_back(clock_.NowNs() + kQuarantine, region.pool_block);
  }
  if (tell) {
    Send(region.holder, wire::UcxKind::kRegionRelease, region.id,
         wire::EncodeRegionRelease(region.id));
  }
}

void UcxRemoteMemory::EndHeld(const HeldRegions::Region& region) {
  worker_.DropKey(region.key);
  PushEvent({.kind = Event::Kind::kReleased, .region = region.handle});
}

void UcxRemoteMemory::PushEvent(Event event) {
  // An application that never takes its events must not grow this side's
  // memory: past the cap they are dropped (and counted).
  if (events_.size() >= kMaxEvents) {
    ++stats_.events_dropped;
    return;
  }
  events_.push_back(std::move(event));
}

void UcxRemoteMemory::UsePool(transport::RegionPool* pool) {
  transport::RegionPool* next = pool != nullptr ? pool : own_pool_.get();
  if (next == pool_) return;
  // Every region lent so far ends (its holder told) and the pool's blocks
  // go back at once: the memory (wharfd's: the application's heap, pool and
  // lent alike) may change hands right after.
  for (const LentRegions::Region& r :
       lent_.TakeIf([](const LentRegions::Region&) { return true; })) {
    EndLent(r, /*tell=*/true, /*returned=*/true);
  }
  for (const auto& [at, block] : quarantine_) pool_->Give(block);
  quarantine_.clear();
  pool_ = next;
}

bool UcxRemoteMemory::PopEvent(Event* out) {
  if (events_.empty()) return false;
  *out = std::move(events_.front());
  events_.pop_front();
  return true;
}

// ------------------------------------------------------- from the transport

void UcxRemoteMemory::OnMessage(UcxPeer peer, const wire::UcxHeader& header, const Buffer& body) {
  switch (header.kind) {
    case wire::UcxKind::kRegionAsk:
      OnAsk(peer, header.rpc_id, body);
      return;
    case wire::UcxKind::kRegionGrant:
      OnGrant(peer, header.rpc_id, body);
      return;
    case wire::UcxKind::kRegionRelease:
      OnRelease(peer, header.rpc_id);
      return;
    case wire::UcxKind::kImmediate:
      OnImmediate(peer, body);
      return;
    default:
      ++stats_.malformed_dropped;
  }
}

Result<UcxRemoteMemory::Placed> UcxRemoteMemory::PlaceInPool(UcxPeer holder,
                                                             const transport::RegionSpec& spec) {
  const DurationNs lifetime = DurationNs{spec.lifetime_ms} * kNsPerMs;
  if (spec.size == 0 || (spec.access & ~wire::kRegionAllAccess) != 0 || spec.access == 0) {
    return InvalidArgumentError("ucx: a region of " + U(spec.size) + " bytes with access bits " +
                                U(spec.access));
  }
  if (spec.alignment > kPoolAlignment || (spec.alignment & (spec.alignment - 1)) != 0) {
    return InvalidArgumentError("ucx: alignment " + U(spec.alignment) +
                                " (a power of two up to " + U(kPoolAlignment) + ")");
  }
  if (lifetime <= 0 || lifetime > options_.max_lifetime_ns) {
    return InvalidArgumentError("ucx: a lifetime of " + U(spec.lifetime_ms) + " ms");
  }
  const std::span<std::byte> block = pool_->Take(spec.size, std::max<uint32_t>(spec.alignment, 8));
  if (block.empty()) {
    return ResourceExhaustedError("ucx: the pool has no " + U(spec.size) +
                                  " bytes free (ucx.pool_bytes, or wharfd's limits.heap_bytes)");
  }
  std::memset(block.data(), 0, block.size());  // nothing of an earlier region shows
  Result<UcpWorker::MappedMemory> mapped = worker_.MapMemory(
      block.data(), block.size(), (spec.access & (wire::kRegionWrite | wire::kRegionAtomic)) != 0);
  if (!mapped.ok()) {
    pool_->Give(block);
    return UnavailableError(mapped.status().message());
  }
  Result<LentRegions::Region> region = lent_.Add({.holder = holder,
                                                  .mapped_id = mapped->id,
                                                  .address = mapped->address,
                                                  .size = spec.size,
                                                  .access = spec.access,
                                                  .expires_ns = clock_.NowNs() + lifetime,
                                                  .pool_block = block});
  if (!region.ok()) {
    worker_.UnmapMemory(mapped->id);
    pool_->Give(block);
    return region.status();
  }
  ++stats_.regions_lent;
  return Placed{*region, std::move(mapped->key)};
}

void UcxRemoteMemory::OnAsk(UcxPeer peer, uint64_t ask_id, const Buffer& body) {
  Result<wire::RegionAsk> ask = wire::DecodeRegionAsk(body.AsStringView());
  if (!ask.ok()) return Refuse(peer, ask_id, StatusCode::kInvalidArgument);
  Result<Placed> placed =
      PlaceInPool(peer, {ask->size, ask->alignment, ask->access, ask->lifetime_ms});
  if (!placed.ok()) return Refuse(peer, ask_id, placed.status().code());
  const LentRegions::Region& r = placed->region;
  Send(peer, wire::UcxKind::kRegionGrant, ask_id,
       wire::EncodeRegionGrant({r.id, r.address, r.size, r.access, ask->lifetime_ms, placed->key}));
}

Result<transport::LentRegion> UcxRemoteMemory::LendFromPool(const transport::NetAddress& to,
                                                            const transport::RegionSpec& spec) {
  WHARF_ASSIGN_OR_RETURN(UcxPeer peer, connect_(to));
  WHARF_ASSIGN_OR_RETURN(Placed placed, PlaceInPool(peer, spec));
  const LentRegions::Region& r = placed.region;
  // Unasked: the grant carries the region's own id.
  Send(peer, wire::UcxKind::kRegionGrant, r.id,
       wire::EncodeRegionGrant({r.id, r.address, r.size, r.access, spec.lifetime_ms, placed.key}));
  return transport::LentRegion{r.id, LentBytes(r.id)};
}

void UcxRemoteMemory::OnGrant(UcxPeer peer, uint64_t id, const Buffer& body) {
  Result<wire::RegionGrant> grant = wire::DecodeRegionGrant(body.AsStringView());
  auto ask = asks_.find(id);
  const bool answers_ask = ask != asks_.end() && ask->second.peer == peer;
  if (!grant.ok() || (!answers_ask && IsAskId(id)) || (!answers_ask && id != grant->region)) {
    ++stats_.malformed_dropped;  // not an answer to an ask of ours to that peer, nor a loan
    if (grant.ok()) Send(peer, wire::UcxKind::kRegionRelease, grant->region,
                         wire::EncodeRegionRelease(grant->region));
    return;
  }
  Result<HeldRegions::Region> held = Hold(peer, *grant);
  if (!held.ok()) {
    // Not kept: the lender may free it.
    Send(peer, wire::UcxKind::kRegionRelease, grant->region, wire::EncodeRegionRelease(grant->region));
  }
  const Held info = held.ok() ? Held{held->handle, held->size, held->access, held->expires_ns}
                              : Held{};
  if (answers_ask) {
    HeldDone done = std::move(ask->second.done);
    asks_.erase(ask);
    ++stats_.asks_answered;
    done(held.ok() ? Result<Held>(info) : Result<Held>(held.status()));
  } else if (held.ok()) {
    PushEvent({.kind = Event::Kind::kLent, .region = info.handle, .held = info});
  }
}

bool UcxRemoteMemory::OnRefused(UcxPeer peer, uint64_t ask_id, StatusCode code) {
  if (!IsAskId(ask_id)) return false;
  auto ask = asks_.find(ask_id);
  if (ask == asks_.end() || ask->second.peer != peer) return true;  // ours, but not pending
  HeldDone done = std::move(ask->second.done);
  asks_.erase(ask);
  ++stats_.asks_refused;
  done(Status(code, "the target refused the region (" + std::string(StatusCodeName(code)) +
                        "): out of pool or regions, or a size, alignment or lifetime it does not take"));
  return true;
}

void UcxRemoteMemory::OnRelease(UcxPeer peer, uint64_t region) {
  // The holder gives back a region we lent...
  if (std::optional<LentRegions::Region> lent = lent_.Take(region, peer)) {
    EndLent(*lent, /*tell=*/false, /*returned=*/true);
    return;
  }
  // ...or the lender ended one we hold.
  if (std::optional<HeldRegions::Region> held = held_.TakeRemote(peer, region)) EndHeld(*held);
}

void UcxRemoteMemory::OnImmediate(UcxPeer peer, const Buffer& body) {
  Result<wire::RegionImmediate> imm = wire::DecodeRegionImmediate(body.AsStringView());
  const LentRegions::Region* region = imm.ok() ? lent_.Find(imm->region) : nullptr;
  if (region == nullptr || region->holder != peer || imm->offset > region->size ||
      imm->length > region->size - imm->offset) {
    ++stats_.immediates_dropped;
    return;
  }
  ++stats_.immediates_received;
  PushEvent({.kind = Event::Kind::kImmediate,
             .region = imm->region,
             .offset = imm->offset,
             .length = imm->length,
             .value = imm->value,
             .bytes = {reinterpret_cast<std::byte*>(region->address), region->size}});
}

void UcxRemoteMemory::Refuse(UcxPeer peer, uint64_t ask_id, StatusCode code) {
  const wire::UcxHeaderBytes header = wire::EncodeUcxHeader(
      {.kind = wire::UcxKind::kRefused, .code = static_cast<uint16_t>(code), .rpc_id = ask_id});
  worker_.Send(peer, View(header), Buffer(), nullptr);
}

void UcxRemoteMemory::Send(UcxPeer peer, wire::UcxKind kind, uint64_t id, std::string body) {
  const wire::UcxHeaderBytes header = wire::EncodeUcxHeader({.kind = kind, .rpc_id = id});
  worker_.Send(peer, View(header), Buffer::Copy(body), nullptr);
}

void UcxRemoteMemory::OnPeerFailed(UcxPeer peer) {
  for (const LentRegions::Region& r : lent_.TakeHolder(peer)) {
    EndLent(r, /*tell=*/false, /*returned=*/true);
  }
  for (const HeldRegions::Region& r : held_.TakeLender(peer)) EndHeld(r);
  for (auto it = asks_.begin(); it != asks_.end();) {
    if (it->second.peer != peer) {
      ++it;
      continue;
    }
    HeldDone done = std::move(it->second.done);
    it = asks_.erase(it);
    done(UnavailableError("ucx: the target failed before it answered the region ask"));
  }
}

bool UcxRemoteMemory::Uses(UcxPeer peer) const {
  // Cheap enough: both tables are capped, and this runs on idle checks only.
  for (const auto& [id, ask] : asks_) {
    if (ask.peer == peer) return true;
  }
  return held_.HoldsFrom(peer) || lent_.HeldBy(peer);
}

int UcxRemoteMemory::Expire(TimeNs now) {
  int work = 0;
  for (const LentRegions::Region& r : lent_.TakeExpired(now)) {
    ++stats_.regions_expired;
    EndLent(r, /*tell=*/true, /*returned=*/true);
    ++work;
  }
  while (!quarantine_.empty() && quarantine_.front().first <= now) {
    pool_->Give(quarantine_.front().second);
    quarantine_.pop_front();
    ++work;
  }
  for (auto it = asks_.begin(); it != asks_.end();) {
    if (it->second.deadline_ns > now) {
      ++it;
      continue;
    }
    HeldDone done = std::move(it->second.done);
    it = asks_.erase(it);
    done(DeadlineExceededError("ucx: the region ask went unanswered"));
    ++work;
  }
  return work;
}

TimeNs UcxRemoteMemory::NextDeadline() const {
  TimeNs next = lent_.NextExpiry();
  if (!quarantine_.empty()) next = std::min(next, quarantine_.front().first);
  for (const auto& [id, ask] : asks_) next = std::min(next, ask.deadline_ns);
  return next;
}

std::vector<std::pair<std::string, uint64_t>> UcxRemoteMemory::Counters() const {
  return {{"ucx.regions_lent_now", lent_.size()},
          {"ucx.regions_held_now", held_.size()},
          {"ucx.regions_lent", stats_.regions_lent},
          {"ucx.regions_released", stats_.regions_released},
          {"ucx.regions_expired", stats_.regions_expired},
          {"ucx.region_asks_sent", stats_.asks_sent},
          {"ucx.region_asks_answered", stats_.asks_answered},
          {"ucx.region_asks_refused", stats_.asks_refused},
          {"ucx.immediates_received", stats_.immediates_received},
          {"ucx.immediates_dropped", stats_.immediates_dropped},
          {"ucx.region_events_dropped", stats_.events_dropped},
          {"ucx.region_messages_dropped", stats_.malformed_dropped}};
}

}  // namespace wharf::ucx
