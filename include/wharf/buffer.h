// wharf/buffer.h: Buffer, an owned, contiguous, move-only run of bytes: the
// payload of a message or RPC. Moving a Buffer into wharf hands over the bytes
// without a copy; wharf hands received messages back the same way.
//
// A Buffer from Allocate() keeps kHeadroom spare bytes in front of its data,
// so wharf can put its own header there instead of copying the payload.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

namespace wharf {

class Buffer {
 public:
  static constexpr size_t kHeadroom = 64;

  Buffer() = default;

  // `size` bytes, not initialised (large receive buffers are only touched as
  // data arrives, so the kernel commits pages lazily).
  static Buffer Allocate(size_t size) {
    Buffer b;
    b.storage_.reset(new std::byte[size + kHeadroom]);
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

  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    storage_ = std::move(other.storage_);
    offset_ = other.offset_;
    size_ = other.size_;
    other.offset_ = 0;
    other.size_ = 0;
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::byte* data() { return storage_ ? storage_.get() + offset_ : nullptr; }
  const std::byte* data() const { return storage_ ? storage_.get() + offset_ : nullptr; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<std::byte> span() { return {data(), size_}; }
  std::span<const std::byte> span() const { return {data(), size_}; }
  std::string_view AsStringView() const {
    return {reinterpret_cast<const char*>(data()), size_};
  }

  // Drops the first `n` bytes (n <= size()) without copying.
  void RemovePrefix(size_t n) {
    offset_ += n;
    size_ -= n;
  }
  // Grows the buffer by `n` bytes at the front, into headroom; false (and
  // unchanged) when there is not that much headroom.
  bool Prepend(size_t n) {
    if (!storage_ || offset_ < n) return false;
    offset_ -= n;
    size_ += n;
    return true;
  }

 private:
  std::unique_ptr<std::byte[]> storage_;
  size_t offset_ = 0;  // where data() starts inside storage_
  size_t size_ = 0;
};

}  // namespace wharf
