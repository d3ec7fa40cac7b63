// ServeProcess and the integration tests' helpers.
#include "integration/wharf_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace wharf::integration {
namespace {

constexpr std::string_view kListeningPrefix = "listening on ";

// One step of splitmix64: a cheap, well-mixed stream for payload bytes.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The pattern byte at `offset`; the whole 8-byte word is computed per byte
// only on the slow (mismatch-reporting) path.
uint8_t PatternByte(uint64_t seed, size_t offset) {
  uint64_t word = Mix(seed ^ Mix(offset / 8));
  return static_cast<uint8_t>(word >> (8 * (offset % 8)));
}

}  // namespace

std::string WharfCliPath() { return WHARF_CLI_PATH; }

Result<std::unique_ptr<ServeProcess>> ServeProcess::Start(ServeOptions options) {
  std::vector<std::string> argv = {WharfCliPath(), "serve", "--listen", options.listen};
  for (const std::string& s : options.settings) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  argv.insert(argv.end(), options.args.begin(), options.args.end());
  if (options.process.label.empty()) options.process.label = "wharf serve";
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<netns::Subprocess> process,
                         netns::Subprocess::Start(std::move(argv), std::move(options.process)));
  Result<std::string> line = process->WaitForStdoutLine(kListeningPrefix, kStartTimeoutNs);
  if (!line.ok()) {
    return line.status().WithContext(
        "wharf serve did not report its address (stderr: " + process->Stderr() + ")");
  }
  size_t at = line->find(kListeningPrefix);
  std::string address = line->substr(at + kListeningPrefix.size());
  if (address.empty()) return InternalError("wharf serve printed '" + *line + "'");
  return std::unique_ptr<ServeProcess>(new ServeProcess(std::move(process), std::move(address)));
}

Result<std::string> ServeProcess::Stop() {
  WHARF_RETURN_IF_ERROR(process_->Signal(SIGTERM));
  WHARF_ASSIGN_OR_RETURN(int code, process_->WaitFor(kStopTimeoutNs));
  if (code != 0) {
    return InternalError("wharf serve exited with " + std::to_string(code) +
                         " after SIGTERM; stderr: " + process_->Stderr());
  }
  const std::string& out = process_->Stdout();
  size_t at = out.rfind("executed ");
  if (at == std::string::npos) return InternalError("wharf serve printed no summary: " + out);
  size_t end = out.find('\n', at);
  return out.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

Result<netns::CommandOutput> RunWharf(std::vector<std::string> args, DurationNs timeout_ns,
                                      netns::SubprocessOptions options) {
  args.insert(args.begin(), WharfCliPath());
  return netns::RunCommand(std::move(args), std::move(options), timeout_ns);
}

Result<ServerCounts> ParseServerCounts(std::string_view text) {
  size_t at = text.rfind("executed ");
  if (at == std::string_view::npos) {
    return NotFoundError("no 'executed N duplicates M' in: " + std::string(text));
  }
  ServerCounts counts;
  unsigned long long executed = 0, duplicates = 0;
  std::string tail(text.substr(at));
  if (std::sscanf(tail.c_str(), "executed %llu duplicates %llu", &executed, &duplicates) != 2) {
    return InvalidArgumentError("malformed server counts: " + tail);
  }
  counts.executed = executed;
  counts.duplicates = duplicates;
  return counts;
}

Result<std::vector<uint16_t>> PickFreeUdpPorts(int count, const std::string& ip) {
  std::vector<int> fds;
  std::vector<uint16_t> ports;
  Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status = ErrnoToStatus(errno, "socket");
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
      status = InvalidArgumentError("not an IPv4 address: " + ip);
      break;
    }
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      status = ErrnoToStatus(errno, "bind " + ip + ":0");
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  if (!status.ok()) return status;
  return ports;
}

bool HaveIpv6Loopback() {
  int fd = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_loopback;
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

Buffer PatternBuffer(size_t size, uint64_t seed) {
  Buffer b = Buffer::Allocate(size);
  std::byte* p = b.data();
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word = Mix(seed ^ Mix(i / 8));
    std::memcpy(p + i, &word, 8);  // little-endian: byte k is word >> 8k
  }
  for (; i < size; ++i) p[i] = static_cast<std::byte>(PatternByte(seed, i));
  return b;
}

::testing::AssertionResult MatchesPattern(const Buffer& got, size_t size, uint64_t seed) {
  if (got.size() != size) {
    return ::testing::AssertionFailure() << "got " << got.size() << " bytes, expected " << size;
  }
  Buffer want = PatternBuffer(size, seed);
  if (size == 0 || std::memcmp(got.data(), want.data(), size) == 0) {
    return ::testing::AssertionSuccess();
  }
  size_t at = 0;
  while (got.data()[at] == want.data()[at]) ++at;
  return ::testing::AssertionFailure()
         << "first difference at byte " << at << " of " << size << ": got "
         << static_cast<int>(got.data()[at]) << ", expected " << static_cast<int>(want.data()[at]);
}

}  // namespace wharf::integration
