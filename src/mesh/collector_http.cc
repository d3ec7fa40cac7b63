// The collector's routes, rendered on the HTTP server's threads from
// Collector::Matrix (which merges under the collector's lock, as of now).
#include "mesh/collector_http.h"

#include "mesh/dashboard.h"

namespace wharf::mesh {
namespace {

constexpr std::string_view kJson = "application/json";


// A handler that renders the matrix of the window asked for.
HttpHandler WithMatrix(const Collector* collector, std::string default_window,
                       std::string (*render)(const ClusterMatrix&)) {
  return [collector, default_window = std::move(default_window), render](const HttpRequest& r) {
    std::string_view window = QueryValue(r, "window");
    Result<ClusterMatrix> m = collector->Matrix(window.empty() ? default_window : window);
    if (!m.ok()) return TextResponse(400, m.status().ToString());
    return HttpResponse{.status = 200, .content_type = std::string(kJson), .body = render(*m)};
  };
}

}  // namespace

std::vector<std::pair<std::string, HttpHandler>> CollectorRoutes(const Collector* collector,
                                                                 std::string default_window) {
  std::vector<std::pair<std::string, HttpHandler>> routes;
  routes.emplace_back("/api/v1/matrix",
                      WithMatrix(collector, default_window, &RenderClusterMatrixJson));
  routes.emplace_back("/api/v1/sources", WithMatrix(collector, default_window, &RenderSourcesJson));
  routes.emplace_back("/api/v1/pinglist",
                      WithMatrix(collector, default_window, &RenderClusterPinglistJson));
  routes.emplace_back("/", [](const HttpRequest& r) {
    if (r.path != "/" && r.path != "/index.html") return TextResponse(404, "no page " + r.path);
    return HttpResponse{.status = 200,
                        .content_type = "text/html; charset=utf-8",
                        .body = std::string(DashboardHtml())};
  });
  return routes;
}

Result<std::unique_ptr<HttpServer>> StartCollectorHttp(const std::string& listen,
                                                       const Collector* collector,
                                                       std::string default_window) {
  Result<transport::NetAddress> address = transport::NetAddress::Parse(listen);
  if (!address.ok()) return address.status().WithContext("--listen");
  HttpServerOptions options;
  options.listen = *address;
  return HttpServer::Start(options, CollectorRoutes(collector, std::move(default_window)));
}

}  // namespace wharf::mesh
