// daemon/testing/session_program.h: RunSessionProgram, which attaches one
// application to an AppSession on a FakeSessionHost and then plays a byte
// string as a program of what a hostile application can do to its region:
// write commands (fields leaning toward boundary values) or raw indices into
// its rings, read and release (or double-release) what wharfd delivered,
// let time pass. Shared by fuzz/session_commands_fuzzer.cc (libFuzzer picks
// the bytes) and app_session_test.cc (random bytes, fixed seed), so the
// fuzzer's driver is built and run by the ordinary suite too.
//
// What it checks is what ASan/UBSan and the session's own behaviour say: no
// crash, no read or write outside the region, and a session that, once it
// says it is closing, stays closed.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <cstring>
#include <span>

#include "daemon/testing/fake_session_host.h"
#include "shm/commands.h"

namespace wharf::daemon::testing {

struct SessionProgramResult {
  bool attached = false;
  bool closed = false;  // wharfd gave up on the session
  uint64_t commands = 0;
  uint64_t bad_commands = 0;
  uint64_t completions = 0;
};

inline constexpr uint16_t kCommandOpcodes[] = {1, 2, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};

inline SessionProgramResult RunSessionProgram(std::span<const uint8_t> program) {
  SessionProgramResult result;
  size_t pos = 0;
  auto u8 = [&]() -> uint8_t { return pos < program.size() ? program[pos++] : 0; };
  auto u64 = [&]() -> uint64_t {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | u8();
    return v;
  };

  FakeSessionHost host({{"limits.heap_bytes", "65536"},
                        {"limits.max_backlog", "16"},
                        {"limits.max_inflight", "32"},
                        {"limits.max_connections", "4"}});
  SimClock& clock = host.sim_clock();
  auto pair = shm::ControlConnection::Pair(clock, {.max_message_bytes = 1 << 16, .max_fds = 1});
  if (!pair.ok()) return result;
  auto& [daemon_end, app_end] = *pair;
  AppSession session(host, 1, std::move(daemon_end));
  const shm::Geometry wanted{.command_entries = 8, .completion_entries = 8, .heap_bytes = 65536};
  (void)app_end->Send(shm::EncodeHello({.address = "homa://0.0.0.0:0", .geometry = wanted}));
  session.Poll(clock.NowNs(), /*check_control=*/true);
  auto welcome = app_end->Receive();
  if (!welcome.ok() || !welcome->has_value() || (*welcome)->fds.size() != 1) return result;
  auto decoded = shm::DecodeAttach((*welcome)->bytes);
  if (!decoded.ok() || !decoded->welcome.status.ok()) return result;
  auto region = shm::Region::Attach((*welcome)->fds[0].get(), decoded->welcome.geometry);
  if (!region.ok()) return result;
  result.attached = true;

  shm::RingMemory commands = (*region)->command_ring();
  shm::RingMemory completions = (*region)->completion_ring();
  const uint64_t heap = (*region)->layout().heap_bytes;
  const uint64_t max_message = decoded->welcome.max_message_bytes;
  uint64_t produced = 0;  // our command producer index
  uint64_t consumed = 0;  // our completion consumer index
  auto publish = [&](const shm::Descriptor& d) {
    std::memcpy(&commands.slots[produced % commands.entries], &d, sizeof(d));
    std::atomic_ref<uint64_t>(commands.control->producer.value).store(++produced);
  };
  // A value for a descriptor field: an edge most of the time.
  auto edgy = [&](uint64_t small_limit) -> uint64_t {
    switch (u8() % 10) {
      case 0: return 0;
      case 1: return 1;
      case 2: return heap / 2;
      case 3: return heap;
      case 4: return max_message + (u8() & 1);
      case 5: return UINT64_MAX - u8();
      case 6: return uint64_t{1} << 63;
      case 7: return u64();
      default: return small_limit == 0 ? 0 : u8() % small_limit;
    }
  };

  bool was_closing = false;
  for (int step = 0; step < 512 && pos < program.size(); ++step) {
    switch (u8() % 10) {
      case 0: case 1: case 2: case 3: case 4: {  // a command
        shm::Descriptor d{};
        // Mostly what the validator lets through, so that the session's
        // own checks are reached; sometimes anything.
        const bool valid = u8() < 240;
        const uint8_t op = u8();
        d.opcode = valid ? kCommandOpcodes[op % std::size(kCommandOpcodes)]
                         : static_cast<uint16_t>(op < 128 ? op : u64());
        d.flags = valid ? (u8() & shm::kKnownCommandFlags) : static_cast<uint16_t>(u64());
        d.status = static_cast<uint32_t>(edgy(32));
        d.cookie = edgy(64);
        d.handle = edgy(16);
        d.heap_offset = edgy(heap);
        d.length = edgy(256);
        if (valid) {
          d.heap_offset = std::min(d.heap_offset, heap);
          d.length = std::min({d.length, heap - d.heap_offset, max_message});
        }
        for (uint64_t& a : d.aux) a = edgy(1000);
        publish(d);
        break;
      }
      case 5:  // the producer index, raw or nudged (now and then: it breaks the ring)
        if (u8() >= 16) break;
        std::atomic_ref<uint64_t>(commands.control->producer.value)
            .store((u8() & 1) ? u64() : produced + u8() - 128);
        break;
      case 6:  // the completion consumer index, raw (now and then)
        if (u8() >= 16) break;
        std::atomic_ref<uint64_t>(completions.control->consumer.value).store(u64());
        break;
      case 7: {  // read what wharfd wrote; release it, maybe twice
        const uint64_t end = std::atomic_ref<uint64_t>(completions.control->producer.value).load();
        for (int n = 0; consumed < end && n < 16; ++n) {
          shm::Descriptor e;
          std::memcpy(&e, &completions.slots[consumed % completions.entries], sizeof(e));
          std::atomic_ref<uint64_t>(completions.control->consumer.value).store(++consumed);
          if (e.length > 0 && (u8() % 4) != 0) {
            shm::Descriptor r{};
            r.opcode = static_cast<uint16_t>(shm::Opcode::kReleaseBuffer);
            r.heap_offset = e.heap_offset;
            r.length = e.length;
            if (produced - std::atomic_ref<uint64_t>(commands.control->consumer.value).load() <
                commands.entries) {
              publish(r);
            }
          }
        }
        while (true) {  // its doorbells and faults
          auto m = app_end->Receive();
          if (!m.ok() || !m->has_value()) break;
        }
        break;
      }
      case 8:  // bytes into the heap
        (*region)->heap()[u64() % heap] = static_cast<std::byte>(u8());
        break;
      default:  // time passes
        clock.AdvanceBy(static_cast<DurationNs>(u8()) * kNsPerMs);
        break;
    }
    session.Poll(clock.NowNs(), /*check_control=*/true);
    if (was_closing && !session.closing()) std::abort();  // closed is for good
    was_closing = session.closing();
  }
  // Let the engine finish (deadlines, linger), then count.
  for (int i = 0; i < 8; ++i) {
    clock.AdvanceBy(AppSession::kLinger);
    session.Poll(clock.NowNs(), /*check_control=*/true);
  }
  result.closed = session.closing();
  result.commands = session.counters().commands;
  result.bad_commands = session.counters().bad_commands;
  result.completions = session.counters().completions;
  return result;
}

}  // namespace wharf::daemon::testing
