// MeshHttp: the routes and what each renders.
#include "mesh/mesh_http.h"

#include <string_view>
#include <utility>
#include <vector>

#include "daemon/status_report.h"
#include "mesh/api_json.h"
#include "mesh/dashboard.h"
#include "mesh/metrics_exporter.h"

namespace wharf::mesh {
namespace {



// Wraps a renderer: takes the snapshot, or answers 503 when the loop did
// not produce one in time.
HttpHandler WithSnapshot(SnapshotBoard* board, const Clock* clock,
                         std::function<HttpResponse(const MeshSnapshot&, const HttpRequest&)> render) {
  return [board, clock, render = std::move(render)](const HttpRequest& r) {
    std::shared_ptr<const MeshSnapshot> s =
        board->Get(clock->NowNs(), MeshHttp::kSnapshotMaxAge, MeshHttp::kSnapshotWait);
    if (s == nullptr) return TextResponse(503, "wharfd's loop did not answer within 2 s");
    return render(*s, r);
  };
}

}  // namespace

Result<std::unique_ptr<MeshHttp>> MeshHttp::Start(const std::string& listen, SnapshotBoard* board,
                                                  const Clock& clock) {
  Result<transport::NetAddress> address = transport::NetAddress::Parse(listen);
  if (!address.ok()) return address.status().WithContext("http.listen");
  HttpServerOptions options;
  options.listen = *address;
  const Clock* c = &clock;
  std::vector<std::pair<std::string, HttpHandler>> routes;
  routes.emplace_back("/metrics", WithSnapshot(board, c, [](const MeshSnapshot& s, const HttpRequest&) {
    Result<std::string> text = RenderMetrics(s);
    if (!text.ok()) return TextResponse(500, text.status().ToString());
    return HttpResponse{.status = 200,
                        .content_type = "text/plain; version=0.0.4; charset=utf-8",
                        .body = std::move(*text)};
  }));
  routes.emplace_back("/api/v1/targets", WithSnapshot(board, c, [](const MeshSnapshot& s, const HttpRequest&) {
    return JsonResponse(RenderTargetsJson(s));
  }));
  routes.emplace_back("/api/v1/peers", WithSnapshot(board, c, [](const MeshSnapshot& s, const HttpRequest&) {
    return JsonResponse(RenderPeersJson(s));
  }));
  routes.emplace_back("/api/v1/matrix", WithSnapshot(board, c, [](const MeshSnapshot& s, const HttpRequest& r) {
    std::string_view text = QueryValue(r, "window");
    Result<Window> w = ParseWindow(text.empty() ? "1m" : text);
    if (!w.ok()) return TextResponse(400, w.status().ToString());
    return JsonResponse(RenderMatrixJson(s, *w));
  }));
  routes.emplace_back("/api/v1/pair", WithSnapshot(board, c, [](const MeshSnapshot& s, const HttpRequest& r) {
    Result<std::string> doc = RenderPairJson(s, QueryValue(r, "host"), QueryValue(r, "transport"));
    if (!doc.ok()) return TextResponse(404, doc.status().ToString());
    return JsonResponse(std::move(*doc));
  }));
  routes.emplace_back("/api/v1/pinglist", WithSnapshot(board, c, [](const MeshSnapshot& s, const HttpRequest&) {
    return JsonResponse(RenderPinglistJson(s));
  }));
  routes.emplace_back("/api/v1/status", WithSnapshot(board, c, [](const MeshSnapshot& s, const HttpRequest&) {
    Result<std::string> doc = daemon::RenderStatusJson(s.daemon);
    if (!doc.ok()) return TextResponse(500, doc.status().ToString());
    return JsonResponse(std::move(*doc));
  }));
  routes.emplace_back("/", [](const HttpRequest& r) {
    if (r.path != "/" && r.path != "/index.html") return TextResponse(404, "no page " + r.path);
    return HttpResponse{.status = 200,
                        .content_type = "text/html; charset=utf-8",
                        .body = std::string(DashboardHtml())};
  });
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<HttpServer> server,
                         HttpServer::Start(options, std::move(routes)));
  return std::unique_ptr<MeshHttp>(new MeshHttp(std::move(server)));
}

}  // namespace wharf::mesh
