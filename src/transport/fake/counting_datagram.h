// transport/fake/counting_datagram.h: CountingDatagram, a Datagram that
// forwards to a FakeDatagram and records every Send() call: how many calls,
// how many datagrams each carried, and a copy of each datagram's bytes
// (header and payload joined) as they were at the call, its priority and
// its departure token. For tests that
// check how a protocol groups its sends (one call for a batch) and what the
// bytes were when they left. Test-only, header-only.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "transport/datagram.h"
#include "transport/fake/fake_datagram.h"

namespace wharf::transport::fake {

// Owns the FakeDatagram it wraps; single-threaded like it.
class CountingDatagram final : public Datagram {
 public:
  explicit CountingDatagram(std::unique_ptr<FakeDatagram> inner) : inner_(std::move(inner)) {}

  NetAddress LocalAddress() const override { return inner_->LocalAddress(); }
  size_t MaxDatagramBytes() const override { return inner_->MaxDatagramBytes(); }
  Result<size_t> Send(std::span<const OutDatagram> batch) override {
    ++send_calls;
    batch_sizes.push_back(batch.size());
    for (const OutDatagram& d : batch) {
      std::vector<std::byte> bytes(d.bytes.begin(), d.bytes.end());
      bytes.insert(bytes.end(), d.payload.begin(), d.payload.end());
      sent.push_back(std::move(bytes));
      priorities.push_back(d.priority);
      tokens.push_back(d.departure_token);
    }
    return inner_->Send(batch);
  }
  Result<size_t> Receive(std::span<InDatagram> out) override { return inner_->Receive(out); }
  int ReadableFd() const override { return -1; }
  size_t TakePathErrors(std::span<PathError> out) override { return inner_->TakePathErrors(out); }
  size_t TakeDepartures(std::span<Departure> out) override { return inner_->TakeDepartures(out); }
  bool IsSoftwarePath(const NetAddress& /*to*/) override { return software_path; }

  FakeDatagram& inner() { return *inner_; }

  // What IsSoftwarePath answers for every destination (a veth path when true).
  bool software_path = false;

  int send_calls = 0;
  std::vector<size_t> batch_sizes;          // datagrams per Send() call, in order
  std::vector<std::vector<std::byte>> sent;  // every datagram handed to Send(), in order
  std::vector<uint8_t> priorities;           // the priority of each of `sent`
  std::vector<uint64_t> tokens;              // the departure_token of each of `sent`

 private:
  std::unique_ptr<FakeDatagram> inner_;
};

}  // namespace wharf::transport::fake
