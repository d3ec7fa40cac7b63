// `wharf rma`.
#include "tools/rma_command.h"

#include <CLI/CLI.hpp>

#include <cctype>
#include <cstdio>
#include <string>

#include "wharf/endpoint.h"
#include "wharf/remote_memory.h"

namespace wharf::tools {
namespace {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;

int Fail(const std::string& what, const Status& status) {
  std::fprintf(stderr, "wharf rma: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 1;
}

// Asks `server` for a loan of its region and waits for the grant.
Result<RemoteRegion> Borrow(Endpoint& endpoint, RemoteMemory& memory, const std::string& server,
                            nanoseconds timeout) {
  Result<Buffer> answer = endpoint.Call(server, kLendMethod, Buffer(), {.deadline = timeout});
  if (!answer.ok()) {
    return answer.status().WithContext(
        "asking " + server + " for its region (is it a `wharf serve --lend-bytes N`?)");
  }
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    Result<RegionEvent> event = memory.WaitEvent(until - std::chrono::steady_clock::now());
    if (event.ok() && event->kind == RegionEvent::Kind::kLent) return event->lent;
  }
  return DeadlineExceededError(server + " answered but its grant did not arrive in time");
}

}  // namespace

std::string ShowBytes(std::span<const std::byte> bytes, uint64_t base, bool hex) {
  auto printable = [](std::byte b) {
    const int c = static_cast<unsigned char>(b);
    return std::isprint(c) != 0;
  };
  bool text = !hex;
  for (std::byte b : bytes) {
    const int c = static_cast<unsigned char>(b);
    if (!printable(b) && c != '\n' && c != '\t') text = false;
  }
  if (text) return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()) + "\n";
  std::string out;
  char cell[8];
  for (size_t line = 0; line < bytes.size(); line += 16) {
    std::snprintf(cell, sizeof cell, "%06llx", static_cast<unsigned long long>(base + line) & 0xFFFFFF);
    out += cell;
    out += "  ";
    std::string chars;
    for (size_t i = line; i < line + 16; ++i) {
      if (i < bytes.size()) {
        std::snprintf(cell, sizeof cell, "%02x ", static_cast<unsigned>(bytes[i]));
        out += cell;
        chars += printable(bytes[i]) ? static_cast<char>(bytes[i]) : '.';
      } else {
        out += "   ";
      }
    }
    out += " |" + chars + "|\n";
  }
  return out;
}

void AddRmaFlags(CLI::App& app, RmaOptions& options) {
  app.add_option("op", options.op,
                 "read, write, cas (compare-and-swap) or add (fetch-add)")
      ->required()
      ->check(CLI::IsMember({"read", "write", "cas", "add"}));
  app.add_option("address", options.address,
                 "The `wharf serve --lend-bytes N` to use: ucx://HOST:PORT")
      ->required();
  app.add_option("--offset", options.offset, "Where in the region (cas and add: 8-aligned)")
      ->capture_default_str();
  app.add_option("--length", options.length, "read: how many bytes")->capture_default_str();
  app.add_option("--data", options.data, "write: the bytes to write (text)");
  app.add_option("--pattern-bytes", options.pattern_bytes,
                 "write: this many bytes of a fixed pattern (a function of the position in "
                 "the region) instead of --data")
      ->excludes("--data");
  app.add_flag("--hex", options.hex, "read: show a hex dump even for text");
  app.add_flag("--verify", options.verify,
               "read: check the bytes are the pattern --pattern-bytes writes, instead of "
               "showing them");
  app.add_option("--immediate", options.immediate,
                 "write: after the data, the server gets this value as an event");
  app.add_option("--expected", options.expected, "cas: the word the region must hold");
  app.add_option("--desired", options.desired, "cas: the word to put there");
  app.add_option("--value", options.value, "add: what to add to the word")->capture_default_str();
  app.add_option("--bind", options.bind,
                 "This side's address, which the server lends to (ucx://HOST:PORT; port 0: any)")
      ->capture_default_str();
  app.add_option("--timeout", options.timeout_s, "Seconds to wait for each step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddEndpointFlags(app, options.endpoint);
  app.footer(
      "Try it:\n"
      "  wharf serve --listen ucx://127.0.0.1:4002 --lend-bytes 4096 &\n"
      "  wharf rma write ucx://127.0.0.1:4002 --offset 0 --data hello\n"
      "  wharf rma read ucx://127.0.0.1:4002 --length 5\n"
      "  wharf rma cas ucx://127.0.0.1:4002 --offset 64 --expected 0 --desired 7\n"
      "  wharf rma add ucx://127.0.0.1:4002 --offset 64 --value 1\n"
      "Over loopback UCX needs its devices named: --set ucx.devices=lo (and the same\n"
      "on the server), or ucx.tls=sm,tcp for shared memory.");
}

int RunRma(const RmaOptions& options) {
  // Either hosting: through wharfd (--mode managed, or auto with a wharfd
  // running) the bytes move between this process's shared heap and the
  // region.
  auto endpoint_options = MakeEndpointOptions(options.endpoint, options.bind);
  if (!endpoint_options.ok()) return Fail("options", endpoint_options.status());
  auto ep = Endpoint::Open(*endpoint_options);
  if (!ep.ok()) return Fail("opening " + options.bind, ep.status());
  RemoteMemory memory(**ep);
  const auto timeout = duration_cast<nanoseconds>(std::chrono::duration<double>(options.timeout_s));
  Result<RemoteRegion> region = Borrow(**ep, memory, options.address, timeout);
  if (!region.ok()) return Fail("borrowing the region", region.status());
  std::printf("region of %s: %llu bytes\n", options.address.c_str(),
              static_cast<unsigned long long>(region->size));

  int rc = 0;
  const unsigned long long at = options.offset;
  if (options.op == "read") {
    Result<Buffer> bytes = memory.Read(*region, options.offset, options.length, timeout);
    if (!bytes.ok()) {
      rc = Fail("read", bytes.status());
    } else if (options.verify) {
      for (size_t i = 0; i < bytes->size() && rc == 0; ++i) {
        if (bytes->data()[i] != PatternByte(options.offset + i)) {
          std::fprintf(stderr, "wharf rma: read: byte at offset %llu is 0x%02x, the pattern's 0x%02x\n",
                       static_cast<unsigned long long>(options.offset + i),
                       static_cast<unsigned>(bytes->data()[i]),
                       static_cast<unsigned>(PatternByte(options.offset + i)));
          rc = 1;
        }
      }
      if (rc == 0) std::printf("read %zu bytes at offset %llu: the pattern, verified\n", bytes->size(), at);
    } else {
      std::printf("read %zu bytes at offset %llu:\n%s", bytes->size(), at,
                  ShowBytes(bytes->span(), options.offset, options.hex).c_str());
    }
  } else if (options.op == "write") {
    Buffer data = Buffer::Copy(options.data);
    if (options.pattern_bytes > 0) {
      data = (*ep)->AllocateBuffer(options.pattern_bytes);
      for (size_t i = 0; i < data.size(); ++i) data.data()[i] = PatternByte(options.offset + i);
    }
    const size_t written = data.size();
    Status s = options.immediate
                   ? memory.WriteWithImmediate(*region, options.offset, std::move(data),
                                               *options.immediate, timeout)
                   : memory.Write(*region, options.offset, std::move(data), timeout);
    if (!s.ok()) {
      rc = Fail("write", s);
    } else {
      std::printf("wrote %zu bytes at offset %llu", written, at);
      if (options.immediate) std::printf(", then immediate %llu", static_cast<unsigned long long>(*options.immediate));
      std::printf("\n");
    }
  } else if (options.op == "cas") {
    Result<uint64_t> was =
        memory.CompareAndSwap(*region, options.offset, options.expected, options.desired, timeout);
    if (!was.ok()) {
      rc = Fail("cas", was.status());
    } else if (*was == options.expected) {
      std::printf("word at offset %llu was %llu: now %llu\n", at,
                  static_cast<unsigned long long>(*was),
                  static_cast<unsigned long long>(options.desired));
    } else {
      std::printf("word at offset %llu was %llu, not %llu: unchanged\n", at,
                  static_cast<unsigned long long>(*was),
                  static_cast<unsigned long long>(options.expected));
    }
  } else {
    Result<uint64_t> was = memory.FetchAdd(*region, options.offset, options.value, timeout);
    if (!was.ok()) {
      rc = Fail("add", was.status());
    } else {
      std::printf("word at offset %llu was %llu: now %llu\n", at,
                  static_cast<unsigned long long>(*was),
                  static_cast<unsigned long long>(*was + options.value));
    }
  }
  (void)memory.Release(*region);
  // Let the release leave before the endpoint closes.
  (void)(*ep)->Run(std::chrono::milliseconds(20));
  return rc;
}

}  // namespace wharf::tools
