// Every file the suite writes appears whole or not at all: written to a temporary name beside the target, flushed,
// then renamed over it.
#pragma once

#include <string>

namespace ob {

// Writes `content` to `path` atomically. Throws CallFailure ("I/O") naming the path on any failure, leaving no
// temporary file behind.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace ob
