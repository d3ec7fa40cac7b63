#include "shm/region.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "shm/forked_child_testing.h"
#include "shm/layout.h"
#include "shm/validator.h"

namespace wharf::shm {
namespace {

using ::testing::HasSubstr;

constexpr Geometry kSmall{.command_entries = 64, .completion_entries = 32, .heap_bytes = 8192};

// ComputeLayout / MakeHeader / OpcodeName (layout.h)

TEST(ComputeLayoutTest, PlacesSectionsPageAlignedAndInOrder) {
  Result<Layout> layout = ComputeLayout(kSmall);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->command.control_offset, kPageBytes);
  EXPECT_EQ(layout->command.slots_offset, kPageBytes + sizeof(RingControl));
  EXPECT_EQ(layout->command.entries, 64u);
  EXPECT_EQ(layout->command.entry_bytes, sizeof(Descriptor));
  // 128 B of control + 64 x 64 B of slots = 4224 B -> two pages.
  EXPECT_EQ(layout->completion.control_offset, 3 * kPageBytes);
  EXPECT_EQ(layout->completion.slots_offset, 3 * kPageBytes + sizeof(RingControl));
  // 128 + 32 x 64 = 2176 B -> one page.
  EXPECT_EQ(layout->heap_offset, 4 * kPageBytes);
  EXPECT_EQ(layout->heap_bytes, 8192u);
  EXPECT_EQ(layout->total_bytes, 4 * kPageBytes + 8192);
  EXPECT_EQ(layout->geometry, kSmall);
}

TEST(ComputeLayoutTest, RejectsBadRingSizes) {
  for (uint32_t entries : {0u, 1u, 3u, 100u, kMaxRingEntries * 2}) {
    Geometry g = kSmall;
    g.command_entries = entries;
    Result<Layout> layout = ComputeLayout(g);
    ASSERT_FALSE(layout.ok()) << entries;
    EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(layout.status().message(),
                HasSubstr("command ring: " + std::to_string(entries) + " entries"));
  }
  Geometry g = kSmall;
  g.completion_entries = 6;
  EXPECT_THAT(ComputeLayout(g).status().message(), HasSubstr("completion ring: 6 entries"));
}

TEST(ComputeLayoutTest, RejectsBadHeapSizes) {
  for (uint64_t heap :
       {uint64_t{0}, uint64_t{100}, kPageBytes + 1, kMaxHeapBytes + kPageBytes, UINT64_MAX}) {
    Geometry g = kSmall;
    g.heap_bytes = heap;
    Result<Layout> layout = ComputeLayout(g);
    ASSERT_FALSE(layout.ok()) << heap;
    EXPECT_EQ(layout.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(layout.status().message(), HasSubstr("heap: " + std::to_string(heap)));
  }
}

TEST(ComputeLayoutTest, LargestGeometryDoesNotOverflow) {
  Result<Layout> layout = ComputeLayout(Geometry{.command_entries = kMaxRingEntries,
                                                 .completion_entries = kMaxRingEntries,
                                                 .heap_bytes = kMaxHeapBytes});
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_GT(layout->total_bytes, kMaxHeapBytes);
  EXPECT_EQ(layout->total_bytes - layout->heap_offset, kMaxHeapBytes);
}

TEST(MakeHeaderTest, RecordsTheLayoutAndZeroesReserved) {
  const Layout layout = ComputeLayout(kSmall).value();
  const RegionHeader h = MakeHeader(layout);
  EXPECT_EQ(h.magic, kRegionMagic);
  EXPECT_EQ(h.layout_version, kLayoutVersion);
  EXPECT_EQ(h.header_bytes, sizeof(RegionHeader));
  EXPECT_EQ(h.total_bytes, layout.total_bytes);
  EXPECT_EQ(h.command.slots_offset, layout.command.slots_offset);
  EXPECT_EQ(h.completion.entries, layout.completion.entries);
  EXPECT_EQ(h.heap_offset, layout.heap_offset);
  EXPECT_EQ(h.heap_bytes, layout.heap_bytes);
  for (uint8_t b : h.reserved) ASSERT_EQ(b, 0);
  EXPECT_EQ(std::memcmp(&h.magic, "WHARFSHM", 8), 0);
}

TEST(OpcodeNameTest, NamesKnownAndUnknown) {
  EXPECT_EQ(OpcodeName(Opcode::kNop), "NOP");
  EXPECT_EQ(OpcodeName(Opcode::kSend), "SEND");
  EXPECT_EQ(OpcodeName(static_cast<Opcode>(999)), "UNKNOWN");
}

// Region::Create

TEST(RegionCreateTest, WritesHeaderAndStartsEmpty) {
  Result<std::unique_ptr<Region>> region = Region::Create(kSmall, "create-test");
  ASSERT_TRUE(region.ok()) << region.status();
  Region& r = **region;
  EXPECT_TRUE(ValidateHeader(r.ReadHeader(), r.layout()).ok());
  EXPECT_EQ(r.bytes().size(), r.layout().total_bytes);
  EXPECT_EQ(r.command_ring().entries, 64u);
  EXPECT_EQ(r.completion_ring().entries, 32u);
  EXPECT_EQ(r.command_ring().control->producer.value, 0u);
  EXPECT_EQ(r.command_ring().control->consumer.value, 0u);
  EXPECT_EQ(reinterpret_cast<std::byte*>(r.command_ring().slots) - r.bytes().data(),
            static_cast<ptrdiff_t>(r.layout().command.slots_offset));
  EXPECT_EQ(r.heap().data() - r.bytes().data(), static_cast<ptrdiff_t>(r.layout().heap_offset));
  EXPECT_EQ(r.heap().size(), 8192u);
}

TEST(RegionCreateTest, SealsTheSize) {
  std::unique_ptr<Region> r = Region::Create(kSmall, "seal-test").value();
  const int seals = ::fcntl(r->fd(), F_GET_SEALS);
  EXPECT_EQ(seals, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_NE(::ftruncate(r->fd(), 4096), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::ftruncate(r->fd(), static_cast<off_t>(r->layout().total_bytes * 2)), 0);
  EXPECT_NE(::fcntl(r->fd(), F_ADD_SEALS, F_SEAL_WRITE), 0);
  EXPECT_TRUE(::fcntl(r->fd(), F_GETFD) & FD_CLOEXEC);
}

TEST(RegionCreateTest, RejectsBadGeometry) {
  Result<std::unique_ptr<Region>> region = Region::Create(
      Geometry{.command_entries = 3, .completion_entries = 4, .heap_bytes = 4096}, "bad");
  ASSERT_FALSE(region.ok());
  EXPECT_EQ(region.status().code(), StatusCode::kInvalidArgument);
}

TEST(RegionCreateTest, AcceptsOverlongName) {
  EXPECT_TRUE(Region::Create(kSmall, std::string(1000, 'n')).ok());
}

// Region::Attach

TEST(RegionAttachTest, SharesBytesAtADifferentAddress) {
  std::unique_ptr<Region> creator = Region::Create(kSmall, "attach-test").value();
  Result<std::unique_ptr<Region>> attached = Region::Attach(creator->fd(), kSmall);
  ASSERT_TRUE(attached.ok()) << attached.status();
  EXPECT_NE((*attached)->bytes().data(), creator->bytes().data());
  EXPECT_NE((*attached)->fd(), creator->fd());
  creator->heap()[100] = std::byte{0x5a};
  EXPECT_EQ((*attached)->heap()[100], std::byte{0x5a});
  (*attached)->command_ring().control->producer.value = 7;
  EXPECT_EQ(creator->command_ring().control->producer.value, 7u);
}

TEST(RegionAttachTest, KeepsWorkingAfterTheCallerClosesItsFd) {
  std::unique_ptr<Region> creator = Region::Create(kSmall, "dup-test").value();
  const int passed = ::dup(creator->fd());
  std::unique_ptr<Region> attached = Region::Attach(passed, kSmall).value();
  ::close(passed);
  attached->heap()[0] = std::byte{1};
  EXPECT_EQ(creator->heap()[0], std::byte{1});
}

TEST(RegionAttachTest, RejectsUnsealedMemfd) {
  const Layout layout = ComputeLayout(kSmall).value();
  const int fd = ::memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(layout.total_bytes)), 0);
  const RegionHeader header = MakeHeader(layout);
  ASSERT_EQ(::pwrite(fd, &header, sizeof(header), 0), static_cast<ssize_t>(sizeof(header)));
  Result<std::unique_ptr<Region>> attached = Region::Attach(fd, kSmall);
  ASSERT_FALSE(attached.ok());
  EXPECT_EQ(attached.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(attached.status().message(), HasSubstr("not sealed against shrinking"));
  // Sealing only against shrinking is not enough either.
  ASSERT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  EXPECT_EQ(Region::Attach(fd, kSmall).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_GROW), 0);
  EXPECT_TRUE(Region::Attach(fd, kSmall).ok());
  ::close(fd);
}

TEST(RegionAttachTest, RejectsSomethingThatIsNotAMemfd) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  Result<std::unique_ptr<Region>> attached = Region::Attach(pipe_fds[0], kSmall);
  EXPECT_FALSE(attached.ok());
  EXPECT_THAT(attached.status().message(), HasSubstr("is it a memfd?"));
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_FALSE(Region::Attach(-1, kSmall).ok());
}

TEST(RegionAttachTest, RejectsSizeOfAnotherGeometry) {
  std::unique_ptr<Region> creator = Region::Create(kSmall, "size-test").value();
  Geometry other = kSmall;
  other.heap_bytes *= 2;
  Result<std::unique_ptr<Region>> attached = Region::Attach(creator->fd(), other);
  ASSERT_FALSE(attached.ok());
  EXPECT_EQ(attached.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(attached.status().message(), HasSubstr("but the geometry needs"));
}

TEST(RegionAttachTest, RejectsHeaderThatDisagreesWithGeometry) {
  // Same total size, different split: the size check passes, the header not.
  std::unique_ptr<Region> creator =
      Region::Create(Geometry{.command_entries = 32, .completion_entries = 64, .heap_bytes = 8192},
                     "swap-test")
          .value();
  Result<std::unique_ptr<Region>> attached = Region::Attach(creator->fd(), kSmall);
  ASSERT_FALSE(attached.ok());
  EXPECT_EQ(attached.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(attached.status().message(),
              HasSubstr("region header: command ring entries 32 (expected 64)"));
}

TEST(RegionAttachTest, RejectsCorruptMagic) {
  std::unique_ptr<Region> creator = Region::Create(kSmall, "magic-test").value();
  creator->bytes()[0] = std::byte{0};
  Result<std::unique_ptr<Region>> attached = Region::Attach(creator->fd(), kSmall);
  ASSERT_FALSE(attached.ok());
  EXPECT_EQ(attached.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(attached.status().message(), HasSubstr("magic"));
}

// Region::ReadGeometry

TEST(RegionReadGeometryTest, ReadsWhatCreateWrote) {
  std::unique_ptr<Region> creator = Region::Create(kSmall, "geometry-test").value();
  Result<Geometry> g = Region::ReadGeometry(creator->fd());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(*g, kSmall);
}

TEST(RegionReadGeometryTest, RejectsForeignOrShortFiles) {
  const int fd = ::memfd_create("foreign", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(Region::ReadGeometry(fd).status().code(), StatusCode::kDataLoss);  // empty
  ASSERT_EQ(::ftruncate(fd, 8192), 0);
  EXPECT_THAT(Region::ReadGeometry(fd).status().message(), HasSubstr("not a wharf region"));
  ::close(fd);
}

// Region::HeapRange

TEST(RegionHeapRangeTest, ResolvesInsideAndRejectsOutside) {
  std::unique_ptr<Region> r = Region::Create(kSmall, "heap-test").value();
  Result<std::span<std::byte>> whole = r->HeapRange(0, 8192);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->data(), r->heap().data());
  Result<std::span<std::byte>> tail = r->HeapRange(8000, 192);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->data(), r->heap().data() + 8000);
  EXPECT_TRUE(r->HeapRange(8192, 0).ok());

  EXPECT_EQ(r->HeapRange(8000, 193).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(r->HeapRange(8193, 0).status().code(), StatusCode::kOutOfRange);
  EXPECT_FALSE(r->HeapRange(1, UINT64_MAX).ok());
  EXPECT_FALSE(r->HeapRange(UINT64_MAX - 10, 100).ok());
  EXPECT_THAT(r->HeapRange(UINT64_MAX, 1).status().message(),
              HasSubstr("outside the heap of 8192 bytes"));
}

// MADV_DONTFORK: a forked child does not inherit the mapping (it would be a
// second producer on the rings), but can still Attach the memfd itself.

TEST(RegionForkTest, ChildDoesNotInheritTheMappingButCanAttach) {
  for (bool attached : {false, true}) {
    std::unique_ptr<Region> creator = Region::Create(kSmall, "fork-test").value();
    std::unique_ptr<Region> region =
        attached ? Region::Attach(creator->fd(), kSmall).value() : std::move(creator);
    volatile std::byte* inherited = region->heap().data();
    region->heap()[0] = std::byte{0x5a};
    const int fd = region->fd();

    testutil::ForkedChild reads_inherited([inherited] {
      const rlimit no_core{0, 0};
      ::setrlimit(RLIMIT_CORE, &no_core);
      // Die of the signal itself, not through a sanitizer's SEGV report.
      struct sigaction default_action {};
      default_action.sa_handler = SIG_DFL;
      ::sigaction(SIGSEGV, &default_action, nullptr);
      return static_cast<int>(inherited[0]);  // nothing mapped there: SIGSEGV
    });
    ASSERT_TRUE(reads_inherited.started());
    EXPECT_EQ(reads_inherited.Wait(30 * kNsPerSec), "signal " + std::to_string(SIGSEGV))
        << (attached ? "attached" : "created");

    testutil::ForkedChild attaches([fd] {
      Result<std::unique_ptr<Region>> mine = Region::Attach(fd, kSmall);
      if (!mine.ok()) return 10;
      return (*mine)->heap()[0] == std::byte{0x5a} ? 0 : 11;
    });
    ASSERT_TRUE(attaches.started());
    EXPECT_EQ(attaches.Wait(30 * kNsPerSec), "exit 0");
    EXPECT_EQ(region->heap()[0], std::byte{0x5a});  // the parent's mapping is untouched
  }
}

}  // namespace
}  // namespace wharf::shm
