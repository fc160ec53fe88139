#include "common/atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/errors.hpp"

namespace ob {

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) {
    throw_call_failure("I/O", ("open " + temporary).c_str(), __FILE__, __LINE__, std::strerror(errno));
  }
  const bool written = std::fwrite(content.data(), 1, content.size(), file) == content.size();
  const int saved_errno = errno;
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(written ? errno : saved_errno);
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw_call_failure("I/O", ("write " + path).c_str(), __FILE__, __LINE__, reason);
  }
}

}  // namespace ob
