// `wharf check`: self-check of a build on this machine.
#include "tools/check_command.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "homa/homa_transport.h"
#include "transport/udp/udp_datagram.h"
#include "wharf/build_info.h"

namespace wharf::tools {
namespace {

Buffer Pattern(size_t size, uint8_t seed) {
  Buffer b = Buffer::Allocate(size);
  for (size_t i = 0; i < size; ++i) b.data()[i] = std::byte(static_cast<uint8_t>(seed + i * 7));
  return b;
}

bool SameBytes(const Buffer& a, const Buffer& b) {
  return a.size() == b.size() &&
         (a.size() == 0 || std::equal(a.data(), a.data() + a.size(), b.data()));
}

// Runs echo RPCs between two endpoints in this process; returns "" or a reason.
std::string EchoSmokeTest(const CheckOptions& options, std::string* detail) {
  auto bind = transport::NetAddress::Parse(options.address + ":0");
  if (!bind.ok()) return bind.status().ToString();
  transport::UdpOptions udp;
  udp.bind = *bind;
  auto server_net = transport::UdpDatagram::Open(udp);
  if (!server_net.ok()) return server_net.status().ToString();
  auto client_net = transport::UdpDatagram::Open(udp);
  if (!client_net.ok()) return client_net.status().ToString();
  const Clock& clock = SystemClock::Get();
  homa::HomaConfig config;
  auto server = homa::HomaTransport::Create(config, server_net->get(), clock);
  if (!server.ok()) return server.status().ToString();
  auto client = homa::HomaTransport::Create(config, client_net->get(), clock);
  if (!client.ok()) return client.status().ToString();

  const std::vector<size_t> sizes = {0, 1, 1000, 1452, 100'000, 1'000'000};
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto id = (*client)->SendRequest((*server_net)->LocalAddress(),
                                     Pattern(sizes[i], static_cast<uint8_t>(i)), i);
    if (!id.ok()) return id.status().ToString();
  }
  size_t done = 0;
  TimeNs deadline = clock.NowNs() + options.timeout_ms * kNsPerMs;
  while (done < sizes.size()) {
    if (clock.NowNs() > deadline) {
      return "timed out after " + std::to_string(options.timeout_ms) + " ms with " +
             std::to_string(done) + " of " + std::to_string(sizes.size()) + " echoes back";
    }
    (*server)->Poll();
    homa::HomaEvent event;
    while ((*server)->PopEvent(&event)) {
      if (event.kind != homa::HomaEvent::Kind::kRequest) continue;
      Status s = (*server)->SendResponse(event.server_key, std::move(event.message));
      if (!s.ok()) return s.ToString();
    }
    (*client)->Poll();
    while ((*client)->PopEvent(&event)) {
      if (event.kind == homa::HomaEvent::Kind::kFailed) return event.status.ToString();
      size_t index = event.cookie;
      if (index >= sizes.size()) return "response with unknown cookie";
      if (!SameBytes(event.message, Pattern(sizes[index], static_cast<uint8_t>(index)))) {
        return "echo of " + std::to_string(sizes[index]) + " bytes came back different";
      }
      ++done;
    }
  }
  const auto& stats = (*client)->stats();
  *detail = std::to_string(sizes.size()) + " echo RPCs (0 B to 1 MB) byte-exact; client sent " +
            std::to_string(stats.packets_sent) + " packets, received " +
            std::to_string(stats.packets_received) + "; GSO " +
            ((*client_net)->gso_enabled() ? "on" : "off") + ", GRO " +
            ((*client_net)->gro_enabled() ? "on" : "off");
  return "";
}

}  // namespace

void AddCheckFlags(CLI::App& app, CheckOptions& options) {
  app.add_option("--address", options.address, "Loopback address to bind the test sockets on")
      ->capture_default_str();
  app.add_option("--timeout-ms", options.timeout_ms, "Give up after this many milliseconds")
      ->capture_default_str()
      ->check(CLI::Range(1, 600'000));
}

int RunCheck(const CheckOptions& options) {
  std::printf("wharf %s (%s build)\n", kVersion, kBuildType);
  std::printf("transports: %s\n", kTransports);
  std::string detail;
  std::string failure = EchoSmokeTest(options, &detail);
  if (!failure.empty()) {
    std::printf("loopback smoke test: FAILED: %s\n", failure.c_str());
    return 1;
  }
  std::printf("loopback smoke test: ok (%s)\n", detail.c_str());
  return 0;
}

}  // namespace wharf::tools
