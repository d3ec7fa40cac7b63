// tools/grpc/echo_client.cc: the completion-queue load clients
// (echo_client.h). A Lane is one client thread's queue, stubs and call
// slots; RunThroughput drives one lane closed-loop, RunOpenLoop one lane per
// client thread on an arrival schedule.
#include "tools/grpc/echo_client.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "echo.grpc.pb.h"
#include "tools/bench/cpu_usage.h"
#include "tools/grpc/echo_server.h"

namespace wharf::tools::grpc_node {
namespace {

// No RPC may take longer than this past the run (a dead peer fails the call
// instead of hanging the node).
constexpr DurationNs kRpcGraceNs = 10 * kNsPerSec;

// A request payload: a fixed byte pattern, so an echo can be checked
// against it without storing what was sent.
std::string Pattern(uint64_t bytes) {
  std::string pattern(bytes, '\0');
  for (uint64_t i = 0; i < bytes; ++i) pattern[i] = static_cast<char>((i * 131 + 7) % 251);
  return pattern;
}

std::shared_ptr<grpc::Channel> Connect(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(kMaxEchoBytes + 1024));
  args.SetMaxSendMessageSize(static_cast<int>(kMaxEchoBytes + 1024));
  // Each client thread gets its own connection, as each wharf client
  // thread has its own endpoint: no sharing of one HTTP/2 connection.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

gpr_timespec In(DurationNs ns) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                      gpr_time_from_nanos(std::max<DurationNs>(ns, 0), GPR_TIMESPAN));
}

struct Call {
  std::optional<grpc::ClientContext> context;  // a context serves one call
  wharf::bench::EchoRequest request;
  wharf::bench::EchoResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<wharf::bench::EchoResponse>> reader;
  bench::ClusterSample sample;  // rtt_ns filled at completion
  TimeNs planned_ns = 0;
  bool echo = true;
  bool busy = false;
};

// One client thread's queue, stubs and call slots. Not thread-safe.
class Lane {
 public:
  Lane(const std::vector<std::string>& targets, const std::string* pattern) : pattern_(pattern) {
    for (const std::string& target : targets) {
      stubs_.push_back(target.empty() ? nullptr : wharf::bench::Echo::NewStub(Connect(target)));
    }
  }
  ~Lane() {
    CancelAll();
    while (in_flight_ > 0 && Next(kNsPerSec) != nullptr) {
    }
    queue_.Shutdown();
    void* tag;
    bool ok;
    while (queue_.Next(&tag, &ok)) {
    }
  }

  // Sends one RPC to `server`. The call times itself from `planned_ns`.
  void Issue(int server, uint64_t request_bytes, uint64_t response_bytes, bool echo,
             TimeNs planned_ns, DurationNs send_offset_ns, DurationNs timeout_ns) {
    Call* call = Slot();
    call->busy = true;
    call->planned_ns = planned_ns;
    call->echo = echo;
    call->sample = {.send_offset_ns = send_offset_ns,
                    .server = server,
                    .request_bytes = request_bytes,
                    .response_bytes = response_bytes};
    call->context.emplace();
    call->context->set_deadline(In(timeout_ns));
    // Wait for the connection rather than fail while it is being set up.
    call->context->set_wait_for_ready(true);
    call->request.set_payload(pattern_->data(), request_bytes);
    if (echo) {
      call->request.clear_response_bytes();
    } else {
      call->request.set_response_bytes(response_bytes);
    }
    call->response.Clear();
    call->reader = stubs_[server]->PrepareAsyncEcho(&*call->context, call->request, &queue_);
    call->reader->StartCall();
    call->reader->Finish(&call->response, &call->status, call);
    ++in_flight_;
  }

  // The next finished call, waiting up to `wait_ns`; nullptr on timeout.
  // The caller reads it, then Releases it.
  Call* Next(DurationNs wait_ns) {
    void* tag = nullptr;
    bool ok = false;
    grpc::CompletionQueue::NextStatus status = queue_.AsyncNext(&tag, &ok, In(wait_ns));
    if (status != grpc::CompletionQueue::GOT_EVENT) return nullptr;
    --in_flight_;
    return static_cast<Call*>(tag);
  }

  // Whether `call` got the response it asked for, byte for byte when echoed.
  bool EchoMatches(const Call& call) const {
    const std::string& got = call.response.payload();
    if (got.size() != call.sample.response_bytes) return false;
    return !call.echo || std::memcmp(got.data(), pattern_->data(), got.size()) == 0;
  }

  void Release(Call* call) {
    call->busy = false;
    call->reader.reset();
    free_.push_back(call);
  }

  void CancelAll() {
    for (auto& call : calls_) {
      if (call->busy) call->context->TryCancel();
    }
  }

  int in_flight() const { return in_flight_; }

 private:
  Call* Slot() {
    if (free_.empty()) {
      calls_.push_back(std::make_unique<Call>());
      return calls_.back().get();
    }
    Call* call = free_.back();
    free_.pop_back();
    return call;
  }

  const std::string* pattern_;
  std::vector<std::unique_ptr<wharf::bench::Echo::Stub>> stubs_;  // by host; null for self
  grpc::CompletionQueue queue_;
  std::vector<std::unique_ptr<Call>> calls_;
  std::vector<Call*> free_;
  int in_flight_ = 0;
};

}  // namespace

double ThroughputResult::RpcsPerSec() const {
  return elapsed_ns > 0 ? static_cast<double>(completed) * 1e9 / static_cast<double>(elapsed_ns)
                        : 0;
}

double ThroughputResult::CpuNsPerRpc() const {
  if (cpu_ns < 0 || completed == 0) return -1;
  return static_cast<double>(cpu_ns) / static_cast<double>(completed);
}

Result<ThroughputResult> RunThroughput(const ThroughputOptions& options, Clock& clock) {
  if (options.in_flight < 1 || options.in_flight > 4096) {
    return InvalidArgumentError("throughput: in flight: expected 1..4096, got " +
                                std::to_string(options.in_flight));
  }
  if (options.bytes > kMaxEchoBytes) {
    return InvalidArgumentError("throughput: size: at most 64 MiB, got " +
                                std::to_string(options.bytes));
  }
  const std::string pattern = Pattern(options.bytes);
  Lane lane({options.target}, &pattern);
  const DurationNs timeout_ns = options.duration_ns + kRpcGraceNs;

  // One RPC first, so the window measures RPCs, not connection set-up.
  lane.Issue(0, options.bytes, options.bytes, true, clock.NowNs(), 0, timeout_ns);
  Call* first = lane.Next(timeout_ns);
  if (first == nullptr || !first->status.ok()) {
    std::string why = first == nullptr ? "no answer" : first->status.error_message();
    if (first != nullptr) lane.Release(first);
    return UnavailableError("throughput: first RPC to " + options.target + " failed: " + why);
  }
  lane.Release(first);

  ThroughputResult result;
  bench::CpuMeter cpu({0});
  cpu.Start();
  const TimeNs start_ns = clock.NowNs();
  const TimeNs end_ns = start_ns + options.duration_ns;
  for (int i = 0; i < options.in_flight; ++i) {
    lane.Issue(0, options.bytes, options.bytes, true, start_ns, 0, timeout_ns);
  }
  TimeNs now = start_ns;
  while (now < end_ns) {
    Call* call = lane.Next(end_ns - now);
    now = clock.NowNs();
    if (call == nullptr) continue;
    if (!call->status.ok()) {
      ++result.failed;
    } else if (!lane.EchoMatches(*call)) {
      ++result.echo_mismatches;
    } else if (now <= end_ns) {
      ++result.completed;
    }
    lane.Release(call);
    if (now < end_ns) lane.Issue(0, options.bytes, options.bytes, true, now, 0, timeout_ns);
  }
  result.elapsed_ns = clock.NowNs() - start_ns;
  result.cpu_ns = cpu.Stop();
  // Wait for the stragglers (uncounted) so the process leaves cleanly.
  while (lane.in_flight() > 0) {
    Call* call = lane.Next(timeout_ns);
    if (call == nullptr) break;
    lane.Release(call);
  }
  return result;
}

namespace {

struct ThreadRun {
  std::vector<bench::ClusterSample> samples;
  uint64_t issued = 0;
  uint64_t failed = 0;
  uint64_t echo_mismatches = 0;
};

void RunOpenLoopThread(const OpenLoopOptions& options, bench::ArrivalGenerator generator,
                       const std::string& pattern, Clock& clock, ThreadRun& run) {
  std::vector<std::string> targets = options.peers;
  targets[options.host].clear();  // never sends to itself
  Lane lane(targets, &pattern);
  const bool echo = options.arrivals.response == bench::ResponseSize::kEcho;
  // Warm-up, uncounted: one RPC to every peer opens the connections (the
  // first RPC on a new channel pays for its set-up, tens of ms), waiting for
  // peers whose servers are not up yet.
  for (int peer = 0; peer < static_cast<int>(targets.size()); ++peer) {
    if (!targets[peer].empty()) {
      lane.Issue(peer, 1, 1, true, clock.NowNs(), 0, options.drain_ns + kRpcGraceNs);
    }
  }
  while (lane.in_flight() > 0) {
    Call* call = lane.Next(options.drain_ns + kRpcGraceNs);
    if (call == nullptr) break;
    lane.Release(call);
  }
  // Then the common start (the run's start-at), if it is still ahead.
  for (TimeNs now = clock.NowNs(); now < options.start_ns; now = clock.NowNs()) {
    Call* stray = lane.Next(options.start_ns - now);
    if (stray != nullptr) lane.Release(stray);
  }
  const TimeNs start_ns = std::max(options.start_ns, clock.NowNs());
  const TimeNs end_ns = start_ns + options.duration_ns;
  const TimeNs drain_end_ns = end_ns + options.drain_ns;
  const DurationNs timeout_ns = options.duration_ns + options.drain_ns + kRpcGraceNs;

  auto complete = [&](Call* call, TimeNs now) {
    if (!call->status.ok()) {
      ++run.failed;
    } else if (!lane.EchoMatches(*call)) {
      ++run.failed;
      ++run.echo_mismatches;
    } else {
      call->sample.rtt_ns = now - call->planned_ns;
      run.samples.push_back(call->sample);
    }
    lane.Release(call);
  };

  bench::Arrival next = generator.Next();
  bool sending = true;
  while (true) {
    TimeNs now = clock.NowNs();
    TimeNs send_at = start_ns + next.send_offset_ns;
    if (sending && send_at >= end_ns) sending = false;
    if (!sending && (lane.in_flight() == 0 || now >= drain_end_ns)) break;
    if (sending && now >= send_at) {
      lane.Issue(next.server, next.request_bytes, next.response_bytes, echo, send_at,
                 next.send_offset_ns, timeout_ns);
      ++run.issued;
      next = generator.Next();
      continue;
    }
    // Completions until the next send is due (or the drain ends).
    Call* call = lane.Next((sending ? send_at : drain_end_ns) - now);
    if (call != nullptr) complete(call, clock.NowNs());
  }
  // Past the drain: cancel what is left; each comes back failed.
  lane.CancelAll();
  while (lane.in_flight() > 0) {
    Call* call = lane.Next(kRpcGraceNs);
    if (call == nullptr) break;
    complete(call, clock.NowNs());
  }
  run.failed += static_cast<uint64_t>(lane.in_flight());  // never came back
}

}  // namespace

Result<OpenLoopResult> RunOpenLoop(const OpenLoopOptions& options, Clock& clock) {
  const int hosts = static_cast<int>(options.peers.size());
  if (options.workload == nullptr) return InvalidArgumentError("open loop: no workload");
  if (options.host < 0 || options.host >= hosts) {
    return InvalidArgumentError("open loop: host " + std::to_string(options.host) +
                                " is not an index into the " + std::to_string(hosts) + " peers");
  }
  if (options.arrivals.hosts != hosts) {
    return InvalidArgumentError("open loop: arrivals.hosts must be the number of peers");
  }
  uint64_t largest = std::max(options.workload->max_bytes(),
                              options.arrivals.response == bench::ResponseSize::kFixed
                                  ? options.arrivals.fixed_response_bytes
                                  : 0);
  if (largest > kMaxEchoBytes) {
    return InvalidArgumentError("open loop: messages of up to " + std::to_string(largest) +
                                " B; the gRPC node carries at most 64 MiB (truncate the workload)");
  }
  std::vector<bench::ArrivalGenerator> generators;
  for (int t = 0; t < options.arrivals.client_threads; ++t) {
    WHARF_ASSIGN_OR_RETURN(bench::ArrivalGenerator generator,
                           bench::ArrivalGenerator::Create(options.arrivals, *options.workload,
                                                           options.host, t, options.seed));
    generators.push_back(std::move(generator));
  }
  const std::string pattern = Pattern(options.workload->max_bytes());
  std::vector<ThreadRun> runs(generators.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < generators.size(); ++t) {
    threads.emplace_back([&, t] {
      RunOpenLoopThread(options, generators[t], pattern, clock, runs[t]);
    });
  }
  for (std::thread& thread : threads) thread.join();

  OpenLoopResult result;
  for (ThreadRun& run : runs) {
    result.samples.insert(result.samples.end(), run.samples.begin(), run.samples.end());
    result.summary.issued += run.issued;
    result.summary.failed += run.failed;
    result.echo_mismatches += run.echo_mismatches;
  }
  result.summary.completed = result.samples.size();
  return result;
}

}  // namespace wharf::tools::grpc_node
