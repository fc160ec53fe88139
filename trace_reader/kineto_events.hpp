// One Kineto event (a JSON object, parsed on demand by simdjson) into Columns, keeping what the Python reader's _keep
// keeps with the same numbers; and the header keys (distributedInfo, deviceProperties, baseTimeNanoseconds).
#pragma once

#include <string_view>

#include <simdjson.h>

#include "trace_reader/columns.hpp"

namespace ob::trace {

// Events of a batch, whitespace-separated JSON objects in [data, data + size) with SIMDJSON_PADDING readable after;
// `batch`: the parser's batch size, the same on every call (the largest batch the caller passes).
void keep_events(simdjson::ondemand::parser& parser, const char* data, size_t size, size_t batch, Columns& columns);
// trace_read.py's _wrapping_ends: each wrapping annotation's host time before the first operator inside it and after
// the last (on its thread; all of it where none ran inside) added to the wrapper's calls; the operators let go.
void wrapping_ends(Columns& columns);
// A top-level key's value (its JSON text) read into the header columns.
void keep_header(std::string_view key, std::string_view value_json, Columns& columns);

}  // namespace ob::trace
