// Error types and exit codes shared by every phase (DESIGN.md, "Exit codes").
// Library code throws one of these; only a main (through main_guard.hpp) turns them into an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace ob {

enum ExitCode : int {
  kExitOk = 0,
  kExitCheckFailed = 1,  // a correctness check failed
  kExitUsage = 2,  // bad options; nothing was written
  kExitRuntime = 3,  // CUDA, NCCL, MPI or I/O failure
  kExitSkipped = 77,  // the hardware this binary needs is absent
};

// Bad usage: an option's value is invalid or contradicts another. The message is one line naming the option.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A correctness check failed; the message names where (index, got, expected).
class CheckFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A library call (CUDA, cuBLAS, NCCL, MPI) or I/O failed.
class CallFailure : public std::runtime_error {
 public:
  CallFailure(std::string library, std::string call, std::string file, int line, int rank, std::string message);
  const std::string& library() const { return library_; }
  const std::string& call() const { return call_; }
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int rank() const { return rank_; }
  const std::string& message() const { return message_; }

 private:
  std::string library_, call_, file_;
  int line_;
  int rank_;
  std::string message_;
};

// The MPI rank of this process in MPI_COMM_WORLD, or -1 when MPI is not running.
int current_rank();

// Throws CallFailure for `call` (its source text) at file:line with the decoded message and this process's rank.
[[noreturn]] void throw_call_failure(const char* library, const char* call, const char* file, int line,
                                     const std::string& message);

}  // namespace ob
