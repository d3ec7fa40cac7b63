// UdpDatagram under injected system-call failures (UdpSyscalls): the errors
// loopback does not produce on demand, such as a full socket part-way through
// a batch, pending ICMP refusals, unreachable destinations, a device that
// rejects GSO and a kernel that refuses to switch UDP GRO.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <deque>
#include <optional>
#include <vector>

#include "transport/udp/udp_datagram.h"
#include "transport/udp/udp_syscalls.h"
#include "transport/udp/udp_test_support.h"

namespace wharf::transport {
namespace {

using namespace udp_testing;  // NOLINT(google-build-using-namespace): test helpers

// Passes calls through to the kernel after consuming a scripted step: an
// errno to fail with (no kernel call), or a cap on how many messages the
// kernel may take. Also fails every GSO message with `gso_errno` when set.
class ScriptedSyscalls final : public udp::UdpSyscalls {
 public:
  struct Step {
    int fail_errno = 0;
    unsigned max_messages = UINT_MAX;
  };
  std::deque<Step> send_steps;
  std::deque<Step> recv_steps;
  int gso_errno = 0;
  int send_calls = 0;
  // UDP_GRO: fail turning it on (value 1) / off (value 0) with these.
  int gro_on_errno = 0;
  int gro_off_errno = 0;
  int gro_on_calls = 0;
  // What PeekQueuedBytes answers instead of the kernel, when set.
  std::optional<int> peek_bytes;

  // msg_iovlen of every message handed to SendMmsg, in order.
  std::vector<size_t> iov_counts;

  int SendMmsg(int fd, mmsghdr* msgs, unsigned int count) override {
    ++send_calls;
    for (unsigned i = 0; i < count; ++i) iov_counts.push_back(msgs[i].msg_hdr.msg_iovlen);
    if (gso_errno != 0 && CarriesGso(msgs[0].msg_hdr)) return Fail(gso_errno);
    Step step = Next(send_steps);
    if (step.fail_errno != 0) return Fail(step.fail_errno);
    return Kernel().SendMmsg(fd, msgs, std::min(count, step.max_messages));
  }
  int RecvMmsg(int fd, mmsghdr* msgs, unsigned int count) override {
    Step step = Next(recv_steps);
    if (step.fail_errno != 0) return Fail(step.fail_errno);
    return Kernel().RecvMmsg(fd, msgs, std::min(count, step.max_messages));
  }
  int SetIntOption(int fd, int level, int name, int value) override {
    if (level == IPPROTO_UDP && name == UDP_GRO) {
      if (value != 0) ++gro_on_calls;
      const int err = value != 0 ? gro_on_errno : gro_off_errno;
      if (err != 0) return Fail(err);
    }
    return Kernel().SetIntOption(fd, level, name, value);
  }
  int PeekQueuedBytes(int fd) override {
    if (peek_bytes.has_value()) return *peek_bytes;
    return Kernel().PeekQueuedBytes(fd);
  }

 private:
  static Step Next(std::deque<Step>& steps) {
    if (steps.empty()) return Step{};
    Step step = steps.front();
    steps.pop_front();
    return step;
  }
  static int Fail(int err) {
    errno = err;
    return -1;
  }
  static bool CarriesGso(msghdr& hdr) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&hdr); c != nullptr; c = CMSG_NXTHDR(&hdr, c)) {
      if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_SEGMENT) return true;
    }
    return false;
  }
};

class UdpDatagramInjectionTest : public testing::Test {
 protected:
  void SetUp() override {
    UdpOptions options = OptionsFor(Family::kIpv4);
    options.syscalls = &syscalls_;
    sender_ = MustOpen(options);
    receiver_options_ = OptionsFor(Family::kIpv4);
    receiver_options_.syscalls = &syscalls_;
    receiver_ = MustOpen(receiver_options_);
    ASSERT_TRUE(sender_ && receiver_);
  }

  ScriptedSyscalls syscalls_;
  UdpOptions receiver_options_;
  std::unique_ptr<UdpDatagram> sender_;
  std::unique_ptr<UdpDatagram> receiver_;
};

TEST_F(UdpDatagramInjectionTest, FullSocketMidBatchReturnsTheAcceptedCount) {
  // Ten different sizes so that every datagram is its own message.
  Outgoing out =
      MakeOutgoing(receiver_->LocalAddress(), {100, 101, 102, 103, 104, 105, 106, 107, 108, 109});
  syscalls_.send_steps = {{.max_messages = 2}, {.fail_errno = EAGAIN}};
  Result<size_t> first = sender_->Send(out.datagrams);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, 2u);
  Result<size_t> rest = sender_->Send(std::span(out.datagrams).subspan(2));
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(*rest, 8u);
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, 10), out, sender_->LocalAddress());
}

TEST_F(UdpDatagramInjectionTest, FullSocketOnTheFirstMessageReturnsZero) {
  Outgoing out = MakeOutgoing(receiver_->LocalAddress(), {100});
  syscalls_.send_steps = {{.fail_errno = EWOULDBLOCK}};
  Result<size_t> sent = sender_->Send(out.datagrams);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(*sent, 0u);
  EXPECT_EQ(sender_->stats().sent, 0u);
}

TEST_F(UdpDatagramInjectionTest, PendingRefusalIsCountedAndTheDatagramRetried) {
  Outgoing out = MakeOutgoing(receiver_->LocalAddress(), {100, 200, 300});
  syscalls_.send_steps = {{.fail_errno = ECONNREFUSED}};
  Result<size_t> sent = sender_->Send(out.datagrams);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(*sent, 3u);
  EXPECT_EQ(sender_->stats().refused, 1u);
  EXPECT_EQ(sender_->stats().send_dropped, 0u);
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, 3), out, sender_->LocalAddress());
}

TEST_F(UdpDatagramInjectionTest, EndlessRefusalsDropTheFrontDatagram) {
  Outgoing out = MakeOutgoing(receiver_->LocalAddress(), {100, 200});
  syscalls_.send_steps.assign(9, {.fail_errno = ECONNREFUSED});
  Result<size_t> sent = sender_->Send(out.datagrams);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(*sent, 2u);
  EXPECT_EQ(sender_->stats().refused, 9u);
  EXPECT_EQ(sender_->stats().send_dropped, 1u);
  std::vector<Received> got = ReceiveUpTo(*receiver_, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].bytes == out.payloads[1]);
}

TEST_F(UdpDatagramInjectionTest, UnreachableDestinationIsDroppedAndTheBatchGoesOn) {
  Outgoing out = MakeOutgoing(receiver_->LocalAddress(), {100, 200, 300});
  syscalls_.send_steps = {{.fail_errno = EHOSTUNREACH}};
  Result<size_t> sent = sender_->Send(out.datagrams);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(*sent, 3u);
  EXPECT_EQ(sender_->stats().send_dropped, 1u);
  std::vector<Received> got = ReceiveUpTo(*receiver_, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].bytes == out.payloads[1]);
  EXPECT_TRUE(got[1].bytes == out.payloads[2]);
}

TEST_F(UdpDatagramInjectionTest, GsoRejectedByTheKernelFallsBackToPlainSends) {
  if (!sender_->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO; nothing to fall back from";
  syscalls_.gso_errno = EIO;
  Outgoing out = MakeOutgoing(receiver_->LocalAddress(), GsoSizes());
  SendAll(*sender_, out.datagrams);
  EXPECT_FALSE(sender_->gso_enabled());
  EXPECT_EQ(sender_->stats().gso_fallbacks, 1u);
  EXPECT_EQ(sender_->stats().gso_sends, 0u);
  EXPECT_EQ(sender_->stats().gso_copied_sends, 0u);
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, 41), out, sender_->LocalAddress());
}

TEST_F(UdpDatagramInjectionTest, PartsContiguousInMemoryGoToTheKernelAsOneIovec) {
  if (!sender_->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO; one message per datagram";
  // Eight 100-byte datagrams, each a 30-byte header part and a 70-byte
  // payload part. Packed back to back in one buffer (as homa packs its
  // short packets): one GSO message of one iovec. Spread over separate
  // buffers: an iovec per datagram (its own two parts still touch). The
  // receiver gets the same datagrams either way.
  constexpr size_t kCount = 8;
  constexpr size_t kSize = 100;
  std::vector<std::byte> packed(kCount * kSize);
  Outgoing expected = MakeOutgoing(receiver_->LocalAddress(), std::vector<size_t>(kCount, kSize));
  std::vector<OutDatagram> batch;
  for (size_t i = 0; i < kCount; ++i) {
    std::copy(expected.payloads[i].begin(), expected.payloads[i].end(), &packed[i * kSize]);
    const std::span<const std::byte> whole(&packed[i * kSize], kSize);
    batch.push_back({receiver_->LocalAddress(), whole.first(30), 0, whole.subspan(30)});
  }
  syscalls_.iov_counts.clear();
  SendAll(*sender_, batch);
  EXPECT_EQ(syscalls_.iov_counts, std::vector<size_t>{1});
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, kCount), expected, sender_->LocalAddress());

  syscalls_.iov_counts.clear();
  std::vector<OutDatagram> spread;
  for (size_t i = 0; i < kCount; ++i) {
    const std::span<const std::byte> whole(expected.payloads[i]);
    spread.push_back({receiver_->LocalAddress(), whole.first(30), 0, whole.subspan(30)});
  }
  SendAll(*sender_, spread);
  EXPECT_EQ(syscalls_.iov_counts, std::vector<size_t>{kCount});
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, kCount), expected, sender_->LocalAddress());
}

// A bulk GSO run whose headers and payloads lie in separate buffers (as a
// large message's packets do) reaches the kernel as one copied iovec; with
// udp.gso_copy_bytes 0 as two iovecs per datagram. Same datagrams arrive.
TEST_F(UdpDatagramInjectionTest, BulkGsoRunGoesToTheKernelAsOneCopiedIovec) {
  if (!sender_->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO; one message per datagram";
  constexpr size_t kCount = 44;
  Outgoing expected = MakeOutgoing(receiver_->LocalAddress(), std::vector<size_t>(kCount, 1472));
  // Headers in a buffer of their own, payloads in the datagrams' buffers.
  std::vector<std::byte> headers(kCount * 30);
  std::vector<OutDatagram> batch;
  for (size_t i = 0; i < kCount; ++i) {
    const std::span<const std::byte> whole(expected.payloads[i]);
    std::copy_n(whole.begin(), 30, &headers[i * 30]);
    batch.push_back({receiver_->LocalAddress(), std::span(&headers[i * 30], 30), 0,
                     whole.subspan(30)});
  }
  syscalls_.iov_counts.clear();
  SendAll(*sender_, batch);
  EXPECT_EQ(syscalls_.iov_counts, std::vector<size_t>{1});
  EXPECT_EQ(sender_->stats().gso_copied_sends, 1u);
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, kCount), expected, sender_->LocalAddress());

  UdpOptions options = OptionsFor(Family::kIpv4);
  options.syscalls = &syscalls_;
  options.gso_copy_min_bytes = 0;
  std::unique_ptr<UdpDatagram> gather = MustOpen(options);
  ASSERT_TRUE(gather);
  syscalls_.iov_counts.clear();
  SendAll(*gather, batch);
  EXPECT_EQ(syscalls_.iov_counts, std::vector<size_t>{2 * kCount});
  EXPECT_EQ(gather->stats().gso_copied_sends, 0u);
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, kCount), expected, gather->LocalAddress());
}

// One datagram (one RPC in flight, or a GSO-less path) is never copied,
// however large: its two parts cost the kernel two copies either way.
TEST_F(UdpDatagramInjectionTest, ALoneDatagramIsSentAsItsTwoPartsNotCopied) {
  Outgoing expected = MakeOutgoing(receiver_->LocalAddress(), {60000});
  std::vector<std::byte> header(expected.payloads[0].begin(), expected.payloads[0].begin() + 30);
  const std::span<const std::byte> whole(expected.payloads[0]);
  const std::vector<OutDatagram> lone = {
      {receiver_->LocalAddress(), header, 0, whole.subspan(30)}};
  syscalls_.iov_counts.clear();
  SendAll(*sender_, lone);
  EXPECT_EQ(syscalls_.iov_counts, std::vector<size_t>{2});
  EXPECT_EQ(sender_->stats().gso_copied_sends, 0u);
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, 1), expected, sender_->LocalAddress());
}

// Five 64-datagram runs of ~64 KB each do not fit the staging room of one
// batch (256 KiB): the first sendmmsg carries four, the next the fifth, and
// every datagram arrives in order.
TEST_F(UdpDatagramInjectionTest, StagingRoomUsedUpEndsTheBatchAndTheRestFollows) {
  if (!sender_->gso_enabled()) GTEST_SKIP() << "kernel lacks UDP GSO; one message per datagram";
  Outgoing out = MakeOutgoing(receiver_->LocalAddress(), std::vector<size_t>(5 * 64, 1000));
  syscalls_.iov_counts.clear();
  syscalls_.send_calls = 0;
  SendAll(*sender_, out.datagrams);
  EXPECT_EQ(syscalls_.iov_counts, std::vector<size_t>(5, 1));
  EXPECT_EQ(syscalls_.send_calls, 2);
  EXPECT_EQ(sender_->stats().gso_copied_sends, 5u);
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, out.datagrams.size()), out,
                      sender_->LocalAddress());
}

TEST_F(UdpDatagramInjectionTest, ErrorThatPlainSendsShareIsReportedNotBlamedOnGso) {
  const bool had_gso = sender_->gso_enabled();
  syscalls_.send_steps.assign(2, {.fail_errno = EINVAL});
  Outgoing out = MakeOutgoing(receiver_->LocalAddress(), GsoSizes());
  Result<size_t> sent = sender_->Send(out.datagrams);
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(sent.status().message().find("sendmmsg to " + receiver_->LocalAddress().ToString()),
            std::string::npos)
      << sent.status();
  EXPECT_EQ(sender_->gso_enabled(), had_gso);
  EXPECT_EQ(sender_->stats().gso_fallbacks, 0u);
}

TEST_F(UdpDatagramInjectionTest, ReceiveRetriesAfterAPendingRefusal) {
  Outgoing out = MakeOutgoing(receiver_->LocalAddress(), {100});
  SendAll(*sender_, out.datagrams);
  ASSERT_TRUE(Readable(*receiver_, kPollTimeoutMs));
  syscalls_.recv_steps = {{.fail_errno = ECONNREFUSED}};
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, 1), out, sender_->LocalAddress());
  EXPECT_EQ(receiver_->stats().refused, 1u);
}

TEST_F(UdpDatagramInjectionTest, ReceiveErrorIsReportedWithTheLocalAddress) {
  syscalls_.recv_steps = {{.fail_errno = EBADF}};
  std::vector<InDatagram> slots(4);
  Result<size_t> got = receiver_->Receive(slots);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("recvmmsg on " + receiver_->LocalAddress().ToString()),
            std::string::npos)
      << got.status();
}

// Eight datagrams sent one by one, read together: a burst, which turns
// adaptive GRO on where the kernel lets it.
void SendBurstAndReceive(UdpDatagram& sender, UdpDatagram& receiver) {
  Outgoing out = MakeOutgoing(receiver.LocalAddress(), {100, 200, 300, 400, 500, 600, 700, 800});
  for (const OutDatagram& d : out.datagrams) SendAll(sender, std::span(&d, 1));
  ExpectSameDatagrams(ReceiveUpTo(receiver, 8), out, sender.LocalAddress());
}

TEST_F(UdpDatagramInjectionTest, GroRefusedAtOpenNeverTurnsOn) {
  syscalls_.gro_on_errno = ENOPROTOOPT;
  syscalls_.gro_off_errno = ENOPROTOOPT;  // the probe at Open sets 0
  receiver_ = MustOpen(receiver_options_);
  ASSERT_TRUE(receiver_);
  EXPECT_FALSE(receiver_->gro_adaptive());
  SendBurstAndReceive(*sender_, *receiver_);
  EXPECT_FALSE(receiver_->gro_enabled());
  EXPECT_EQ(syscalls_.gro_on_calls, 0);
  Outgoing out = MakeOutgoing(receiver_->LocalAddress(), GsoSizes());
  SendAll(*sender_, out.datagrams);
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, 41), out, sender_->LocalAddress());
}

TEST_F(UdpDatagramInjectionTest, GroRefusedWhenTurningOnStaysOffForGood) {
  ASSERT_TRUE(receiver_->gro_adaptive()) << "kernel lacks UDP GRO";
  syscalls_.gro_on_errno = EPERM;
  SendBurstAndReceive(*sender_, *receiver_);
  EXPECT_EQ(syscalls_.gro_on_calls, 1);
  EXPECT_FALSE(receiver_->gro_enabled());
  EXPECT_FALSE(receiver_->gro_adaptive());
  EXPECT_EQ(receiver_->stats().gro_enabled_times, 0u);
  // Traffic flows, and no further attempt is made.
  SendBurstAndReceive(*sender_, *receiver_);
  Outgoing out = MakeOutgoing(receiver_->LocalAddress(), GsoSizes());
  SendAll(*sender_, out.datagrams);
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, 41), out, sender_->LocalAddress());
  EXPECT_EQ(syscalls_.gro_on_calls, 1);
  EXPECT_FALSE(receiver_->gro_enabled());
}

TEST_F(UdpDatagramInjectionTest, GroThatWillNotTurnOffStaysOn) {
  ASSERT_TRUE(receiver_->gro_adaptive()) << "kernel lacks UDP GRO";
  SendBurstAndReceive(*sender_, *receiver_);
  ASSERT_TRUE(receiver_->gro_enabled());
  syscalls_.gro_off_errno = EPERM;
  for (uint32_t i = 0; i < udp::AdaptiveGro::kOffAfterLoneReads; ++i) {
    Outgoing out = MakeOutgoing(receiver_->LocalAddress(), {64});
    SendAll(*sender_, out.datagrams);
    ExpectSameDatagrams(ReceiveUpTo(*receiver_, 1, 1), out, sender_->LocalAddress());
  }
  EXPECT_TRUE(receiver_->gro_enabled());
  EXPECT_FALSE(receiver_->gro_adaptive());
  EXPECT_EQ(receiver_->stats().gro_disabled_times, 0u);
  Outgoing out = MakeOutgoing(receiver_->LocalAddress(), GsoSizes());
  SendAll(*sender_, out.datagrams);
  ExpectSameDatagrams(ReceiveUpTo(*receiver_, 41, 7), out, sender_->LocalAddress());
}

// A datagram queued at the switch (here: the peek says so) puts it off
// until another whole run of lone reads.
TEST_F(UdpDatagramInjectionTest, GroTurnOffIsDeferredWhileADatagramIsQueued) {
  ASSERT_TRUE(receiver_->gro_adaptive()) << "kernel lacks UDP GRO";
  SendBurstAndReceive(*sender_, *receiver_);
  ASSERT_TRUE(receiver_->gro_enabled());
  auto lone_reads = [&](uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      Outgoing out = MakeOutgoing(receiver_->LocalAddress(), {64});
      SendAll(*sender_, out.datagrams);
      ExpectSameDatagrams(ReceiveUpTo(*receiver_, 1, 1), out, sender_->LocalAddress());
    }
  };
  const uint32_t run = udp::AdaptiveGro::kOffAfterLoneReads;
  syscalls_.peek_bytes = 1400;
  lone_reads(run);
  EXPECT_TRUE(receiver_->gro_enabled());
  EXPECT_TRUE(receiver_->gro_adaptive());
  EXPECT_EQ(receiver_->stats().gro_disable_deferred, 1u);
  syscalls_.peek_bytes.reset();
  lone_reads(run - 1);
  EXPECT_TRUE(receiver_->gro_enabled());
  lone_reads(1);
  EXPECT_FALSE(receiver_->gro_enabled());
  EXPECT_EQ(receiver_->stats().gro_disabled_times, 1u);
  EXPECT_EQ(receiver_->stats().gro_disable_deferred, 1u);
}

}  // namespace
}  // namespace wharf::transport
