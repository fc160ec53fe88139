// The scanner tracks only what cutting needs: inside a string or not (a backslash escapes the next byte), the depth
// of brackets outside strings (capped: a bracket inside a string never counts), and at depth 1 the key whose value
// comes. traceEvents' commas become spaces, so its events are a run of whitespace-separated documents that simdjson's
// iterate_many parses in one pass per batch. Anything the scanner cannot place (a top level that is not an object,
// an event that is not an object, bytes after the end) is Unhandled: the Python reader says what it is.
#include "trace_reader/kineto_reader.hpp"

#include <algorithm>
#include <cstring>

#include "trace_reader/kineto_events.hpp"
#include "trace_reader/scan_bits.hpp"
#include "trace_reader/trace_file.hpp"

namespace ob::trace {
using namespace scan;  // NOLINT: scan_bits.hpp
namespace {

bool header_key(const std::string& key) {
  return key == "distributedInfo" || key == "deviceProperties" || key == "baseTimeNanoseconds";
}

[[noreturn]] void unhandled(const char* what) { throw Unhandled(what); }

}  // namespace

KinetoScanner::KinetoScanner(Columns& columns, ReaderLimits limits) : columns_(columns), limits_(limits) {
  capacity_ = limits_.most_event_bytes + limits_.chunk_bytes + simdjson::SIMDJSON_PADDING;
  parser_.threaded = false;  // one core, one parser's buffers: no second thread parsing the next batch ahead
  buffer_.reset(new char[capacity_]);
}

void KinetoScanner::feed(const char* data, size_t size) {
  while (size > 0) {
    size_t room = 0;
    char* to = prepare(room);
    size_t n = std::min(size, room);
    std::memcpy(to, data, n);
    data += n;
    size -= n;
    commit(n);
  }
}

char* KinetoScanner::prepare(size_t& room) {
  // Keep from the event being cut (or nothing): what came before it is parsed or skipped.
  flush_events();
  size_t keep = in_events_ && item_ == Item::kIn ? item_from_ : pos_;
  if (capturing_) {
    capture_.append(buffer_.get() + capture_from_, pos_ - capture_from_);
    if (capture_.size() > limits_.most_event_bytes) unhandled("a header value longer than the event cap");
    capture_from_ = pos_ - keep;
  }
  std::memmove(buffer_.get(), buffer_.get() + keep, end_ - keep);
  end_ -= keep;
  pos_ -= keep;
  item_from_ = item_from_ >= keep ? item_from_ - keep : 0;
  batch_from_ = batch_to_ = in_events_ && item_ == Item::kIn ? item_from_ : pos_;
  room = std::min(capacity_ - simdjson::SIMDJSON_PADDING - end_, limits_.chunk_bytes);
  if (room == 0 || (in_events_ && item_ == Item::kIn && end_ > limits_.most_event_bytes))
    throw Refused("an event longer than " + std::to_string(limits_.most_event_bytes >> 20) + " MiB");
  return buffer_.get() + end_;
}

void KinetoScanner::commit(size_t n) {
  end_ += n;
  total_ += n;
  scan();
  // An event (complete or not) longer than the cap: refused, whatever the chunks.
  if (in_events_ && item_ == Item::kIn && end_ - item_from_ > limits_.most_event_bytes) too_long();
}

void KinetoScanner::too_long() const {
  throw Refused("an event longer than " + std::to_string(limits_.most_event_bytes >> 20) + " MiB");
}

void KinetoScanner::begin_value() {
  if (header_key(key_) && !events_) {  // as the Python reader: header keys before the first event
    capturing_ = true;
    capture_from_ = pos_;
    capture_.clear();
  }
}

void KinetoScanner::end_of_value() {
  if (!capturing_) return;
  capture_.append(buffer_.get() + capture_from_, pos_ - capture_from_);
  capturing_ = false;
  keep_header(key_, capture_, columns_);
}

void KinetoScanner::flush_events() {
  if (batch_to_ > batch_from_)
    keep_events(parser_, buffer_.get() + batch_from_, batch_to_ - batch_from_, capacity_, columns_);
  batch_from_ = batch_to_;
}

// The events, 64 bytes at a time: strings found by masks (quotes not escaped, their prefix XOR the bytes inside),
// then only the brackets and commas outside strings visited. Leaves at the array's end or the buffer's last block.
void KinetoScanner::scan_events(char* b, size_t& i) {
  uint64_t inside = in_string_ ? ~uint64_t{0} : 0, carry = in_string_ && escaped_ ? 1 : 0;
  while (in_events_ && i + 64 <= end_) {
    const char* block = b + i;
    uint64_t quotes = equal_bits(block, '"') & ~escaped_bits(equal_bits(block, '\\'), carry);
    uint64_t strings = prefix_xor(quotes) ^ inside;
    inside = static_cast<uint64_t>(static_cast<int64_t>(strings) >> 63);
    uint64_t structure = (equal_bits(block, '{') | equal_bits(block, '}') | equal_bits(block, '[') |
                          equal_bits(block, ']') | equal_bits(block, ',')) &
        ~strings;
    for (; structure; structure &= structure - 1) {
      size_t at = i + static_cast<size_t>(__builtin_ctzll(structure));
      char c = b[at];
      if (c == ',') {
        if (depth_ == 2) comma(b, at);
      } else if (c == '{' || c == '[') {
        open(c, at);
      } else {
        bool last = depth_ == 2;  // traceEvents' own ']'
        close(c, at);
        if (last) {
          in_string_ = escaped_ = false;
          i = at + 1;
          return;
        }
      }
    }
    i += 64;
  }
  in_string_ = inside != 0;
  escaped_ = carry != 0;
}

void KinetoScanner::scan() {
  char* b = buffer_.get();
  size_t i = pos_;
  while (i < end_) {
    if (in_events_ && i + 64 <= end_) {
      scan_events(b, i);  // then the buffer's tail (under 64 bytes) or what follows the events, byte by byte
      if (i >= end_) break;
      continue;
    }
    if (in_string_) {
      i = string_run(b, i);
      continue;
    }
    if (depth_ >= 3) {  // inside an event: skip to the next string or bracket
      i = find_structure(b, i, end_);
      if (i == end_) break;
    }
    char c = b[i];
    switch (c) {
      case ' ':
      case '\n':
      case '\r':
      case '\t': break;
      case '"': quote(i); break;
      case '{':
      case '[': open(c, i); break;
      case '}':
      case ']': close(c, i); break;
      case ',': comma(b, i); break;
      case ':':
        if (depth_ == 1) {
          if (top_ != Top::kColon || key_escaped_) unhandled("a key the native reader does not take");
          top_ = Top::kValue;
        }
        break;
      default: scalar(i);
    }
    ++i;
  }
  pos_ = i;
}

size_t KinetoScanner::string_run(const char* b, size_t i) {
  if (escaped_) {
    escaped_ = false;
    return i + 1;
  }
  size_t j = find_quote(b, i, end_);
  if (top_ == Top::kInKey) key_.append(b + i, j - i);
  if (j == end_) return j;
  if (b[j] == '\\') {
    escaped_ = true;
    key_escaped_ = key_escaped_ || top_ == Top::kInKey;
    return j + 1;
  }
  in_string_ = false;
  if (top_ == Top::kInKey) top_ = Top::kColon;
  return j + 1;
}

void KinetoScanner::quote(size_t i) {
  if (depth_ == 1) {
    if (top_ == Top::kKey) {
      top_ = Top::kInKey;
      key_.clear();
      key_escaped_ = false;
    } else if (top_ == Top::kValue) {
      pos_ = i;
      begin_value();
      top_ = Top::kInValue;
    } else {
      unhandled("a string out of place at the top level");
    }
  } else if (depth_ == 0 || (in_events_ && depth_ == 2)) {
    unhandled("a string where an object belongs");
  }
  in_string_ = true;
}

void KinetoScanner::open(char c, size_t i) {
  if (depth_ == 0) {
    if (top_ != Top::kBefore || c != '{') unhandled("a trace that is not one JSON object");
    top_ = Top::kKey;
  } else if (depth_ == 1) {
    if (top_ != Top::kValue) unhandled("a value out of place at the top level");
    top_ = Top::kInValue;
    if (key_ == "traceEvents") {
      if (c != '[') unhandled("traceEvents that is not a list");
      in_events_ = true;
      item_ = Item::kFirst;
      batch_from_ = batch_to_ = i + 1;
    } else {
      pos_ = i;
      begin_value();
    }
  } else if (in_events_ && depth_ == 2) {
    if (c != '{' || item_ == Item::kAfter) unhandled("an event that is not a JSON object");
    item_ = Item::kIn;
    item_from_ = i;
  }
  if (++depth_ > limits_.most_depth) throw Refused("it nests deeper than " + std::to_string(limits_.most_depth));
}

void KinetoScanner::close(char c, size_t i) {
  if (depth_ == 0) unhandled("a closing bracket at the top level");
  if (depth_ == 1) {
    if (c != '}' || (top_ != Top::kInValue && top_ != Top::kAfter)) unhandled("a top level cut short");
    pos_ = i;
    if (top_ == Top::kInValue) end_of_value();
    top_ = Top::kDone;
    depth_ = 0;
  } else if (in_events_ && depth_ == 2) {
    if (c != ']' || item_ == Item::kExpect) unhandled("traceEvents cut short");
    flush_events();
    in_events_ = false;
    item_ = Item::kAfter;  // events seen (or an empty list): header keys after this are not read
    depth_ = 1;
  } else if (--depth_ == 2 && in_events_) {
    item_ = Item::kAfter;
    batch_to_ = i + 1;
    events_ = true;
    if (i + 1 - item_from_ > limits_.most_event_bytes) too_long();
  }
}

void KinetoScanner::comma(char* b, size_t i) {
  if (depth_ == 1) {
    if (top_ != Top::kInValue) unhandled("a comma out of place at the top level");
    pos_ = i;
    end_of_value();
    top_ = Top::kKey;
  } else if (in_events_ && depth_ == 2) {
    if (item_ != Item::kAfter) unhandled("a comma out of place in traceEvents");
    b[i] = ' ';
    item_ = Item::kExpect;
  } else if (depth_ == 0) {
    unhandled("bytes after the trace");
  }
}

void KinetoScanner::scalar(size_t i) {
  if (depth_ == 0) unhandled("bytes after the trace");
  if (depth_ == 1) {
    if (top_ == Top::kValue) {
      pos_ = i;
      begin_value();
      top_ = Top::kInValue;
    } else if (top_ != Top::kInValue) {
      unhandled("a value out of place at the top level");
    }
  } else if (in_events_ && depth_ == 2) {
    unhandled("an event that is not a JSON object");
  }
}

void KinetoScanner::finish() {
  flush_events();
  if (top_ != Top::kDone || in_string_) unhandled("cut short");
  if (!events_) unhandled("no traceEvents");
}

Columns read_kineto_file(const std::string& path, ReaderLimits limits) {
  TraceFile file(path);
  Columns columns;
  KinetoScanner scanner(columns, limits);
  uint64_t inflated = 0;
  for (;;) {  // the text read (or inflated) straight into the scanner's buffer: no copy between them
    size_t room = 0;
    char* to = scanner.prepare(room);
    size_t got = file.read(to, room);
    if (got == 0) break;
    inflated += got;
    if (file.gzipped() && inflated > limits.most_inflated)
      throw Refused("it inflates past " + std::to_string(limits.most_inflated >> 20) + " MiB");
    scanner.commit(got);
  }
  scanner.finish();
  wrapping_ends(columns);
  columns.sha256 = file.sha256();
  return columns;
}

}  // namespace ob::trace
