// Every file the suite writes appears whole or not at all, and a run's files appear as a set: each is staged to a
// temporary name beside its target (written, flushed and synced), and only when every one is staged are they
// renamed into place, in staging order. A failure while staging (a full disk) or a signal removes every temporary
// and leaves the files that were there before untouched; a signal that lands during the renames waits for them, so
// the new set is whole, and then ends the process (128 + the signal).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ob {

class FileSet {
 public:
  FileSet() = default;
  ~FileSet();  // removes the temporaries of a set never committed
  FileSet(const FileSet&) = delete;
  FileSet& operator=(const FileSet&) = delete;

  // Writes `content` to a temporary beside `path`. Throws CallFailure ("I/O") naming the path; the set's other
  // temporaries stay until the set is destroyed.
  void stage(const std::string& path, const std::string& content);
  // Renames every staged file over its target. Throws CallFailure naming the path that failed.
  void commit();

 private:
  std::vector<std::pair<std::string, std::string>> staged_;  // temporary, target
};

// One file, whole or not at all (a set of one).
void write_file_atomic(const std::string& path, const std::string& content);

// SIGINT, SIGTERM and SIGHUP remove the temporaries being written and end the process with 128 + the signal
// (130, 143, 129), never 1 (a failed check). Installed once by guarded_main.
void install_signal_cleanup();

}  // namespace ob
