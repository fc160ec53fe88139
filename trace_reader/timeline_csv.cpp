#include "trace_reader/timeline_csv.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "trace_reader/columns_file.hpp"

namespace ob::trace {
namespace {

template <typename T>
std::vector<T> column(const std::map<std::string, std::string_view>& sections, const std::string& name) {
  auto found = sections.find(name);
  if (found == sections.end() || found->second.size() % sizeof(T)) throw std::runtime_error("no column " + name);
  std::vector<T> values(found->second.size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), found->second.data(), found->second.size());
  return values;
}

void csv_field(std::string_view text, std::string& out) {  // the csv module's QUOTE_MINIMAL
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
    out += text;
    return;
  }
  out += '"';
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
}

}  // namespace

void python_repr(double value, std::string& out) {
  if (!std::isfinite(value)) {  // Python's repr: nan, inf, -inf (to_chars writes no exponent for them)
    out += std::isnan(value) ? "nan" : value < 0 ? "-inf" : "inf";
    return;
  }
  char buffer[40];
  auto done = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  *done.ptr = '\0';
  const char* p = buffer;
  if (*p == '-') {
    out += '-';
    ++p;
  }
  const char* e = std::strchr(p, 'e');
  std::string digits;
  for (const char* q = p; q < e; ++q)
    if (*q != '.') digits += *q;
  int exp10 = std::atoi(e + 1);
  if (exp10 < -4 || exp10 >= 16) {
    out += digits[0];
    if (digits.size() > 1) out.append(".").append(digits, 1, std::string::npos);
    char tail[8];
    std::snprintf(tail, sizeof tail, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    out += tail;
  } else if (exp10 < 0) {
    out.append("0.").append(static_cast<size_t>(-exp10 - 1), '0').append(digits);
  } else {
    size_t whole = static_cast<size_t>(exp10) + 1;
    if (digits.size() <= whole)
      out.append(digits).append(whole - digits.size(), '0').append(".0");
    else
      out.append(digits, 0, whole).append(".").append(digits, whole, std::string::npos);
  }
}

std::map<std::string, std::string_view> read_sections(std::string_view data) {
  size_t magic = sizeof(kColumnsMagic) - 1;
  if (data.substr(0, magic) != std::string_view(kColumnsMagic, magic)) throw std::runtime_error("not a columns file");
  std::map<std::string, std::string_view> sections;
  for (size_t at = magic; at < data.size();) {
    uint32_t length = 0;
    uint64_t size = 0;
    if (at + 4 > data.size()) throw std::runtime_error("a columns file cut short");
    std::memcpy(&length, data.data() + at, 4);
    if (at + 4 + length + 8 > data.size()) throw std::runtime_error("a columns file cut short");
    std::string name(data.substr(at + 4, length));
    std::memcpy(&size, data.data() + at + 4 + length, 8);
    at += 4 + length + 8;
    if (size > data.size() - at) throw std::runtime_error("a columns file cut short");
    sections[name] = data.substr(at, size);
    at += size + (8 - size % 8) % 8;
  }
  return sections;
}

void write_timeline(const std::map<std::string, std::string_view>& sections, int64_t rank, double origin, FILE* out) {
  auto text = sections.find("strings.text");
  if (text == sections.end()) throw std::runtime_error("no column strings.text");
  auto offsets = column<uint64_t>(sections, "strings.offsets");
  auto start = column<double>(sections, "k_start"), end = column<double>(sections, "k_end");
  auto coll = column<uint32_t>(sections, "k_coll");
  auto comm = column<uint8_t>(sections, "k_comm");
  auto rows = column<uint32_t>(sections, "row_kernel");
  auto from = column<uint64_t>(sections, "row_from");
  auto number = column<int64_t>(sections, "number");
  if (from.size() != number.size() + 1) throw std::runtime_error("the steps' rows do not match the steps");
  // Every index the file holds checked before it is followed (a columns file is read back, maybe cut or corrupt).
  if (end.size() != start.size() || coll.size() != start.size() || comm.size() != start.size())
    throw std::runtime_error("the kernels' columns differ in length");
  std::string line, prefix = std::to_string(rank);
  for (size_t s = 0; s < number.size(); ++s) {
    int64_t bucket = 0;
    std::string iter = std::to_string(number[s]);
    for (uint64_t r = from[s]; r < from[s + 1] && r < rows.size(); ++r) {
      uint32_t k = rows[r];
      if (k >= start.size()) throw std::runtime_error("a row of no kernel");
      line.assign(prefix);
      if (comm[k]) {
        uint32_t id = coll[k];
        if (size_t{id} + 1 >= offsets.size() || offsets[id] > offsets[id + 1] || offsets[id + 1] > text->second.size())
          throw std::runtime_error("a collective's name outside the strings");
        std::string_view name = text->second.substr(offsets[id], offsets[id + 1] - offsets[id]);
        line += ",trace:comm,";
        csv_field(name.empty() ? "comm" : name, line);
        line.append(",").append(iter).append(",").append(std::to_string(bucket++)).append(",");
      } else {
        line.append(",trace:compute,compute,").append(iter).append(",-1,");
      }
      python_repr(start[k] - origin, line);
      line += ',';
      python_repr(end[k] - origin, line);
      line += '\n';
      if (std::fwrite(line.data(), 1, line.size(), out) != line.size())
        throw std::runtime_error("writing the timeline");
    }
  }
}

}  // namespace ob::trace
