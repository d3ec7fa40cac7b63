// FakeDatagram: an endpoint's inbox and its hand-off to the FakeNetwork.
#include "transport/fake/fake_datagram.h"

#include <algorithm>
#include <utility>

#include "transport/fake/fake_network.h"

namespace wharf::transport::fake {
namespace {

// Moves up to out.size() entries from the front of `queue` into `out`.
template <typename T>
size_t TakeFront(std::deque<T>& queue, std::span<T> out) {
  const size_t n = std::min(out.size(), queue.size());
  std::move(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(n), out.begin());
  queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(n));
  return n;
}

}  // namespace

FakeDatagram::FakeDatagram(FakeNetwork* network, std::string host_name, NetAddress address)
    : network_(network), host_name_(std::move(host_name)), address_(address) {}

FakeDatagram::~FakeDatagram() {
  if (network_ != nullptr) network_->Detach(*this);
}

size_t FakeDatagram::MaxDatagramBytes() const {
  return network_ == nullptr ? 0 : network_->max_datagram_bytes();
}

Result<size_t> FakeDatagram::Send(std::span<const OutDatagram> batch) {
  if (network_ == nullptr) {
    return FailedPreconditionError("fake endpoint " + host_name_ + " (" + address_.ToString() +
                                   "): the FakeNetwork it was attached to is gone");
  }
  Result<size_t> sent = network_->Send(*this, batch);
  if (sent.ok()) {
    for (size_t i = 0; i < *sent; ++i) {
      if (batch[i].departure_token == 0) continue;
      departures_.push_back({.token = batch[i].departure_token,
                             .sent_ns = network_->clock().NowNs() + departure_delay_});
    }
  }
  return sent;
}

size_t FakeDatagram::TakeDepartures(std::span<Departure> out) {
  return TakeFront(departures_, out);
}

Result<size_t> FakeDatagram::Receive(std::span<InDatagram> out) {
  // The previous batch's views expire now, as the interface allows.
  last_batch_.clear();
  size_t n = std::min(out.size(), inbox_.size());
  for (size_t i = 0; i < n; ++i) {
    last_batch_.push_back(std::move(inbox_.front()));
    inbox_.pop_front();
  }
  // Views are taken only after last_batch_ stopped growing; moving a vector
  // never moves its heap bytes, so they would survive regrowth anyway.
  for (size_t i = 0; i < n; ++i) {
    out[i].from = last_batch_[i].from;
    out[i].bytes = std::span<const std::byte>(last_batch_[i].bytes);
  }
  return n;
}

size_t FakeDatagram::TakePathErrors(std::span<PathError> out) {
  return TakeFront(path_errors_, out);
}

void FakeDatagram::Deliver(const NetAddress& from, std::vector<std::byte> bytes) {
  inbox_.push_back({from, std::move(bytes)});
}

}  // namespace wharf::transport::fake
