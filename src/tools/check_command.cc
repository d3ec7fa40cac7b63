// `wharf check`: self-check of a build on this machine.
#include "tools/check_command.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "wharf/build_info.h"
#include "wharf/endpoint.h"

namespace wharf::tools {
namespace {

constexpr uint32_t kEcho = 1;

Buffer Pattern(size_t size, uint8_t seed) {
  Buffer b = Buffer::Allocate(size);
  for (size_t i = 0; i < size; ++i) b.data()[i] = std::byte(static_cast<uint8_t>(seed + i * 7));
  return b;
}

bool SameBytes(const Buffer& a, const Buffer& b) {
  return a.size() == b.size() &&
         (a.size() == 0 || std::equal(a.data(), a.data() + a.size(), b.data()));
}

// The counters of `ep` whose names start with `prefix`, as "name=value ...".
std::string CountersText(const Endpoint& ep, const std::string& prefix) {
  std::string out;
  for (const auto& [name, value] : ep.Stats()) {
    if (name.rfind(prefix, 0) != 0 || value == 0) continue;
    out += (out.empty() ? "" : ", ") + name + " " + std::to_string(value);
  }
  return out;
}

// Echo RPCs between two endpoints of `scheme` in this process (the server
// driven by its own thread); returns "" or a reason, and a summary in `detail`.
std::string EchoSmokeTest(const std::string& scheme, const CheckOptions& options,
                          std::string* detail) {
  std::string host =
      options.address.find(':') != std::string::npos ? "[" + options.address + "]" : options.address;
  auto server = Endpoint::Open({.address = scheme + "://" + host + ":0"});
  if (!server.ok()) return server.status().ToString();
  auto client = Endpoint::Open({.address = scheme + "://" + host + ":0"});
  if (!client.ok()) return client.status().ToString();
  Status served = (*server)->Serve(
      kEcho, [](const RpcContext&, Buffer request) { return Result<Buffer>(std::move(request)); });
  if (!served.ok()) return served.ToString();
  std::thread server_thread([&] { (void)(*server)->Run(std::chrono::milliseconds(options.timeout_ms)); });

  const std::vector<size_t> sizes = {0, 1, 1000, 1452, 100'000, 1'000'000};
  std::vector<Completion> calls;
  for (size_t i = 0; i < sizes.size(); ++i) {
    calls.push_back((*client)->ICall((*server)->address(), kEcho,
                                     Pattern(sizes[i], static_cast<uint8_t>(i)),
                                     {.deadline = std::chrono::milliseconds(options.timeout_ms)}));
  }
  std::string failure;
  for (size_t i = 0; i < calls.size() && failure.empty(); ++i) {
    Status s = calls[i].Wait();
    if (!s.ok()) {
      failure = "echo of " + std::to_string(sizes[i]) + " bytes: " + s.ToString();
    } else if (!SameBytes(calls[i].TakeMessage(), Pattern(sizes[i], static_cast<uint8_t>(i)))) {
      failure = "echo of " + std::to_string(sizes[i]) + " bytes came back different";
    }
  }
  (*server)->Shutdown();
  server_thread.join();
  if (!failure.empty()) return failure;
  *detail = std::to_string(sizes.size()) + " echo RPCs (0 B to 1 MB) byte-exact; client: " +
            CountersText(**client, scheme == "homa" ? "udp." : "tcp.");
  return "";
}

}  // namespace

void AddCheckFlags(CLI::App& app, CheckOptions& options) {
  app.add_option("--address", options.address, "Loopback address to bind the test endpoints on")
      ->capture_default_str();
  app.add_option("--timeout-ms", options.timeout_ms,
                 "Give up on a transport's smoke test after this many milliseconds")
      ->capture_default_str()
      ->check(CLI::Range(1, 600'000));
}

int RunCheck(const CheckOptions& options) {
  std::printf("wharf %s (%s build)\n", kVersion, kBuildType);
  std::printf("transports: %s\n", kTransports);
  int failures = 0;
  for (const std::string scheme : {"homa", "tcp"}) {
    std::string detail;
    std::string failure = EchoSmokeTest(scheme, options, &detail);
    if (!failure.empty()) {
      std::printf("%s:// loopback smoke test: FAILED: %s\n", scheme.c_str(), failure.c_str());
      ++failures;
      continue;
    }
    std::printf("%s:// loopback smoke test: ok (%s)\n", scheme.c_str(), detail.c_str());
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace wharf::tools
