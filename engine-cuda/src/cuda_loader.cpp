/* cuda_loader.cpp: finds, loads and checks libmaya_engine_cuda.so, and creates the CUDA backend.
 *
 * The library is looked up at the path eng_cuda_lib_set() gave, else next to the module that holds
 * this code (libmaya_engine.so, or the test binary), and loaded once per process (never unloaded).
 * It links the CUDA runtime statically, so only the NVIDIA driver (libcuda.so.1) is needed at run time.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <mutex>
#include <string>

#include "backend.h"       // defines: Backend, cuda_backend_*
#include "common.h"        // defines: fail
#include "cuda/cuda_api.h" // defines: CudaHost, CudaOptions, maya_cuda_*_fn

namespace maya {

namespace {

struct CudaLib {
    std::string error; // why it is unusable ("" = loaded)
    maya_cuda_probe_fn probe = nullptr;
    maya_cuda_backend_create_fn create = nullptr;
};

int32_t host_set_error(int32_t status, const char *msg) { return fail(status, "%s", msg); }
const CudaHost kHost = {host_set_error};

std::mutex path_mutex;
std::string path_set;      // eng_cuda_lib_set(); "" = beside this module
bool is_looked_up = false; // load() ran: the path is fixed for the process

std::string library_path() {
    std::lock_guard<std::mutex> lock(path_mutex);
    is_looked_up = true;
    if (!path_set.empty()) return path_set;
    Dl_info info;
    std::string dir = ".";
    if (dladdr((void *)&cuda_backend_create, &info) && info.dli_fname) {
        std::string self = info.dli_fname;
        size_t slash = self.rfind('/');
        if (slash != std::string::npos) dir = self.substr(0, slash);
    }
    return dir + "/libmaya_engine_cuda.so";
}

CudaLib load() {
    CudaLib l;
    std::string path = library_path();
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        l.error = "the CUDA backend library is not available (" + std::string(e ? e : path) +
                  "); it is built by scripts/build-engine.sh when nvcc is present";
        return l;
    }
    auto stamp = (maya_cuda_stamp_fn)dlsym(h, "maya_cuda_stamp");
    l.probe = (maya_cuda_probe_fn)dlsym(h, "maya_cuda_probe");
    l.create = (maya_cuda_backend_create_fn)dlsym(h, "maya_cuda_backend_create");
    if (!stamp || !l.probe || !l.create) {
        l.error = path + " lacks the maya_cuda_* entry points";
    } else if (stamp() != cuda_layout_stamp()) {
        l.error = path + " was built from other engine headers (stale build); rerun scripts/build-engine.sh";
    }
    if (!l.error.empty()) l.probe = nullptr, l.create = nullptr; // the handle stays open: never unloaded
    return l;
}

CudaLib &lib() {
    static CudaLib l = load(); // once per process, thread-safe
    return l;
}

} // namespace

int32_t cuda_library_set(const char *path) {
    std::string want = path ? path : "";
    std::lock_guard<std::mutex> lock(path_mutex);
    if (is_looked_up && want != path_set)
        return fail(ENG_STATUS_INVALID_ARG,
                    "the CUDA library was already looked up at %s; set its path before the first context",
                    path_set.empty() ? "its default path" : path_set.c_str());
    path_set = want;
    return ENG_STATUS_OK;
}

bool cuda_backend_usable(std::string *why) {
    CudaLib &l = lib();
    if (!l.error.empty()) {
        if (why) *why = l.error;
        return false;
    }
    char buf[256] = "";
    int32_t n = l.probe(buf, (int32_t)sizeof buf);
    if (n <= 0 && why) *why = buf;
    return n > 0;
}

int32_t cuda_backend_create(const Model &model, BackendConfig *cfg, const CudaOptions &opt,
                            std::unique_ptr<Backend> *out) {
    CudaLib &l = lib();
    if (!l.error.empty()) return fail(ENG_STATUS_UNSUPPORTED, "%s", l.error.c_str());
    Backend *b = nullptr;
    int32_t st = l.create(&model, cfg, &opt, &kHost, &b);
    if (st < 0) return st;
    out->reset(b);
    return ENG_STATUS_OK;
}

} // namespace maya
