// daemon/isolation_fuzz_test.cc: the fuzzer the isolation requirement asks
// for, as a bounded suite test. A rogue application writes random bytes into
// its live region (both rings' control lines and slots, its heap) and pushes
// random commands whose fields lean toward boundary values, for a few
// seconds (fixed seed), re-attaching whenever wharfd gives up on it; two
// well-behaved applications exchange RPCs and connection messages the whole
// time and must see no error and no changed byte. Afterwards wharfd is alive,
// serves a new attach and answers a status query with JSON that parses.
// (isolation_test.cc has one deterministic test per kind of bad input;
// fuzz/session_commands_fuzzer.cc drives one session without a daemon.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon/testing/daemon_thread.h"
#include "daemon/testing/good_pair.h"
#include "daemon/testing/rogue_app.h"
#include "shm/commands.h"

namespace wharf::daemon {
namespace {

using shm::Descriptor;
using shm::Opcode;
using testing::GoodPair;
using testing::RogueApp;

constexpr auto kFuzzTime = std::chrono::seconds(6);
constexpr uint64_t kSeed = 20240611;

constexpr Opcode kCommands[] = {
    Opcode::kNop,       Opcode::kSend,    Opcode::kRecv,         Opcode::kCancel,
    Opcode::kCall,      Opcode::kConnect, Opcode::kListen,       Opcode::kAccept,
    Opcode::kDisconnect, Opcode::kReleaseConn, Opcode::kBarrier, Opcode::kServe,
    Opcode::kRespond,   Opcode::kReleaseBuffer, Opcode::kAddPeer, Opcode::kRegionAsk,
    Opcode::kRegionRead, Opcode::kRegionWrite, Opcode::kRegionAtomic, Opcode::kRegionRelease,
    Opcode::kRegionLend, Opcode::kRegionRevoke};

// Random values leaning toward the edges a bug would live on.
class Chooser {
 public:
  explicit Chooser(uint64_t seed) : rng_(seed) {}
  uint64_t Any() { return rng_(); }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  bool OneIn(uint64_t n) { return Below(n) == 0; }
  // One of `edges` (and +-1 around it) most of the time, else anything.
  uint64_t Edgy(std::initializer_list<uint64_t> edges) {
    if (OneIn(5)) return Any();
    const uint64_t e = *(edges.begin() + Below(edges.size()));
    switch (Below(4)) {
      case 0: return e - 1;
      case 1: return e + 1;
      default: return e;
    }
  }

 private:
  std::mt19937_64 rng_;
};

class Fuzzer {
 public:
  Fuzzer(RogueApp& rogue, Chooser& c) : r_(rogue), c_(c) {}

  // A command, usually one the validator lets through (so the session's
  // own checks are reached), sometimes not.
  Descriptor Command() {
    const shm::Layout& layout = r_.layout();
    const uint64_t heap = layout.heap_bytes;
    const uint64_t max_message = r_.welcome().max_message_bytes;
    const bool valid = !c_.OneIn(12);
    Descriptor d{};
    d.opcode = valid || c_.OneIn(2)
                   ? static_cast<uint16_t>(kCommands[c_.Below(std::size(kCommands))])
                   : static_cast<uint16_t>(c_.Edgy({0, 5, 18, 22, 63, 64, 0xFFFF}));
    d.flags = valid ? static_cast<uint16_t>(c_.Below(shm::kKnownCommandFlags + 1) &
                                            shm::kKnownCommandFlags)
                    : static_cast<uint16_t>(c_.Any());
    d.status = static_cast<uint32_t>(c_.OneIn(2) ? c_.Below(20)
                                                 : c_.Edgy({0, GoodPair::kEchoMethod,
                                                            kFirstReservedMethod, UINT32_MAX}));
    d.cookie = c_.OneIn(3) ? 1 + c_.Below(64) : c_.Edgy({0, 1, 1ull << 63, UINT64_MAX});
    d.handle = c_.OneIn(2) ? c_.Below(16)
                           : c_.Edgy({0, 1, shm::kMaxPeerHandles, 1ull << 63, UINT64_MAX});
    if (valid) {
      // A range inside the heap, often at an edge of an area.
      d.heap_offset = c_.OneIn(2) ? c_.Below(heap)
                                  : std::min(heap, c_.Edgy({0, 64, heap / 2, heap - 64, heap}));
      if (d.heap_offset > heap) d.heap_offset = heap;
      const uint64_t room = std::min(heap - d.heap_offset, max_message);
      d.length = c_.OneIn(3) ? room : c_.Below(std::min<uint64_t>(room, 4096) + 1);
      if (d.length > 0 && c_.OneIn(2)) r_.PutText(d.heap_offset, std::string(
                                           std::min<uint64_t>(d.length, 64), 'x'));
    } else {
      d.heap_offset = c_.Edgy({0, heap, heap + 1, UINT64_MAX - 15, UINT64_MAX});
      d.length = c_.Edgy({0, max_message, max_message + 1, heap, UINT64_MAX});
    }
    for (uint64_t& a : d.aux) a = c_.OneIn(2) ? c_.Below(1000) : c_.Edgy({0, INT64_MAX, UINT64_MAX});
    return d;
  }

  // One random act; returns false once wharfd closed the session.
  bool Step() {
    const uint64_t capacity = r_.command_slots().size();
    switch (c_.Below(100)) {
      case 0: {  // the command ring's producer index
        const uint64_t at = r_.next_command();
        r_.StoreCommandProducer(c_.Edgy({at, at - 2, at + capacity, at + capacity + 1, 0,
                                         UINT64_MAX}));
        r_.Wake();
        break;
      }
      case 1: {  // the completion ring's consumer index
        const uint64_t p = r_.completion_control().producer.value;
        r_.StoreCompletionConsumer(c_.Edgy({p, 0, p + 1, UINT64_MAX}));
        break;
      }
      case 2: case 3: {  // bytes anywhere in the rings' control lines
        auto* line = reinterpret_cast<uint8_t*>(c_.OneIn(2) ? &r_.command_control()
                                                             : &r_.completion_control());
        const size_t at = c_.Below(sizeof(shm::RingControl) - 8);
        // Mostly the lines' unused bytes and waiting flags; the indices are
        // cases 0 and 1.
        if (at % 64 >= 8) std::memset(line + at, static_cast<int>(c_.Any()), 1 + c_.Below(8));
        break;
      }
      case 4: case 5: case 6: {  // raw bytes over a command slot, published
        auto* slot = reinterpret_cast<uint8_t*>(&r_.command_slots()[r_.next_command() % capacity]);
        Descriptor d = Command();
        std::memcpy(slot, &d, sizeof(d));
        const size_t at = c_.Below(sizeof(Descriptor));
        slot[at] = static_cast<uint8_t>(c_.Any());
        r_.StoreCommandProducer(r_.next_command() + 1);  // out of step with Push from now on
        r_.Wake();
        break;
      }
      case 7: case 8: {  // the completion ring's slots (wharfd only writes them)
        auto* slots = reinterpret_cast<uint8_t*>(r_.completion_slots().data());
        slots[c_.Below(r_.completion_slots().size_bytes())] = static_cast<uint8_t>(c_.Any());
        break;
      }
      case 9: case 10: {  // the heap, including ranges wharfd lent us
        std::span<std::byte> heap = r_.region().heap();
        heap[c_.Below(heap.size())] = static_cast<std::byte>(c_.Any());
        break;
      }
      case 11: case 12: case 13: case 14: case 15: case 16: case 17: case 18: case 19:
      case 20: case 21: case 22: case 23: case 24: {  // read and give back, sometimes twice
        while (std::optional<Descriptor> e = r_.PopCompletion()) {
          if (e->length > 0 && !c_.OneIn(8)) (void)r_.Release(*e);
          if (c_.OneIn(16)) (void)r_.Release(*e);
        }
        break;
      }
      case 25:  // garbage on the control socket, rarely
        if (c_.OneIn(10)) {
          uint64_t junk[2] = {c_.Any(), c_.Any()};
          (void)r_.control().Send(std::as_bytes(std::span(junk)));
        }
        break;
      default:
        (void)r_.Push(Command());
        break;
    }
    return !r_.CheckClosed().has_value();
  }

 private:
  RogueApp& r_;
  Chooser& c_;
};

TEST(IsolationFuzzTest, RandomBytesInARogueRegionNeverReachTheOthers) {
  auto daemon = testing::DaemonThread::Start({{"limits.max_backlog", "64"}});
  ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
  const std::string socket = (*daemon)->socket();
  auto good = GoodPair::Start(socket);
  ASSERT_TRUE(good.ok()) << good.status().ToString();

  // The good pair: connection rounds on one thread, larger RPCs on another.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> good_rounds{0}, good_calls{0};
  std::mutex errors_mu;
  std::vector<std::string> errors;
  auto note = [&](const Status& s) {
    std::lock_guard<std::mutex> lock(errors_mu);
    errors.push_back(s.ToString());
  };
  std::thread rounds([&] {
    for (uint64_t i = 0; !stop.load(); ++i) {
      if (Status s = (*good)->Exchange(i); !s.ok()) note(s);
      ++good_rounds;
    }
  });
  std::thread calls([&] {
    std::mt19937_64 rng(kSeed + 1);
    for (uint64_t i = 0; !stop.load(); ++i) {
      std::string body(1 + rng() % 20000, '\0');
      for (char& ch : body) ch = static_cast<char>(rng());
      Result<Buffer> r = (*good)->client().Call((*good)->server().address(), GoodPair::kEchoMethod,
                                                Buffer::Copy(body), {.deadline = std::chrono::seconds(5)});
      if (!r.ok()) {
        note(r.status().WithContext("good call " + std::to_string(i)));
      } else if (r->AsStringView() != "re:" + body) {
        note(DataLossError("good call " + std::to_string(i) + ": answer garbled"));
      }
      ++good_calls;
    }
  });

  Chooser chooser(kSeed);
  uint64_t steps = 0, sessions = 0;
  const auto end = std::chrono::steady_clock::now() + kFuzzTime;
  while (std::chrono::steady_clock::now() < end) {
    // Sessions that closed linger for AppSession::kLinger, and past their
    // allowance (2 x daemon.max_unattached + limits.max_applications, 384
    // here) wharfd refuses a newcomer by design: a fast machine attaches
    // rogues quicker than that. A refused attach waits for the lingerers,
    // up to five times kLinger.
    auto rogue = RogueApp::Attach(socket);
    for (int retry = 0; !rogue.ok() && retry < 50; ++retry) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      rogue = RogueApp::Attach(socket);
    }
    ASSERT_TRUE(rogue.ok()) << "attach " << sessions << ": " << rogue.status().ToString();
    ++sessions;
    Fuzzer fuzzer(**rogue, chooser);
    while (std::chrono::steady_clock::now() < end && fuzzer.Step()) {
      if (++steps % 64 == 0) std::this_thread::yield();
    }
  }
  stop = true;
  rounds.join();
  calls.join();
  EXPECT_TRUE(errors.empty()) << errors.size() << " errors, first: " << errors.front();
  EXPECT_GT(good_rounds.load(), 10u);
  EXPECT_GT(good_calls.load(), 10u);
  std::cout << "isolation fuzz: " << steps << " steps over " << sessions << " rogue sessions; "
            << good_rounds.load() << " good rounds, " << good_calls.load() << " good calls\n";

  // wharfd is alive: the good pair still talks, a new application attaches
  // and works, and the status JSON parses.
  EXPECT_TRUE((*good)->Exchange(1'000'000).ok());
  auto fresh = RogueApp::Attach(socket);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_TRUE((*fresh)->Push(RogueApp::Command(Opcode::kNop, 1)));
  Result<Descriptor> nop = (*fresh)->WaitForCookie(1);
  ASSERT_TRUE(nop.ok()) << nop.status().ToString();
  EXPECT_EQ(nop->status, 0u);
  Result<std::string> status = testing::DaemonStatus(socket);
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  nlohmann::json doc = nlohmann::json::parse(*status, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(doc.is_discarded()) << *status;
  EXPECT_GE(doc["applications"].size(), 3u);
}

}  // namespace
}  // namespace wharf::daemon
