// mesh/collector_http.h: the pages of `wharf mesh collect`: the merged
// matrix at /api/v1/matrix?window=W (a daemon's shape plus "sources",
// cluster_matrix.h), the sources alone at /api/v1/sources, the merged
// pinglist summary the dashboard's header reads at /api/v1/pinglist, and
// the dashboard (dashboard.h) at /. There is no /api/v1/pair: a collector
// keeps no history (the dashboard opens it only for its own "self", which a
// collector does not have).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mesh/collector.h"
#include "mesh/http_server.h"

namespace wharf::mesh {

// The routes, for HttpServer::Start; handlers read `collector`, which must
// outlive the server. `default_window` ("1m") answers requests without
// ?window=.
std::vector<std::pair<std::string, HttpHandler>> CollectorRoutes(const Collector* collector,
                                                                 std::string default_window);

// Listens on `listen` ("127.0.0.1:4010") and serves CollectorRoutes. Errors
// name the address.
Result<std::unique_ptr<HttpServer>> StartCollectorHttp(const std::string& listen,
                                                       const Collector* collector,
                                                       std::string default_window);

}  // namespace wharf::mesh
