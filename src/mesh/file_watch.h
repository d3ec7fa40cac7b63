// mesh/file_watch.h: FileWatch, whether a file changed since it was last
// looked at: its inode, size and modification time, read with stat. An
// editor that writes a new file and renames it over the old one (vim,
// `kubectl` config maps, atomic deploys) changes the inode; one that
// writes in place changes the time or size. Cheap enough to call once a
// second, and unlike an inotify watch on the file it survives the rename.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace wharf::mesh {

// Owned by whoever reloads the file; single-threaded.
class FileWatch {
 public:
  explicit FileWatch(std::string path) : path_(std::move(path)) {}
  // True when the file differs from the last call's look (the first call:
  // from nothing). A missing file is a state too: it changes when the file
  // appears or goes.
  bool Changed();
  const std::string& path() const { return path_; }

 private:
  struct Look {
    bool exists = false;
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    int64_t modified_ns = 0;
    bool operator==(const Look&) const = default;
  };
  std::string path_;
  bool looked_ = false;
  Look last_;
};

}  // namespace wharf::mesh
