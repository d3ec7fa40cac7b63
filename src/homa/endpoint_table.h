// homa/endpoint_table.h: EndpointTable, a host's open endpoints by id (the
// dport of the packets they receive), with the last one found answering the
// next lookup without hashing: with one endpoint, or a run of packets to
// one, dispatch costs one compare. It routes only; the endpoints themselves
// (homa_endpoint.h) and what closing one means are the host's business.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace wharf::homa {

class HomaEndpoint;

// Owned by HomaHost. Borrows the endpoints, which are removed before they
// go. Single-threaded: the host's thread.
class EndpointTable {
 public:
  // Adds `ep` as endpoint `id`; false (nothing added) if `id` is taken.
  bool Add(uint16_t id, HomaEndpoint* ep);
  // Removes endpoint `id` if it is `ep`; false otherwise.
  bool Remove(uint16_t id, const HomaEndpoint* ep);
  // The endpoint with id `id`, or nullptr.
  HomaEndpoint* Find(uint16_t id) {
    if (last_ != nullptr && last_id_ == id) return last_;
    return FindSlow(id);
  }
  size_t size() const { return by_id_.size(); }
  bool empty() const { return by_id_.empty(); }
  // Some open endpoint (nullptr when none): for closing them all.
  HomaEndpoint* any() const { return by_id_.empty() ? nullptr : by_id_.begin()->second; }

 private:
  HomaEndpoint* FindSlow(uint16_t id);

  std::unordered_map<uint16_t, HomaEndpoint*> by_id_;
  // The endpoint Find returned (or Add added) last, and its id; nullptr
  // when the table is empty.
  HomaEndpoint* last_ = nullptr;
  uint16_t last_id_ = 0;
};

}  // namespace wharf::homa
