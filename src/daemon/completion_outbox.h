// daemon/completion_outbox.h: CompletionOutbox, what wharfd has to tell one
// application, in order, and the ring it is told through: entries (a
// completion, a request, a fault, a peer name, ...) wait in a backlog until
// the completion ring has room and their payload has a range of the
// receive area (ReceiveArea::Deliver), then leave in one batch per Flush.
// Ranges of the send area that came back (SendLoans) ride on their
// operation's completion or leave as kSendReleased entries.
//
// It decides nothing about the entries it carries (the session and the
// command executor do) and holds none of the areas' state: it borrows the
// SendLoans and the ReceiveArea, which outlive it.
//
// Owned by the AppSession (made at Attach); single-threaded: the daemon's
// loop thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

#include "daemon/receive_area.h"
#include "daemon/send_loans.h"
#include "shm/commands.h"
#include "shm/spsc_ring.h"
#include "shm/validator.h"
#include "wharf/buffer.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::daemon {

class CompletionOutbox {
 public:
  // `ring` is the application's completion ring (its producing end is ours).
  CompletionOutbox(shm::RingMemory ring, SendLoans& loans, ReceiveArea& area);
  CompletionOutbox(const CompletionOutbox&) = delete;
  CompletionOutbox& operator=(const CompletionOutbox&) = delete;

  // Queues `entry`, and `payload` to deliver into the receive area when it
  // leaves. A payload that can never fit the area would wait there for
  // good: Push then returns false and counts it in payloads_refused(); a
  // completion is queued as its failure instead (kResourceExhausted,
  // TooBig's text), a request is dropped (the caller refuses it to its
  // client). Only those two carry payloads that large.
  bool Push(shm::Descriptor entry, Buffer payload = Buffer()) {
    if (payload.size() > area_.capacity()) return PushTooBig(entry, std::move(payload));
    backlog_.push_back(Pending{entry, std::move(payload)});
    return true;
  }
  // Queues operation `cookie`'s completion: `value` in its handle, an error
  // as its text (cut to shm::kMaxErrorText), kFlagSendReleased when its
  // send range came back already.
  void Complete(uint64_t cookie, const Status& status, Buffer message = Buffer(),
                uint64_t value = 0) {
    shm::Descriptor d{};
    d.opcode = static_cast<uint16_t>(shm::Opcode::kCompletion);
    d.status = static_cast<uint32_t>(status.code());
    d.cookie = cookie;
    d.handle = value;
    if (loans_.TakeReleased(cookie)) d.flags = shm::kFlagSendReleased;
    if (!status.ok()) {
      std::string_view text = status.message();
      message = Buffer::Copy(text.substr(0, shm::kMaxErrorText));
    }
    Push(d, std::move(message));
  }
  // Why a payload of `bytes` can never be delivered.
  Status TooBig(size_t bytes) const;

  // Moves entries from the front of the backlog into the ring, each payload
  // delivered into the receive area first, until the ring or the area is
  // full; send ranges back since the last Flush go first. True if it
  // published entries the application waits for (not only kSendReleased).
  // An error: the ring's indices are garbage (the session is broken).
  Result<bool> Flush();
  // After a Flush that returned true: whether to ring the application's
  // doorbell. Once per sleep of the application: entries published while
  // it is still waking up need no second wake-up.
  bool TakeDoorbell();

  // Entries waiting (for the ring, or for room in the area).
  size_t backlog() const { return backlog_.size(); }
  bool empty() const { return backlog_.empty(); }
  // Drops every waiting entry (the application is gone).
  void Clear() { backlog_.clear(); }
  // The application's hint that it spins waiting for entries with nothing
  // of its own to do. Untrusted.
  bool PeerIdle() const { return ring_.PeerIdle(); }

  uint64_t completions() const { return completions_; }  // entries published
  uint64_t payloads_refused() const { return payloads_refused_; }

 private:
  // An entry waiting for room (ring or receive area).
  struct Pending {
    shm::Descriptor entry{};
    Buffer payload;  // delivered into the receive area when it leaves
  };

  bool PushTooBig(shm::Descriptor entry, Buffer payload);

  shm::ValidatingProducer ring_;
  SendLoans& loans_;
  ReceiveArea& area_;

  std::deque<Pending> backlog_;
  std::vector<shm::Descriptor> batch_;  // scratch for TryPush (keeps its capacity)
  uint32_t woke_token_ = 0;             // the application's sleep we last woke
  uint64_t completions_ = 0;
  uint64_t payloads_refused_ = 0;  // payloads that could never fit
};

}  // namespace wharf::daemon
