// Region: memfd creation, sealing, mapping and attach checks.
#include "shm/region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "shm/validator.h"

namespace wharf::shm {
namespace {

// The seals every region carries: its size is fixed for life, and nobody can
// add seals later (F_SEAL_WRITE would otherwise let a peer freeze our writes).
constexpr int kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW;
constexpr int kRegionSeals = kSizeSeals | F_SEAL_SEAL;

// memfd names are at most 249 bytes (memfd_create(2)).
constexpr size_t kMaxMemfdNameBytes = 249;

// Closes an fd on scope exit unless released; only for error paths here.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::string FdName(int fd) { return "shm fd " + std::to_string(fd); }

}  // namespace

Result<std::unique_ptr<Region>> Region::Create(const Geometry& geometry, std::string_view name) {
  WHARF_ASSIGN_OR_RETURN(const Layout layout, ComputeLayout(geometry));
  std::string memfd_name = "wharf-shm:";
  memfd_name.append(name.substr(0, kMaxMemfdNameBytes - memfd_name.size()));
  FdGuard fd(::memfd_create(memfd_name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (fd.get() < 0) return ErrnoToStatus(errno, "memfd_create " + memfd_name);
  if (::ftruncate(fd.get(), static_cast<off_t>(layout.total_bytes)) != 0) {
    return ErrnoToStatus(
        errno, "ftruncate " + memfd_name + " to " + std::to_string(layout.total_bytes) + " bytes");
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, kRegionSeals) != 0) {
    return ErrnoToStatus(errno, "seal " + memfd_name);
  }
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Region> region, Map(fd.release(), layout));
  const RegionHeader header = MakeHeader(layout);
  std::memcpy(region->base_, &header, sizeof(header));
  return region;
}

Result<std::unique_ptr<Region>> Region::Attach(int fd, const Geometry& expected) {
  WHARF_ASSIGN_OR_RETURN(const Layout layout, ComputeLayout(expected));
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    return ErrnoToStatus(errno, FdName(fd) + ": reading seals (is it a memfd?)");
  }
  if ((seals & kSizeSeals) != kSizeSeals) {
    return FailedPreconditionError(
        FdName(fd) + ": not sealed against shrinking and growing (seals " + std::to_string(seals) +
        ", need " + std::to_string(kSizeSeals) + ")");
  }
  // Checked after the seals: from here on the size cannot change.
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoToStatus(errno, FdName(fd) + ": fstat");
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) != layout.total_bytes) {
    return InvalidArgumentError(FdName(fd) + ": " + std::to_string(st.st_size) +
                                " bytes, but the geometry needs " +
                                std::to_string(layout.total_bytes));
  }
  const int own_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own_fd < 0) return ErrnoToStatus(errno, FdName(fd) + ": dup");
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Region> region, Map(own_fd, layout));
  WHARF_RETURN_IF_ERROR(ValidateHeader(region->ReadHeader(), layout).WithContext(FdName(fd)));
  return region;
}

Result<Geometry> Region::ReadGeometry(int fd) {
  RegionHeader header;
  const ssize_t n = ::pread(fd, &header, sizeof(header), 0);
  if (n < 0) return ErrnoToStatus(errno, FdName(fd) + ": reading the header");
  if (static_cast<size_t>(n) != sizeof(header)) {
    return DataLossError(FdName(fd) + ": header truncated (" + std::to_string(n) + " of " +
                         std::to_string(sizeof(header)) + " bytes)");
  }
  if (header.magic != kRegionMagic || header.layout_version != kLayoutVersion) {
    return DataLossError(FdName(fd) + ": not a wharf region of layout version " +
                         std::to_string(kLayoutVersion));
  }
  return Geometry{.command_entries = header.command.entries,
                  .completion_entries = header.completion.entries,
                  .heap_bytes = header.heap_bytes};
}

Result<std::unique_ptr<Region>> Region::Map(int fd, const Layout& layout) {
  FdGuard guard(fd);
  void* base = ::mmap(nullptr, layout.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    return ErrnoToStatus(errno,
                         FdName(fd) + ": mmap " + std::to_string(layout.total_bytes) + " bytes");
  }
  // A child the process forks must not inherit the mapping: it would be a
  // second producer on our single-producer rings (and, in the daemon, a copy
  // of every application's region). It gets nothing at that address and has
  // to Attach the memfd itself if it means to.
  if (::madvise(base, layout.total_bytes, MADV_DONTFORK) != 0) {
    const int error = errno;
    ::munmap(base, layout.total_bytes);
    return ErrnoToStatus(error, FdName(fd) + ": madvise(MADV_DONTFORK)");
  }
  return std::unique_ptr<Region>(
      new Region(guard.release(), static_cast<std::byte*>(base), layout));
}

Region::~Region() {
  ::munmap(base_, layout_.total_bytes);
  ::close(fd_);
}

RegionHeader Region::ReadHeader() const {
  RegionHeader header;
  std::memcpy(&header, base_, sizeof(header));
  return header;
}

Result<std::span<std::byte>> Region::HeapRange(uint64_t offset, uint64_t length) const {
  if (offset > layout_.heap_bytes || length > layout_.heap_bytes - offset) {
    return OutOfRangeError("heap range [" + std::to_string(offset) + ", +" +
                           std::to_string(length) + ") is outside the heap of " +
                           std::to_string(layout_.heap_bytes) + " bytes");
  }
  return std::span<std::byte>(base_ + layout_.heap_offset + offset, length);
}

RingMemory Region::RingAt(const RingRecord& record) const {
  return RingMemory{.control = reinterpret_cast<RingControl*>(base_ + record.control_offset),
                    .slots = reinterpret_cast<Descriptor*>(base_ + record.slots_offset),
                    .entries = record.entries};
}

}  // namespace wharf::shm
