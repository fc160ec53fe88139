#include "trace_reader/columns_file.hpp"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

namespace ob::trace {
namespace {

class Writer {
 public:
  explicit Writer(const std::string& path) : file_(std::fopen(path.c_str(), "wb"), &std::fclose) {
    if (!file_) throw std::runtime_error(path + ": cannot write it");
    put(kColumnsMagic, sizeof(kColumnsMagic) - 1);
  }
  template <typename T>
  void section(const std::string& name, const std::vector<T>& values) {
    raw(name, values.data(), values.size() * sizeof(T));
  }
  void raw(const std::string& name, const void* data, size_t bytes) {
    uint32_t length = static_cast<uint32_t>(name.size());
    uint64_t size = bytes;
    put(&length, sizeof length);
    put(name.data(), name.size());
    put(&size, sizeof size);
    put(data, bytes);
    static const char zeros[8] = {};
    put(zeros, (8 - bytes % 8) % 8);
  }
  void close() {
    if (std::fflush(file_.get()) != 0 || std::ferror(file_.get())) throw std::runtime_error("writing the columns");
  }

 private:
  void put(const void* data, size_t bytes) {
    if (bytes && std::fwrite(data, 1, bytes, file_.get()) != bytes) throw std::runtime_error("writing the columns");
  }
  std::unique_ptr<FILE, int (*)(FILE*)> file_;
};

void strings(Writer& out, const std::string& name, const StringTable& table) {
  std::vector<char> text;
  std::vector<uint64_t> offsets{0};
  for (const auto& s : table.texts()) {
    text.insert(text.end(), s.begin(), s.end());
    offsets.push_back(text.size());
  }
  out.section(name + ".text", text);
  out.section(name + ".offsets", offsets);
}

}  // namespace

void write_columns(const Columns& c, const std::string& path) { write_columns(c, KernelFlags{}, StepFigures{}, path); }

void write_columns(const Columns& c, const KernelFlags& flags, const StepFigures& f, const std::string& path) {
  std::string part = path + ".part";
  {
    Writer out(part);
    std::vector<int64_t> header{c.rank, c.world, c.start_ns, c.nccl, c.gpu, c.fsdp ? 1 : 0};
    out.section("header", header);
    strings(out, "strings", c.strings);
    strings(out, "tids", c.tids);
    out.section("k_start", c.k_start);
    out.section("k_end", c.k_end);
    out.section("k_name", c.k_name);
    out.section("k_stream", c.k_stream);
    out.section("k_shape", c.k_shape);
    out.section("k_corr", c.k_corr);
    out.section("k_coll", c.k_coll);
    out.section("k_bytes", c.k_bytes);
    out.section("l_corr", c.l_corr);
    out.section("l_ts", c.l_ts);
    out.section("graph_corr", c.graph_corr);
    out.section("step_number", c.step_number);
    out.section("step_start", c.step_start);
    out.section("step_end", c.step_end);
    out.section("co_start", c.co_start);
    out.section("co_end", c.co_end);
    out.section("opt_start", c.opt_start);
    out.section("opt_end", c.opt_end);
    out.section("wrap_start", c.wrap_start);
    out.section("wrap_end", c.wrap_end);
    out.section("grad_ts", c.grad_ts);
    out.section("grad_elems", c.grad_elems);
    out.section("bw_start", c.bw_start);
    out.section("bw_end", c.bw_end);
    out.section("bw_name", c.bw_name);
    out.section("wrapping_start", c.wrapping_start);
    out.section("wrapping_end", c.wrapping_end);
    out.section("wrapping_tid", c.wrapping_tid);
    out.section("op_tid", c.op_tid);
    out.section("op_start", c.op_start);
    out.section("op_end", c.op_end);
    out.section("sha256", std::vector<char>(c.sha256.begin(), c.sha256.end()));
    out.section("k_comm", flags.comm);
    out.section("k_host", flags.host);
    out.section("figures", std::vector<int64_t>{f.computed ? 1 : 0});
    out.section("number", f.number);
    out.section("start", f.start);
    out.section("end", f.end);
    out.section("comm_ms", f.comm_ms);
    out.section("compute_ms", f.compute_ms);
    out.section("exposed_ms", f.exposed_ms);
    out.section("slowdown_ms", f.slowdown_ms);
    out.section("slowed_ms", f.slowed_ms);
    out.section("host_ms", f.host_ms);
    out.section("wrapper_gpu_ms", f.wrapper_gpu_ms);
    out.section("blocking_ms", f.blocking_ms);
    out.section("replayed", f.replayed);
    out.section("bucket_from", f.bucket_from);
    out.section("bucket_name", f.bucket_name);
    out.section("bucket_bytes", f.bucket_bytes);
    out.section("bucket_start", f.bucket_start);
    out.section("bucket_end", f.bucket_end);
    out.section("cover_from", f.cover_from);
    out.section("cover_start", f.cover_start);
    out.section("cover_end", f.cover_end);
    out.section("row_from", f.row_from);
    out.section("row_kernel", f.row_kernel);
    out.close();
  }
  if (std::rename(part.c_str(), path.c_str()) != 0) throw std::runtime_error(path + ": cannot rename into it");
}

}  // namespace ob::trace
