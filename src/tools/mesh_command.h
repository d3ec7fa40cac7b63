// `wharf mesh`: the whole mesh's latency matrix, read from the wharfds
// themselves (each serves its own row at /api/v1/matrix, on http.listen):
//   wharf mesh [--from URL]...        fetch once, print a table (or --json)
//   wharf mesh collect --from URL...  keep fetching, serve the merged matrix
//                                     and the dashboard until SIGINT/SIGTERM
// The fetching, merging, table and collector are in src/mesh
// (http_client.h, cluster_matrix.h, matrix_text.h, collector.h,
// collector_http.h); this file holds the flags, the signals and the output.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace wharf::tools {

// `wharf mesh`.
struct MeshShowOptions {
  std::vector<std::string> from;  // --from: base URLs; none: the local wharfd's default
  std::string window = "1m";      // --window: 10s, 1m, 10m
  std::string metric = "p50";     // --metric: mesh::ParseMetric's names
  std::string transport;          // --transport; "": the first the cells have
  bool json = false;              // --json: the merged JSON instead of the table
  std::string timeout = "2s";     // --timeout: per source
};

// `wharf mesh collect`.
struct MeshCollectOptions {
  std::vector<std::string> from;          // --from, at least one
  std::string listen = "127.0.0.1:4010";  // --listen
  std::string interval = "5s";            // --interval: between rounds' starts
  std::string window = "1m";              // --window: for requests without ?window=
  std::string timeout = "2s";             // --timeout: per fetch
};

struct MeshOptions {
  MeshShowOptions show;
  MeshCollectOptions collect;
  // Set by AddMeshCommand; tells RunMesh which ran.
  CLI::App* collect_command = nullptr;
};

// Adds `mesh` (with `collect`) to `app`; returns the `mesh` command.
CLI::App* AddMeshCommand(CLI::App& app, MeshOptions& options);

// The exit code. `wharf mesh`: 0 when at least one source answered, 1 when
// none did, 2 for a bad --from or duration. `wharf mesh collect`: 0 after a
// signal, 1 when it could not start (the address is taken), 2 for a bad
// --from or duration. (CLI11 exits with its own codes for the flags it
// checks.)
int RunMesh(const MeshOptions& options);

}  // namespace wharf::tools
