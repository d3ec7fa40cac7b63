// daemon/unattached_limits.h: which control connection wharfd closes when
// one more arrives and too many wait without a hello. A pure decision over
// the waiting connections; the Daemon applies it at accept.
//
// Why evict rather than refuse: refusing the newcomer lets whoever fills
// the slots first lock every later application out (idle connections held
// open, as the hostile-application tests do). Evicting the oldest of the
// newcomer's own uid, or past the total the oldest of the uid with the
// most, means a uid that floods the socket crowds out only itself, and an
// application whose hello is already queued (it sends it right after
// connect) is attached in the pass that accepts it, before anything can
// evict it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace wharf::daemon {

struct UnattachedConnection {
  uint64_t id = 0;  // the session's id
  uid_t uid = 0;
};

// Of `waiting` (oldest first), the connection to close so that one more
// from `newcomer` keeps both caps; nullopt when it fits as is.
std::optional<uint64_t> ChooseEviction(std::span<const UnattachedConnection> waiting,
                                       uid_t newcomer, size_t max_total, size_t max_per_uid);

}  // namespace wharf::daemon
