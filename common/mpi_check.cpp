#include "common/mpi_check.hpp"

#include <string>

#include "common/errors.hpp"

namespace ob {

void check_mpi(int code, const char* call, const char* file, int line) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  int initialized = 0;
  MPI_Initialized(&initialized);  // MPI_Error_string before MPI_Init aborts with Open MPI
  std::string message;
  if (initialized && MPI_Error_string(code, text, &length) == MPI_SUCCESS && length > 0) {
    message.assign(text, static_cast<std::size_t>(length));
  } else {
    message = "unknown MPI error";
  }
  message += " (code " + std::to_string(code) + ")";
  throw_call_failure("MPI", call, file, line, message);
}

}  // namespace ob
