// wharf/buffer.h: Buffer, an owned, contiguous, move-only run of bytes: the
// payload of a message or RPC. Moving a Buffer into wharf hands over the bytes
// without a copy; wharf hands received messages back the same way.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

namespace wharf {

class Buffer {
 public:
  Buffer() = default;

  // `size` bytes, not initialised (large receive buffers are only touched as
  // data arrives, so the kernel commits pages lazily).
  static Buffer Allocate(size_t size) {
    Buffer b;
    b.size_ = size;
    if (size > 0) b.data_.reset(new std::byte[size]);
    return b;
  }
  static Buffer Copy(std::span<const std::byte> bytes) {
    Buffer b = Allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(b.data_.get(), bytes.data(), bytes.size());
    return b;
  }
  static Buffer Copy(std::string_view text) {
    return Copy(std::as_bytes(std::span<const char>(text.data(), text.size())));
  }

  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(Buffer&&) noexcept = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<std::byte> span() { return {data_.get(), size_}; }
  std::span<const std::byte> span() const { return {data_.get(), size_}; }
  std::string_view AsStringView() const {
    return {reinterpret_cast<const char*>(data_.get()), size_};
  }

 private:
  std::unique_ptr<std::byte[]> data_;
  size_t size_ = 0;
};

}  // namespace wharf
