// The timeline's numbers as Python's repr() writes them (pandas' to_csv writes floats so), and the columns file read
// back: the rows ob_trace_columns --timeline writes are the ones the Python timeline writes.
#include <gtest/gtest.h>

#include <string>

#include "trace_reader/timeline_csv.hpp"

namespace ob::trace {
namespace {

std::string repr(double value) {
  std::string out;
  python_repr(value, out);
  return out;
}

TEST(TimelineCsv, NumbersAsPythonsRepr) {
  EXPECT_EQ(repr(0.0), "0.0");
  EXPECT_EQ(repr(-0.0), "-0.0");
  EXPECT_EQ(repr(100.0), "100.0");
  EXPECT_EQ(repr(1.5), "1.5");
  EXPECT_EQ(repr(0.1), "0.1");
  EXPECT_EQ(repr(1e-4), "0.0001");
  EXPECT_EQ(repr(1e-5), "1e-05");
  EXPECT_EQ(repr(1.2345e-7), "1.2345e-07");
  EXPECT_EQ(repr(1e15), "1000000000000000.0");
  EXPECT_EQ(repr(1e16), "1e+16");
  EXPECT_EQ(repr(123456789012345678.0), "1.2345678901234568e+17");
  EXPECT_EQ(repr(1234567.125), "1234567.125");
  EXPECT_EQ(repr(-3.25e100), "-3.25e+100");
  EXPECT_EQ(repr(5e-324), "5e-324");
}

TEST(TimelineCsv, ColumnsFileCutShortIsRefused) {
  EXPECT_THROW(read_sections("not columns"), std::runtime_error);
  std::string data = "OBCOLS1\n";
  data += std::string("\x05\0\0\0", 4) + "hello" + std::string("\xff\0\0\0\0\0\0\0", 8);
  EXPECT_THROW(read_sections(data), std::runtime_error);
}

}  // namespace
}  // namespace ob::trace
