// wharf/buffer.h: Buffer, an owned, contiguous, move-only run of bytes: the
// payload of a message or RPC. Moving a Buffer into wharf hands over the bytes
// without a copy; wharf hands received messages back the same way. Also
// BufferOwner, the interface through which a Buffer holds memory that wharf
// did not allocate (a slice of a shared-memory heap, NIC-registered memory)
// and gives it back when it is done.
//
// A Buffer from Allocate() keeps kHeadroom spare bytes in front of its data,
// so wharf can put its own header there instead of copying the payload. A
// Buffer from Wrap() has whatever headroom its owner granted.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

namespace wharf {

// Lends memory to Buffers (Buffer::Wrap) and takes it back. Release is called
// exactly once per wrapped range, with the whole range that was lent (headroom
// included, whatever RemovePrefix/Prepend did to the Buffer's view since),
// when the Buffer holding it is destroyed or assigned over. Moving a Buffer
// never calls its owner.
//
// Thread rules: Release runs synchronously on whichever thread destroys (or
// assigns over) the Buffer: an application thread, the engine's poll thread, a
// completion callback. An owner shared by Buffers on several threads must
// therefore make Release thread-safe, and should keep it short and
// non-blocking (it runs on the engine's hot path). It may run with an
// endpoint's lock held, so it must not call into wharf. Release must not throw
// (it is noexcept: a throw ends the process).
class BufferOwner {
 public:
  virtual ~BufferOwner() = default;
  virtual void Release(std::span<std::byte> whole) noexcept = 0;
};

// Ownership: a Buffer owns its bytes. Bytes from Allocate/Copy are wharf's own
// heap block, freed with delete[]; bytes from Wrap belong to a BufferOwner,
// told when the Buffer is done with them. Thread rules: a Buffer is used by
// one thread at a time, and may be moved to and destroyed on any thread.
class Buffer {
 public:
  static constexpr size_t kHeadroom = 64;

  Buffer() = default;

  // `size` bytes, not initialised (large receive buffers are only touched as
  // data arrives, so the kernel commits pages lazily).
  static Buffer Allocate(size_t size) {
    Buffer b;
    b.base_ = new std::byte[size + kHeadroom];
    b.offset_ = kHeadroom;
    b.size_ = size;
    return b;
  }
  static Buffer Copy(std::span<const std::byte> bytes) {
    Buffer b = Allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(b.data(), bytes.data(), bytes.size());
    return b;
  }
  static Buffer Copy(std::string_view text) {
    return Copy(std::as_bytes(std::span<const char>(text.data(), text.size())));
  }

  // A Buffer over memory wharf did not allocate. `whole` is the range lent;
  // its first `headroom` bytes are headroom (Prepend may grow the data into
  // them, e.g. for wharf's frame header), the rest is the data. A headroom
  // past the end of `whole` is cut to whole.size() (the data is then empty;
  // the range is still lent and still released). `owner` is told, exactly
  // once, with `whole`, when the Buffer is done with it (BufferOwner says
  // when and on which thread); the memory must stay valid until then.
  //
  // shared_ptr because one owner (an application's heap, a NIC memory
  // region) lends to many Buffers and must outlive the last of them: each
  // Buffer keeps it alive until its Release has returned. A null owner is told
  // nothing: the memory must then outlive the Buffer by other means (static
  // data), and owner() still reports it as not wharf's.
  //
  // Cost: no allocation; a copied (not moved) `owner` costs one atomic
  // increment here, and the release one virtual call and one atomic decrement.
  static Buffer Wrap(std::span<std::byte> whole, std::shared_ptr<BufferOwner> owner,
                     size_t headroom = 0) {
    if (owner == nullptr) owner = UnownedMemory();
    if (headroom > whole.size()) headroom = whole.size();
    Buffer b;
    b.base_ = whole.data();
    b.offset_ = headroom;
    b.size_ = whole.size() - headroom;
    b.owner_ = std::move(owner);
    return b;
  }
  // The same for simple uses: `release(whole)` is called exactly once, as
  // BufferOwner::Release would be. Allocates a small owner per call, so the
  // daemon's per-message paths use the BufferOwner form with one shared
  // owner instead. `release` must not throw.
  template <std::invocable<std::span<std::byte>> F>
  static Buffer Wrap(std::span<std::byte> whole, F&& release, size_t headroom = 0) {
    return Wrap(whole, std::make_shared<CallableOwner<std::decay_t<F>>>(std::forward<F>(release)),
                headroom);
  }

  // Moves hand over the bytes (and the owner, if any) without calling it and
  // without touching a reference count; the moved-from Buffer is empty and
  // owns nothing.
  Buffer(Buffer&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)),
        offset_(std::exchange(other.offset_, 0)),
        size_(std::exchange(other.size_, 0)),
        owner_(std::move(other.owner_)) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      Free();
      base_ = std::exchange(other.base_, nullptr);
      offset_ = std::exchange(other.offset_, 0);
      size_ = std::exchange(other.size_, 0);
      owner_.swap(other.owner_);  // owner_ is null after Free: nothing to drop
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { Free(); }

  std::byte* data() { return base_ ? base_ + offset_ : nullptr; }
  const std::byte* data() const { return base_ ? base_ + offset_ : nullptr; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<std::byte> span() { return {data(), size_}; }
  std::span<const std::byte> span() const { return {data(), size_}; }
  std::string_view AsStringView() const { return {reinterpret_cast<const char*>(data()), size_}; }

  // Who lent the bytes: null when they are wharf's own (Allocate, Copy, or an
  // empty Buffer), else the owner given to Wrap (an internal one for the
  // callable form or a null owner). The daemon uses it to tell whether the
  // bytes live in an application's region.
  const BufferOwner* owner() const { return owner_.get(); }

  // Bytes in front of data() that belong to this Buffer (its headroom and
  // whatever RemovePrefix dropped): data() - headroom() is the start of the
  // memory it holds.
  size_t headroom() const { return offset_; }

  // Drops the first `n` bytes (n <= size()) without copying.
  void RemovePrefix(size_t n) {
    offset_ += n;
    size_ -= n;
  }
  // Grows the buffer by `n` bytes at the front, into headroom; false (and
  // unchanged) when there is not that much headroom.
  bool Prepend(size_t n) {
    if (base_ == nullptr || offset_ < n) return false;
    offset_ -= n;
    size_ += n;
    return true;
  }

 private:
  template <typename F>
  class CallableOwner final : public BufferOwner {
   public:
    explicit CallableOwner(F release) : release_(std::move(release)) {}
    void Release(std::span<std::byte> whole) noexcept override { release_(whole); }

   private:
    F release_;
  };
  class NoOwner final : public BufferOwner {
   public:
    void Release(std::span<std::byte>) noexcept override {}
  };
  // A static owner that is told nothing; shared_ptr's aliasing form with an
  // empty control block, so copying it touches no reference count. Never
  // destroyed, so Buffers destroyed during static destruction can still use it.
  static std::shared_ptr<BufferOwner> UnownedMemory() {
    static NoOwner* const no_owner = new NoOwner;
    return std::shared_ptr<BufferOwner>(std::shared_ptr<void>(), no_owner);
  }

  // Gives the bytes back: delete[] for wharf's own (no virtual call, no
  // reference count on that path), else one Release with the whole lent
  // range. The Buffer holds nothing afterwards.
  void Free() noexcept {
    if (owner_ == nullptr) [[likely]] {
      delete[] base_;
    } else {
      ReleaseToOwner();
    }
    base_ = nullptr;
    offset_ = 0;
    size_ = 0;
  }
  // Out of line and cold, so the moves and destructors inlined all over the
  // hot path carry only the test for it.
  [[gnu::cold, gnu::noinline]] void ReleaseToOwner() noexcept {
    // offset_ + size_ is the whole length: RemovePrefix and Prepend move
    // bytes between the two and nothing else changes either.
    owner_->Release(std::span<std::byte>(base_, offset_ + size_));
    owner_.reset();
  }

  // Start of the whole range: wharf's heap block (owner_ null) or the range a
  // BufferOwner lent. Null for an empty Buffer (and possibly for an empty
  // lent range).
  std::byte* base_ = nullptr;
  size_t offset_ = 0;  // where data() starts inside the range: the headroom left
  size_t size_ = 0;    // bytes of data after offset_; the range ends at offset_ + size_
  // The lender; null for wharf's own bytes. Held (not borrowed) so the owner
  // outlives its Release; see Wrap.
  std::shared_ptr<BufferOwner> owner_;
};

// Buffer is moved on every RPC; its size is part of that cost. On 64-bit
// targets: 24 bytes (pointer, offset, size) before owners existed, 40 with the
// shared owner (a shared_ptr is two pointers).
static_assert(sizeof(Buffer) <= 5 * sizeof(void*), "Buffer grew: it is moved on every RPC");

}  // namespace wharf
