// transport/fake/fake_datagram.h: FakeDatagram, one endpoint on a
// FakeNetwork, implementing transport::Datagram so that protocol code under
// test cannot tell it from a UDP socket.
//
// Send hands packets to the network (which decides their fate and delivery
// time); Receive drains the inbox the network fills when packets arrive. There
// is no file descriptor: tests drive time with the SimClock and poll.
#pragma once

#include <cstddef>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "transport/datagram.h"
#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::transport::fake {

class FakeNetwork;

// Made by FakeNetwork::Attach and owned by the caller (the test, or the engine
// under test). Borrows the network, which must outlive it; if the network is
// destroyed first anyway, Send fails with kFailedPrecondition instead of
// touching freed memory. Destroying a FakeDatagram detaches its address:
// packets still in flight to it are then lost as "[no route]".
// Single-threaded, like the network and the SimClock that drives it.
class FakeDatagram final : public Datagram {
 public:
  ~FakeDatagram() override;
  FakeDatagram(const FakeDatagram&) = delete;
  FakeDatagram& operator=(const FakeDatagram&) = delete;

  NetAddress LocalAddress() const override { return address_; }
  // The network's current limit (FakeNetwork::SetMaxDatagramBytes), 0 once
  // the network is gone.
  size_t MaxDatagramBytes() const override;
  // Accepts the whole batch or, if any datagram is larger than
  // MaxDatagramBytes(), none of it (kInvalidArgument). The fake never reports
  // a full socket.
  Result<size_t> Send(std::span<const OutDatagram> batch) override;
  // Moves up to out.size() arrived datagrams out of the inbox, oldest first.
  // Their bytes stay valid until the next Receive() on this endpoint (or its
  // destruction), however many packets arrive meanwhile.
  Result<size_t> Receive(std::span<InDatagram> out) override;
  int ReadableFd() const override { return -1; }
  // The path errors injected (InjectPathError) or reported by the network
  // (FakeNetwork::SetReportNoRoute), oldest first.
  size_t TakePathErrors(std::span<PathError> out) override;

  // Every datagram sent with a departure_token departs at the clock's time
  // of the Send plus departure_delay() (a model of the time a real packet
  // spends below the socket), reported oldest first. Unbounded, like the
  // inbox.
  size_t TakeDepartures(std::span<Departure> out) override;
  void set_departure_delay(DurationNs delay) { departure_delay_ = delay; }
  DurationNs departure_delay() const { return departure_delay_; }

  // Queues a path error as if the kernel had read an ICMP report for this
  // endpoint: the next TakePathErrors hands it out.
  void InjectPathError(const PathError& error) { path_errors_.push_back(error); }

  const std::string& host_name() const { return host_name_; }
  // Datagrams waiting in the inbox.
  size_t pending() const { return inbox_.size(); }

 private:
  friend class FakeNetwork;

  struct Arrived {
    NetAddress from;
    std::vector<std::byte> bytes;
  };

  FakeDatagram(FakeNetwork* network, std::string host_name, NetAddress address);

  // Called by the network when a packet arrives; takes ownership of `bytes`.
  void Deliver(const NetAddress& from, std::vector<std::byte> bytes);

  // Borrowed; set to null by ~FakeNetwork.
  FakeNetwork* network_;
  // The host this endpoint belongs to; links, partitions and the log use it.
  std::string host_name_;
  NetAddress address_;
  // Arrived and not yet received, in arrival order. Unbounded: the fake
  // models no socket-buffer overflow.
  std::deque<Arrived> inbox_;
  // Path errors not yet taken. Unbounded, like the inbox.
  std::deque<PathError> path_errors_;
  std::deque<Departure> departures_;  // not yet taken
  DurationNs departure_delay_ = 0;
  // Owns the bytes behind the views the last Receive() handed out; replaced
  // by the next Receive().
  std::vector<Arrived> last_batch_;
};

}  // namespace wharf::transport::fake
