// shm/control_socket_test.cc: tests of the control socket transport: the
// listener's socket file (stale, live, mode, group, directory), accept and
// peer credentials, and a connection's messages against a misbehaving peer
// (extra fds, truncated control data, oversized messages, hang-ups,
// silence). Real sockets in a per-test temp directory, removed afterwards.
#include "shm/control_socket.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "gtest/gtest.h"

namespace wharf::shm {
namespace {

std::span<const std::byte> Bytes(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

std::string Text(const std::vector<std::byte>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Open fds of this process, from /proc/self/fd (the directory iterator's
// own fd is counted on every call alike).
int CountOpenFds() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

// A sealed memfd holding `content`, as wharfd would pass one.
UniqueFd MakeMemfd(std::string_view content) {
  UniqueFd fd(::memfd_create("control-socket-test", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.valid());
  EXPECT_EQ(::write(fd.get(), content.data(), content.size()),
            static_cast<ssize_t>(content.size()));
  EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
  return fd;
}

class ControlListenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "wharf-ctl-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/wharfd.sock";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  SimClock clock_;
  std::string dir_;
  std::string path_;
};

TEST_F(ControlListenerTest, OpensAndAcceptsAConnection) {
  auto listener = ControlListener::Open(path_, clock_);
  ASSERT_TRUE(listener.ok()) << listener.status();
  int flags = ::fcntl((*listener)->fd(), F_GETFL);
  EXPECT_TRUE(flags & O_NONBLOCK);
  EXPECT_TRUE(::fcntl((*listener)->fd(), F_GETFD) & FD_CLOEXEC);

  auto client = ControlConnection::Connect(path_, clock_);
  ASSERT_TRUE(client.ok()) << client.status();
  auto server = (*listener)->Accept();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_NE(*server, nullptr);
  EXPECT_TRUE(::fcntl((*server)->fd(), F_GETFD) & FD_CLOEXEC);
  EXPECT_TRUE(::fcntl((*server)->fd(), F_GETFL) & O_NONBLOCK);
  ASSERT_TRUE((*client)->Send(Bytes("hello")).ok());
  auto message = (*server)->Receive();
  ASSERT_TRUE(message.ok()) << message.status();
  ASSERT_TRUE(message->has_value());
  EXPECT_EQ(Text((*message)->bytes), "hello");
}

// A closer that keeps what it is given, to show which fds went through it.
class KeepingCloser final : public FdCloser {
 public:
  void Close(UniqueFd fd) override { kept.push_back(std::move(fd)); }
  std::vector<UniqueFd> kept;
};

TEST_F(ControlListenerTest, Open__RefusesPassedFdsWhereTheKernelCan) {
  ListenerOptions options;
  options.limits.max_fds = 0;
  auto listener = ControlListener::Open(path_, clock_, options);
  ASSERT_TRUE(listener.ok()) << listener.status();
  if (!(*listener)->refuses_fds()) {
    GTEST_SKIP() << "this kernel has no SO_PASSRIGHTS (Linux 6.16); the fallback is tested below";
  }
  auto client = ControlConnection::Connect(path_, clock_);
  ASSERT_TRUE(client.ok()) << client.status();
  UniqueFd memfd = MakeMemfd("x");
  const int fds[] = {memfd.get()};
  // Refused before accept (the setting is the listener's, inherited) and
  // after it; a message without fds still goes.
  Status sent = (*client)->Send(Bytes("with an fd"), fds);
  EXPECT_EQ(sent.code(), StatusCode::kPermissionDenied) << sent;
  auto server = (*listener)->Accept();
  ASSERT_TRUE(server.ok() && *server != nullptr);
  EXPECT_EQ((*client)->Send(Bytes("again"), fds).code(), StatusCode::kPermissionDenied);
  ASSERT_TRUE((*client)->Send(Bytes("plain")).ok());
  auto message = (*server)->Receive();
  ASSERT_TRUE(message.ok() && message->has_value()) << message.status();
  EXPECT_EQ(Text((*message)->bytes), "plain");
  EXPECT_EQ((*server)->counters().extra_fds_closed, 0u);
}

TEST_F(ControlListenerTest, Accept__WithoutRefusalFdsAndTheConnectionGoToTheCloser) {
  ListenerOptions options;
  options.limits.max_fds = 0;
  options.refuse_fds = false;  // as on a kernel before 6.16
  auto listener = ControlListener::Open(path_, clock_, options);
  ASSERT_TRUE(listener.ok()) << listener.status();
  EXPECT_FALSE((*listener)->refuses_fds());
  KeepingCloser closer;
  (*listener)->set_closer(&closer);
  auto client = ControlConnection::Connect(path_, clock_);
  ASSERT_TRUE(client.ok()) << client.status();
  UniqueFd memfd = MakeMemfd("x");
  const int fds[] = {memfd.get(), memfd.get()};
  ASSERT_TRUE((*client)->Send(Bytes("two fds"), fds).ok());
  {
    auto server = (*listener)->Accept();
    ASSERT_TRUE(server.ok() && *server != nullptr);
    auto message = (*server)->Receive();
    ASSERT_TRUE(message.ok() && message->has_value()) << message.status();
    EXPECT_EQ((*server)->counters().extra_fds_closed, 2u);
    EXPECT_EQ(closer.kept.size(), 2u) << "the passed fds were closed in place";
  }
  ASSERT_EQ(closer.kept.size(), 3u) << "the connection's own fd was closed in place";
}

TEST_F(ControlListenerTest, AcceptWithNothingWaitingReturnsAtOnce) {
  auto listener = ControlListener::Open(path_, clock_);
  ASSERT_TRUE(listener.ok()) << listener.status();
  auto none = (*listener)->Accept();  // would hang (and time out) if blocking
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, nullptr);
}

TEST_F(ControlListenerTest, PeerCredentialsAreOurs) {
  auto listener = ControlListener::Open(path_, clock_);
  ASSERT_TRUE(listener.ok()) << listener.status();
  auto client = ControlConnection::Connect(path_, clock_);
  ASSERT_TRUE(client.ok()) << client.status();
  auto server = (*listener)->Accept();
  ASSERT_TRUE(server.ok() && *server != nullptr);
  EXPECT_EQ((*server)->peer().pid, ::getpid());
  EXPECT_EQ((*server)->peer().uid, ::geteuid());
  EXPECT_EQ((*server)->peer().gid, ::getegid());
  EXPECT_EQ((*client)->peer().pid, ::getpid());  // the daemon side, here us too
}

TEST_F(ControlListenerTest, StaleSocketFileIsReplaced) {
  // A dead daemon's socket: bound, never listening, file left behind.
  {
    UniqueFd dead(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.c_str(), path_.size());
    ASSERT_EQ(::bind(dead.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  }
  ASSERT_TRUE(std::filesystem::exists(path_));
  auto listener = ControlListener::Open(path_, clock_);
  ASSERT_TRUE(listener.ok()) << listener.status();
  auto client = ControlConnection::Connect(path_, clock_);
  EXPECT_TRUE(client.ok()) << client.status();
}

TEST_F(ControlListenerTest, LiveSocketIsRefused) {
  auto first = ControlListener::Open(path_, clock_);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = ControlListener::Open(path_, clock_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists) << second.status();
  // The first one is untouched and still serves.
  auto client = ControlConnection::Connect(path_, clock_);
  ASSERT_TRUE(client.ok()) << client.status();
  auto server = (*first)->Accept();
  ASSERT_TRUE(server.ok() && *server != nullptr);
}

TEST_F(ControlListenerTest, NonSocketFileIsNotReplaced) {
  {
    std::FILE* f = std::fopen(path_.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  auto listener = ControlListener::Open(path_, clock_);
  ASSERT_FALSE(listener.ok());
  EXPECT_EQ(listener.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(std::filesystem::is_regular_file(path_));
}

TEST_F(ControlListenerTest, AbstractAndOverlongPathsAreRefused) {
  EXPECT_EQ(ControlListener::Open(std::string_view("\0wharf", 6), clock_).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ControlListener::Open("", clock_).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ControlListener::Open(dir_ + "/" + std::string(200, 'x'), clock_).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(ControlListenerTest, ModeAndGroupByNameAreApplied) {
  struct group* own = ::getgrgid(::getegid());
  ASSERT_NE(own, nullptr);
  auto listener =
      ControlListener::Open(path_, clock_, {.mode = 0640, .group = std::string(own->gr_name)});
  ASSERT_TRUE(listener.ok()) << listener.status();
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_gid, ::getegid());
}

TEST_F(ControlListenerTest, DefaultModeAndGroupByGid) {
  // root may give the socket any group; others only one of their own.
  gid_t gid = ::geteuid() == 0 ? 4242 : ::getegid();
  auto listener = ControlListener::Open(path_, clock_, {.group = std::to_string(gid)});
  ASSERT_TRUE(listener.ok()) << listener.status();
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_gid, gid);
}

TEST_F(ControlListenerTest, UnknownGroupIsAnErrorNamingIt) {
  auto listener = ControlListener::Open(path_, clock_, {.group = "wharf-no-such-group-x7"});
  ASSERT_FALSE(listener.ok());
  EXPECT_EQ(listener.status().code(), StatusCode::kNotFound);
  EXPECT_NE(listener.status().message().find("wharf-no-such-group-x7"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(ControlListenerTest, MissingParentDirectoryIsCreated0750) {
  std::string path = dir_ + "/run-wharf/wharfd.sock";
  auto listener = ControlListener::Open(path, clock_);
  ASSERT_TRUE(listener.ok()) << listener.status();
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/run-wharf").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0750u);
}

TEST_F(ControlListenerTest, DestructorRemovesOnlyItsOwnSocketFile) {
  {
    auto listener = ControlListener::Open(path_, clock_);
    ASSERT_TRUE(listener.ok()) << listener.status();
  }
  EXPECT_FALSE(std::filesystem::exists(path_));
  // A listener whose file was replaced by a successor leaves that file alone.
  auto old_one = ControlListener::Open(path_, clock_);
  ASSERT_TRUE(old_one.ok());
  std::filesystem::remove(path_);
  auto successor = ControlListener::Open(path_, clock_);
  ASSERT_TRUE(successor.ok()) << successor.status();
  old_one->reset();
  EXPECT_TRUE(std::filesystem::exists(path_));
}

// ---- connections over socketpair ----

class ControlConnectionTest : public ::testing::Test {
 protected:
  void MakePair(const ConnectionLimits& receiver_limits) {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
    auto a = ControlConnection::Adopt(UniqueFd(fds[0]), clock_, {.max_message_bytes = 1 << 16});
    auto b = ControlConnection::Adopt(UniqueFd(fds[1]), clock_, receiver_limits);
    ASSERT_TRUE(a.ok() && b.ok());
    sender_ = std::move(*a);
    receiver_ = std::move(*b);
  }

  SimClock clock_;
  std::unique_ptr<ControlConnection> sender_;
  std::unique_ptr<ControlConnection> receiver_;
};

TEST_F(ControlConnectionTest, MemfdArrivesAndIsUsable) {
  MakePair({});
  UniqueFd memfd = MakeMemfd("region bytes");
  int fd = memfd.get();
  ASSERT_TRUE(sender_->Send(Bytes("attach"), std::span<const int>(&fd, 1)).ok());
  memfd.Reset();  // the receiver's copy must stand on its own
  auto message = receiver_->Receive();
  ASSERT_TRUE(message.ok()) << message.status();
  ASSERT_TRUE(message->has_value());
  EXPECT_EQ(Text((*message)->bytes), "attach");
  ASSERT_EQ((*message)->fds.size(), 1u);
  int got = (*message)->fds[0].get();
  EXPECT_TRUE(::fcntl(got, F_GETFD) & FD_CLOEXEC);  // MSG_CMSG_CLOEXEC
  EXPECT_EQ(::fcntl(got, F_GET_SEALS), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  void* map = ::mmap(nullptr, 12, PROT_READ, MAP_SHARED, got, 0);
  ASSERT_NE(map, MAP_FAILED);
  EXPECT_EQ(std::string(static_cast<const char*>(map), 12), "region bytes");
  ::munmap(map, 12);
}

TEST_F(ControlConnectionTest, ExtraFdsAreClosedAndCounted) {
  MakePair({.max_fds = 1});
  UniqueFd memfd = MakeMemfd("x");
  std::vector<int> fds(4, memfd.get());
  int before = CountOpenFds();
  ASSERT_TRUE(sender_->Send(Bytes("four fds"), fds).ok());
  {
    auto message = receiver_->Receive();
    ASSERT_TRUE(message.ok() && message->has_value()) << message.status();
    EXPECT_EQ((*message)->fds.size(), 1u);
    EXPECT_EQ(receiver_->counters().extra_fds_closed, 3u);
    EXPECT_EQ(CountOpenFds(), before + 1);  // only the expected one is open
  }
  EXPECT_EQ(CountOpenFds(), before);
}

TEST_F(ControlConnectionTest, TruncatedControlIsAnErrorAndLeaksNoFd) {
  MakePair({.max_fds = 1});
  UniqueFd memfd = MakeMemfd("x");
  std::vector<int> fds(1 + kSpareFdSlots + 5, memfd.get());  // more than fit
  int before = CountOpenFds();
  ASSERT_TRUE(sender_->Send(Bytes("too many fds"), fds).ok());
  auto message = receiver_->Receive();
  ASSERT_FALSE(message.ok());
  EXPECT_EQ(message.status().code(), StatusCode::kDataLoss) << message.status();
  EXPECT_EQ(receiver_->counters().truncated_control, 1u);
  EXPECT_EQ(CountOpenFds(), before);
  // The bad message is consumed; the next one arrives normally.
  ASSERT_TRUE(sender_->Send(Bytes("next")).ok());
  auto next = receiver_->Receive();
  ASSERT_TRUE(next.ok() && next->has_value()) << next.status();
  EXPECT_EQ(Text((*next)->bytes), "next");
}

TEST_F(ControlConnectionTest, OversizedMessageIsAnErrorAndLeaksNoFd) {
  MakePair({.max_message_bytes = 16});
  UniqueFd memfd = MakeMemfd("x");
  int fd = memfd.get();
  int before = CountOpenFds();
  std::string big(100, 'b');
  ASSERT_TRUE(sender_->Send(Bytes(big), std::span<const int>(&fd, 1)).ok());
  auto message = receiver_->Receive();
  ASSERT_FALSE(message.ok());
  EXPECT_EQ(message.status().code(), StatusCode::kResourceExhausted) << message.status();
  EXPECT_EQ(receiver_->counters().oversized, 1u);
  EXPECT_EQ(CountOpenFds(), before);
  // Exactly the cap is fine.
  ASSERT_TRUE(sender_->Send(Bytes(std::string(16, 'c'))).ok());
  auto next = receiver_->Receive();
  ASSERT_TRUE(next.ok() && next->has_value()) << next.status();
  EXPECT_EQ((*next)->bytes.size(), 16u);
}

TEST_F(ControlConnectionTest, SendLimitMayExceedTheReceiveLimit) {
  // The receiver takes 16-byte messages but may answer with 1000 bytes.
  MakePair({.max_message_bytes = 16, .max_send_bytes = 1000});
  EXPECT_TRUE(receiver_->Send(Bytes(std::string(1000, 'r'))).ok());
  EXPECT_EQ(receiver_->Send(Bytes(std::string(1001, 'r'))).code(), StatusCode::kInvalidArgument);
  auto answer = sender_->Receive();
  ASSERT_TRUE(answer.ok() && answer->has_value()) << answer.status();
  EXPECT_EQ((*answer)->bytes.size(), 1000u);
  // Without max_send_bytes the receive limit bounds sends too.
  MakePair({.max_message_bytes = 16});
  EXPECT_EQ(receiver_->Send(Bytes(std::string(17, 'r'))).code(), StatusCode::kInvalidArgument);
}

TEST_F(ControlConnectionTest, SilentPeerNeverBlocksAndMissesItsDeadline) {
  MakePair({});
  receiver_->set_receive_deadline(clock_.NowNs() + 5 * kNsPerSec);
  auto nothing = receiver_->Receive();  // would hang (and time out) if blocking
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_FALSE(nothing->has_value());
  clock_.AdvanceBy(5 * kNsPerSec);
  auto late = receiver_->Receive();
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(receiver_->counters().deadlines_missed, 1u);
}

TEST_F(ControlConnectionTest, MessageInTimeClearsTheDeadline) {
  MakePair({});
  receiver_->set_receive_deadline(clock_.NowNs() + kNsPerSec);
  ASSERT_TRUE(sender_->Send(Bytes("hi")).ok());
  auto message = receiver_->Receive();
  ASSERT_TRUE(message.ok() && message->has_value());
  clock_.AdvanceBy(10 * kNsPerSec);
  auto nothing = receiver_->Receive();
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_FALSE(nothing->has_value());
}

// SEQPACKET delivers a message whole or not at all: a peer that sends and
// then dies (however it dies) leaves a complete message, then a hang-up.
TEST_F(ControlConnectionTest, PeerThatClosesGivesUnavailableAfterWholeMessages) {
  MakePair({});
  UniqueFd memfd = MakeMemfd("x");
  int fd = memfd.get();
  ASSERT_TRUE(sender_->Send(Bytes("last words"), std::span<const int>(&fd, 1)).ok());
  sender_.reset();
  auto message = receiver_->Receive();
  ASSERT_TRUE(message.ok() && message->has_value()) << message.status();
  EXPECT_EQ(Text((*message)->bytes), "last words");
  EXPECT_EQ((*message)->fds.size(), 1u);
  auto eof = receiver_->Receive();
  ASSERT_FALSE(eof.ok());
  EXPECT_EQ(eof.status().code(), StatusCode::kUnavailable) << eof.status();
}

TEST_F(ControlConnectionTest, PeerThatClosesWithNothingSentGivesUnavailable) {
  MakePair({});
  sender_.reset();
  EXPECT_EQ(receiver_->Receive().status().code(), StatusCode::kUnavailable);
}

TEST_F(ControlConnectionTest, SendToAGonePeerIsUnavailableNotSigpipe) {
  MakePair({});
  receiver_.reset();
  Status status = sender_->Send(Bytes("anyone?"));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status;
}

TEST_F(ControlConnectionTest, SendToAPeerThatDoesNotReadNeverBlocks) {
  MakePair({});
  std::string chunk(4096, 'z');
  Status status;
  int sent = 0;
  for (; sent < 100000 && status.ok(); ++sent) status = sender_->Send(Bytes(chunk));
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status << " after " << sent;
}

TEST_F(ControlConnectionTest, EmptyAndOverCapSendsAreRefused) {
  MakePair({});
  EXPECT_EQ(sender_->Send({}).code(), StatusCode::kInvalidArgument);
  std::string too_big((1 << 16) + 1, 'x');
  EXPECT_EQ(sender_->Send(Bytes(too_big)).code(), StatusCode::kInvalidArgument);
}

TEST_F(ControlConnectionTest, PairMakesTwoConnectedEnds) {
  auto pair = ControlConnection::Pair(clock_);
  ASSERT_TRUE(pair.ok()) << pair.status();
  ASSERT_TRUE(pair->first->Send(Bytes("ping")).ok());
  auto message = pair->second->Receive();
  ASSERT_TRUE(message.ok() && message->has_value());
  EXPECT_EQ(Text((*message)->bytes), "ping");
  EXPECT_EQ(pair->second->peer().pid, ::getpid());
}

}  // namespace
}  // namespace wharf::shm
