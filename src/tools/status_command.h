// `wharf status`: what the local wharfd is doing: its applications (pid,
// uid, endpoint, memory, operations in flight, connections, bytes) and its
// transports' counters, as a table or as JSON.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace wharf::tools {

struct StatusOptions {
  std::string socket;  // --socket
  bool json = false;   // --json
};

void AddStatusFlags(CLI::App& app, StatusOptions& options);
int RunStatus(const StatusOptions& options);

}  // namespace wharf::tools
