// The native Kineto reader: what it keeps of each kind of event, the same whatever the chunk boundaries, strings that
// hold brackets and commas, the nesting cap counted outside strings, and what it leaves to the Python reader.
#include <gtest/gtest.h>

#include <string>

#include "trace_reader/kineto_reader.hpp"

namespace ob::trace {
namespace {

const char* kTrace = R"({"schemaVersion": 1, "distributedInfo": {"rank": 3, "world_size": 8, "nccl_version": "2.21.5"},
 "deviceProperties": [{"id": 0, "name": ""}, {"id": 1, "name": "NVIDIA H100"}], "baseTimeNanoseconds": 1700000000000,
 "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce [x], \"q\"", "pid": 0, "tid": 7, "ts": 10.5, "dur": 2,
   "args": {"stream": 7, "correlation": 42, "grid": [4, 1, 1], "block": [256, 1, 1], "Collective name": "allreduce",
            "In msg nelems": 1000, "dtype": "Half"}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 9, "dur": 1,
   "args": {"correlation": 42}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "tid": 1, "ts": 9.5, "dur": 1,
   "args": {"correlation": 43}},
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#12", "tid": 1, "ts": 1, "dur": 100},
  {"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "tid": 1, "ts": 20, "dur": 1,
   "args": {"Input Dims": [[3, 5], []]}},
  {"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MmBackward0", "tid": 1, "ts": 30,
   "dur": 4},
  {"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "tid": 2, "ts": 40, "dur": 3},
  {"ph": "X", "cat": "user_annotation", "name": "DistributedDataParallel.forward", "tid": 1, "ts": 50, "dur": 5},
  {"ph": "i", "cat": "cpu_op", "name": "ignored", "ts": "not a number"}
 ]})";

Columns read(const std::string& text, size_t piece, ReaderLimits limits = {}) {
  Columns columns;
  KinetoScanner scanner(columns, limits);
  for (size_t at = 0; at < text.size(); at += piece) scanner.feed(text.data() + at, std::min(piece, text.size() - at));
  scanner.finish();
  return columns;
}

TEST(KinetoReader, KeepsWhatTheAnalysisReads) {
  Columns c = read(kTrace, 1 << 20);
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.world, 8);
  EXPECT_EQ(c.start_ns, 1700000000000);
  EXPECT_EQ(c.strings.texts()[c.gpu], "NVIDIA H100");
  EXPECT_EQ(c.strings.texts()[c.nccl], "2.21.5");
  ASSERT_EQ(c.k_start.size(), 1u);
  EXPECT_DOUBLE_EQ(c.k_start[0], 10.5);
  EXPECT_DOUBLE_EQ(c.k_end[0], 12.5);
  EXPECT_EQ(c.strings.texts()[c.k_name[0]], "ncclKernel_AllReduce [x], \"q\"");
  EXPECT_EQ(c.strings.texts()[c.k_shape[0]], "[4, 1, 1]x[256, 1, 1]");  // Python's str() of the lists
  EXPECT_EQ(c.strings.texts()[c.k_coll[0]], "allreduce");
  EXPECT_EQ(c.k_corr[0], 42);
  EXPECT_DOUBLE_EQ(c.k_bytes[0], 2000.0);
  ASSERT_EQ(c.l_corr.size(), 2u);
  EXPECT_EQ(c.graph_corr, std::vector<int64_t>{43});
  EXPECT_EQ(c.step_number, std::vector<int64_t>{12});
  EXPECT_EQ(c.grad_elems, std::vector<double>{15.0});
  EXPECT_EQ(c.strings.texts()[c.bw_name[0]], "MmBackward0");
  EXPECT_EQ(c.wrap_start, std::vector<double>{40.0});
  EXPECT_EQ(c.wrapping_start, std::vector<double>{50.0});
  EXPECT_EQ(c.op_start.size(), 3u);  // every complete cpu_op
}

TEST(KinetoReader, SameWhateverTheChunks) {
  Columns whole = read(kTrace, 1 << 20);
  for (size_t piece : {1, 2, 3, 7, 64}) {
    Columns cut = read(kTrace, piece);
    EXPECT_EQ(cut.k_start, whole.k_start) << piece;
    EXPECT_EQ(cut.op_start, whole.op_start) << piece;
    EXPECT_EQ(cut.rank, whole.rank) << piece;
    EXPECT_EQ(cut.gpu, whole.gpu) << piece;
  }
}

TEST(KinetoReader, NestingCountedOutsideStringsOnly) {
  std::string brackets(100000, '[');
  std::string text =
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": ")" + brackets + R"(", "tid": 1, "ts": 1, "dur": 1}]})";
  EXPECT_EQ(read(text, 4096).op_start.size(), 1u);
  std::string deep = R"({"traceEvents": [{"ph": "X", "args": )" + std::string(600, '[') + std::string(600, ']') + "}]}";
  EXPECT_THROW(read(deep, 4096), Refused);
}

TEST(KinetoReader, EventLongerThanTheCapIsRefused) {
  ReaderLimits limits;
  limits.chunk_bytes = 1024;
  limits.most_event_bytes = 4096;
  std::string text = R"({"traceEvents": [{"ph": "X", "name": ")" + std::string(10000, 'a') + R"("}]})";
  EXPECT_THROW(read(text, 1000, limits), Refused);
}

TEST(KinetoReader, LeavesToPythonWhatItDoesNotReproduce) {
  const char* odd[] = {
      R"([1, 2])",  // not an object
      R"({"traceEvents": [1]})",  // an event not an object
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": 5, "ts": 1, "dur": 1}]})",  // name not a string
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": "1", "dur": 1}]})",  // ts a string
      R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#x", "ts": 1, "dur": 1}]})",
      R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": -1}]})",  // negative duration
      R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}]} trailing)",
      R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}])",  // cut short
      R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1},]})",  // trailing comma
      R"({"other": 1})",  // no traceEvents
  };
  for (const char* text : odd) EXPECT_THROW(read(text, 5), Unhandled) << text;
}

}  // namespace
}  // namespace ob::trace
