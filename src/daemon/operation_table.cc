// OperationTable: connects and accepts, the operations that open connections.
#include "daemon/operation_table.h"

namespace wharf::daemon {

void OperationTable::StartOpening(uint64_t op, bool accept) {
  opening_.insert(op);
  if (accept) accepts_.insert(op);
}

OperationTable::Ended OperationTable::FinishOpening(uint64_t op, bool ok, uint64_t value) {
  if (opening_.erase(op) > 0 && ok) conns_.insert(value);
  if (!accepts_.empty() && accepts_.erase(op) > 0 && ok) return Ended::kAccepted;
  return Ended::kOperation;
}

}  // namespace wharf::daemon
