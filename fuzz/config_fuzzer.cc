// fuzz/config_fuzzer.cc: arbitrary YAML through ConfigDoc and the getters the
// engine's settings reader uses; errors are fine, crashes and hangs are not.
//
// It takes the path users get: yaml-cpp runs in a child process under a time
// limit (base/config.h), so an input on which yaml-cpp loops is an error
// after at most kTimeLimitMs, never a hang of this process. Such an input is
// still news (a yaml-cpp loop that Parse does not recognise up front), so it
// is reported on stderr ("config_fuzzer: parser timed out") for a look at the
// log. A parser process that dies (kInternal) is a crash here.
//
// Coverage: libFuzzer reads the coverage counters of this process, and the
// parser process has its own copy of them. So the child copies its inline
// 8-bit counters into shared memory just before it answers (the
// in_parser_process hook), and they are merged back after each input;
// without that, everything wharf does while parsing (the document checks,
// the flattening) would be invisible. yaml-cpp itself is a system library
// and not instrumented either way.
#include <elf.h>
#include <link.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "base/config.h"

namespace {

constexpr int kTimeLimitMs = 2000;  // well under scripts/fuzz's -timeout=10

uint8_t* counters = nullptr;        // this process's (libFuzzer reads them)
uint8_t* child_counters = nullptr;  // shared with the parser processes
size_t counter_bytes = 0;

// Finds the inline 8-bit counters (section __sancov_cntrs, which
// -fsanitize=fuzzer-no-link fills) in this executable's own section headers.
// Not through the linker's __start___sancov_cntrs symbol: declaring that in
// an instrumented file clashes with the coverage pass's own declaration,
// which then links to address 0, and libFuzzer loses every counter.
bool FindCounters() {
  std::ifstream file("/proc/self/exe", std::ios::binary);
  const std::string exe((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh;
  if (exe.size() < sizeof(eh)) return false;
  std::memcpy(&eh, exe.data(), sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum ||
      eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > exe.size()) {
    return false;
  }
  auto section = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, exe.data() + eh.e_shoff + i * sizeof(sh), sizeof(sh));
    return sh;
  };
  const Elf64_Shdr names = section(eh.e_shstrndx);
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    if (names.sh_offset + sh.sh_name >= exe.size()) continue;
    if (std::strncmp(exe.data() + names.sh_offset + sh.sh_name, "__sancov_cntrs",
                     exe.size() - names.sh_offset - sh.sh_name) != 0) {
      continue;
    }
    // The executable is position-independent: add its load address.
    uintptr_t base = 0;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
          *static_cast<uintptr_t*>(out) = info->dlpi_addr;
          return 1;  // the first object is the executable
        },
        &base);
    counters = reinterpret_cast<uint8_t*>(base + sh.sh_addr);
    counter_bytes = sh.sh_size;
    return counter_bytes > 0;
  }
  return false;
}

void CopyCountersOut() {
  if (child_counters != nullptr) std::memcpy(child_counters, counters, counter_bytes);
}

}  // namespace

// Every input forks, and fork copies the page tables of all this process
// has resident; AddressSanitizer's quarantine of freed memory (256 MiB by
// default) would soon make that most of the time per input. An input's own
// allocations are a few kilobytes, so a smaller quarantine still holds the
// frees of thousands of inputs. ASAN_OPTIONS overrides this.
extern "C" const char* __asan_default_options() { return "quarantine_size_mb=16"; }

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (FindCounters()) {
    void* shared =
        mmap(nullptr, counter_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared != MAP_FAILED) child_counters = static_cast<uint8_t*>(shared);
  }
  if (child_counters == nullptr) {
    std::fprintf(stderr, "config_fuzzer: coverage of the parser process is not merged\n");
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ConfigParseLimits limits;
  limits.time_limit_ms = kTimeLimitMs;
  limits.in_parser_process = CopyCountersOut;
  if (child_counters != nullptr) std::memset(child_counters, 0, counter_bytes);
  auto doc = ConfigDoc::Parse(text, "fuzz.yaml", limits);
  if (child_counters != nullptr) {
    for (size_t i = 0; i < counter_bytes; ++i) {
      counters[i] = std::max(counters[i], child_counters[i]);
    }
  }
  if (!doc.ok()) {
    const Status status = doc.status();
    const std::string& message = status.message();
    if (status.code() == StatusCode::kInternal) {
      std::fprintf(stderr, "config_fuzzer: %s\n", message.c_str());
      std::abort();
    }
    if (message.find("did not finish within") != std::string::npos) {
      std::fprintf(stderr, "config_fuzzer: parser timed out: %s\n", message.c_str());
    }
    return 0;
  }
  (void)doc->GetUint("homa.overcommit", 8);
  (void)doc->GetBytes("homa.unsched_bytes", 60000);
  (void)doc->GetRate("homa.link_rate", 1);
  (void)doc->GetDuration("homa.tick", 1);
  (void)doc->GetBool("udp.gso", true);
  (void)doc->GetStringList("homa.unsched_cutoffs", {});
  (void)doc->ChildKeys("homa");
  (void)doc->CheckNoUnknownKeys();
  return 0;
}
