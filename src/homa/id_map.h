// homa/id_map.h: IdMap<V>, a hash map from 64-bit ids to values in one flat
// array (open addressing, linear probing, backward-shift deletion): no
// allocation per entry and usually one cache line per lookup. The transport
// looks its client RPCs up in one for every packet; std::unordered_map cost
// a node allocation per RPC and a pointer chase per lookup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace wharf::homa {

// Owned by its user. Not thread-safe. Pointers to values stay valid until
// the next Insert or Erase (either may move entries).
template <typename V>
class IdMap {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  V* Find(uint64_t key) {
    if (size_ == 0) return nullptr;
    for (size_t i = Home(key);; i = Next(i)) {
      Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  const V* Find(uint64_t key) const { return const_cast<IdMap*>(this)->Find(key); }
  bool Contains(uint64_t key) const { return Find(key) != nullptr; }

  // Adds `key`, which must be absent; returns its value.
  V& Insert(uint64_t key, V value) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    size_t i = Home(key);
    while (slots_[i].used) i = Next(i);
    slots_[i] = Slot{key, std::move(value), true};
    ++size_;
    return slots_[i].value;
  }

  // Removes `key` (destroying its value); false if absent.
  bool Erase(uint64_t key) {
    if (size_ == 0) return false;
    size_t hole = Home(key);
    while (true) {
      if (!slots_[hole].used) return false;
      if (slots_[hole].key == key) break;
      hole = Next(hole);
    }
    // Backward shift: pull later members of the probe run into the hole so
    // that every entry stays reachable from its home without tombstones.
    for (size_t j = Next(hole);; j = Next(j)) {
      Slot& s = slots_[j];
      if (!s.used) break;
      const size_t home = Home(s.key);
      // s may move to `hole` only if hole lies on its probe path home..j.
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = std::move(s);
        hole = j;
      }
    }
    slots_[hole] = Slot{};
    --size_;
    return true;
  }

  // Calls fn(key, value) for every entry, in table order. fn must not
  // insert or erase.
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (Slot& s : slots_) {
      if (s.used) fn(s.key, s.value);
    }
  }

 private:
  struct Slot {
    uint64_t key = 0;
    V value{};
    bool used = false;
  };

  // Fibonacci hashing: sequential ids (as RPC ids are) spread evenly.
  size_t Home(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  size_t Next(size_t i) const { return (i + 1) & mask_; }

  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t capacity = old.empty() ? 16 : old.size() * 2;
    slots_.clear();
    slots_.resize(capacity);
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    size_ = 0;
    for (Slot& s : old) {
      if (s.used) Insert(s.key, std::move(s.value));
    }
  }

  std::vector<Slot> slots_;  // capacity a power of two, at most half full
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace wharf::homa
