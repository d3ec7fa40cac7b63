// daemon/isolation_test.cc: what wharfd does with an application that writes
// garbage. Each test attaches a RogueApp beside two well-behaved managed
// applications (GoodPair), makes the rogue do one bad thing, and checks that
// the rogue gets a clear error (a kFault or failed kCompletion entry naming
// the problem, or its session closed with a kFault naming the ring and
// field), that the daemon's counters show it, and that the good pair's RPCs
// and connection carry on with every byte intact. The random version of
// all this is isolation_fuzz_test.cc.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon/testing/daemon_thread.h"
#include "daemon/testing/good_pair.h"
#include "client/testing/server_thread.h"
#include "daemon/testing/rogue_app.h"
#include "engine/uri.h"
#include "shm/commands.h"

namespace wharf::daemon {
namespace {

using shm::Descriptor;
using shm::Opcode;
using testing::DaemonStatus;
using testing::GoodPair;
using testing::RogueApp;

constexpr uint16_t Op(Opcode op) { return static_cast<uint16_t>(op); }

class IsolationTest : public ::testing::Test {
 protected:
  // Daemon settings; a derived fixture may add some.
  virtual std::vector<std::pair<std::string, std::string>> Settings() const {
    return {{"limits.max_backlog", "64"}};
  }
  void SetUp() override {
    auto d = testing::DaemonThread::Start(Settings());
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    daemon_ = std::move(*d);
    auto pair = GoodPair::Start(daemon_->socket());
    ASSERT_TRUE(pair.ok()) << pair.status().ToString();
    good_ = std::move(*pair);
    ExpectOthersFine();
    auto rogue = RogueApp::Attach(daemon_->socket());
    ASSERT_TRUE(rogue.ok()) << rogue.status().ToString();
    rogue_ = std::move(*rogue);
  }
  void TearDown() override {
    if (good_ != nullptr) ExpectOthersFine();
    rogue_.reset();
    good_.reset();
    daemon_.reset();
  }

  // The good pair does a few rounds without any error.
  void ExpectOthersFine() {
    for (int i = 0; i < 3; ++i) {
      Status s = good_->Exchange(round_++);
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
  }

  nlohmann::json DaemonJson() {
    Result<std::string> text = DaemonStatus(daemon_->socket());
    EXPECT_TRUE(text.ok()) << text.status().ToString();
    return text.ok() ? nlohmann::json::parse(*text) : nlohmann::json::object();
  }
  // The rogue's entry in the status JSON (wharfd calls it program "rogue").
  nlohmann::json RogueStatus() {
    const nlohmann::json all = DaemonJson();
    for (const auto& app : all["applications"]) {
      if (app["program"] == "rogue") return app;
    }
    return nlohmann::json::object();
  }
  uint64_t RogueStat(const std::string& name) {
    auto stats = rogue_->Stats();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    return stats.ok() ? (*stats)[name] : 0;
  }

  // Pushes `d` and expects the rogue's session to be closed with `code` and
  // a message holding every piece of `want`; then the daemon counts it.
  void ExpectSessionClosed(StatusCode code, std::vector<std::string> want) {
    Status why = rogue_->WaitForClose();
    EXPECT_EQ(why.code(), code) << why.ToString();
    for (const std::string& w : want) EXPECT_NE(why.message().find(w), std::string::npos) << w;
    // Counted once the session is gone (it lingers kLinger first).
    nlohmann::json daemon;
    for (int i = 0; i < 200; ++i) {
      daemon = DaemonJson()["daemon"];
      if (daemon["applications_faulted"].get<uint64_t>() > 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(daemon["applications_faulted"], 1);
    EXPECT_NE(daemon["last_fault"].get<std::string>().find(want.front()), std::string::npos)
        << daemon["last_fault"];
  }

  // Pushes `d` and waits for the kFault entry about it.
  Descriptor ExpectFault(const Descriptor& d, StatusCode code, const std::string& want) {
    EXPECT_TRUE(rogue_->Push(d));
    Result<Descriptor> f = rogue_->WaitFor(
        [&](const Descriptor& e) { return e.opcode == Op(Opcode::kFault) && e.aux[0] == d.opcode; });
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    if (!f.ok()) return {};
    EXPECT_EQ(f->status, static_cast<uint32_t>(code));
    EXPECT_EQ(f->cookie, d.cookie);
    const std::string text = rogue_->Text(*f);
    EXPECT_NE(text.find(want), std::string::npos) << text;
    EXPECT_TRUE(rogue_->Release(*f));
    return *f;
  }

  // Pushes `d` and waits for its failed kCompletion.
  Descriptor ExpectFailed(const Descriptor& d, StatusCode code, const std::string& want) {
    EXPECT_TRUE(rogue_->Push(d));
    Result<Descriptor> c = rogue_->WaitForCookie(d.cookie);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    if (!c.ok()) return {};
    EXPECT_EQ(c->opcode, Op(Opcode::kCompletion));
    EXPECT_EQ(c->status, static_cast<uint32_t>(code)) << rogue_->Text(*c);
    const std::string text = rogue_->Text(*c);
    EXPECT_NE(text.find(want), std::string::npos) << text;
    return *c;
  }

  // The rogue's session still works: a NOP round trip.
  void ExpectRogueAlive(uint64_t cookie) {
    ASSERT_TRUE(rogue_->Push(RogueApp::Command(Opcode::kNop, cookie)));
    Result<Descriptor> c = rogue_->WaitForCookie(cookie);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->status, 0u);
  }

  std::unique_ptr<testing::DaemonThread> daemon_;
  std::unique_ptr<GoodPair> good_;
  std::unique_ptr<RogueApp> rogue_;
  uint64_t round_ = 0;
};

// ------------------------------------------------- broken ring: session ends

TEST_F(IsolationTest, UnknownOpcodeClosesOnlyTheRogue) {
  Descriptor d = RogueApp::Command(static_cast<Opcode>(999), 1);
  ASSERT_TRUE(rogue_->Push(d));
  ExpectSessionClosed(StatusCode::kInvalidArgument,
                      {"command ring: descriptor at index 0: unknown opcode 999"});
}

TEST_F(IsolationTest, CompletionOpcodeOnTheCommandRingIsRefused) {
  ExpectRogueAlive(1);
  ASSERT_TRUE(rogue_->Push(RogueApp::Command(Opcode::kFault, 2)));
  ExpectSessionClosed(StatusCode::kInvalidArgument,
                      {"descriptor at index 1: opcode FAULT (22) is not accepted"});
}

TEST_F(IsolationTest, UnknownFlagsAreRefused) {
  Descriptor d = RogueApp::Command(Opcode::kNop, 1);
  d.flags = 0x8000;
  ASSERT_TRUE(rogue_->Push(d));
  ExpectSessionClosed(StatusCode::kInvalidArgument, {"unknown flags 0x8000"});
}

TEST_F(IsolationTest, ProducerIndexMovedBackwards) {
  ExpectRogueAlive(1);
  ExpectRogueAlive(2);
  rogue_->StoreCommandProducer(1);
  rogue_->Wake();
  ExpectSessionClosed(StatusCode::kDataLoss,
                      {"command ring: producer index moved backwards from 2 to 1"});
}

TEST_F(IsolationTest, ProducerIndexJumpedPastCapacity) {
  const uint64_t capacity = rogue_->command_slots().size();
  rogue_->StoreCommandProducer(capacity + 1);
  rogue_->Wake();
  ExpectSessionClosed(StatusCode::kDataLoss,
                      {"command ring: producer index " + std::to_string(capacity + 1),
                       "(capacity " + std::to_string(capacity) + ")"});
}

TEST_F(IsolationTest, ProducerIndexNearTwoToTheSixtyFour) {
  rogue_->StoreCommandProducer(UINT64_MAX);
  rogue_->Wake();
  ExpectSessionClosed(StatusCode::kDataLoss, {"command ring: producer index 18446744073709551615"});
}

TEST_F(IsolationTest, HeapOffsetPastTheHeap) {
  Descriptor d = RogueApp::Command(Opcode::kCall, 1);
  d.heap_offset = rogue_->layout().heap_bytes + 64;
  d.length = 16;
  ASSERT_TRUE(rogue_->Push(d));
  ExpectSessionClosed(StatusCode::kInvalidArgument,
                      {"heap range offset " + std::to_string(d.heap_offset),
                       "does not fit in the heap of " + std::to_string(rogue_->layout().heap_bytes)});
}

TEST_F(IsolationTest, OffsetPlusLengthWrapping) {
  Descriptor d = RogueApp::Command(Opcode::kSend, 1);
  d.heap_offset = UINT64_MAX - 15;  // + 32 wraps to 16, inside the heap
  d.length = 32;
  ASSERT_TRUE(rogue_->Push(d));
  ExpectSessionClosed(StatusCode::kInvalidArgument,
                      {"heap range offset 18446744073709551600 length 32 does not fit"});
}

TEST_F(IsolationTest, LengthOverTheMaximumMessage) {
  Descriptor d = RogueApp::Command(Opcode::kSend, 1);
  d.length = rogue_->welcome().max_message_bytes + 1;
  ASSERT_TRUE(rogue_->Push(d));
  ExpectSessionClosed(StatusCode::kInvalidArgument,
                      {"length " + std::to_string(d.length) + " exceeds the maximum message size"});
}

TEST_F(IsolationTest, CompletionConsumerIndexPastProducer) {
  // wharfd looks at our consumer index only when its cached view says the
  // ring is full: fill it with NOPs that are never popped.
  rogue_->StoreCompletionConsumer(1'000'000);
  const uint64_t capacity = rogue_->completion_slots().size();
  for (uint64_t i = 1; i <= capacity + 8; ++i) {
    // Our command ring has the same capacity: wait for wharfd to take some.
    for (int tries = 0; !rogue_->Push(RogueApp::Command(Opcode::kNop, i)) && tries < 500; ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  ExpectSessionClosed(StatusCode::kDataLoss,
                      {"completion ring: consumer index 1000000 is", "ahead of producer"});
}

// --------------------------------------- bad commands: a fault, session lives

TEST_F(IsolationTest, ReleaseOfARangeNeverDelivered) {
  Descriptor d = RogueApp::Command(Opcode::kReleaseBuffer);
  d.heap_offset = rogue_->receive_area_offset() + 4096;
  d.length = 100;
  ExpectFault(d, StatusCode::kInvalidArgument, "is not a buffer wharfd delivered");
  d.heap_offset = 8;  // in the send area, wharfd never lends there
  ExpectFault(d, StatusCode::kInvalidArgument, "offset 8 is not a buffer wharfd delivered");
  ExpectRogueAlive(1);
  EXPECT_EQ(RogueStat("session.bad_commands"), 2u);
  EXPECT_EQ(RogueStatus()["bad_commands"], 2);
}

TEST_F(IsolationTest, ReleaseTwiceAndWithTheWrongLength) {
  // A failed operation's error text is a range wharfd lends us.
  Descriptor c = ExpectFailed(RogueApp::Command(Opcode::kRecv, 5, 77), StatusCode::kNotFound,
                              "connection 77 is not one of this application's");
  ASSERT_GT(c.length, 0u);
  Descriptor wrong = RogueApp::Command(Opcode::kReleaseBuffer);
  wrong.heap_offset = c.heap_offset;
  wrong.length = c.length + 1;
  ExpectFault(wrong, StatusCode::kInvalidArgument,
              "has " + std::to_string(c.length) + " bytes, not " + std::to_string(c.length + 1));
  ASSERT_TRUE(rogue_->Release(c));  // right: no fault
  ExpectRogueAlive(6);
  Descriptor again = RogueApp::Command(Opcode::kReleaseBuffer);
  again.heap_offset = c.heap_offset;
  again.length = c.length;
  ExpectFault(again, StatusCode::kInvalidArgument, "released twice?");
  for (const Descriptor& e : rogue_->seen()) {
    EXPECT_NE(e.opcode, Op(Opcode::kFault)) << "unexpected fault: " << rogue_->Text(e);
  }
  // The failed RECV and the two bad releases.
  EXPECT_EQ(RogueStat("session.bad_commands"), 3u);
}

TEST_F(IsolationTest, OneReleaseGivesBackFourRangesAndABadExtraOffsetIsAFault) {
  std::vector<Descriptor> got;
  for (uint64_t cookie = 11; cookie <= 15; ++cookie) {
    got.push_back(ExpectFailed(RogueApp::Command(Opcode::kRecv, cookie, 77),
                               StatusCode::kNotFound, "is not one of this application's"));
    ASSERT_GT(got.back().length, 0u);
  }
  Descriptor four = RogueApp::Command(Opcode::kReleaseBuffer);
  four.heap_offset = got[0].heap_offset;
  four.length = got[0].length;
  for (size_t k = 0; k < 3; ++k) four.aux[k] = got[k + 1].heap_offset;
  ASSERT_TRUE(rogue_->Push(four));
  ExpectRogueAlive(20);
  EXPECT_EQ(RogueStat("session.bad_commands"), 5u);  // the five failed RECVs
  // All four went back: releasing the last of them again is a fault.
  Descriptor again = RogueApp::Command(Opcode::kReleaseBuffer);
  again.heap_offset = got[3].heap_offset;
  again.length = got[3].length;
  ExpectFault(again, StatusCode::kInvalidArgument, "released twice?");
  // An extra offset that names no delivered range: the first range is
  // released, the command refused.
  Descriptor bad = RogueApp::Command(Opcode::kReleaseBuffer);
  bad.heap_offset = got[4].heap_offset;
  bad.length = got[4].length;
  bad.aux[0] = rogue_->receive_area_offset() + (1u << 20);
  ExpectFault(bad, StatusCode::kInvalidArgument, "is not a buffer wharfd delivered");
  ExpectRogueAlive(21);
  EXPECT_EQ(RogueStat("session.bad_commands"), 7u);
}

TEST_F(IsolationTest, RespondToAnUnknownRequestHandle) {
  Descriptor d = RogueApp::Command(Opcode::kRespond, 0, 12345);
  ExpectFault(d, StatusCode::kNotFound, "request 12345 is not awaiting an answer");
  // Handles the good server holds are its own: small numbers, each refused
  // here, while its requests keep being answered.
  for (uint64_t h = 0; h < 32; ++h) {
    Descriptor r = RogueApp::Command(Opcode::kRespond, 0, h);
    r.status = static_cast<uint32_t>(StatusCode::kInternal);
    r.heap_offset = 64;
    r.length = 5;
    ExpectFault(r, StatusCode::kNotFound, "request " + std::to_string(h) + " is not awaiting");
    ASSERT_TRUE(good_->Exchange(1000 + h).ok());
  }
  EXPECT_EQ(RogueStatus()["bad_commands"], 33);
}

TEST_F(IsolationTest, ConnectionIdsOfAnotherApplication) {
  // The good pair's connection ids are small numbers in their own sessions;
  // in the rogue's they name nothing, and the good connection is untouched.
  uint64_t cookie = 100;
  for (uint64_t conn = 0; conn < 8; ++conn) {
    const std::string want = "connection " + std::to_string(conn) + " is not one of this";
    ExpectFailed(RogueApp::Command(Opcode::kRecv, ++cookie, conn), StatusCode::kNotFound, want);
    Descriptor send = RogueApp::Command(Opcode::kSend, ++cookie, conn);
    std::tie(send.heap_offset, send.length) = rogue_->PutText(4096, "hijack");
    ExpectFailed(send, StatusCode::kNotFound, want);
    Descriptor call = RogueApp::Command(Opcode::kCall, ++cookie, conn);
    call.status = GoodPair::kEchoMethod;
    ExpectFailed(call, StatusCode::kNotFound, want);
    ExpectFailed(RogueApp::Command(Opcode::kDisconnect, ++cookie, conn), StatusCode::kNotFound,
                 want);
    ExpectFault(RogueApp::Command(Opcode::kReleaseConn, 0, conn), StatusCode::kNotFound,
                "connection " + std::to_string(conn) + " is not open");
    // Cancelling cookies of other applications is a no-op: cookies are per
    // application too.
    ASSERT_TRUE(rogue_->Push(RogueApp::Command(Opcode::kCancel, 0, conn + 1)));
    ASSERT_TRUE(good_->Exchange(2000 + conn).ok());
  }
  EXPECT_EQ(RogueStat("session.bad_commands"), 8u * 5);
}

TEST_F(IsolationTest, DuplicateCookies) {
  ASSERT_TRUE(rogue_->Push(RogueApp::Command(Opcode::kListen)));
  ASSERT_TRUE(rogue_->Push(RogueApp::Command(Opcode::kAccept, 9)));  // stays in flight
  ExpectFault(RogueApp::Command(Opcode::kAccept, 9), StatusCode::kAlreadyExists,
              "operation 9 is already in flight");
  ExpectFault(RogueApp::Command(Opcode::kRecv, 9, 1), StatusCode::kAlreadyExists,
              "operation 9 is already in flight");
  ASSERT_TRUE(rogue_->Push(RogueApp::Command(Opcode::kCancel, 0, 9)));
  Result<Descriptor> c = rogue_->WaitForCookie(9);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->status, static_cast<uint32_t>(StatusCode::kCancelled));
  EXPECT_EQ(RogueStat("session.bad_commands"), 2u);
}

TEST_F(IsolationTest, CookieZeroAndAtOrPastTwoToTheSixtyThree) {
  for (uint64_t cookie : {uint64_t{0}, uint64_t{1} << 63, UINT64_MAX}) {
    ExpectFault(RogueApp::Command(Opcode::kRecv, cookie, 1), StatusCode::kInvalidArgument,
                "cookie " + std::to_string(cookie) + " is not an operation id");
  }
  ExpectRogueAlive(1);
  EXPECT_EQ(RogueStatus()["bad_commands"], 3);
}

TEST_F(IsolationTest, AddPeerWithAGarbageAddress) {
  Descriptor d = RogueApp::Command(Opcode::kAddPeer, 0, 3);
  d.aux[0] = 0xDEADBEEFDEADBEEF;
  d.aux[1] = 0x0123456789ABCDEF;
  d.aux[2] = UINT64_MAX;
  ExpectFault(d, StatusCode::kInvalidArgument, "ADD_PEER: packed address: ");
  d.handle = shm::kMaxPeerHandles;
  ExpectFault(d, StatusCode::kInvalidArgument, "peer handle 4096 is over 4095");
  // Neither was recorded: the handle names no peer.
  ExpectFailed(RogueApp::Command(Opcode::kConnect, 4, 3), StatusCode::kInvalidArgument,
               "unknown peer handle 3");
  Descriptor call = RogueApp::Command(Opcode::kCall, 5, 3);
  call.flags = shm::kFlagToPeer;
  ExpectFailed(call, StatusCode::kInvalidArgument, "unknown peer handle 3");
  EXPECT_EQ(RogueStat("session.bad_commands"), 4u);
}

TEST_F(IsolationTest, ServingTooManyMethodsIsCapped) {
  Descriptor d = RogueApp::Command(Opcode::kServe);
  d.flags = shm::kFlagServed;
  for (uint32_t m = 0; m < AppSession::kMaxServedMethods; ++m) {
    d.status = m;
    ASSERT_TRUE(rogue_->Push(d));
    if (m % 32 == 31) ExpectRogueAlive(1'000'000 + m);  // wharfd has taken them all
  }
  d.status = AppSession::kMaxServedMethods;
  ExpectFault(d, StatusCode::kResourceExhausted, "methods already (at most 1024)");
  d.status = 0;  // already served: no new entry, no fault
  ASSERT_TRUE(rogue_->Push(d));
  d.status = kFirstReservedMethod;
  ExpectFault(d, StatusCode::kInvalidArgument, "is reserved");
  ExpectRogueAlive(7);
}

// A client that never reads its completion ring: wharfd stops taking its
// commands (backpressure), keeps serving the others at full speed, and does
// not spin on the rogue's full command ring.
TEST_F(IsolationTest, ClientThatNeverReadsItsCompletions) {
  uint64_t cookie = 0;
  const auto start = std::chrono::steady_clock::now();
  // Fill the completion ring (64), wharfd's backlog (64) and our command
  // ring (64): then wharfd has taken all it will.
  int full_in_a_row = 0;
  while (full_in_a_row < 50 && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    if (rogue_->Push(RogueApp::Command(Opcode::kNop, ++cookie))) {
      full_in_a_row = 0;
    } else {
      --cookie;
      ++full_in_a_row;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  ASSERT_EQ(full_in_a_row, 50) << "wharfd never stopped taking commands";
  // Its completion ring, wharfd's backlog (which may overshoot by one
  // pass's worth) and its command ring.
  EXPECT_GE(cookie, 64u + 64u + 64u);
  EXPECT_LE(cookie, 64u + 128u + 64u);
  EXPECT_GT(RogueStatus()["backpressure_passes"].get<uint64_t>(), 0u);
  // The others are served promptly meanwhile.
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(good_->Exchange(3000 + i).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  // And wharfd sleeps between its look-agains rather than spinning: its
  // passes over ~300 ms stay in the hundreds (spinning makes them tens of
  // thousands).
  const uint64_t passes0 = DaemonJson()["daemon"]["passes"];
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const uint64_t passes1 = DaemonJson()["daemon"]["passes"];
  EXPECT_LT(passes1 - passes0, 3000u) << "sleeps " << DaemonJson()["daemon"]["sleeps"].get<uint64_t>();
  // Once it reads, everything it asked for arrives, in order.
  for (uint64_t i = 1; i <= cookie; ++i) {
    Result<Descriptor> c = rogue_->WaitForCookie(i);
    ASSERT_TRUE(c.ok()) << i << ": " << c.status().ToString();
    EXPECT_EQ(c->status, 0u);
  }
}

// ------------------------------------------------------- the memfd itself

TEST_F(IsolationTest, RegionFdIsSealed) {
  const int fd = rogue_->region_fd();
  const off_t size = static_cast<off_t>(rogue_->layout().total_bytes);
  EXPECT_EQ(::ftruncate(fd, size / 2), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(::ftruncate(fd, size * 2), -1);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1);
  EXPECT_EQ(errno, EPERM);
  const int seals = ::fcntl(fd, F_GET_SEALS);
  EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
            F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  ExpectRogueAlive(1);
}

TEST_F(IsolationTest, PunchingHolesInTheRegionOnlyBreaksTheRogue) {
  ExpectRogueAlive(1);
  ExpectRogueAlive(2);
  // Size seals do not stop this: the ring pages read back as zeros, so the
  // producer index went backwards from wharfd's point of view.
  const int fd = rogue_->region_fd();
  ASSERT_EQ(::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                        static_cast<off_t>(rogue_->layout().heap_offset)),
            0);
  rogue_->Wake();
  ExpectSessionClosed(StatusCode::kDataLoss, {"command ring: producer index moved backwards"});
}

// ------------------------------------------------------ the control socket

TEST_F(IsolationTest, GarbageOnTheControlSocket) {
  const std::byte junk[] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                            std::byte{5}, std::byte{6}, std::byte{7}, std::byte{8}};
  ASSERT_TRUE(rogue_->control().Send(junk).ok());
  ExpectSessionClosed(StatusCode::kInvalidArgument, {"control socket"});
  EXPECT_EQ(RogueStatus(), nlohmann::json::object());  // gone
}

TEST_F(IsolationTest, SecondHelloOnTheControlSocket) {
  ASSERT_TRUE(rogue_->control().Send(shm::EncodeHello({.address = "homa://0.0.0.0:0"})).ok());
  ExpectSessionClosed(StatusCode::kInvalidArgument, {"second hello"});
}

int OpenFds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Where the kernel can (SO_PASSRIGHTS, Linux 6.16), files passed over the
// control socket never reach wharfd: the sender's sendmsg fails, and the
// session carries on.
TEST_F(IsolationTest, PassedFdsAreRefusedByTheKernel) {
  if (!DaemonJson()["daemon"]["kernel_refuses_fds"].get<bool>()) {
    GTEST_SKIP() << "kernel without SO_PASSRIGHTS; IsolationWithoutFdRefusalTest covers it";
  }
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int fds[] = {fd};
  Status sent = rogue_->control().Send(shm::EncodeRequest(shm::ControlType::kWake), fds);
  ::close(fd);
  EXPECT_EQ(sent.code(), StatusCode::kPermissionDenied) << sent;
  EXPECT_FALSE(rogue_->CheckClosed().has_value());
}

// As on a kernel before 6.16, which cannot refuse them: wharfd takes passed
// files, closes them off its loop, and closes the session that sent them.
class IsolationWithoutFdRefusalTest : public IsolationTest {
 protected:
  std::vector<std::pair<std::string, std::string>> Settings() const override {
    auto s = IsolationTest::Settings();
    s.push_back({"daemon.refuse_passed_fds", "false"});
    return s;
  }
};

TEST_F(IsolationWithoutFdRefusalTest, ExtraFdsOnTheControlSocket) {
  const int before = OpenFds();
  std::vector<int> fds;
  for (int i = 0; i < 3; ++i) fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(rogue_->control().Send(shm::EncodeRequest(shm::ControlType::kWake), fds).ok());
  for (int fd : fds) ::close(fd);
  ExpectSessionClosed(StatusCode::kInvalidArgument, {"control socket: a message carried file descriptors (3)"});
  // wharfd closed the copies it received (and, the session gone, its end
  // of the socket and the region).
  // Status queries' sessions linger a moment after they hang up.
  for (int i = 0; i < 100 && OpenFds() > before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LE(OpenFds(), before);
}

TEST_F(IsolationWithoutFdRefusalTest, MoreFdsThanTheControlMessageHasRoomFor) {
  std::vector<int> fds;
  for (int i = 0; i < 20; ++i) fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(rogue_->control().Send(shm::EncodeRequest(shm::ControlType::kWake), fds).ok());
  for (int fd : fds) ::close(fd);
  ExpectSessionClosed(StatusCode::kDataLoss, {"control socket"});
}

// Found by the isolation fuzzer: the status JSON outgrew the control
// socket's 4 KiB message limit with a handful of applications attached, and
// status queries went unanswered.
TEST_F(IsolationTest, StatusAnswersWithManyApplicationsAttached) {
  std::vector<std::unique_ptr<RogueApp>> more;
  for (int i = 0; i < 16; ++i) {
    auto r = RogueApp::Attach(daemon_->socket());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    more.push_back(std::move(*r));
  }
  EXPECT_EQ(DaemonJson()["applications"].size(), 2u + 1 + 16);
}

// Not an error, and not something libwharf does (a Buffer is lent once):
// two calls in flight from one range of the send area. Each is answered and
// told its range is released, and nothing stays lent.
TEST_F(IsolationTest, OneRangeLentByTwoCallsAtOnce) {
  auto server = Endpoint::Open({.address = "homa://0.0.0.0:0/twice",
                                .hosting = Hosting::kManaged,
                                .daemon_socket = daemon_->socket()});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  constexpr uint32_t kMethod = 7;
  ASSERT_TRUE((*server)
                  ->Serve(kMethod,
                          [](const RpcContext&, Buffer req) -> Result<Buffer> {
                            return Buffer::Copy("re:" + std::string(req.AsStringView()));
                          })
                  .ok());
  wharf::testing::ServerThread running(**server);
  Result<engine::Uri> uri = engine::ParseUri((*server)->address());
  ASSERT_TRUE(uri.ok()) << uri.status().ToString();
  Descriptor peer = RogueApp::Command(Opcode::kAddPeer, 0, 1);
  const engine::PackedUri packed = engine::PackUri(*uri);
  std::memcpy(peer.aux, packed.words, sizeof packed.words);
  ASSERT_TRUE(rogue_->Push(peer));
  const auto [offset, length] = rogue_->PutText(4096, "same bytes");
  for (uint64_t cookie : {uint64_t{21}, uint64_t{22}}) {
    Descriptor call = RogueApp::Command(Opcode::kCall, cookie, 1);
    call.flags = shm::kFlagToPeer;
    call.status = kMethod;
    call.heap_offset = offset;
    call.length = length;
    ASSERT_TRUE(rogue_->Push(call));
  }
  std::set<uint64_t> released;
  for (uint64_t cookie : {uint64_t{21}, uint64_t{22}}) {
    Result<Descriptor> done = rogue_->WaitForCookie(cookie);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    EXPECT_EQ(done->opcode, Op(Opcode::kCompletion));
    EXPECT_EQ(done->status, 0u) << rogue_->Text(*done);
    EXPECT_EQ(rogue_->Text(*done), "re:same bytes");
    if ((done->flags & shm::kFlagSendReleased) != 0) released.insert(cookie);
    EXPECT_TRUE(rogue_->Release(*done));
  }
  // Releases that did not ride on a completion come as kSendReleased.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (released.size() < 2 && std::chrono::steady_clock::now() < end) {
    for (const Descriptor& e : rogue_->seen()) {
      if (e.opcode != Op(Opcode::kSendReleased)) continue;
      released.insert(e.cookie);
      for (uint64_t more : e.aux) {
        if (more != 0) released.insert(more);
      }
    }
    (void)rogue_->WaitFor([](const Descriptor&) { return false; }, std::chrono::milliseconds(20));
  }
  EXPECT_EQ(released, (std::set<uint64_t>{21, 22}));
  EXPECT_EQ(RogueStat("session.bad_commands"), 0u);
}

TEST_F(IsolationTest, DaemonServesNewApplicationsAfterwards) {
  ASSERT_TRUE(rogue_->Push(RogueApp::Command(static_cast<Opcode>(0), 1)));
  ExpectSessionClosed(StatusCode::kInvalidArgument, {"opcode INVALID (0) is not accepted"});
  auto next = RogueApp::Attach(daemon_->socket());
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  rogue_ = std::move(*next);
  ExpectRogueAlive(1);
}

}  // namespace
}  // namespace wharf::daemon
