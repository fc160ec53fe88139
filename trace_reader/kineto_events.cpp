// The rules are trace_read.py's _keep, read field by field (a later duplicate key replaces an earlier one, as a
// Python dict does). Whatever _keep would turn into a different number or an error (a string where a number stands,
// a step marker that is not digits, a time out of range) throws Unhandled: the Python reader then reads the file and
// says what it says, so both readers agree on every input the native one accepts.
#include "trace_reader/kineto_events.hpp"
#include "trace_reader/kineto_fields.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace ob::trace {
namespace {

using namespace fields;  // NOLINT: kineto_fields.hpp

bool starts(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

struct Args {
  Got got = Got::kAbsent;
  IntField stream, correlation;
  Shape grid, block;
  TextField collective, dtype;
  NumField nelems;
  NumField dims{Got::kOk, 0.0};
  bool skipped = false;  // an object not read: cat and name said it does not matter
};

// Whether an event's args matter to what is kept: kernels, memsets and copies, launching calls, AccumulateGrad.
bool args_read(const TextField& cat, const TextField& name) {
  if (cat.got != Got::kOk || name.got != Got::kOk) return true;  // args before cat or name: read them
  std::string_view c = cat.value;
  return c == "kernel" || c == "gpu_memset" || c == "gpu_memcpy" || c == "cuda_runtime" || c == "cuda_driver" ||
      (c == "cpu_op" && name.value == "torch::autograd::AccumulateGrad");
}

void read_args(od::value value, Args& args, const TextField& cat, const TextField& name) {
  od::json_type type = ok(value.type());
  if (type == od::json_type::null) {
    args.got = Got::kNull;
    return;
  }
  if (type != od::json_type::object) {
    args.got = Got::kOther;
    return;
  }
  args = Args{};
  args.got = Got::kOk;
  if (!args_read(cat, name)) {
    args.skipped = true;  // left unread: On-Demand skips it
    return;
  }
  each_field(ok(value.get_object()), [&](std::string_view key, od::value v) {
    if (key == "stream")
      args.stream = read_int(v);
    else if (key == "correlation")
      args.correlation = read_int(v);
    else if (key == "grid")
      args.grid = read_shape(v);
    else if (key == "block")
      args.block = read_shape(v);
    else if (key == "Collective name")
      args.collective = read_text(v);
    else if (key == "dtype")
      args.dtype = read_text(v);
    else if (key == "In msg nelems")
      args.nelems = read_num(v);
    else if (key == "Input Dims")
      args.dims = read_dims(v);
  });
}

double dtype_bytes(std::string_view dtype) {
  static const std::pair<std::string_view, double> kBytes[] = {
      {"Float", 4}, {"float", 4}, {"Half", 2}, {"BFloat16", 2}, {"Double", 8}, {"Int", 4}, {"Long", 8}, {"Byte", 1}};
  for (const auto& [name, bytes] : kBytes)
    if (name == dtype) return bytes;
  return 4;
}

// Python's int() of a step marker's number: plain digits here, anything else left to Python.
int64_t step_number(std::string_view digits) {
  if (digits.empty() || digits.size() > 18) unhandled("a step marker's number");
  int64_t number = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') unhandled("a step marker's number");
    number = number * 10 + (c - '0');
  }
  return number;
}

struct Tid {
  Got got = Got::kAbsent;
  std::string text;  // JSON text: an integer, or a string without escapes
};

Tid read_tid(od::value value) {
  Tid tid;
  od::json_type type = ok(value.type());
  if (type == od::json_type::null) {
    tid.got = Got::kNull;
  } else if (type == od::json_type::number) {
    IntField whole = read_int(value);
    tid.got = whole.got == Got::kOk ? Got::kOk : Got::kOther;
    tid.text = std::to_string(whole.value);
  } else if (type == od::json_type::string) {
    std::string_view raw = ok(value.raw_json_token());
    while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\t' || raw.back() == '\r'))
      raw.remove_suffix(1);
    tid.got = raw.find('\\') == std::string_view::npos ? Got::kOk : Got::kOther;
    tid.text = std::string(raw);
  } else {
    tid.got = Got::kOther;
  }
  return tid;
}

// _keep's int(args.get(key, -1)): the value, -1 where absent; null or not a whole number left to Python.
int64_t whole_or_none(const IntField& field, const char* key) {
  if (field.got == Got::kNull || field.got == Got::kOther) unhandled(key);
  return field.got == Got::kOk ? field.value : -1;
}

void keep_kernel(Columns& c, std::string_view n, bool kernel, double start, double end, const Args& args) {
  std::string_view collective;
  if (kernel && args.collective.got != Got::kAbsent) {
    if (args.collective.got != Got::kOk) unhandled("Collective name");
    collective = args.collective.value;
  }
  double elements = 0;
  if (args.nelems.got == Got::kOk)
    elements = args.nelems.value;
  else if (args.nelems.got == Got::kOther)
    unhandled("In msg nelems");
  double per = 4;
  if (args.dtype.got == Got::kOk)
    per = dtype_bytes(args.dtype.value);
  else if (args.dtype.got != Got::kAbsent)
    unhandled("dtype");

  std::string shape;
  int64_t stream = whole_or_none(args.stream, "stream"), correlation = whole_or_none(args.correlation, "correlation");
  if (args.grid.got == Got::kOther || args.block.got == Got::kOther) unhandled("grid or block");
  if (args.grid.got == Got::kOk)
    shape = args.grid.text + "x" + (args.block.got == Got::kOk ? args.block.text : std::string("None"));
  c.k_start.push_back(start);
  c.k_end.push_back(end);
  c.k_name.push_back(c.strings.id(n));
  c.k_stream.push_back(stream);
  c.k_shape.push_back(c.strings.id(shape));
  c.k_corr.push_back(correlation);
  c.k_coll.push_back(c.strings.id(collective));
  c.k_bytes.push_back(elements * per);
}

// The wrapper's host calls, DDP's forward (wrapping_ends.cpp takes its ends) and every operator's host range.
void keep_host(Columns& c, std::string_view n, bool cpu_op, bool annotation, double start, double end, const Tid& tid) {
  static const std::string_view kWrapper[] = {
      "c10d::", "record_param_comms", "nccl:", "torch::distributed::reducer::", "FSDP::", "fsdp::"};
  bool wrapper = false;
  for (auto prefix : kWrapper) wrapper = wrapper || starts(n, prefix);
  bool needs_tid = cpu_op || (annotation && !wrapper && starts(n, "DistributedDataParallel.forward"));
  if (needs_tid && tid.got == Got::kOther) unhandled("tid");
  uint32_t thread = needs_tid ? c.tids.id(tid.got == Got::kOk ? std::string_view(tid.text) : "null") : 0;
  if ((cpu_op || annotation) && wrapper) {
    c.wrap_start.push_back(start);
    c.wrap_end.push_back(end);
  } else if (annotation && starts(n, "DistributedDataParallel.forward")) {
    c.wrapping_start.push_back(start);
    c.wrapping_end.push_back(end);
    c.wrapping_tid.push_back(thread);
  }
  if (cpu_op) {
    c.op_tid.push_back(thread);
    c.op_start.push_back(start);
    c.op_end.push_back(end);
  }
}

void keep_event(od::object object, Columns& c) {
  TextField ph, cat, name;
  NumField ts{Got::kAbsent, NAN}, dur{Got::kAbsent, NAN};
  Tid tid;
  Args args;
  each_field(object, [&](std::string_view key, od::value v) {
    if (args.skipped && (key == "cat" || key == "name")) unhandled("cat or name again after args");
    if (key == "ph")
      ph = read_text(v);
    else if (key == "cat")
      cat = read_text(v);
    else if (key == "name")
      name = read_text(v);
    else if (key == "ts")
      ts = read_num(v);
    else if (key == "dur")
      dur = read_num(v);
    else if (key == "tid")
      tid = read_tid(v);
    else if (key == "args")
      read_args(v, args, cat, name);
  });
  c.saw_event_object = true;
  if (ph.got != Got::kOk || ph.value != "X") return;
  if (name.got == Got::kNull || name.got == Got::kOther || args.got == Got::kOther) unhandled("name or args");
  if (ts.got != Got::kOk || dur.got != Got::kOk) unhandled("ts or dur");
  if (!(std::fabs(ts.value) <= kMostUs && 0 <= dur.value && dur.value <= kMostUs)) unhandled("ts or dur range");
  std::string_view category = cat.got == Got::kOk ? cat.value : std::string_view("\x01");  // a non-string matches none
  std::string_view n = name.value;
  double start = ts.value, end = ts.value + dur.value;
  bool cpu_op = category == "cpu_op", annotation = category == "user_annotation";
  // Gloo's host collectives (trace_model.GLOO_OPS): read as communication by the Python reader, not here.
  if ((cpu_op || annotation) && starts(n, "gloo:")) unhandled("a gloo host collective");
  if (category == "kernel" || category == "gpu_memset" || category == "gpu_memcpy") {
    keep_kernel(c, n, category == "kernel", start, end, args);
  } else if ((category == "cuda_runtime" || category == "cuda_driver") && args.correlation.got != Got::kAbsent) {
    if (args.correlation.got != Got::kOk) unhandled("correlation");
    c.l_corr.push_back(args.correlation.value);
    c.l_ts.push_back(start);
    if (starts(n, "cudaGraphLaunch") || starts(n, "cuGraphLaunch")) c.graph_corr.push_back(args.correlation.value);
  } else if (annotation && starts(n, "ProfilerStep#")) {
    c.step_number.push_back(step_number(n.substr(n.find('#') + 1)));
    c.step_start.push_back(start);
    c.step_end.push_back(end);
  } else if (annotation && n == "ob_compute_only") {
    c.co_start.push_back(start);
    c.co_end.push_back(end);
  } else if (annotation && starts(n, "Optimizer.step")) {
    c.opt_start.push_back(start);
    c.opt_end.push_back(end);
  } else if (cpu_op && n == "torch::autograd::AccumulateGrad") {
    if (args.dims.got != Got::kOk) unhandled("Input Dims");
    c.grad_ts.push_back(start);
    c.grad_elems.push_back(args.dims.value);
  } else if (cpu_op && starts(n, "autograd::engine::evaluate_function: ") &&
             n.find("AccumulateGrad") == std::string_view::npos) {
    c.bw_start.push_back(start);
    c.bw_end.push_back(end);
    c.bw_name.push_back(c.strings.id(n.substr(n.find(": ") + 2)));
  }
  keep_host(c, n, cpu_op, annotation, start, end, tid);
  if (annotation && starts(n, "FSDP")) c.fsdp = true;
}

}  // namespace

void keep_events(od::parser& parser, const char* data, size_t size, size_t batch, Columns& columns) {
  od::document_stream stream;
  // One batch size for every call (at least `size`): simdjson 3's parser reallocates its buffers whenever the batch
  // size changes, and faulting them in again cost a third of the reader's time.
  if (parser.iterate_many(data, size, std::max({size, batch, size_t{1} << 16})).get(stream))
    unhandled("a batch of events");
  for (auto document : stream) {
    od::object object;
    if (document.get_object().get(object)) unhandled("an event that is not a JSON object");
    keep_event(object, columns);
  }
  if (stream.truncated_bytes() != 0) unhandled("an event cut short");
}

}  // namespace ob::trace
