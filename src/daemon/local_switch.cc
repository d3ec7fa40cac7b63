// daemon/local_switch.cc: LocalSwitch: the host's addresses and the registry
// of switched transports.
#include "daemon/local_switch.h"

#include <string>

#include "daemon/switched_transport.h"

namespace wharf::daemon {

LocalSwitch::~LocalSwitch() {
  // Each Detach unregisters its transport.
  while (!registry_.empty()) {
    registry_.begin()->second->Detach(
        UnavailableError("wharfd: the local switch closed under this endpoint"));
  }
}

void LocalSwitch::AddLocalAddress(const transport::NetAddress& ip) {
  transport::NetAddress bare = ip.WithPort(0);
  for (const transport::NetAddress& known : local_ips_) {
    if (known == bare) return;
  }
  local_ips_.push_back(bare);
}

bool LocalSwitch::IsLocal(const transport::NetAddress& addr) const {
  const auto& ip = addr.ip_bytes();
  if (addr.is_v4()) {
    if (ip[0] == 127) return true;  // 127.0.0.0/8
    if (ip[0] == 0 && ip[1] == 0 && ip[2] == 0 && ip[3] == 0) return true;
  } else if (addr.is_v6()) {
    bool zero_prefix = true;
    for (size_t i = 0; i < 15; ++i) zero_prefix &= ip[i] == 0;
    if (zero_prefix && (ip[15] == 0 || ip[15] == 1)) return true;  // :: and ::1
  } else {
    return false;
  }
  for (const transport::NetAddress& known : local_ips_) {
    if (known.family() == addr.family() && known.ip_bytes() == ip) return true;
  }
  return false;
}

Result<uint8_t> LocalSwitch::SchemeIndex(std::string_view scheme) {
  for (size_t i = 0; i < schemes_.size(); ++i) {
    if (schemes_[i] == scheme) return static_cast<uint8_t>(i);
  }
  if (schemes_.size() > 255) {
    return ResourceExhaustedError("wharfd: the local switch knows 256 schemes already");
  }
  schemes_.emplace_back(scheme);
  return static_cast<uint8_t>(schemes_.size() - 1);
}

Status LocalSwitch::Register(SwitchedTransport* t, uint8_t scheme_index, uint16_t port,
                             uint16_t endpoint_id) {
  auto [it, inserted] = registry_.emplace(Key(scheme_index, port, endpoint_id), t);
  if (!inserted) {
    return AlreadyExistsError("wharfd: " + schemes_[scheme_index] + " endpoint " +
                              std::to_string(endpoint_id) + " on port " + std::to_string(port) +
                              " is already switched");
  }
  return OkStatus();
}

void LocalSwitch::Unregister(uint8_t scheme_index, uint16_t port, uint16_t endpoint_id) {
  registry_.erase(Key(scheme_index, port, endpoint_id));
}

}  // namespace wharf::daemon
