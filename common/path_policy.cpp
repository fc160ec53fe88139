// The path policies every binary shares (declared in common/options.hpp): an input is a bounded regular file read
// whole; an output is a path of its own in a writable directory, never a link, device, FIFO or an input.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "common/options.hpp"
#include "common/path_options.hpp"

namespace ob {

CLI::Validator input_file_kind() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        namespace fs = std::filesystem;
        std::error_code error;
        const auto status = fs::status(path, error);
        if (error || !fs::exists(status)) return "'" + path + "' is invalid: no such file";
        if (fs::is_directory(status)) return "'" + path + "' is invalid: a regular file (it is a folder)";
        if (!fs::is_regular_file(status)) {
          return "'" + path + "' is invalid: a regular file (it is a device, FIFO or socket)";
        }
        if (::access(path.c_str(), R_OK) != 0) return "'" + path + "' is invalid: not readable";
        return "";
      },
      "", "input_file");
}

CLI::Validator output_file_kind() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        namespace fs = std::filesystem;
        if (path.empty()) return "";  // the binary's default
        const std::string invalid = "'" + path + "' is invalid: ";
        fs::path parent = fs::path(path).parent_path();
        if (parent.empty()) parent = ".";
        std::error_code error;
        const auto folder = fs::status(parent, error);
        if (fs::exists(folder) && !fs::is_directory(folder))
          return invalid + "its folder '" + parent.string() + "' is a file";
        if (!fs::is_directory(folder)) return invalid + "its directory must exist";
        if (::access(parent.c_str(), W_OK) != 0) return invalid + "its directory must be writable";
        const auto status = fs::symlink_status(path, error);
        if (fs::is_symlink(status)) {
          return invalid +
              "not a symbolic link (it would be replaced, not written through): name the file it points to";
        }
        if (fs::is_directory(status)) return invalid + "a file path, not a directory";
        if (fs::exists(status) && !fs::is_regular_file(status)) {
          return invalid + "a regular file (it is a device, FIFO or socket)";
        }
        return "";
      },
      "", "output_file");
}

CLI::Validator list_kind() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto items = split_list(text, ',');
        for (std::size_t i = 0; i < items.size(); ++i) {
          for (std::size_t j = 0; j < i; ++j) {
            if (items[i] == items[j]) return "'" + text + "' is invalid: each item once ('" + items[i] + "' twice)";
          }
        }
        return "";
      },
      "", "list");
}

std::string read_input_file(const std::string& option, const std::string& path, std::uintmax_t most) {
  namespace fs = std::filesystem;
  std::error_code error;
  const auto status = fs::status(path, error);
  require(!error && fs::exists(status), option, path, "no such file");
  require(fs::is_regular_file(status), option, path, "a regular file (it is a directory, device, FIFO or socket)");
  const auto size = fs::file_size(path, error);
  require(!error && size <= most, option, path,
          "a file of at most " + std::to_string(most) + " bytes (it holds " + std::to_string(size) + ")");
  std::ifstream file(path, std::ios::binary);
  require(file.good(), option, path, "a readable file");
  std::string text(static_cast<std::size_t>(size), '\0');
  file.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<std::size_t>(file.gcount()));
  return text;
}

void require_writable_parent(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  require(!path.empty(), option, path, "a file path");
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  std::error_code error;
  require(fs::is_directory(parent, error), option, path, "its directory must exist");
  require(::access(parent.c_str(), W_OK) == 0, option, path, "its directory must be writable");
  require(!fs::is_directory(path, error), option, path, "a file path, not a directory");
}

namespace {
// One file's identity however it is spelled: the canonical form of its directory (links resolved) and its name.
std::filesystem::path identity(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path absolute = fs::absolute(fs::path(path), error).lexically_normal();
  const fs::path parent = fs::weakly_canonical(absolute.parent_path(), error);
  return parent / absolute.filename();
}

bool valid_utf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::size_t length = byte < 0x80 ? 1
        : (byte >> 5) == 0x6               ? 2
        : (byte >> 4) == 0xE               ? 3
        : (byte >> 3) == 0x1E              ? 4
                                           : 0;
    if (length == 0 || i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return false;
    }
    i += length;
  }
  return true;
}
}  // namespace

// NAME_MAX of Linux's file systems less the staging suffix a file is first written under (".tmp.<pid>",
// common/atomic_file.cpp): a longer name would fail only after the run, when its files are written.
constexpr std::size_t kLongestFileName = 255 - 16;

void require_output_policy(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  namespace fs = std::filesystem;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [option, path] = outputs[i];
    const std::string name = option.substr(0, option.find(' '));
    require(valid_utf8(path), name, path, "a path in UTF-8");
    const std::string file = fs::path(path).filename().string();
    require(file.size() <= kLongestFileName, name, path,
            "a name that leaves room for its run's files: " + option + " would write '" + file + "', " +
                std::to_string(file.size()) + " bytes, over the " + std::to_string(kLongestFileName) +
                " a file name may have here (255 less the staging suffix)");
    std::error_code error;
    const auto status = fs::symlink_status(path, error);
    require(!fs::is_symlink(status), name, path,
            "not a symbolic link (it would be replaced, not written through): name the file it points to");
    require(!fs::exists(status) || fs::is_regular_file(status), name, path,
            "a regular file (it is a directory, device, FIFO or socket): " + option + " would write " + path);
    for (std::size_t j = 0; j < i; ++j) {
      require(identity(path) != identity(outputs[j].path), name, path,
              "a path of its own: " + option + " and " + outputs[j].option + " would both write it");
    }
    for (const auto& input : inputs) {
      const bool same = identity(path) == identity(input.path) ||
          (fs::exists(path, error) && fs::exists(input.path, error) && fs::equivalent(path, input.path, error));
      require(!same, name, path, "not the file " + input.option + " reads (it would be destroyed before it is read)");
    }
  }
}

}  // namespace ob
