// daemon/testing/fake_session_host.h: FakeSessionHost, a SessionHost for
// driving one AppSession without a daemon, a socket or a thread: its
// endpoint is a HomaTransport on a FakeNetwork, time is a SimClock, and the
// application's end of the control socket is the other half of a socketpair.
// Used by the session-program test and fuzz/session_commands_fuzzer.cc.
// Single-threaded; owns everything the session borrows, so it outlives it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "daemon/app_session.h"
#include "homa/homa_transport.h"
#include "transport/fake/fake_network.h"

namespace wharf::daemon::testing {

class FakeSessionHost final : public SessionHost {
 public:
  // `settings` are daemon config overrides, as for wharfd.
  explicit FakeSessionHost(std::vector<std::pair<std::string, std::string>> settings = {})
      : config_(LoadDaemonConfig("", settings).value()) {}

  Result<AppEndpoint> OpenAppEndpoint(std::string_view /*address*/,
                                      std::string* public_address) override {
    const transport::NetAddress addr =
        transport::NetAddress::Ipv4(0xC6120001 + static_cast<uint32_t>(datagrams_.size()), 4000);
    datagrams_.push_back(net_.Attach("app" + std::to_string(datagrams_.size()), addr));
    WHARF_ASSIGN_OR_RETURN(std::unique_ptr<homa::HomaTransport> t,
                           homa::HomaTransport::Create(homa::HomaConfig{},
                                                       datagrams_.back().get(), clock_));
    *public_address = "homa://" + addr.ToString();
    AppEndpoint e;
    e.inner = std::move(t);
    return e;
  }
  Result<AppEndpoint> OpenSecondary(std::string_view scheme) override {
    return UnimplementedError("no " + std::string(scheme) + " transport in the fake host");
  }
  Status Admit(const shm::PeerCredentials&) override { return OkStatus(); }
  void NoteAttached() override { ++attached_; }
  void NoteRefused() override {}
  const DaemonConfig& config() const override { return config_; }
  const Clock& clock() const override { return clock_; }

  SimClock& sim_clock() { return clock_; }
  int attached() const { return attached_; }

 private:
  DaemonConfig config_;
  SimClock clock_{1'000'000'000};
  transport::fake::FakeNetwork net_{clock_, /*seed=*/1};
  std::vector<std::unique_ptr<transport::fake::FakeDatagram>> datagrams_;
  int attached_ = 0;
};

}  // namespace wharf::daemon::testing
