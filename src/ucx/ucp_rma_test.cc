// UcpWorker's one-sided operations between two workers of this process,
// over UCX's tcp on loopback and over shared memory: put and get checked
// byte for byte, compare-and-swap and fetch-add (two clients at once lose
// no update), a target that only progresses when its event fd wakes it
// (UCX's tcp emulates the operations with messages the target must
// handle), and the keys the worker can tell are bad. Every wait is
// bounded.
#include <poll.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ucx/ucp_worker.h"

namespace wharf::ucx {
namespace {

using namespace std::chrono_literals;
using transport::NetAddress;

struct Path {
  const char* name;
  UcpOptions options;
};

// Progresses `workers` until `done()` or 10 s.
bool DriveUntil(std::initializer_list<UcpWorker*> workers, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    for (UcpWorker* w : workers) w->Progress();
  }
  return true;
}

class UcpRmaTest : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    auto target = UcpWorker::Create(GetParam().options, {});
    ASSERT_TRUE(target.ok()) << target.status();
    target_ = std::move(*target);
    auto bound = target_->Listen(*NetAddress::Parse("127.0.0.1:0"));
    ASSERT_TRUE(bound.ok()) << bound.status();
    bound_ = *bound;
    memory_.assign(kBytes, std::byte{0});
  }

  // A client connected to the target, holding `key` (a mapping of memory_).
  struct Client {
    std::unique_ptr<UcpWorker> worker;
    UcpWorker::PeerId peer = 0;
    uint64_t key = 0;
  };
  Client Connect(const UcpWorker::MappedMemory& mapped) {
    Client c;
    auto worker = UcpWorker::Create(GetParam().options, {});
    EXPECT_TRUE(worker.ok()) << worker.status();
    c.worker = std::move(*worker);
    auto peer = c.worker->Connect(bound_);
    EXPECT_TRUE(peer.ok()) << peer.status();
    c.peer = *peer;
    auto key = c.worker->ImportKey(c.peer, mapped.key);
    EXPECT_TRUE(key.ok()) << key.status();
    c.key = key.ok() ? *key : 0;
    return c;
  }

  // Runs `op(done)` on `c` and drives both sides until it completes.
  Status Run(Client& c, const std::function<void(UcpWorker::RmaDone)>& op) {
    bool finished = false;
    Status result;
    op([&](const Status& s) {
      result = s;
      finished = true;
    });
    if (!DriveUntil({c.worker.get(), target_.get()}, [&] { return finished; })) {
      return DeadlineExceededError("no completion in 10 s");
    }
    return result;
  }

  Result<uint64_t> RunAtomic(Client& c, UcpWorker::AtomicOp op, uint64_t address, uint64_t value,
                             uint64_t compare) {
    bool finished = false;
    Result<uint64_t> result = UnknownError("not run");
    c.worker->Atomic(c.peer, c.key, address, op, value, compare, [&](Result<uint64_t> r) {
      result = std::move(r);
      finished = true;
    });
    if (!DriveUntil({c.worker.get(), target_.get()}, [&] { return finished; })) {
      return DeadlineExceededError("no completion in 10 s");
    }
    return result;
  }

  static constexpr size_t kBytes = 16 << 20;
  std::unique_ptr<UcpWorker> target_;
  NetAddress bound_;
  std::vector<std::byte> memory_;
};

std::vector<std::byte> Pattern(size_t n, size_t seed) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed) % 251);
  return v;
}

TEST_P(UcpRmaTest, PutAndGetMoveEveryByte) {
  auto mapped = target_->MapMemory(memory_.data(), memory_.size(), /*remote_write=*/true);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_FALSE(mapped->key.empty());
  Client c = Connect(*mapped);
  ASSERT_NE(c.key, 0u);
  for (size_t size : {size_t{1}, size_t{4096}, size_t{1} << 20, kBytes}) {
    const std::vector<std::byte> data = Pattern(size, size);
    const uint64_t at = mapped->address + (size < kBytes ? 8 : 0);
    ASSERT_TRUE(Run(c, [&](auto done) {
                  c.worker->Put(c.peer, c.key, at, data, std::move(done));
                }).ok())
        << size;
    ASSERT_EQ(std::memcmp(memory_.data() + (at - mapped->address), data.data(), size), 0) << size;
    std::vector<std::byte> back(size);
    ASSERT_TRUE(Run(c, [&](auto done) {
                  c.worker->Get(c.peer, c.key, at, back, std::move(done));
                }).ok())
        << size;
    EXPECT_TRUE(back == data) << size;
  }
}

TEST_P(UcpRmaTest, CompareAndSwapAndFetchAdd) {
  auto mapped = target_->MapMemory(memory_.data(), memory_.size(), true);
  ASSERT_TRUE(mapped.ok());
  Client c = Connect(*mapped);
  uint64_t* word = reinterpret_cast<uint64_t*>(memory_.data() + 64);
  *word = 5;
  const uint64_t at = mapped->address + 64;
  using Op = UcpWorker::AtomicOp;
  auto swapped = RunAtomic(c, Op::kCompareSwap, at, /*value=*/9, /*compare=*/5);
  ASSERT_TRUE(swapped.ok()) << swapped.status();
  EXPECT_EQ(*swapped, 5u);
  EXPECT_EQ(*word, 9u);
  auto missed = RunAtomic(c, Op::kCompareSwap, at, 1, /*compare=*/5);
  ASSERT_TRUE(missed.ok());
  EXPECT_EQ(*missed, 9u) << "the word as it was; unchanged";
  EXPECT_EQ(*word, 9u);
  auto added = RunAtomic(c, Op::kFetchAdd, at, 100, 0);
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(*added, 9u);
  EXPECT_EQ(*word, 109u);
  auto unaligned = RunAtomic(c, Op::kFetchAdd, at + 4, 1, 0);
  EXPECT_EQ(unaligned.status().code(), StatusCode::kInvalidArgument);
}

TEST_P(UcpRmaTest, TwoClientsFetchAddingAtOnceLoseNoUpdate) {
  auto mapped = target_->MapMemory(memory_.data(), memory_.size(), true);
  ASSERT_TRUE(mapped.ok());
  Client a = Connect(*mapped);
  Client b = Connect(*mapped);
  constexpr int kEach = 500;
  int done_a = 0, done_b = 0;
  std::vector<uint64_t> seen;
  for (int i = 0; i < kEach; ++i) {
    for (const auto& side : {std::pair{&a, &done_a}, std::pair{&b, &done_b}}) {
      Client* c = side.first;
      int* count = side.second;  // a plain variable: clang 14 captures no binding
      c->worker->Atomic(c->peer, c->key, mapped->address, UcpWorker::AtomicOp::kFetchAdd, 1, 0,
                        [&seen, count](Result<uint64_t> r) {
                          ASSERT_TRUE(r.ok()) << r.status();
                          seen.push_back(*r);
                          ++*count;
                        });
    }
  }
  ASSERT_TRUE(DriveUntil({a.worker.get(), b.worker.get(), target_.get()},
                         [&] { return done_a == kEach && done_b == kEach; }));
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(memory_.data()), 2u * kEach);
  // Every old value once: each add saw a different word.
  std::sort(seen.begin(), seen.end());
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], i);
}

TEST_P(UcpRmaTest, AnIdleTargetThatSleepsOnItsFdStillServesOperations) {
  auto mapped = target_->MapMemory(memory_.data(), memory_.size(), true);
  ASSERT_TRUE(mapped.ok());
  Client c = Connect(*mapped);
  // The target's loop from now on: progress, arm, sleep on the fd (the
  // way wharfd's and an embedded endpoint's loops do), on its own thread.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> wakeups{0};
  std::thread loop([&] {
    while (!stop.load()) {
      target_->Progress();
      if (!target_->Arm()) continue;
      pollfd p{.fd = target_->fd(), .events = POLLIN, .revents = 0};
      if (::poll(&p, 1, 50) == 1) ++wakeups;
    }
  });
  const std::vector<std::byte> data = Pattern(1 << 20, 3);
  auto run = [&](const std::function<void(UcpWorker::RmaDone)>& op) {
    bool finished = false;
    Status result;
    op([&](const Status& s) {
      result = s;
      finished = true;
    });
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!finished && std::chrono::steady_clock::now() < until) c.worker->Progress();
    return finished ? result : DeadlineExceededError("no completion in 10 s");
  };
  Status put = run([&](auto done) { c.worker->Put(c.peer, c.key, mapped->address, data, done); });
  std::vector<std::byte> back(data.size());
  Status get = run([&](auto done) { c.worker->Get(c.peer, c.key, mapped->address, back, done); });
  stop = true;
  loop.join();
  ASSERT_TRUE(put.ok()) << put;
  ASSERT_TRUE(get.ok()) << get;
  EXPECT_TRUE(back == data);
  EXPECT_EQ(std::memcmp(memory_.data(), data.data(), data.size()), 0);
}

// UCX 1.13 reads a packed key without checking it: 0xff bytes of the right
// length unpack "fine". So a key must never come from anyone but the
// target that packed it (wharf's region grants carry them; an application
// never handles one), and the worker refuses what it can: no key, and a key
// id it did not import for that peer.
TEST_P(UcpRmaTest, KeysTheWorkerCanTellAreBadAreRefused) {
  auto mapped = target_->MapMemory(memory_.data(), memory_.size(), true);
  ASSERT_TRUE(mapped.ok());
  Client c = Connect(*mapped);
  EXPECT_EQ(c.worker->ImportKey(c.peer, "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.worker->ImportKey(c.peer + 1, mapped->key).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(c.worker->keys(), 1u);
  Status none = Run(c, [&](auto done) {
    c.worker->Put(c.peer, 999, mapped->address, std::span<const std::byte>(), done);
  });
  EXPECT_EQ(none.code(), StatusCode::kUnavailable);
  // Keys go with their peer (whose close completes once the target saw it).
  c.worker->Close(c.peer);
  EXPECT_EQ(c.worker->keys(), 0u);
  ASSERT_TRUE(DriveUntil({c.worker.get(), target_.get()}, [&] { return c.worker->closing() == 0; }));
  EXPECT_TRUE(target_->UnmapMemory(mapped->id));
  EXPECT_FALSE(target_->UnmapMemory(mapped->id));
  EXPECT_EQ(target_->mapped(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Paths, UcpRmaTest,
    ::testing::Values(Path{"tcp", {.tls = "tcp", .devices = "lo"}},
                      Path{"shm", {.tls = "sm,tcp", .detect_peer_failure = false}}),
    [](const ::testing::TestParamInfo<Path>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace wharf::ucx
