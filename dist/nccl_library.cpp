#include "dist/nccl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "core/error.h"
#include "core/settings.h"
#include "dist/backends.h"

namespace minidl {
namespace dist {

namespace {

struct Loaded {
  NcclLibrary library;
  std::string error;  // why loading failed ("" when it worked)
};

template <class F>
void bind(void* handle, const char* name, F& slot, std::string& error) {
  slot = reinterpret_cast<F>(dlsym(handle, name));
  if (!slot && error.empty()) error = str_cat("the library has no ", name, " (too old an NCCL?)");
}

Loaded load() {
  Loaded out;
  const std::string configured = settings::nccl_library.read();  // MINIDL_NCCL_LIBRARY (core/settings.h)
  const std::string path = configured.empty() ? "libnccl.so.2" : configured;
  out.library.path = path;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    out.error = str_cat(why ? why : path + ": dlopen failed",  // dlerror's text starts with the path
                        !configured.empty() ? "" : "; set MINIDL_NCCL_LIBRARY to its path, or add its directory to "
                                          "LD_LIBRARY_PATH (pip's nvidia-nccl-cu* puts it in "
                                          "site-packages/nvidia/nccl/lib)");
    return out;
  }
  NcclLibrary& l = out.library;
  bind(handle, "ncclGetVersion", l.GetVersion, out.error);
  bind(handle, "ncclGetErrorString", l.GetErrorString, out.error);
  bind(handle, "ncclGetUniqueId", l.GetUniqueId, out.error);
  bind(handle, "ncclCommInitRank", l.CommInitRank, out.error);
  bind(handle, "ncclCommDestroy", l.CommDestroy, out.error);
  bind(handle, "ncclCommGetAsyncError", l.CommGetAsyncError, out.error);
  bind(handle, "ncclAllReduce", l.AllReduce, out.error);
  bind(handle, "ncclBroadcast", l.Broadcast, out.error);
  if (out.error.empty() && l.GetVersion(&l.version) != ncclSuccess) out.error = "ncclGetVersion failed";
  Dl_info where;  // the file the loader picked, for messages
  if (out.error.empty() && dladdr(reinterpret_cast<void*>(l.GetVersion), &where) && where.dli_fname)
    l.path = where.dli_fname;
  if (!out.error.empty()) out.error = str_cat(path, ": ", out.error);
  // The handle stays open for the life of the process (NCCL keeps threads and state of its own).
  return out;
}

const Loaded& loaded() {
  static const Loaded once = load();
  return once;
}

}  // namespace

const NcclLibrary& nccl_library() {
  const Loaded& l = loaded();
  MINIDL_CHECK(l.error.empty(), "NCCL could not be loaded: ", l.error);
  return l.library;
}

std::string nccl_version_string(int v) {
  // From NCCL 2.9 on the code is major * 10000 + minor * 100 + patch (before: * 1000 + * 100).
  if (v >= 10000) return str_cat(v / 10000, ".", (v / 100) % 100, ".", v % 100);
  return str_cat(v / 1000, ".", (v / 100) % 10, ".", v % 100);
}

std::string nccl_library_description() {
  const Loaded& l = loaded();
  if (!l.error.empty()) return str_cat("not found (", l.error, ")");
  return str_cat(nccl_version_string(l.library.version), " (", l.library.path, ")");
}

}  // namespace dist
}  // namespace minidl
