// The kinds of value a binary's option names, declared once where the option is added and checked by CLI11 as it
// parses, before any work (MPI, CUDA, a file opened): a file it reads (INPUT_FILE), a file it writes (OUTPUT_FILE),
// a comma-separated list that names each item once (LIST). Each kind is the option's type in --help, so a test derives
// the values each must refuse from --help alone (tests/python/test_argument_kinds.py). Numbers are declared with
// add_checked_option (CLI::Range, finite_in); a repeatable option (CLI11's "...") is refused with a value given twice
// by parse_quietly itself.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace ob {

// CLI11 checks: an input is a readable regular file (a link to one followed); an output is a path in an existing,
// writable folder (not in a file), absent or a regular file, never a symbolic link (it would be replaced, not written
// through), a folder, device, FIFO or socket (an empty one: the binary's default); a list's items are distinct.
CLI::Validator input_file_kind();
CLI::Validator output_file_kind();
CLI::Validator list_kind();

template <class T>
CLI::Option* add_input_option(CLI::App& app, const std::string& name, T& value, const std::string& help) {
  return app.add_option(name, value, help)->check(input_file_kind())->type_name("INPUT_FILE");
}

template <class T>
CLI::Option* add_output_option(CLI::App& app, const std::string& name, T& value, const std::string& help) {
  return app.add_option(name, value, help)->check(output_file_kind())->type_name("OUTPUT_FILE");
}

inline CLI::Option* add_list_option(CLI::App& app, const std::string& name, std::string& value,
                                    const std::string& help) {
  return app.add_option(name, value, help)->check(list_kind())->type_name("LIST");
}

}  // namespace ob
