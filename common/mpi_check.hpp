// MPI_CHECK(call): evaluates the call once; on failure throws ob::CallFailure with the call text, file:line, rank
// and MPI_Error_string's message. (MPI_COMM_WORLD returns errors instead of aborting once a phase sets
// MPI_ERRORS_RETURN on it, which mpi_session.hpp does.)
#pragma once

#include <mpi.h>

namespace ob {
void check_mpi(int code, const char* call, const char* file, int line);
}  // namespace ob

#define MPI_CHECK(call) ::ob::check_mpi((call), #call, __FILE__, __LINE__)
