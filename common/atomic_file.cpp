#include "common/atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/errors.hpp"

namespace ob {
namespace {

// Temporaries being written, where a signal handler can read them (fixed storage, async-signal-safe unlink).
constexpr int kSlots = 32;
constexpr std::size_t kPathBytes = 4096;
char slot_path[kSlots][kPathBytes];
volatile std::sig_atomic_t slot_used[kSlots];

int remember(const std::string& temporary) {
  for (int i = 0; i < kSlots; ++i) {
    if (slot_used[i] || temporary.size() >= kPathBytes) continue;
    std::memcpy(slot_path[i], temporary.c_str(), temporary.size() + 1);
    slot_used[i] = 1;  // published after the path is complete
    return i;
  }
  return -1;  // more than kSlots at once: that one is not cleaned up on a signal
}

void forget(const std::string& temporary) {
  for (int i = 0; i < kSlots; ++i) {
    if (slot_used[i] && temporary == slot_path[i]) slot_used[i] = 0;
  }
}

// While a set's renames run, a signal waits for them: the handler (in whichever thread it lands) records it and
// returns, and commit() ends the process with it once the whole set is in place. Otherwise the set could be left half
// renamed: a new timeline beside an old summary (seen: 4 of 8 SIGTERMs during ~30 ms of renames).
volatile std::sig_atomic_t committing = 0, pending_signal = 0;

extern "C" void remove_temporaries_and_exit(int signal) {
  if (committing) {
    pending_signal = signal;
    return;
  }
  for (int i = 0; i < kSlots; ++i) {
    if (slot_used[i]) ::unlink(slot_path[i]);
  }
  ::_exit(128 + signal);
}

// Ends a commit: a signal that came during it now takes effect (nothing is staged any more: the set is whole).
void end_commit() {
  committing = 0;
  if (pending_signal) remove_temporaries_and_exit(pending_signal);
}

void remove_quietly(const std::string& path) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  forget(path);
}

}  // namespace

FileSet::~FileSet() {
  for (const auto& [temporary, target] : staged_) remove_quietly(temporary);
}

void FileSet::stage(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  remember(temporary);
  staged_.emplace_back(temporary, path);
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) {
    throw_call_failure("I/O", ("open " + temporary).c_str(), __FILE__, __LINE__, std::strerror(errno));
  }
  bool ok = std::fwrite(content.data(), 1, content.size(), file) == content.size();
  ok = ok && std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
  const int saved_errno = errno;
  ok = std::fclose(file) == 0 && ok;
  if (!ok) throw_call_failure("I/O", ("write " + path).c_str(), __FILE__, __LINE__, std::strerror(saved_errno));
}

void FileSet::commit() {
  committing = 1;
  for (auto& [temporary, target] : staged_) {
    if (std::rename(temporary.c_str(), target.c_str()) != 0) {
      const int saved = errno;
      committing = 0;  // the failure is reported; a pending signal ends the process when the caller unwinds
      throw_call_failure("I/O", ("rename to " + target).c_str(), __FILE__, __LINE__, std::strerror(saved));
    }
    forget(temporary);
    temporary.clear();
  }
  staged_.clear();
  end_commit();
}

void write_file_atomic(const std::string& path, const std::string& content) {
  FileSet set;
  set.stage(path, content);
  set.commit();
}

void install_signal_cleanup() {
  struct sigaction action {};
  action.sa_handler = remove_temporaries_and_exit;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaction(signal, &action, nullptr);
}

}  // namespace ob
