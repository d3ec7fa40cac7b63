// daemon/local_switch.h: LocalSwitch, wharfd's registry of the endpoints it
// hosts, through which two applications attached to one daemon reach each
// other without the network stack. Each endpoint's transport is wrapped in a
// SwitchedTransport (daemon/switched_transport.h) that registers here under
// (scheme, port, endpoint id); a request addressed to one of this host's
// addresses at a registered (scheme, port, endpoint) is handed to the target
// in-process instead of going to a socket. The switch holds only the
// registry, the host's addresses and the local RPC id counter: the RPC
// state lives in the transports (docs/transports.md, "Same-host delivery
// inside wharfd").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::daemon {

class SwitchedTransport;

// Owned by the daemon; outlives every SwitchedTransport registered with it
// (one still registered when it is destroyed is detached: its local RPCs
// fail with kUnavailable and it uses its inner transport only from then on).
// Single-threaded: every call, to it or to its transports, from the
// daemon's loop thread.
class LocalSwitch {
 public:
  // Borrows `clock` (the transports' NextDeadline reads it), which outlives it.
  explicit LocalSwitch(const Clock& clock) : clock_(clock) {}
  ~LocalSwitch();
  LocalSwitch(const LocalSwitch&) = delete;
  LocalSwitch& operator=(const LocalSwitch&) = delete;

  // Counts `ip` (its port is ignored) as one of this host's addresses.
  // Loopback (127.0.0.0/8, ::1) and the unspecified address (0.0.0.0, ::;
  // the kernel delivers to it locally too) always count.
  void AddLocalAddress(const transport::NetAddress& ip);
  // Whether `addr`'s IP is this host's (its port is not looked at).
  bool IsLocal(const transport::NetAddress& addr) const;

  // The transport registered as `scheme` on `port` with `endpoint_id`, or
  // nullptr. Transports call it with the scheme index they registered under.
  SwitchedTransport* Find(uint8_t scheme_index, uint16_t port, uint16_t endpoint_id) const {
    auto it = registry_.find(Key(scheme_index, port, endpoint_id));
    return it == registry_.end() ? nullptr : it->second;
  }
  size_t num_registered() const { return registry_.size(); }
  const Clock& clock() const { return clock_; }

 private:
  friend class SwitchedTransport;

  static uint64_t Key(uint8_t scheme_index, uint16_t port, uint16_t endpoint_id) {
    return (uint64_t{scheme_index} << 32) | (uint64_t{port} << 16) | endpoint_id;
  }
  // A small number for `scheme`, the same for every transport of one scheme;
  // kResourceExhausted past 256 schemes (there are two).
  Result<uint8_t> SchemeIndex(std::string_view scheme);
  // kAlreadyExists when (scheme, port, endpoint id) is taken.
  Status Register(SwitchedTransport* t, uint8_t scheme_index, uint16_t port,
                  uint16_t endpoint_id);
  void Unregister(uint8_t scheme_index, uint16_t port, uint16_t endpoint_id);
  // A client RPC id for a local RPC: unique over the switch (so a server can
  // key its local requests by id alone) and with kLocalIdBit set (so it
  // never equals an id of an inner transport; SwitchedTransport).
  uint64_t NextLocalId() {
    next_local_id_ += 2;
    return next_local_id_;
  }

  const Clock& clock_;
  // Addresses added with AddLocalAddress, port 0. A handful: scanned.
  std::vector<transport::NetAddress> local_ips_;
  // Scheme names by index (SchemeIndex); "homa" and "tcp" in practice.
  std::vector<std::string> schemes_;
  // (scheme index, port, endpoint id) -> the transport registered there.
  // Bounded by the daemon's endpoints (each one registers once).
  std::unordered_map<uint64_t, SwitchedTransport*> registry_;
  uint64_t next_local_id_ = uint64_t{1} << 63;
};

}  // namespace wharf::daemon
