// CallStream: echo calls kept in flight, and their outcomes.
#include "integration/call_stream.h"

#include "integration/wharf_process.h"

namespace wharf::integration {
namespace {

constexpr uint32_t kEchoMethod = 1;  // `wharf serve`
// How long one wait on the oldest call lasts before the others are checked.
constexpr std::chrono::milliseconds kSlice{1};

}  // namespace

CallStream::CallStream(Endpoint& client, std::string target, int depth, size_t size,
                       std::chrono::nanoseconds deadline)
    : client_(client),
      target_(std::move(target)),
      depth_(depth),
      size_(size),
      deadline_(deadline) {}

void CallStream::Issue(int n) {
  for (int i = 0; i < n; ++i) {
    const uint64_t id = next_id_++;
    flight_.push_back(
        {id, std::chrono::steady_clock::now(),
         client_.ICall(target_, kEchoMethod, PatternBuffer(size_, id), {.deadline = deadline_})});
    ++issued_;
  }
}

void CallStream::RunUntil(TimePoint until) {
  while (std::chrono::steady_clock::now() < until) {
    Issue(depth_ - in_flight());
    Reap(kSlice);
  }
}

bool CallStream::Drain(TimePoint until) {
  while (!flight_.empty() && std::chrono::steady_clock::now() < until) Reap(kSlice);
  return flight_.empty();
}

void CallStream::Reap(std::chrono::nanoseconds slice) {
  if (flight_.empty()) return;
  (void)flight_.front().done.Wait(slice);  // the outcome is read below
  const TimePoint now = std::chrono::steady_clock::now();
  for (auto it = flight_.begin(); it != flight_.end();) {
    if (!it->done.done()) {
      ++it;
      continue;
    }
    Status status = it->done.status();
    if (status.ok()) {
      ::testing::AssertionResult same = MatchesPattern(it->done.TakeMessage(), size_, it->id);
      if (!same) {
        ++corrupt_;
        status = DataLossError(std::string("echo differs: ") + same.message());
      }
    }
    if (status.ok()) {
      ++ok_;
      max_ok_latency_ = std::max(max_ok_latency_, now - it->issued_at);
    } else {
      if (failed_ == 0) {
        first_failure_ = status.WithContext("call " + std::to_string(it->id));
        first_failure_at_ = now;
      }
      ++failed_;
      last_failure_at_ = now;
      if (status.code() == StatusCode::kUnavailable) ++unavailable_;
    }
    it = flight_.erase(it);
  }
}

}  // namespace wharf::integration
