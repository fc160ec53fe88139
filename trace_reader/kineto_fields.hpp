// One JSON value of a Kineto event read as the Python reader reads it (kineto_events.cpp): an int, a number as
// Python's float() gives it, a string, a launch shape as Python's str() writes it, AccumulateGrad's element count.
// Got::kOther marks a value the Python reader would read otherwise (or refuse): the event's rule then decides.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include <simdjson.h>

#include "trace_reader/columns.hpp"

namespace ob::trace::fields {

namespace od = simdjson::ondemand;
constexpr double kMostUs = 1e15;  // trace_model.MOST_US
constexpr double kExact = 9007199254740992.0;  // 2^53: every integer below converts to a double exactly

enum class Got { kAbsent, kOk, kNull, kOther };

struct IntField {
  Got got = Got::kAbsent;
  int64_t value = 0;
};
struct NumField {
  Got got = Got::kAbsent;
  double value = 0;
};
struct TextField {
  Got got = Got::kAbsent;
  std::string_view value;
};

[[noreturn]] inline void unhandled(const char* what) { throw Unhandled(what); }

template <typename R>
inline auto ok(R&& result) {
  if (result.error()) unhandled("not JSON the native reader takes");
  return std::forward<R>(result).value_unsafe();
}
inline std::string_view ok(std::string_view text) { return text; }

// A field's key as written, without unescaping it into the parser's buffer (a key with an escape is left to Python:
// "p\u0068" is "ph" to it). Its end found 32 bytes at a time: the key's closing quote lies inside the batch, and the
// scanner's buffer holds simdjson's padding (64 bytes) after it, so no load leaves the buffer.
inline std::string_view plain_key(od::field& f) {
  const char* start = f.key().raw();
  const char* p = start;
#ifdef __AVX2__
  const __m256i quote = _mm256_set1_epi8('"'), backslash = _mm256_set1_epi8('\\');
  for (;; p += 32) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    unsigned mask = static_cast<unsigned>(
        _mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, backslash))));
    if (mask) {
      p += __builtin_ctz(mask);
      break;
    }
  }
  if (*p == '\\') unhandled("a key with an escape");
#else
  for (; *p != '"'; ++p)
    if (*p == '\\') unhandled("a key with an escape");
#endif
  return {start, static_cast<size_t>(p - start)};
}

// A number the way `take` reads it (true: kOk; false: kOther, a kind of number it leaves to Python); null is kNull,
// anything else kOther.
template <typename Field, typename Take>
inline Field read_number(od::value value, Take take) {
  Field field;
  od::json_type type = ok(value.type());
  if (type == od::json_type::null)
    field.got = Got::kNull;
  else if (type == od::json_type::number)
    field.got = take(value, ok(value.get_number_type()), field.value) ? Got::kOk : Got::kOther;
  else
    field.got = Got::kOther;
  return field;
}

// Each field of an object: visit(key as written, its value).
template <typename Visit>
inline void each_field(od::object object, Visit visit) {
  for (auto field : object) {
    od::field f = ok(std::move(field));
    visit(plain_key(f), f.value());
  }
}

inline IntField read_int(od::value value) {
  return read_number<IntField>(value, [](od::value& v, od::number_type kind, int64_t& out) {
    if (kind != od::number_type::signed_integer) return false;
    out = ok(v.get_int64());
    return true;
  });
}

// A JSON number as Python's float() of ijson's value gives it (ints above 2^53 left to Python).
inline NumField read_num(od::value value) {
  return read_number<NumField>(value, [](od::value& v, od::number_type kind, double& out) {
    if (kind == od::number_type::floating_point_number) {
      out = ok(v.get_double());
      return true;
    }
    if (kind != od::number_type::signed_integer) return false;
    out = static_cast<double>(ok(v.get_int64()));
    return std::fabs(out) < kExact;
  });
}

inline TextField read_text(od::value value) {
  TextField field;
  od::json_type type = ok(value.type());
  if (type == od::json_type::string) {
    field.value = ok(value.get_string());
    field.got = Got::kOk;
  } else {
    field.got = type == od::json_type::null ? Got::kNull : Got::kOther;
  }
  return field;
}

// Python's str() of a launch shape (grid or block): an int, or a list of them, "[1024, 1, 1]".
inline bool python_text(od::value value, std::string& out) {
  od::json_type type = ok(value.type());
  if (type == od::json_type::number) {
    IntField whole = read_int(value);
    if (whole.got != Got::kOk) return false;
    out += std::to_string(whole.value);
    return true;
  }
  if (type != od::json_type::array) return false;
  out += '[';
  bool first = true;
  for (auto item : ok(value.get_array())) {
    if (!first) out += ", ";
    first = false;
    if (!python_text(ok(std::move(item)), out)) return false;
  }
  out += ']';
  return true;
}

struct Shape {
  Got got = Got::kAbsent;  // kOk: text holds it; kNull: None
  std::string text;
};

inline Shape read_shape(od::value value) {
  Shape shape;
  if (ok(value.type()) == od::json_type::null) {
    shape.got = Got::kNull;
    return shape;
  }
  shape.got = python_text(value, shape.text) ? Got::kOk : Got::kOther;
  return shape;
}

// AccumulateGrad's (args.get("Input Dims") or [[]])[0] as a shape: its element count; Got::kOther where _keep fails.
inline NumField read_dims(od::value value) {
  NumField field{Got::kOk, 0.0};
  od::json_type type = ok(value.type());
  if (type == od::json_type::null) return field;  // falsy: [[]][0] is [], no elements counted
  if (type != od::json_type::array) return {Got::kOther, 0};
  od::array outer = ok(value.get_array());
  for (auto first : outer) {
    od::value dims = ok(std::move(first));
    if (ok(dims.type()) != od::json_type::array) return {Got::kOther, 0};
    unsigned __int128 product = 1;
    bool any = false;
    for (auto item : ok(dims.get_array())) {
      IntField d = read_int(ok(std::move(item)));
      if (d.got != Got::kOk || d.value < 0 || d.value >= (int64_t{1} << 40)) return {Got::kOther, 0};
      any = true;
      product *= static_cast<uint64_t>(d.value);
      if (product >> 63) return {Got::kOther, 0};  // float(math.prod) of a huge product: left to Python
    }
    field.value = any ? static_cast<double>(static_cast<uint64_t>(product)) : 0.0;
    return field;  // only the first entry counts; the rest is skipped
  }
  return field;  // an empty list is falsy: no elements
}

}  // namespace ob::trace::fields
