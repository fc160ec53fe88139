#include "common/main_guard.hpp"

#include <mpi.h>

#include <exception>
#include <iostream>

#include "common/atomic_file.hpp"
#include "common/errors.hpp"

namespace ob {
namespace {

int fail(const std::string& program, const std::string& kind, const std::string& message, int code, bool abort_job) {
  const int rank = current_rank();
  std::cerr << program << ": " << kind;
  if (rank >= 0) std::cerr << " on rank " << rank;
  std::cerr << ": " << message << std::endl;
  if (abort_job && code == kExitRuntime && rank >= 0) MPI_Abort(MPI_COMM_WORLD, code);
  return code;
}

}  // namespace

int guarded_main(const std::string& program, const std::function<int()>& body, bool abort_job) {
  install_signal_cleanup();  // SIGINT/SIGTERM/SIGHUP: temporaries removed, exit 130/143/129
  try {
    return body();
  } catch (const UsageError& error) {
    // Every rank validates the same options: one line from rank 0 (or the only process) is enough.
    if (current_rank() <= 0) std::cerr << program << ": error: " << error.what() << std::endl;
    return kExitUsage;
  } catch (const CheckFailure& error) {
    return fail(program, "check failed", error.what(), kExitCheckFailed, abort_job);
  } catch (const std::exception& error) {
    return fail(program, "runtime failure", error.what(), kExitRuntime, abort_job);
  }
}

}  // namespace ob
