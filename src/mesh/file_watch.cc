// FileWatch: stat and compare.
#include "mesh/file_watch.h"

#include <sys/stat.h>

namespace wharf::mesh {

bool FileWatch::Changed() {
  Look now;
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    now = {.exists = true,
           .device = st.st_dev,
           .inode = st.st_ino,
           .size = st.st_size,
           .modified_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 +
                          st.st_mtim.tv_nsec};
  }
  const bool changed = !looked_ || !(now == last_);
  looked_ = true;
  last_ = now;
  return changed;
}

}  // namespace wharf::mesh
