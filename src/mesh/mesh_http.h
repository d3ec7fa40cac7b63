// mesh/mesh_http.h: MeshHttp, wharfd's HTTP pages (http.listen): /metrics
// (Prometheus), /api/v1/{targets,matrix,pair,pinglist,status} (JSON,
// api_json.h) and the dashboard at / (dashboard.h). Each request takes a
// snapshot from the mesh service's SnapshotBoard (one younger than a
// second is reused) and renders it on the HTTP thread: the daemon's loop
// only copies.
#pragma once

#include <memory>
#include <string>

#include "mesh/http_server.h"
#include "mesh/snapshot_board.h"

namespace wharf::mesh {

// Owned by wharfd's main, beside the Daemon; destroyed before the daemon
// (its handlers use the board, which the service owns).
class MeshHttp {
 public:
  // How long a request waits for the loop to produce a snapshot.
  static constexpr std::chrono::milliseconds kSnapshotWait{2000};
  // A snapshot this young is served again instead of asking for one.
  static constexpr DurationNs kSnapshotMaxAge = kNsPerSec;

  // Listens on `listen` ("127.0.0.1:4002"). Errors name the key.
  static Result<std::unique_ptr<MeshHttp>> Start(const std::string& listen, SnapshotBoard* board,
                                                 const Clock& clock);
  transport::NetAddress address() const { return server_->address(); }
  HttpServerCounters counters() const { return server_->counters(); }

 private:
  explicit MeshHttp(std::unique_ptr<HttpServer> server) : server_(std::move(server)) {}
  std::unique_ptr<HttpServer> server_;
};

}  // namespace wharf::mesh
