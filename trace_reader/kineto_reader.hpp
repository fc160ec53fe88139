// A Kineto trace (the PyTorch profiler's Chrome JSON, plain or gzipped) read in bounded memory: the bytes come in
// chunks (trace_file.hpp: inflated where gzipped, hashed as read), a scanner that knows strings from structure cuts the
// top-level object into its keys and the traceEvents array into its events, and simdjson parses the events in
// batches (kineto_events.cpp keeps what ob-analyze reads). Memory: one chunk, the longest event, simdjson's buffers
// for one batch and the columns kept, whatever the file's size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <simdjson.h>

#include "trace_reader/columns.hpp"

namespace ob::trace {

struct ReaderLimits {
  size_t chunk_bytes = size_t{8} << 20;  // read at once
  size_t most_event_bytes = size_t{16} << 20;  // one event (or header value) longer than this: Refused
  int most_depth = 512;  // inputs.MOST_JSON_DEPTH, counted outside strings
  uint64_t most_inflated = uint64_t{4} << 30;  // inputs.MOST_INFLATED_BYTES, for a gzipped file
};

// The scanner alone: feed it the text in pieces of any size, then finish(). Throws Refused or Unhandled.
class KinetoScanner {
 public:
  explicit KinetoScanner(Columns& columns, ReaderLimits limits = {});
  void feed(const char* data, size_t size);
  // Or the text written straight into its buffer: prepare() gives where and how much (`room`, at most a chunk),
  // commit(n) scans the n bytes written there.
  char* prepare(size_t& room);
  void commit(size_t n);
  void finish();
  uint64_t bytes() const { return total_; }

 private:
  void scan();  // buffer_[pos_, end_)
  void scan_events(char* b, size_t& i);  // the events, 64 bytes at a time
  // What one byte outside strings does (scan's cases), and a string's run to its next quote or backslash.
  size_t string_run(const char* b, size_t i);
  void quote(size_t i);
  void open(char c, size_t i);
  void close(char c, size_t i);
  void comma(char* b, size_t i);
  void scalar(size_t i);
  void flush_events();  // the complete events buffered so far to simdjson
  void end_of_value();  // a top-level key's value ended at pos_ (exclusive)
  void begin_value();  // a top-level key's value starts at pos_
  [[noreturn]] void too_long() const;

  Columns& columns_;
  ReaderLimits limits_;
  simdjson::ondemand::parser parser_;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0, end_ = 0, pos_ = 0;
  uint64_t total_ = 0;
  // where the scanner stands
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
  enum class Top { kBefore, kKey, kInKey, kColon, kValue, kInValue, kAfter, kDone } top_ = Top::kBefore;
  std::string key_;
  bool key_escaped_ = false;
  // in the traceEvents array (depth 2 and deeper)
  bool in_events_ = false;
  enum class Item { kFirst, kExpect, kIn, kAfter } item_ = Item::kFirst;
  size_t batch_from_ = 0, batch_to_ = 0, item_from_ = 0;
  bool events_ = false;  // an event object was cut
  // a header value being kept
  bool capturing_ = false;
  size_t capture_from_ = 0;
  std::string capture_;
};

// A whole file (plain or gzip) read into columns. Throws Refused, Unhandled, or std::runtime_error on I/O.
Columns read_kineto_file(const std::string& path, ReaderLimits limits = {});

}  // namespace ob::trace
