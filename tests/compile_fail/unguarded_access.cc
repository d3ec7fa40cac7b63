// Must NOT compile with clang++ -Wthread-safety -Werror: it reads a field
// that base/mutex.h's annotations say is guarded by a Mutex, without taking
// the Mutex. CompileFail.UnguardedAccessIsRejected (CMakeLists.txt here)
// compiles it twice: as is, which must fail with a thread-safety
// diagnostic, and with WHARF_TAKE_THE_LOCK, which must compile, so that the
// failure is the analysis's and not a broken include path.
#include "base/mutex.h"

namespace {

class Counter {
 public:
  void Add(int n) ABSL_LOCKS_EXCLUDED(mu_) {
    wharf::MutexLock lock(mu_);
    value_ += n;
  }
  int Read() ABSL_LOCKS_EXCLUDED(mu_) {
#ifdef WHARF_TAKE_THE_LOCK
    wharf::MutexLock lock(mu_);
#endif
    return value_;  // without the lock: "reading variable 'value_' requires holding mutex 'mu_'"
  }

 private:
  wharf::Mutex mu_;
  int value_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

int main() {
  Counter counter;
  counter.Add(1);
  return counter.Read() == 1 ? 0 : 1;
}
