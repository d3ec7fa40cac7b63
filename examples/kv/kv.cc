// kv: a key-value store served over typed wharf RPCs. kv.proto declares the
// service; protoc-gen-wharf generates kv.wharf.h from it (Store::Service for
// the server, Store::Stub for clients; wharf_generate_proto in
// examples/CMakeLists.txt), and this file is all the code the store needs.
//
//   kv demo                                     server and client in this process,
//                                               every answer checked
//   kv serve --listen homa://127.0.0.1:4000     serve until Ctrl-C (or --seconds)
//   kv put --server homa://127.0.0.1:4000 greeting hello
//   kv get --server homa://127.0.0.1:4000 greeting
//   kv delete --server homa://127.0.0.1:4000 greeting
//   kv scan --server homa://127.0.0.1:4000 [PREFIX]   entries in key order (a server stream)
//   kv watch --server homa://127.0.0.1:4000 KEY...    print each change (a bidirectional stream)
//
// The server (store_service.h) keeps the data in memory, within limits on
// the number of keys, the size of keys and values, and open watches. Errors are Status values that name the
// method and the key: a missing key is kNotFound, a value over the limit
// kInvalidArgument, a new key in a full store kResourceExhausted.
//
// The endpoints use the default hosting (Hosting::kAuto): with WHARF_SOCKET
// naming a running wharfd, the engines run there (managed mode); otherwise
// in this process.
//
// Exit codes: 0 success; 1 an error, or in `demo` an answer other than the
// expected one; 2 bad usage; 3 `get` of a key the store does not hold.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "kv.wharf.h"
#include "store_service.h"
#include "wharf/endpoint.h"
#include "wharf/rpc.h"

namespace {

using namespace std::chrono_literals;
namespace kv = wharf::examples::kv;
using kv::Limits;
using kv::Quoted;
using kv::StoreService;

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNotFound = 3;

// Opens an endpoint on `address` and serves the store on it.
wharf::Result<std::unique_ptr<wharf::Endpoint>> OpenServer(const std::string& address,
                                                           StoreService& service) {
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<wharf::Endpoint> server,
                         wharf::Endpoint::Open({.address = address}));
  WHARF_RETURN_IF_ERROR(service.Register(*server));
  return server;
}

// A client endpoint for calling `server`: its own address only needs the
// server's address family.
wharf::Result<std::unique_ptr<wharf::Endpoint>> OpenClient(const std::string& server) {
  const bool ipv6 = server.find('[') != std::string::npos;
  return wharf::Endpoint::Open({.address = ipv6 ? "homa://[::]:0" : "homa://0.0.0.0:0"});
}

// --- kv serve -----------------------------------------------------------------

std::atomic<wharf::Endpoint*> g_server{nullptr};

// Shutdown() only writes an eventfd, so it is safe in a signal handler.
void OnSignal(int) {
  if (wharf::Endpoint* ep = g_server.load()) ep->Shutdown();
}

// Serves until SIGINT/SIGTERM, or for `seconds` (0: no limit).
int RunServe(const std::string& listen, const Limits& limits, int seconds) {
  StoreService service(limits);
  auto server = OpenServer(listen, service);
  if (!server.ok()) {
    std::fprintf(stderr, "kv serve: %s\n", server.status().ToString().c_str());
    return kExitError;
  }
  g_server = server->get();
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::printf("listening on %s (at most %zu keys, keys up to %zu bytes, values up to %zu bytes)\n",
              (*server)->address().c_str(), limits.max_keys, limits.max_key_bytes,
              limits.max_value_bytes);
  std::fflush(stdout);
  // Returns when a signal calls Shutdown(), or after `seconds`.
  const std::chrono::nanoseconds run_for =
      seconds > 0 ? std::chrono::seconds(seconds) : wharf::Completion::kForever;
  wharf::Status s = (*server)->Run(run_for);
  g_server = nullptr;
  if (!s.ok()) {
    std::fprintf(stderr, "kv serve: %s\n", s.ToString().c_str());
    return kExitError;
  }
  std::printf("stopped\n");
  return 0;
}

// --- kv get / put / delete ----------------------------------------------------

struct ClientFlags {
  std::string server = "homa://127.0.0.1:4000";
  int deadline_ms = 5000;
};

// Runs `call(stub, options)` against the server and returns its exit code.
template <typename Call>
int WithStub(const ClientFlags& flags, Call call) {
  auto client = OpenClient(flags.server);
  if (!client.ok()) {
    std::fprintf(stderr, "kv: %s\n", client.status().ToString().c_str());
    return kExitError;
  }
  kv::Store::Stub store(**client, flags.server);
  return call(store, wharf::CallOptions{.deadline = std::chrono::milliseconds(flags.deadline_ms)});
}

int RunGet(const ClientFlags& flags, const std::string& key) {
  return WithStub(flags, [&](const kv::Store::Stub& store, const wharf::CallOptions& options) {
    kv::GetRequest request;
    request.set_key(key);
    wharf::Result<kv::GetReply> reply = store.Get(request, options);
    if (!reply.ok()) {
      std::fprintf(stderr, "kv get: %s\n", reply.status().ToString().c_str());
      return reply.status().code() == wharf::StatusCode::kNotFound ? kExitNotFound : kExitError;
    }
    // The value as stored (bytes), then a newline; the version on stderr.
    std::fwrite(reply->value().data(), 1, reply->value().size(), stdout);
    std::fputc('\n', stdout);
    std::fprintf(stderr, "version %llu\n", static_cast<unsigned long long>(reply->version()));
    return 0;
  });
}

int RunPut(const ClientFlags& flags, const std::string& key, const std::string& value) {
  return WithStub(flags, [&](const kv::Store::Stub& store, const wharf::CallOptions& options) {
    kv::PutRequest request;
    request.set_key(key);
    request.set_value(value);
    wharf::Result<kv::PutReply> reply = store.Put(request, options);
    if (!reply.ok()) {
      std::fprintf(stderr, "kv put: %s\n", reply.status().ToString().c_str());
      return kExitError;
    }
    std::printf("put %s: version %llu (%s)\n", Quoted(key).c_str(),
                static_cast<unsigned long long>(reply->version()),
                reply->created() ? "new key" : "replaced");
    return 0;
  });
}

int RunDelete(const ClientFlags& flags, const std::string& key) {
  return WithStub(flags, [&](const kv::Store::Stub& store, const wharf::CallOptions& options) {
    kv::DeleteRequest request;
    request.set_key(key);
    wharf::Result<kv::DeleteReply> reply = store.Delete(request, options);
    if (!reply.ok()) {
      std::fprintf(stderr, "kv delete: %s\n", reply.status().ToString().c_str());
      return kExitError;
    }
    std::printf(reply->found() ? "deleted %s\n" : "%s was not there\n", Quoted(key).c_str());
    return 0;
  });
}

// --- kv scan / watch ---------------------------------------------------------

int RunScan(const ClientFlags& flags, const std::string& prefix, uint32_t limit) {
  return WithStub(flags, [&](const kv::Store::Stub& store, const wharf::CallOptions& options) {
    kv::ScanRequest request;
    request.set_prefix(prefix);
    request.set_limit(limit);
    auto stream = store.Scan(request, options);
    if (!stream.ok()) {
      std::fprintf(stderr, "kv scan: %s\n", stream.status().ToString().c_str());
      return kExitError;
    }
    size_t entries = 0;
    while (true) {
      wharf::Result<std::optional<kv::Entry>> entry = stream->Read();
      if (!entry.ok()) {
        std::fprintf(stderr, "kv scan: %s\n", entry.status().ToString().c_str());
        return kExitError;
      }
      if (!entry->has_value()) break;
      std::printf("%s = %s (version %llu)\n", Quoted((*entry)->key()).c_str(),
                  Quoted((*entry)->value()).c_str(),
                  static_cast<unsigned long long>((*entry)->version()));
      ++entries;
    }
    std::fprintf(stderr, "%zu entries\n", entries);
    return 0;
  });
}

void PrintEvent(const kv::Event& event) {
  if (event.deleted()) {
    std::printf("%s: not there\n", Quoted(event.key()).c_str());
  } else {
    std::printf("%s = %s (version %llu)\n", Quoted(event.key()).c_str(),
                Quoted(event.value()).c_str(), static_cast<unsigned long long>(event.version()));
  }
  std::fflush(stdout);
}

// Prints the keys' states, then each change, until `events` were printed
// (0: no limit) or `seconds` passed (0: until Ctrl-C).
int RunWatch(const ClientFlags& flags, const std::vector<std::string>& keys, size_t events,
             int seconds) {
  return WithStub(flags, [&](const kv::Store::Stub& store, const wharf::CallOptions&) {
    // A watch lives as long as the user likes: no deadline.
    auto stream = store.Watch({.deadline = std::chrono::nanoseconds(0)});
    if (!stream.ok()) {
      std::fprintf(stderr, "kv watch: %s\n", stream.status().ToString().c_str());
      return kExitError;
    }
    for (const std::string& key : keys) {
      kv::WatchRequest request;
      request.set_key(key);
      if (wharf::Status s = stream->Write(request); !s.ok()) {
        std::fprintf(stderr, "kv watch: %s\n", s.ToString().c_str());
        return kExitError;
      }
    }
    const auto until = seconds > 0 ? std::chrono::steady_clock::now() + std::chrono::seconds(seconds)
                                    : std::chrono::steady_clock::time_point::max();
    for (size_t printed = 0; events == 0 || printed < events; ++printed) {
      const auto left = until - std::chrono::steady_clock::now();
      auto event = stream->Read(until == std::chrono::steady_clock::time_point::max()
                                    ? wharf::Completion::kForever
                                    : std::chrono::duration_cast<std::chrono::nanoseconds>(left));
      if (!event.ok() && event.status().code() == wharf::StatusCode::kDeadlineExceeded) break;
      if (!event.ok()) {
        std::fprintf(stderr, "kv watch: %s\n", event.status().ToString().c_str());
        return kExitError;
      }
      if (!event->has_value()) break;
      PrintEvent(**event);
    }
    // Done watching: the server finishes the stream.
    if (wharf::Status s = stream->Finish(5s); !s.ok()) {
      std::fprintf(stderr, "kv watch: %s\n", s.ToString().c_str());
      return kExitError;
    }
    return 0;
  });
}

// --- kv demo ------------------------------------------------------------------

// The demo's checks: each prints what it saw, and a mismatch is counted.
class Demo {
 public:
  explicit Demo(const kv::Store::Stub& store) : store_(store) {}

  int mismatches() const { return mismatches_; }

  // Put must succeed; `created` says whether the key must be new. Returns
  // the version (0 on a mismatch).
  uint64_t Put(const std::string& key, const std::string& value, bool created) {
    wharf::Result<kv::PutReply> reply = store_.Put(PutRequestOf(key, value));
    if (!reply.ok()) return Mismatch("put " + Quoted(key) + ": " + reply.status().ToString());
    std::printf("put %s = %s: version %llu (%s)\n", Quoted(key).c_str(), Quoted(value).c_str(),
                static_cast<unsigned long long>(reply->version()),
                reply->created() ? "new key" : "replaced");
    if (reply->created() != created) {
      return Mismatch("put " + Quoted(key) + ": expected " + (created ? "a new key" : "a replace"));
    }
    return reply->version();
  }

  // Get must find `value` at `version`.
  void Get(const std::string& key, const std::string& value, uint64_t version) {
    kv::GetRequest request;
    request.set_key(key);
    wharf::Result<kv::GetReply> reply = store_.Get(request);
    if (!reply.ok()) {
      Mismatch("get " + Quoted(key) + ": " + reply.status().ToString());
      return;
    }
    std::printf("get %s: %s (version %llu)\n", Quoted(key).c_str(), Quoted(reply->value()).c_str(),
                static_cast<unsigned long long>(reply->version()));
    if (reply->value() != value || reply->version() != version) {
      Mismatch("get " + Quoted(key) + ": expected " + Quoted(value) + " at version " +
               std::to_string(version));
    }
  }

  // Delete must say whether the key was there.
  void Delete(const std::string& key, bool found) {
    kv::DeleteRequest request;
    request.set_key(key);
    wharf::Result<kv::DeleteReply> reply = store_.Delete(request);
    if (!reply.ok()) {
      Mismatch("delete " + Quoted(key) + ": " + reply.status().ToString());
      return;
    }
    std::printf("delete %s: %s\n", Quoted(key).c_str(), reply->found() ? "found" : "not there");
    if (reply->found() != found) {
      Mismatch("delete " + Quoted(key) + ": expected " + (found ? "found" : "not there"));
    }
  }

  // `what` must have failed with `code`.
  template <typename Reply>
  void Refused(const std::string& what, const wharf::Result<Reply>& reply, wharf::StatusCode code) {
    if (reply.ok()) {
      Mismatch(what + ": succeeded, expected " + std::string(wharf::StatusCodeName(code)));
      return;
    }
    std::printf("%s: %s\n", what.c_str(), reply.status().ToString().c_str());
    if (reply.status().code() != code) {
      Mismatch(what + ": expected " + std::string(wharf::StatusCodeName(code)));
    }
  }

  // Scan must stream `count` entries with `prefix`, in key order.
  void Scan(const std::string& prefix, uint32_t limit, size_t count) {
    kv::ScanRequest request;
    request.set_prefix(prefix);
    request.set_limit(limit);
    auto stream = store_.Scan(request);
    if (!stream.ok()) {
      Mismatch("scan: " + stream.status().ToString());
      return;
    }
    std::vector<std::string> keys;
    while (true) {
      auto entry = stream->Read(10s);
      if (!entry.ok()) {
        Mismatch("scan: " + entry.status().ToString());
        return;
      }
      if (!entry->has_value()) break;
      keys.push_back((*entry)->key());
    }
    std::printf("scan %s (limit %u): %zu entries\n", Quoted(prefix).c_str(), limit, keys.size());
    Expect(keys.size() == count, "scan " + Quoted(prefix) + ": expected " + std::to_string(count) +
                                     " entries");
    Expect(std::is_sorted(keys.begin(), keys.end()), "scan returns keys in order");
    Expect(stream->Finish(10s).ok(), "scan finishes OK");
  }

  // Watch a key through a put and a delete.
  void Watch(const Limits&) {
    auto watch = store_.Watch({.deadline = 30s});
    if (!watch.ok()) {
      Mismatch("watch: " + watch.status().ToString());
      return;
    }
    kv::WatchRequest request;
    request.set_key("watched");
    Expect(watch->Write(request).ok(), "watch: the request leaves");
    auto expect_event = [&](bool deleted, const std::string& value) {
      auto event = watch->Read(10s);
      if (!event.ok() || !event->has_value()) {
        Mismatch("watch: no event: " + event.status().ToString());
        return;
      }
      std::printf("watch %s: %s\n", Quoted((*event)->key()).c_str(),
                  (*event)->deleted() ? "not there" : Quoted((*event)->value()).c_str());
      Expect((*event)->deleted() == deleted && (*event)->value() == value,
             "watch: expected " + (deleted ? std::string("not there") : Quoted(value)));
    };
    expect_event(/*deleted=*/true, "");
    Put("watched", "first", /*created=*/true);
    expect_event(false, "first");
    Delete("watched", /*found=*/true);
    expect_event(true, "");
    Expect(watch->WritesDone().ok(), "watch: done watching");
    auto end = watch->Read(10s);
    Expect(end.ok() && !end->has_value(), "watch: the server ends the stream");
    Expect(watch->Finish(10s).ok(), "watch finishes OK");
  }

  // `what` must hold.
  void Expect(bool holds, const std::string& what) {
    if (!holds) Mismatch(what);
  }

  static kv::PutRequest PutRequestOf(const std::string& key, const std::string& value) {
    kv::PutRequest request;
    request.set_key(key);
    request.set_value(value);
    return request;
  }

 private:
  uint64_t Mismatch(const std::string& text) {
    std::fprintf(stderr, "MISMATCH: %s\n", text.c_str());
    ++mismatches_;
    return 0;
  }

  const kv::Store::Stub& store_;
  int mismatches_ = 0;
};

// The demo's calls against a server with `limits`; returns the mismatches.
int RunDemoCalls(const kv::Store::Stub& store, const Limits& limits) {
  Demo demo(store);
  // Write, read, overwrite, read, delete, and read what is gone.
  const uint64_t v1 = demo.Put("greeting", "hello", /*created=*/true);
  demo.Get("greeting", "hello", v1);
  const uint64_t v2 = demo.Put("greeting", "hello again", /*created=*/false);
  demo.Expect(v2 > v1, "the version grows with each put");
  demo.Get("greeting", "hello again", v2);
  demo.Delete("greeting", /*found=*/true);
  kv::GetRequest gone;
  gone.set_key("greeting");
  demo.Refused("get 'greeting' after the delete", store.Get(gone), wharf::StatusCode::kNotFound);
  demo.Delete("greeting", /*found=*/false);

  // The limits: a value one byte too large, an empty key.
  demo.Refused("put a value of " + std::to_string(limits.max_value_bytes + 1) + " bytes",
               store.Put(Demo::PutRequestOf("big", std::string(limits.max_value_bytes + 1, 'x'))),
               wharf::StatusCode::kInvalidArgument);
  demo.Refused("put an empty key", store.Put(Demo::PutRequestOf("", "x")),
               wharf::StatusCode::kInvalidArgument);

  // Watch a key (a bidirectional stream): its state at once, then each
  // change as it happens.
  demo.Watch(limits);

  // Fill the store with asynchronous puts, all in flight at once, then wait
  // for each answer.
  std::vector<wharf::rpc::PendingCall<kv::PutReply>> pending;
  for (size_t i = 0; i < limits.max_keys; ++i) {
    pending.push_back(store.AsyncPut(Demo::PutRequestOf("key-" + std::to_string(i), "v")));
  }
  size_t created = 0;
  for (wharf::rpc::PendingCall<kv::PutReply>& call : pending) {
    wharf::Result<kv::PutReply> reply = call.Wait(10s);
    if (!reply.ok()) std::fprintf(stderr, "async put: %s\n", reply.status().ToString().c_str());
    if (reply.ok() && reply->created()) ++created;
  }
  std::printf("%zu asynchronous puts in flight at once: %zu new keys\n", pending.size(), created);
  demo.Expect(created == limits.max_keys, "each asynchronous put adds its key");

  // Full: a new key is refused, an existing one can still change.
  demo.Refused("put a new key into the full store", store.Put(Demo::PutRequestOf("one-more", "v")),
               wharf::StatusCode::kResourceExhausted);
  demo.Put("key-0", "changed", /*created=*/false);

  // Scan (a server stream): the keys with a prefix, in order, then a limit.
  demo.Scan("key-", 0, limits.max_keys);
  demo.Scan("key-", 3, 3);
  demo.Scan("nothing-", 0, 0);
  return demo.mismatches();
}

// Both sides in this process, on 127.0.0.1 with kernel-picked ports; the
// server's endpoint runs on a thread of its own.
int RunDemo() {
  // Small limits, so that the demo reaches them.
  const Limits limits{.max_keys = 8, .max_key_bytes = 64, .max_value_bytes = 4096};
  StoreService service(limits);  // outlives the server endpoint
  auto server = OpenServer("homa://127.0.0.1:0", service);
  if (!server.ok()) {
    std::fprintf(stderr, "kv demo: server: %s\n", server.status().ToString().c_str());
    return kExitError;
  }
  wharf::Endpoint& server_ep = **server;
  auto client = OpenClient(server_ep.address());
  if (!client.ok()) {
    std::fprintf(stderr, "kv demo: client: %s\n", client.status().ToString().c_str());
    return kExitError;
  }
  std::printf("server on %s (at most %zu keys, values up to %zu bytes)\n",
              server_ep.address().c_str(), limits.max_keys, limits.max_value_bytes);
  // A Shutdown() that comes before Run() starts is not lost: Run returns at once.
  std::thread runner([&server_ep] { (void)server_ep.Run(); });
  kv::Store::Stub store(**client, server_ep.address());
  const int mismatches = RunDemoCalls(store, limits);
  server_ep.Shutdown();
  runner.join();
  if (mismatches > 0) {
    std::fprintf(stderr, "kv demo: FAILED (%d mismatches)\n", mismatches);
    return kExitError;
  }
  std::printf("kv demo: ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kv: a key-value store over typed wharf RPCs (examples/kv/kv.proto)"};
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  kv demo\n"
      "  kv serve --listen homa://127.0.0.1:4000\n"
      "  kv put --server homa://127.0.0.1:4000 greeting hello\n"
      "  kv get --server homa://127.0.0.1:4000 greeting\n"
      "  kv scan --server homa://127.0.0.1:4000 greet\n"
      "  kv watch --server homa://127.0.0.1:4000 greeting\n"
      "Exit codes: 0 ok, 1 error (demo: a wrong answer), 2 bad usage, 3 get: no such key");

  CLI::App* demo = app.add_subcommand("demo",
                                      "Run a server and a client in this process and "
                                      "check every answer (exit 1 on a mismatch)");

  CLI::App* serve = app.add_subcommand("serve", "Serve the store until Ctrl-C");
  std::string listen = "homa://127.0.0.1:4000";
  Limits limits;
  int seconds = 0;
  serve->add_option("--listen", listen, "Address to serve on, homa://HOST:PORT (port 0: any)")
      ->capture_default_str();
  serve->add_option("--max-keys", limits.max_keys, "Keys the store holds at most")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  serve->add_option("--max-key-bytes", limits.max_key_bytes, "Largest key")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  serve->add_option("--max-value-bytes", limits.max_value_bytes, "Largest value")
      ->capture_default_str();
  serve->add_option("--seconds", seconds, "Stop after this long (0: only on Ctrl-C/SIGTERM)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);

  ClientFlags flags;
  std::string key;
  std::string value;
  auto add_client = [&](const char* name, const char* help) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->add_option("--server", flags.server, "The kv server's address")->capture_default_str();
    sub->add_option("--deadline-ms", flags.deadline_ms, "Give up on the call after this long")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub->add_option("key", key, "The key")->required();
    return sub;
  };
  CLI::App* get = add_client("get", "Print a key's value (exit 3 if there is no such key)");
  CLI::App* put = add_client("put", "Set a key's value");
  put->add_option("value", value, "The value")->required();
  CLI::App* del = add_client("delete", "Remove a key");

  CLI::App* scan = app.add_subcommand("scan", "Print the entries whose keys start with PREFIX");
  std::string prefix;
  uint32_t limit = 0;
  scan->add_option("--server", flags.server, "The kv server's address")->capture_default_str();
  scan->add_option("--deadline-ms", flags.deadline_ms, "Give up on the scan after this long")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  scan->add_option("--limit", limit, "At most this many entries (0: all)")->capture_default_str();
  scan->add_option("prefix", prefix, "Key prefix (default: every key)");

  CLI::App* watch = app.add_subcommand("watch", "Print the keys' states, then every change");
  std::vector<std::string> watched;
  size_t events = 0;
  int watch_seconds = 0;
  watch->add_option("--server", flags.server, "The kv server's address")->capture_default_str();
  watch->add_option("--events", events, "Stop after this many lines (0: no limit)")
      ->capture_default_str();
  watch->add_option("--seconds", watch_seconds, "Stop after this long (0: only on Ctrl-C)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  watch->add_option("key", watched, "The keys to watch")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; any other parse error is bad usage.
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  if (*demo) return RunDemo();
  if (*serve) return RunServe(listen, limits, seconds);
  if (*get) return RunGet(flags, key);
  if (*put) return RunPut(flags, key, value);
  if (*del) return RunDelete(flags, key);
  if (*scan) return RunScan(flags, prefix, limit);
  if (*watch) return RunWatch(flags, watched, events, watch_seconds);
  return kExitUsage;
}
