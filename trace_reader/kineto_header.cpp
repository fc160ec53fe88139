// The header keys the Python reader's first pass reads (distributedInfo's rank, world_size and nccl_version, the
// first named device, baseTimeNanoseconds), from a top-level value's JSON text; anything it reads otherwise (a
// number as a string, a gloo job) is Unhandled.
#include <string>

#include "trace_reader/kineto_events.hpp"

namespace ob::trace {

void keep_header(std::string_view key, std::string_view value_json, Columns& c) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(value_json.data(), value_json.size(), true).get(root)) throw Unhandled("a header value");
  auto whole = [](simdjson::dom::element e) {
    if (!e.is_int64()) throw Unhandled("a header number");
    return e.get_int64().value_unsafe();
  };
  if (key == "baseTimeNanoseconds") {
    c.start_ns = whole(root);
  } else if (key == "distributedInfo") {
    if (!root.is_object()) return;
    simdjson::dom::object info = root.get_object().value_unsafe();
    for (auto [name, value] : info) {
      if (name == "backend" && value.is_string() && value.get_string().value_unsafe() == "gloo")
        throw Unhandled("a gloo job: its host collectives are read by the Python reader");
      if (name == "rank")
        c.rank = whole(value);
      else if (name == "world_size")
        c.world = whole(value);
      else if (name == "nccl_version") {
        if (value.is_string())
          c.nccl = c.strings.id(value.get_string().value_unsafe());
        else if (value.is_int64())
          c.nccl = c.strings.id(std::to_string(value.get_int64().value_unsafe()));
        else
          throw Unhandled("nccl_version");
      }
    }
  } else if (key == "deviceProperties") {
    if (!root.is_array()) throw Unhandled("deviceProperties");
    simdjson::dom::array devices = root.get_array().value_unsafe();
    for (auto device : devices) {
      if (!device.is_object()) continue;
      simdjson::dom::object properties = device.get_object().value_unsafe();
      for (auto [name, value] : properties) {
        if (name != "name" || c.gpu != 0) continue;
        if (!value.is_string()) throw Unhandled("a device's name");
        c.gpu = c.strings.id(value.get_string().value_unsafe());
      }
    }
  }
}

}  // namespace ob::trace
