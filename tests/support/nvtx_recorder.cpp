// An NVTX injection library for tests: loaded by NVTX itself (NVTX_INJECTION64_PATH=<this .so>), it records every
// range pushed and every thread named into "$OB_NVTX_LOG.<pid>", one line each ("push <name>", "thread <name>"),
// so a test on a machine without Nsight can assert what a profiler would show.
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

std::mutex mutex;
std::FILE* log_file = nullptr;

void write(const char* kind, const char* text) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!log_file) return;
  std::fprintf(log_file, "%s %s\n", kind, text ? text : "");
  std::fflush(log_file);
}

int NVTX_API push_a(const char* message) {
  write("push", message);
  return 0;
}
int NVTX_API pop() { return 0; }
void NVTX_API name_thread_a(uint32_t, const char* name) { write("thread", name); }

}  // namespace

extern "C" int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const char* prefix = std::getenv("OB_NVTX_LOG");
  if (!prefix) return 0;
  log_file = std::fopen((std::string(prefix) + "." + std::to_string(getpid())).c_str(), "a");
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!log_file || !callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size)) return 0;
  if (size <= NVTX_CBID_CORE_NameOsThreadA) return 0;
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&push_a);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  *table[NVTX_CBID_CORE_NameOsThreadA] = reinterpret_cast<NvtxFunctionPointer>(&name_thread_a);
  return 1;
}
