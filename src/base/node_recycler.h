// base/node_recycler.h: NodeRecycler, which keeps the nodes of entries erased
// from a node-based std map (map, multimap, unordered_map, unordered_set)
// and inserts new
// entries through them. A table whose entries come and go once per RPC (the
// engine's operations and deadlines, a server's live RPCs) then stops
// allocating in the steady state, while iterators and references to other
// entries stay as stable as the std container makes them (a flat table would
// move entries on erase, which the engine's code does not expect).
//
// Under AddressSanitizer nothing is kept, so that a use after erase still
// reads freed memory and is reported instead of reading a recycled entry.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace wharf {

// False under AddressSanitizer: recycled memory would hide a use after free.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kRecycleMemory = false;
#else
inline constexpr bool kRecycleMemory = true;
#endif

template <typename Map, size_t kMaxSpares = 64>
class NodeRecycler {
 public:
  using Node = typename Map::node_type;
  using Iterator = typename Map::iterator;

  // Erases `it` from `map`. `scrub(mapped)` runs on the erased value before
  // its node is kept: it must drop (or hand elsewhere) what should not stay
  // in a spare node, such as a message buffer or a shared state.
  template <typename Scrub>
  void Erase(Map& map, Iterator it, Scrub&& scrub) {
    if (spares_.size() >= kSpareLimit) {
      map.erase(it);
      return;
    }
    Node node = map.extract(it);
    scrub(node.mapped());
    spares_.push_back(std::move(node));
  }
  // The same with the value reset to a default-constructed one.
  void Erase(Map& map, Iterator it) {
    Erase(map, it, [](typename Map::mapped_type& v) { v = typename Map::mapped_type(); });
  }

  // Inserts `key` -> `value` in a kept node if there is one. For a unique-key
  // map the key must be absent.
  // (A template so that a set's recycler, which has no mapped type, still
  // compiles.)
  template <typename Value>
  Iterator Insert(Map& map, const typename Map::key_type& key, Value&& value) {
    if (spares_.empty()) return Position(map.emplace(key, std::forward<Value>(value)));
    Node node = std::move(spares_.back());
    spares_.pop_back();
    node.key() = key;
    node.mapped() = std::forward<Value>(value);
    return Position(map.insert(std::move(node)));
  }

  // The same for a set (unordered_set): the key is the whole value.
  Iterator InsertKey(Map& map, const typename Map::key_type& key) {
    if (spares_.empty()) return Position(map.insert(key));
    Node node = std::move(spares_.back());
    spares_.pop_back();
    node.value() = key;
    return Position(map.insert(std::move(node)));
  }
  void EraseKey(Map& map, Iterator it) {
    if (spares_.size() >= kSpareLimit) {
      map.erase(it);
      return;
    }
    spares_.push_back(map.extract(it));
  }

  size_t spares() const { return spares_.size(); }

 private:
  static constexpr size_t kSpareLimit = kRecycleMemory ? kMaxSpares : 0;

  // map/unordered_map return a pair or an insert_return_type; multimap an
  // iterator.
  template <typename R>
  static Iterator Position(R&& r) {
    if constexpr (std::is_same_v<std::decay_t<R>, Iterator>) {
      return r;
    } else if constexpr (requires { r.position; }) {
      return r.position;
    } else {
      return r.first;
    }
  }

  std::vector<Node> spares_;
};

}  // namespace wharf
