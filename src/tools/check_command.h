// `wharf check`: prints the version and the transports this build carries,
// then runs a smoke test of the real data path on loopback for each
// transport: two endpoints in this process (public API, real sockets)
// exchange echo RPCs of several sizes (from empty to several hundred
// packets or chunks), content checked byte for byte.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace wharf::tools {

struct CheckOptions {
  std::string address = "127.0.0.1";  // loopback address to bind both endpoints on
  int timeout_ms = 5000;              // give up waiting after this long (per transport)
};

void AddCheckFlags(CLI::App& app, CheckOptions& options);

// Returns the process exit code: 0 when every check passed.
int RunCheck(const CheckOptions& options);

}  // namespace wharf::tools
