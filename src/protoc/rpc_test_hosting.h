// protoc/rpc_test_hosting.h: the hostings the generated-code tests run in
// (embedded or managed, over homa:// or tcp://), and opening endpoints in
// them. Shared by rpc_test.cc and stream_rpc_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "daemon/testing/daemon_thread.h"
#include "wharf/endpoint.h"

namespace wharf::rpctest {

enum class Mode { kEmbedded, kManaged };

// A hosting and a transport: the generated code is the same over each.
struct Setup {
  Mode mode;
  const char* scheme;  // "homa" or "tcp"
};

inline auto AllHostings() {
  return ::testing::Values(Setup{Mode::kEmbedded, "homa"}, Setup{Mode::kManaged, "homa"},
                           Setup{Mode::kEmbedded, "tcp"}, Setup{Mode::kManaged, "tcp"});
}

inline std::string HostingName(const ::testing::TestParamInfo<Setup>& info) {
  return std::string(info.param.mode == Mode::kEmbedded ? "Embedded" : "Managed") + "_" +
         info.param.scheme;
}

// An address on loopback with a kernel-picked port: named over homa://
// (tcp:// has one endpoint per port: no names).
inline std::string LoopbackAddress(const Setup& setup, const std::string& name) {
  const std::string scheme = setup.scheme;
  return scheme + "://127.0.0.1:0" + (scheme == "homa" && !name.empty() ? "/" + name : "");
}

// Opens an endpoint at `address`, in `daemon` if there is one.
inline std::unique_ptr<Endpoint> OpenIn(
    const daemon::testing::DaemonThread* daemon, const std::string& address,
    std::vector<std::pair<std::string, std::string>> settings = {}) {
  EndpointOptions options{.address = address, .settings = std::move(settings)};
  if (daemon != nullptr) {
    options.hosting = Hosting::kManaged;
    options.daemon_socket = daemon->socket();
  } else {
    options.hosting = Hosting::kEmbedded;
  }
  Result<std::unique_ptr<Endpoint>> ep = Endpoint::Open(options);
  EXPECT_TRUE(ep.ok()) << ep.status();
  return ep.ok() ? std::move(*ep) : nullptr;
}

}  // namespace wharf::rpctest
