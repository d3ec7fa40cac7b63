// bench/grpc/grpc_node_main.cc: wharf-grpc-node, the gRPC C++ baseline of
// `wharf bench cluster`: the cluster node (bench/cluster_node.h) with
// gRPC's echo server (echo_server.h) and client (grpc_load_transport.h).
// With --proto homa-typed it serves and calls the same echo.proto through
// the code protoc-gen-wharf generates instead (typed_wharf_transport.h):
// wharf's typed RPCs beside gRPC on one .proto.
// Same flags, sample file (WBCSMP01) and summary line as `wharf bench
// cluster-node`; `wharf bench cluster --proto grpc` runs it on every host.
//
// A separate executable so that gRPC stays out of wharf and libwharf.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "bench/cluster_node.h"
#include "bench/grpc/echo_server.h"
#include "bench/grpc/grpc_load_transport.h"
#include "bench/grpc/sync_echo_server.h"
#include "bench/grpc/typed_wharf_transport.h"

namespace wharf::bench::grpc_node {
namespace {

int Main(int argc, char** argv) {
  CLI::App app{
      "wharf-grpc-node: the gRPC C++ baseline of `wharf bench cluster`, one host of it: a gRPC "
      "echo server on ADDRESS[--host]:--port (asynchronous, 2 completion-queue threads) and "
      "--threads open-loop client threads (one completion queue and one connection per other "
      "host each) sending the --workload at --load of --link-rate. Writes the RPCs' sizes and "
      "RTTs to --out (WBCSMP01) and prints one `summary {json}` line. `wharf bench cluster "
      "--proto grpc` runs it; by hand (docs/benchmarks.md):\n"
      "  wharf-grpc-node --host 1 --addresses 127.0.0.1,127.0.0.2 --threads 0 --duration 60s "
      "--out h1.bin &\n"
      "  wharf-grpc-node --host 0 --addresses 127.0.0.1,127.0.0.2 --unloaded --peer 1 "
      "--threads 1 --out h0.bin"};
  bench::ClusterNodeOptions options;
  options.proto = "grpc";
  options.port = 4004;  // the runner's grpc port (cluster_runner.cc, PortFor)
  bench::AddClusterNodeFlags(app, options, {"grpc", "homa-typed"});
  std::string server_api = "async";
  app.add_option("--server-api", server_api,
                 "async: the completion-queue server (2 threads, the strongest we know how to "
                 "write); sync: gRPC's synchronous API with ServerBuilder's defaults, the server "
                 "a new user writes from gRPC's examples")
      ->check(CLI::IsMember({"async", "sync"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (options.proto == "homa-typed") {
    return bench::RunBenchClusterNode(options, {.start_echo_server = StartTypedWharfEchoServer,
                                                .open_load_transport = OpenTypedWharfLoadTransport});
  }
  if (options.mode != "embedded") {
    std::fprintf(stderr, "wharf-grpc-node: --mode %s: gRPC has no managed mode\n",
                 options.mode.c_str());
    return 1;
  }
  auto start_server = [&server_api](const bench::NodeTransportConfig& config) {
    return server_api == "sync" ? StartGrpcSyncEchoServer(config) : StartGrpcEchoServer(config);
  };
  return bench::RunBenchClusterNode(options, {.start_echo_server = start_server,
                                              .open_load_transport = OpenGrpcLoadTransport});
}

}  // namespace
}  // namespace wharf::bench::grpc_node

int main(int argc, char** argv) { return wharf::bench::grpc_node::Main(argc, argv); }
