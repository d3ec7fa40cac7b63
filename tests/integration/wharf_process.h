// integration/wharf_process.h: what the cross-process tests share: `wharf
// serve` as a child process (ServeProcess), parsing of the server's
// execution counts, free-port picking, and payloads whose every byte can be
// checked. Process mechanics (fork/exec, pipes, bounded waits, kill and reap)
// are netns/subprocess.h's; this file only knows the wharf CLI's output.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "netns/subprocess.h"
#include "wharf/buffer.h"
#include "wharf/result.h"

namespace wharf::integration {

// Bound on a child printing its readiness line (generous for ASan builds on
// a loaded machine; a healthy start takes milliseconds).
inline constexpr DurationNs kStartTimeoutNs = 20 * kNsPerSec;
// Bound on a child exiting after SIGTERM.
inline constexpr DurationNs kStopTimeoutNs = 10 * kNsPerSec;

struct ServeOptions {
  // --listen; port 0 lets the kernel pick, the test reads the port back.
  std::string listen = "homa://127.0.0.1:0";
  // --set key=value entries.
  std::vector<std::string> settings{};
  // Further flags, e.g. {"--handler-delay", "10000"}.
  std::vector<std::string> args{};
  // Namespace and label of the child (empty netns: the test's own).
  netns::SubprocessOptions process{};
};

// A running `wharf serve` (echo on method 1, execution counts on method 2).
// Owned by the test; destroying it SIGKILLs and reaps the child, so a failed
// assertion leaves no server behind. Not thread-safe.
class ServeProcess {
 public:
  // Starts the server and waits (bounded) for its "listening on" line.
  static Result<std::unique_ptr<ServeProcess>> Start(ServeOptions options = {});

  // The address the server reported, e.g. "homa://127.0.0.1:40123".
  const std::string& address() const { return address_; }
  netns::Subprocess& process() { return *process_; }

  // SIGTERM, then a bounded wait for exit code 0; returns the summary the
  // server prints last ("executed N duplicates M").
  Result<std::string> Stop();

 private:
  ServeProcess(std::unique_ptr<netns::Subprocess> process, std::string address)
      : process_(std::move(process)), address_(std::move(address)) {}

  std::unique_ptr<netns::Subprocess> process_;
  std::string address_;
};

// The path of the `wharf` CLI under test.
std::string WharfCliPath();

// Runs `wharf <args...>` to completion within `timeout_ns` in the given
// namespace; a non-zero exit is in exit_code, not an error.
Result<netns::CommandOutput> RunWharf(std::vector<std::string> args, DurationNs timeout_ns,
                                      netns::SubprocessOptions options = {});

// How often a server ran requests, as `wharf serve` counts them.
struct ServerCounts {
  uint64_t executed = 0;
  uint64_t duplicates = 0;
};
// Finds "executed N duplicates M" in `text` (the last occurrence).
Result<ServerCounts> ParseServerCounts(std::string_view text);

// `count` distinct UDP ports on `ip` that were free a moment ago (all are
// bound at once while picking, so they differ; another process could still
// take one before the caller binds it).
Result<std::vector<uint16_t>> PickFreeUdpPorts(int count, const std::string& ip = "127.0.0.1");

// False if the host cannot bind UDP on [::1] (IPv6 disabled).
bool HaveIpv6Loopback();

// `size` bytes of deterministic content; different seeds give different
// bytes at every offset, so a mixed-up or shifted echo is caught.
Buffer PatternBuffer(size_t size, uint64_t seed);
// Success iff `got` is exactly PatternBuffer(size, seed); otherwise names the
// size difference or the first differing offset.
::testing::AssertionResult MatchesPattern(const Buffer& got, size_t size, uint64_t seed);

}  // namespace wharf::integration
