// Turns what library code throws into the suite's exit codes (DESIGN.md), printing one line on stderr.
// Only mains use this: library code reports, executables decide.
#pragma once

#include <functional>
#include <string>

namespace ob {

// Runs `body` and returns its exit code, or: UsageError -> 2, CheckFailure -> 1, anything else -> 3.
// With `abort_job` (MPI phases), a runtime failure on one rank aborts the whole job with MPI_Abort(code 3), since
// the other ranks would wait forever in their next collective.
int guarded_main(const std::string& program, const std::function<int()>& body, bool abort_job = false);

}  // namespace ob
