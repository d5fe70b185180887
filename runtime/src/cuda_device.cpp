// The CUDA driver API through dlopen: a symbol table filled at load time, so this runtime links no
// CUDA library and loads on machines without one; CUDA artifacts then fail to load with a clear error.
#include "cuda_device.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <shared_mutex>
#include <type_traits>

namespace kiln::runtime {

// The few driver types used, as the driver ABI defines them (cuda.h): handles are pointers,
// device pointers 64-bit integers, results ints (0 = CUDA_SUCCESS).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
constexpr int kAttrComputeCapabilityMajor = 75; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr CUresult kErrorNoDevice = 100;        // CUDA_ERROR_NO_DEVICE
constexpr CUresult kErrorStubLibrary = 34;      // CUDA_ERROR_STUB_LIBRARY
constexpr CUresult kErrorOutOfMemory = 2;       // CUDA_ERROR_OUT_OF_MEMORY

struct CudaDriver {
  void *library = nullptr;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(void **, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuDevicePrimaryCtxReset)(CUdevice);
  CUresult (*cuMemGetAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr);
  CUresult (*cuCtxSetCurrent)(void *);
  CUresult (*cuModuleLoadData)(void **, const void *);
  CUresult (*cuModuleUnload)(void *);
  CUresult (*cuModuleGetFunction)(void **, void *, const char *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, void *);
  CUresult (*cuStreamCreate)(void **, unsigned);
  CUresult (*cuStreamDestroy)(void *);
  CUresult (*cuStreamSynchronize)(void *);
  CUresult (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                             void **, void **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuEventCreate)(void **, unsigned);
  CUresult (*cuEventDestroy)(void *);
  CUresult (*cuEventRecord)(void *, void *);
  CUresult (*cuEventElapsedTime)(float *, void *, void *);
  // CUDA graphs (optional: without any of them every run is eager).
  CUresult (*cuStreamBeginCapture)(void *, int) = nullptr; // (stream, CUstreamCaptureMode)
  CUresult (*cuStreamEndCapture)(void *, void **) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(void **, void *, unsigned long long) = nullptr;
  CUresult (*cuGraphLaunch)(void *, void *) = nullptr;
  CUresult (*cuGraphExecDestroy)(void *) = nullptr;
  CUresult (*cuGraphDestroy)(void *) = nullptr;
  // Graphs whose kernels are set between launches (decode steps). v3 of the capture query (CUDA
  // 12.3 on) has an edge-data argument between the dependencies and their count; v2 has none.
  CUresult (*cuStreamGetCaptureInfo3)(void *, int *, unsigned long long *, void **, void *const **, const void **,
                                      size_t *) = nullptr;
  CUresult (*cuStreamGetCaptureInfo2)(void *, int *, unsigned long long *, void **, void *const **,
                                      size_t *) = nullptr;
  CUresult (*cuGraphExecKernelNodeSetParams)(void *, void *, const void *) = nullptr; // _v2: CUDA_KERNEL_NODE_PARAMS_v2
  bool hasGraphs() const {
    return cuStreamBeginCapture && cuStreamEndCapture && cuGraphInstantiateWithFlags && cuGraphLaunch &&
           cuGraphExecDestroy && cuGraphDestroy;
  }
  bool setsGraphKernels() const {
    return hasGraphs() && (cuStreamGetCaptureInfo3 || cuStreamGetCaptureInfo2) && cuGraphExecKernelNodeSetParams;
  }

  ~CudaDriver() {
    if (library)
      ::dlclose(library);
  }

  // Resolves every entry point; the versioned names (_v2) are those cuda.h maps the plain ones to.
  bool load(const char *path, std::string &error) {
    library = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char *why = ::dlerror();
      error = std::string("no CUDA driver: cannot load ") + path + (why ? std::string(" (") + why + ")" : "");
      return false;
    }
    bool ok = true;
    auto get = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(library, symbol));
      if (!fn && ok) {
        ok = false;
        error = std::string("the CUDA driver ") + path + " has no " + symbol;
      }
    };
    get(cuInit, "cuInit");
    get(cuDeviceGetCount, "cuDeviceGetCount");
    get(cuDeviceGet, "cuDeviceGet");
    get(cuDeviceGetName, "cuDeviceGetName");
    get(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    get(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    get(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    get(cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2");
    get(cuMemGetAddressRange, "cuMemGetAddressRange_v2");
    get(cuCtxSetCurrent, "cuCtxSetCurrent");
    get(cuModuleLoadData, "cuModuleLoadData");
    get(cuModuleUnload, "cuModuleUnload");
    get(cuModuleGetFunction, "cuModuleGetFunction");
    get(cuMemAlloc, "cuMemAlloc_v2");
    get(cuMemFree, "cuMemFree_v2");
    get(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    get(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    get(cuMemsetD8, "cuMemsetD8_v2");
    get(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    get(cuStreamCreate, "cuStreamCreate");
    get(cuStreamDestroy, "cuStreamDestroy_v2");
    get(cuStreamSynchronize, "cuStreamSynchronize");
    get(cuLaunchKernel, "cuLaunchKernel");
    get(cuGetErrorString, "cuGetErrorString");
    get(cuEventCreate, "cuEventCreate");
    get(cuEventDestroy, "cuEventDestroy_v2");
    get(cuEventRecord, "cuEventRecord");
    get(cuEventElapsedTime, "cuEventElapsedTime");
    auto optional = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(library, symbol));
    };
    optional(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
    optional(cuStreamEndCapture, "cuStreamEndCapture");
    optional(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
    optional(cuGraphLaunch, "cuGraphLaunch");
    optional(cuGraphExecDestroy, "cuGraphExecDestroy");
    optional(cuGraphDestroy, "cuGraphDestroy");
    optional(cuStreamGetCaptureInfo3, "cuStreamGetCaptureInfo_v3");
    optional(cuStreamGetCaptureInfo2, "cuStreamGetCaptureInfo_v2");
    optional(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2");
    return ok;
  }
};

// One device ordinal's primary context as this process uses it: every CudaDevice (one per loaded
// model) of the ordinal shares it. A sticky fault breaks the context for all of them; once the last
// of them is gone (the context released), the next load resets it.
struct CudaDeviceState {
  std::mutex mutex;
  int users = 0;                  // CudaDevices holding the primary context
  std::atomic<bool> broken{false};
  std::string brokenBy;           // the error that broke it (guarded by mutex)
};

namespace {

CudaDeviceState &stateOf(int ordinal) {
  static std::mutex mutex;
  // Never destroyed: models may outlive static destruction.
  static auto *states = new std::map<int, std::unique_ptr<CudaDeviceState>>;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<CudaDeviceState> &s = (*states)[ordinal];
  if (!s)
    s = std::make_unique<CudaDeviceState>();
  return *s;
}

// Why this thread's last CudaDevice::allocate failed, when not for want of memory.
thread_local std::string tAllocationFailure;

// What to do about a sticky CUDA error (illegal address, launch failure, ...): nothing in the process.
constexpr const char *kRestartAdvice =
    "a sticky CUDA error lasts as long as the process: restart it to use this GPU again";

bool envFlag(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

std::string hex(uint64_t p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, p);
  return buf;
}

// Stream capture and the legacy stream: the synchronous copies, clears, synchronizations and frees
// of other sessions would implicitly synchronize with a capturing (blocking) stream, which
// invalidates the capture or fails the call. They share this lock; a capture holds it alone from
// beginCapture to endCapture (rare: once per session and shape signature). The capturing thread
// itself does none of them (tCapturing skips the lock should the pool trim).
std::shared_mutex gCaptureMutex;
thread_local bool tCapturing = false;

struct SharedCaptureLock {
  bool locked = !tCapturing;
  SharedCaptureLock() {
    if (locked)
      gCaptureMutex.lock_shared();
  }
  ~SharedCaptureLock() {
    if (locked)
      gCaptureMutex.unlock_shared();
  }
};

constexpr int kCaptureModeRelaxed = 2; // CU_STREAM_CAPTURE_MODE_RELAXED

// CUDA_KERNEL_NODE_PARAMS_v2 (cuda.h): a launch as a graph's kernel node holds it.
struct KernelNodeParams {
  void *func;
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void **kernelParams;
  void **extra;
  void *kern; // CUkernel, read only when func is null
  void *ctx;  // CUcontext, ignored when func is set
};
static_assert(sizeof(KernelNodeParams) == 72, "CUDA_KERNEL_NODE_PARAMS_v2 is 72 bytes on x86-64");

// What endCapture returns: the executable graph, and the graph it was made from, kept because the
// nodes lastCapturedNode named belong to it (setGraphKernel needs them as long as the executable).
struct CapturedCudaGraph {
  void *graph = nullptr;
  void *exec = nullptr;
};

const char *kSyncHint = "; set KILN_CUDA_SYNC=1 to synchronize after each launch and name the faulting one exactly";

} // namespace

bool isStickyCudaError(int result) {
  switch (result) {
  case 226: // CUDA_ERROR_CONTAINED
  case 700: // CUDA_ERROR_ILLEGAL_ADDRESS
  case 702: // CUDA_ERROR_LAUNCH_TIMEOUT
  case 709: // CUDA_ERROR_CONTEXT_IS_DESTROYED
  case 710: // CUDA_ERROR_ASSERT
  case 714: // CUDA_ERROR_HARDWARE_STACK_ERROR
  case 715: // CUDA_ERROR_ILLEGAL_INSTRUCTION
  case 716: // CUDA_ERROR_MISALIGNED_ADDRESS
  case 717: // CUDA_ERROR_INVALID_ADDRESS_SPACE
  case 718: // CUDA_ERROR_INVALID_PC
  case 719: // CUDA_ERROR_LAUNCH_FAILED
  case 911: // CUDA_ERROR_EXTERNAL_DEVICE
  case 999: // CUDA_ERROR_UNKNOWN
    return true;
  default:
    return false;
  }
}

bool parseKernelParams(const std::string &entry, std::vector<KernelParam> &params) {
  params.clear();
  size_t i = 0;
  auto number = [&](int32_t &out) {
    size_t start = i;
    int64_t v = 0;
    while (i < entry.size() && entry[i] >= '0' && entry[i] <= '9' && v < (1 << 20))
      v = v * 10 + (entry[i++] - '0');
    out = int32_t(v);
    return i > start && v < (1 << 20);
  };
  while (i < entry.size()) {
    if (entry[i] == ' ') {
      ++i;
      continue;
    }
    KernelParam p;
    const char kind = entry[i++];
    if (kind == 'm') {
      p.memref = true;
      if (!number(p.rank) || i >= entry.size() || entry[i++] != ':' || !number(p.bytes) || p.bytes == 0)
        return false;
    } else if (kind == 's') {
      if (!number(p.bytes) || p.bytes == 0)
        return false;
    } else {
      return false;
    }
    if (i < entry.size() && entry[i] != ' ')
      return false;
    params.push_back(p);
  }
  return true;
}

std::string CudaDevice::describeKernel(int32_t id) const {
  if (id < 0 || size_t(id) >= kernelNames_.size())
    return "kernel " + std::to_string(id);
  std::string s = "kernel " + kernelNames_[size_t(id)];
  if (!kernelNodes_[size_t(id)].empty())
    s += " (ONNX nodes: " + kernelNodes_[size_t(id)] + ")";
  return s;
}

std::string CudaDevice::lastWork() const {
  const int32_t last = lastWork_.load(std::memory_order_relaxed);
  if (last == kLastGemm)
    return "a cuBLASLt matrix product";
  if (last == kLastGraph)
    return "a replayed CUDA graph of a whole run (KILN_CUDA_GRAPHS=0 runs eagerly)";
  return last >= 0 ? describeKernel(last) : std::string();
}

void CudaDevice::markBroken(const std::string &error) const {
  if (!state_)
    return;
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->broken.load()) {
    state_->brokenBy = error;
    state_->broken.store(true, std::memory_order_release);
  }
}

bool CudaDevice::check(int result, const char *what, std::string &error, bool nameLast) const {
  if (result == 0)
    return true;
  const char *text = nullptr;
  if (driver_->cuGetErrorString(result, &text) != 0 || !text)
    text = "unknown error";
  error = std::string(what) + " failed: " + text + " (CUDA error " + std::to_string(result) + ")";
  if (isStickyCudaError(result)) {
    // Launches are asynchronous: the fault shows at a later call, after the work that caused it.
    const std::string last = nameLast ? lastWork() : std::string();
    if (!last.empty())
      error += ", after " + last + ", the last launched" + (syncEachLaunch_ ? "" : kSyncHint);
    markBroken(error);
  }
  return false;
}

bool CudaDevice::makeCurrent(std::string &error, bool evenIfBroken) const {
  if (!evenIfBroken && state_ && state_->broken.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    error = "the CUDA context was broken by an earlier fault (" + state_->brokenBy + "): " + kRestartAdvice;
    return false;
  }
  return check(driver_->cuCtxSetCurrent(context_), "cuCtxSetCurrent", error);
}

std::unique_ptr<CudaDevice> CudaDevice::create(const artifact::CudaInfo &info,
                                               const std::vector<artifact::KernelInfo> &kernels, std::string &error) {
  std::unique_ptr<CudaDevice> d(new CudaDevice);
  d->driver_ = std::make_unique<CudaDriver>();
  const char *path = std::getenv("KILN_CUDA_DRIVER");
  if (!d->driver_->load(path && *path ? path : "libcuda.so.1", error))
    return nullptr;
  CudaDriver &cu = *d->driver_;
  CUresult r = cu.cuInit(0);
  if (r == kErrorNoDevice) {
    error = "no CUDA device (the driver loaded and found none)";
    return nullptr;
  }
  if (r == kErrorStubLibrary) {
    error = "no CUDA driver: the libcuda.so.1 found is the CUDA toolkit's stub, not an NVIDIA driver";
    return nullptr;
  }
  if (!d->check(r, "cuInit", error))
    return nullptr;
  int count = 0;
  if (!d->check(cu.cuDeviceGetCount(&count), "cuDeviceGetCount", error))
    return nullptr;
  int ordinal = 0;
  if (const char *want = std::getenv("KILN_CUDA_DEVICE"); want && *want)
    ordinal = std::atoi(want);
  if (count == 0) {
    error = "no CUDA device (the driver loaded and found none)";
    return nullptr;
  }
  if (ordinal < 0 || ordinal >= count) {
    error = "KILN_CUDA_DEVICE=" + std::to_string(ordinal) + " but there are " + std::to_string(count) +
            " CUDA device(s)";
    return nullptr;
  }
  if (!d->check(cu.cuDeviceGet(&d->device_, ordinal), "cuDeviceGet", error))
    return nullptr;
  d->syncEachLaunch_ = envFlag("KILN_CUDA_SYNC");
  d->checkPointers_ = envFlag("KILN_CUDA_CHECK_POINTERS");
  {
    // Graphs replay what was captured without these debug modes' per-launch work: they run eager.
    const char *graphs = std::getenv("KILN_CUDA_GRAPHS");
    d->graphs_ = cu.hasGraphs() && !d->syncEachLaunch_ && !d->checkPointers_ &&
                 !(graphs && std::strcmp(graphs, "0") == 0);
    d->setsGraphKernels_ = d->graphs_ && cu.setsGraphKernels();
  }
  // "addresses": only where each buffer starts, not how far it reaches. Under the mock driver no
  // kernel runs, so sizes the host reads back from the device (a shape a kernel computed) are
  // whatever the memory held, and only the addresses mean anything.
  const char *mode = std::getenv("KILN_CUDA_CHECK_POINTERS");
  d->checkSpans_ = !(mode && std::strcmp(mode, "addresses") == 0);
  for (const artifact::KernelInfo &k : kernels) {
    std::string joined;
    for (const std::string &n : k.sourceNodes)
      joined += (joined.empty() ? "" : ", ") + n;
    d->kernelNames_.push_back(k.name);
    d->kernelNodes_.push_back(joined);
  }
  // The parameter table serves the pointer checks and the decode steps' graphs (the bytes of each
  // launch parameter, to compare a step's launches with the graph's).
  if (!kernels.empty()) {
    bool ok = info.kernelParams.size() == kernels.size();
    for (size_t i = 0; ok && i < kernels.size(); ++i) {
      d->kernelParams_.emplace_back();
      ok = parseKernelParams(info.kernelParams[i], d->kernelParams_.back());
    }
    if (!ok)
      d->kernelParams_.clear();
    static std::atomic<bool> said{false};
    if (!ok && d->checkPointers_ && !said.exchange(true))
      std::fprintf(stderr, "kiln: KILN_CUDA_CHECK_POINTERS=1, but %s: kernel launches are not checked (matrix "
                             "products are)\n",
                     info.kernelParams.empty() ? "the artifact has no kernel parameter table (compiled before it "
                                                 "existed, or by a compiler that does not fill it)"
                                               : "the artifact's kernel parameter table does not match its kernels");
  }
  char name[256] = {0};
  int major = 0, minor = 0;
  if (!d->check(cu.cuDeviceGetName(name, sizeof name - 1, d->device_), "cuDeviceGetName", error) ||
      !d->check(cu.cuDeviceGetAttribute(&major, kAttrComputeCapabilityMajor, d->device_), "cuDeviceGetAttribute",
                error) ||
      !d->check(cu.cuDeviceGetAttribute(&minor, kAttrComputeCapabilityMinor, d->device_), "cuDeviceGetAttribute",
                error))
    return nullptr;
  const std::string arch = "sm_" + std::to_string(major * 10 + minor);
  d->name_ = std::string(name) + " (" + arch + ")";
  {
    // A sticky fault lasts as long as the process: on an H200 (driver 580), unloading every
    // model and resetting the primary context still left cuDevicePrimaryCtxRetain failing with the
    // fault's error 700 (as CUDA's documentation says: the process must be restarted). So no
    // reset is attempted; loads on that device fail at once, saying so.
    CudaDeviceState &state = stateOf(ordinal);
    std::lock_guard<std::mutex> lock(state.mutex);
    if (state.broken.load()) {
      error = "the CUDA context of device " + std::to_string(ordinal) + " was broken by an earlier fault (" +
              state.brokenBy + "): " + kRestartAdvice;
      return nullptr;
    }
    if (!d->check(cu.cuDevicePrimaryCtxRetain(&d->context_, d->device_), "cuDevicePrimaryCtxRetain", error))
      return nullptr;
    state.users++;
    d->state_ = &state;
    d->retained_ = true;
  }
  if (!d->makeCurrent(error))
    return nullptr;
  // The cubin runs only on the architecture it was assembled for ("sm_90a" on sm_90 too); the PTX
  // on that one and every newer one, through the driver's JIT.
  const bool cubinFits = !info.cubin.empty() && (info.arch == arch || info.arch == arch + "a");
  if (kernels.empty())
    return d; // everything runs on the host (ops on strings): no module to load
  if (!cubinFits && info.ptx.empty()) {
    error = "the artifact has no PTX and its cubin is for " + info.arch + ", not this " + d->name_;
    return nullptr;
  }
  const void *image = cubinFits ? static_cast<const void *>(info.cubin.data()) : info.ptx.c_str();
  if (!d->check(cu.cuModuleLoadData(&d->module_, image), cubinFits ? "loading the cubin" : "loading the PTX (JIT)",
                error)) {
    error += "; the artifact targets " + info.arch + ", this device is " + d->name_;
    return nullptr;
  }
  for (const artifact::KernelInfo &k : kernels) {
    void *fn = nullptr;
    if (!d->check(cu.cuModuleGetFunction(&fn, d->module_, k.name.c_str()), ("kernel '" + k.name + "'").c_str(),
                  error))
      return nullptr;
    d->functions_.push_back(fn);
  }
  return d;
}

CudaDevice::~CudaDevice() {
  if (!driver_ || !driver_->library)
    return;
  // Handles and memory are released even in a broken context (the driver frees what it can).
  std::string error;
  if (blas_ && makeCurrent(error, true))
    blas_.reset(); // its handle belongs to the context released below
  if (module_)
    driver_->cuModuleUnload(module_);
  if (context_)
    driver_->cuDevicePrimaryCtxRelease(device_);
  if (retained_) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->users--;
  }
}

void *CudaDevice::allocate(size_t bytes, size_t) {
  tAllocationFailure.clear();
  std::string error;
  if (!makeCurrent(error)) {
    tAllocationFailure = error;
    return nullptr;
  }
  CUdeviceptr p = 0;
  const CUresult r = driver_->cuMemAlloc(&p, bytes == 0 ? 1 : bytes);
  if (r == kErrorOutOfMemory)
    return nullptr; // the one failure reported as out of memory
  if (!check(r, ("cuMemAlloc of " + std::to_string(bytes) + " bytes").c_str(), error)) {
    tAllocationFailure = error;
    return nullptr;
  }
  return reinterpret_cast<void *>(p);
}

std::string CudaDevice::allocationFailure() const { return tAllocationFailure; }

void CudaDevice::deallocate(void *ptr) {
  std::string error;
  SharedCaptureLock lock;
  if (ptr && makeCurrent(error, true))
    driver_->cuMemFree(reinterpret_cast<CUdeviceptr>(ptr));
}

bool CudaDevice::upload(void *device, const void *host, size_t bytes, std::string &error) {
  if (bytes == 0)
    return true;
  SharedCaptureLock lock;
  return makeCurrent(error) &&
         check(driver_->cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(device), host, bytes), "copy to the GPU", error);
}

bool CudaDevice::zero(void *device, size_t bytes, std::string &error) {
  if (bytes == 0)
    return true;
  SharedCaptureLock lock;
  return makeCurrent(error) &&
         check(driver_->cuMemsetD8(reinterpret_cast<CUdeviceptr>(device), 0, bytes), "clearing GPU memory", error);
}

bool CudaDevice::download(void *host, const void *device, size_t bytes, std::string &error) {
  if (bytes == 0)
    return true;
  SharedCaptureLock lock;
  return makeCurrent(error) &&
         check(driver_->cuMemcpyDtoH(host, reinterpret_cast<CUdeviceptr>(device), bytes), "copy from the GPU", error);
}

bool CudaDevice::copyOnDevice(void *stream, void *to, const void *from, size_t bytes, std::string &error) {
  if (bytes == 0)
    return true;
  SharedCaptureLock lock;
  return makeCurrent(error) &&
         check(driver_->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(to), reinterpret_cast<CUdeviceptr>(from),
                                          bytes, stream),
               "copy on the GPU", error) &&
         check(driver_->cuStreamSynchronize(stream), "copy on the GPU", error);
}

bool CudaDevice::createStream(void **stream, std::string &error) {
  *stream = nullptr;
  return makeCurrent(error) && check(driver_->cuStreamCreate(stream, 0), "cuStreamCreate", error);
}

void CudaDevice::destroyStream(void *stream) {
  std::string error;
  if (stream && makeCurrent(error, true))
    driver_->cuStreamDestroy(stream);
}

bool CudaDevice::parallelFor(int32_t kernelId, kiln_abi_kernel_fn, void *, int64_t, int64_t, int64_t,
                             std::string &error) {
  error = "generated code of a CUDA artifact called parallel_for (kernel " + std::to_string(kernelId) + ")";
  return false;
}

bool CudaDevice::launch(void *stream, int32_t id, const int64_t grid[3], const int64_t block[3], int32_t sharedBytes,
                        void **params, std::string &error) {
  if (id < 0 || size_t(id) >= functions_.size()) {
    error = "generated code launched kernel " + std::to_string(id) + "; the artifact has " +
            std::to_string(functions_.size());
    return false;
  }
  // Grid x up to 2^31 - 1, the others and block sizes up to 65535 (the driver checks the exact limits).
  for (int i = 0; i < 3; ++i)
    if (grid[i] < 1 || grid[i] > 0x7fffffff || block[i] < 1 || block[i] > 1024) {
      error = "kernel " + std::to_string(id) + " launched with grid " + std::to_string(grid[0]) + "x" +
              std::to_string(grid[1]) + "x" + std::to_string(grid[2]) + ", block " + std::to_string(block[0]) + "x" +
              std::to_string(block[1]) + "x" + std::to_string(block[2]) + ": outside CUDA's limits";
      return false;
    }
  if (checkPointers_ && !checkLaunchPointers(id, params, error))
    return false;
  if (!makeCurrent(error))
    return false;
  CUresult r = driver_->cuLaunchKernel(functions_[id], unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2]),
                                       unsigned(block[0]), unsigned(block[1]), unsigned(block[2]),
                                       unsigned(sharedBytes), stream, params, nullptr);
  if (r != 0)
    return check(r, ("launching " + describeKernel(id)).c_str(), error);
  lastWork_.store(id, std::memory_order_relaxed);
  if (syncEachLaunch_ && (r = driver_->cuStreamSynchronize(stream)) != 0) {
    // KILN_CUDA_SYNC=1: nothing else ran since the launch, so this kernel is the one that failed.
    check(r, describeKernel(id).c_str(), error, false);
    return false;
  }
  return true;
}

bool CudaDevice::checkRange(uint64_t begin, uint64_t end, const std::string &what, std::string &error) const {
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUresult r = driver_->cuMemGetAddressRange(&base, &size, begin);
  if (isStickyCudaError(r))
    return check(r, ("checking " + what).c_str(), error);
  if (r != 0) {
    error = what + " points at " + hex(begin) + " which is not inside a device allocation (host memory?)";
    return false;
  }
  if (checkSpans_ && end - base > size) {
    error = what + " spans [" + hex(begin) + ", " + hex(end) + "), past the end of its device allocation [" +
            hex(base) + ", " + hex(base + size) + ")";
    return false;
  }
  return true;
}

bool CudaDevice::checkLaunchPointers(int32_t id, void **params, std::string &error) {
  if (size_t(id) >= kernelParams_.size())
    return true; // no table: nothing to check against
  if (!makeCurrent(error))
    return false;
  auto word = [&](size_t i) {
    uint64_t v = 0;
    std::memcpy(&v, params[i], sizeof v); // pointers and index values are 8 bytes on x86-64
    return v;
  };
  size_t p = 0;
  int argument = 0;
  for (const KernelParam &kp : kernelParams_[size_t(id)]) {
    if (!kp.memref) {
      ++p;
      ++argument;
      continue;
    }
    const uint64_t allocated = word(p), aligned = word(p + 1);
    __int128 lo = int64_t(word(p + 2)), hi = lo; // element offsets of the first and last element
    bool empty = false;
    for (int32_t d = 0; d < kp.rank; ++d) {
      const int64_t size = int64_t(word(p + 3 + size_t(d))), stride = int64_t(word(p + 3 + size_t(kp.rank + d)));
      if (size <= 0) {
        empty = true;
        break;
      }
      const __int128 reach = __int128(size - 1) * stride;
      (reach < 0 ? lo : hi) += reach;
    }
    p += 3 + 2 * size_t(kp.rank);
    const std::string what = describeKernel(id) + " argument " + std::to_string(argument) + " (memref rank " +
                             std::to_string(kp.rank) + ", " + std::to_string(kp.bytes) + "-byte elements)";
    ++argument;
    if (empty)
      continue; // addresses nothing
    const __int128 begin = __int128(aligned) + lo * kp.bytes, end = __int128(aligned) + (hi + 1) * kp.bytes;
    if (begin < 0 || end > (__int128(1) << 64)) {
      error = what + " addresses bytes outside the 64-bit address space (offset or strides broken)";
      return false;
    }
    if (!checkRange(uint64_t(begin), uint64_t(end), what, error))
      return false;
    CUdeviceptr base = 0;
    size_t bytes = 0;
    if (const CUresult r = driver_->cuMemGetAddressRange(&base, &bytes, allocated); r != 0) {
      if (isStickyCudaError(r))
        return check(r, ("checking " + what).c_str(), error);
      error = what + ": its allocated pointer " + hex(allocated) +
              " is not inside a device allocation (host memory?); its aligned pointer is " + hex(aligned);
      return false;
    }
  }
  return true;
}

bool CudaDevice::checkGemmPointers(const kiln_abi_gemm &g, const kiln_abi_epilogue *epilogue, std::string &error) {
  if (!makeCurrent(error))
    return false;
  auto bytesOf = [](int64_t onnxType) { return onnxType == 1 ? 4 : 2; }; // f32, else f16 / bf16 (planned)
  const std::string product = "matrix product (" + std::to_string(g.m) + " x " + std::to_string(g.k) + " times " +
                              std::to_string(g.k) + " x " + std::to_string(g.n) + ")";
  static const int64_t kNoBatchStrides[KILN_ABI_GEMM_MAX_BATCH] = {}; // the bias: the same for every batch
  struct Operand {
    const char *name;
    const void *data;
    int64_t type, rows, cols, sr, sc;
    const int64_t *batchStride;
  };
  std::vector<Operand> operands = {{"A", g.a, g.a_type, g.m, g.k, g.a_stride_m, g.a_stride_k, g.a_stride_batch},
                                   {"B", g.b, g.b_type, g.k, g.n, g.b_stride_k, g.b_stride_n, g.b_stride_batch},
                                   {"C", g.c, g.c_type, g.m, g.n, g.c_stride_m, g.c_stride_n, g.c_stride_batch}};
  if (epilogue && epilogue->c_source) // read with C's strides
    operands.push_back({"C source", epilogue->c_source, g.c_type, g.m, g.n, g.c_stride_m, g.c_stride_n,
                        g.c_stride_batch});
  if (epilogue && epilogue->bias)
    operands.push_back({"bias", epilogue->bias, epilogue->bias_type, 1, g.n, 0, epilogue->bias_stride, kNoBatchStrides});
  for (const Operand &o : operands) {
    // planGemm took it: sizes positive, strides not negative.
    __int128 last = __int128(o.rows - 1) * o.sr + __int128(o.cols - 1) * o.sc;
    for (int64_t d = 0; d < g.batch_rank && d < KILN_ABI_GEMM_MAX_BATCH; ++d)
      last += __int128(g.batch[d] - 1) * o.batchStride[d];
    const uint64_t begin = uint64_t(reinterpret_cast<uintptr_t>(o.data));
    const __int128 end = __int128(begin) + (last + 1) * bytesOf(o.type);
    const std::string what = "the " + product + " operand " + o.name + " (" + std::to_string(bytesOf(o.type)) +
                             "-byte elements)";
    if (end > (__int128(1) << 64)) {
      error = what + " addresses bytes outside the 64-bit address space";
      return false;
    }
    if (!checkRange(begin, uint64_t(end), what, error))
      return false;
  }
  return true;
}

void *CudaDevice::createEvent(std::string &error) {
  void *event = nullptr;
  if (!makeCurrent(error) || !check(driver_->cuEventCreate(&event, 0), "cuEventCreate", error))
    return nullptr;
  return event;
}

void CudaDevice::destroyEvent(void *event) {
  std::string error;
  if (event && makeCurrent(error, true))
    driver_->cuEventDestroy(event);
}

bool CudaDevice::record(void *event, void *stream, std::string &error) {
  return makeCurrent(error) && check(driver_->cuEventRecord(event, stream), "cuEventRecord", error);
}

double CudaDevice::elapsedMs(void *from, void *to) {
  float ms = 0;
  std::string error;
  if (!makeCurrent(error) || driver_->cuEventElapsedTime(&ms, from, to) != 0)
    return 0;
  return ms;
}

Device::GemmResult CudaDevice::gemm(void *stream, const kiln_abi_gemm &product, const kiln_abi_epilogue *epilogue,
                                    void *workspace, uint64_t workspaceBytes, std::string &error) {
  if (!makeCurrent(error))
    return GemmResult::Failed;
  std::call_once(blasLoaded_, [&] { blas_ = CudaBlas::load(blasWhy_); });
  BlasPlan plan;
  std::string why;
  if (!blas_ || !planGemm(product, epilogue, plan, why))
    return GemmResult::Declined;
  if (checkPointers_ && !checkGemmPointers(product, epilogue, error))
    return GemmResult::Failed;
  switch (blas_->run(plan, stream, workspace, workspaceBytes, error)) {
  case CudaBlas::Result::Done:
    lastWork_.store(kLastGemm, std::memory_order_relaxed);
    if (syncEachLaunch_) {
      const CUresult r = driver_->cuStreamSynchronize(stream);
      if (r != 0) {
        check(r, "a cuBLASLt matrix product", error, false);
        return GemmResult::Failed;
      }
    }
    return GemmResult::Done;
  case CudaBlas::Result::Declined:
    return GemmResult::Declined;
  case CudaBlas::Result::Failed:
    break;
  }
  return GemmResult::Failed;
}

std::string CudaDevice::blasDescription() {
  std::string error;
  if (makeCurrent(error))
    std::call_once(blasLoaded_, [&] { blas_ = CudaBlas::load(blasWhy_); });
  return blas_ ? blas_->description() : "kiln's kernels (" + (blasWhy_.empty() ? error : blasWhy_) + ")";
}

bool CudaDevice::synchronize(void *stream, std::string &error) {
  SharedCaptureLock lock;
  return makeCurrent(error) && check(driver_->cuStreamSynchronize(stream), "running the kernels", error);
}

bool CudaDevice::beginCapture(void *stream, std::string &error) {
  if (!graphs_ || tCapturing) {
    error = "graphs are off";
    return false;
  }
  if (!makeCurrent(error))
    return false;
  gCaptureMutex.lock();
  tCapturing = true;
  if (!check(driver_->cuStreamBeginCapture(stream, kCaptureModeRelaxed), "cuStreamBeginCapture", error)) {
    tCapturing = false;
    gCaptureMutex.unlock();
    return false;
  }
  return true;
}

void *CudaDevice::endCapture(void *stream, std::string &error) {
  if (!tCapturing) {
    error = "no capture is open";
    return nullptr;
  }
  void *graph = nullptr, *exec = nullptr;
  const CUresult ended = driver_->cuStreamEndCapture(stream, &graph);
  tCapturing = false;
  gCaptureMutex.unlock();
  if (!check(ended, "cuStreamEndCapture", error) || !graph) {
    if (graph)
      driver_->cuGraphDestroy(graph);
    if (error.empty())
      error = "the capture made no graph";
    return nullptr;
  }
  const CUresult made = driver_->cuGraphInstantiateWithFlags(&exec, graph, 0);
  if (!check(made, "cuGraphInstantiateWithFlags", error)) {
    driver_->cuGraphDestroy(graph);
    return nullptr;
  }
  return new CapturedCudaGraph{graph, exec};
}

bool CudaDevice::launchGraph(void *graph, void *stream, std::string &error) {
  void *exec = static_cast<CapturedCudaGraph *>(graph)->exec;
  if (!makeCurrent(error) || !check(driver_->cuGraphLaunch(exec, stream), "cuGraphLaunch", error))
    return false;
  lastWork_.store(kLastGraph, std::memory_order_relaxed);
  return true;
}

void CudaDevice::destroyGraph(void *graph) {
  auto *g = static_cast<CapturedCudaGraph *>(graph);
  std::string error;
  if (g && makeCurrent(error, true)) {
    driver_->cuGraphExecDestroy(g->exec);
    driver_->cuGraphDestroy(g->graph);
  }
  delete g;
}

std::vector<int32_t> CudaDevice::kernelParamSizes(int32_t id) const {
  std::vector<int32_t> sizes;
  if (id < 0 || size_t(id) >= kernelParams_.size())
    return sizes;
  for (const KernelParam &p : kernelParams_[size_t(id)])
    if (p.memref)
      sizes.insert(sizes.end(), 3 + 2 * size_t(p.rank), 8); // pointers and index values: 8 bytes
    else
      sizes.push_back(p.bytes);
  return sizes;
}

void *CudaDevice::lastCapturedNode(void *stream) {
  if (!setsGraphKernels_ || !tCapturing)
    return nullptr;
  int status = 0;
  void *const *nodes = nullptr;
  size_t count = 0;
  const CUresult r = driver_->cuStreamGetCaptureInfo3
                         ? driver_->cuStreamGetCaptureInfo3(stream, &status, nullptr, nullptr, &nodes, nullptr, &count)
                         : driver_->cuStreamGetCaptureInfo2(stream, &status, nullptr, nullptr, &nodes, &count);
  // One stream captures a chain: the next node depends on exactly the last one.
  constexpr int kCaptureActive = 1; // CU_STREAM_CAPTURE_STATUS_ACTIVE
  return r == 0 && status == kCaptureActive && count == 1 ? nodes[0] : nullptr;
}

bool CudaDevice::setGraphKernel(void *graph, void *node, int32_t id, const int64_t grid[3], const int64_t block[3],
                                int32_t sharedBytes, void **params, std::string &error) {
  if (!setsGraphKernels_ || id < 0 || size_t(id) >= functions_.size()) {
    error = "cannot set kernel " + std::to_string(id) + " of a graph";
    return false;
  }
  for (int i = 0; i < 3; ++i)
    if (grid[i] < 1 || grid[i] > 0x7fffffff || block[i] < 1 || block[i] > 1024) {
      error = describeKernel(id) + " set with grid or block sizes outside CUDA's limits";
      return false;
    }
  KernelNodeParams p{functions_[size_t(id)],
                     unsigned(grid[0]),
                     unsigned(grid[1]),
                     unsigned(grid[2]),
                     unsigned(block[0]),
                     unsigned(block[1]),
                     unsigned(block[2]),
                     unsigned(sharedBytes),
                     params,
                     nullptr,
                     nullptr,
                     nullptr};
  void *exec = static_cast<CapturedCudaGraph *>(graph)->exec;
  return makeCurrent(error) &&
         check(driver_->cuGraphExecKernelNodeSetParams(exec, node, &p), ("updating " + describeKernel(id)).c_str(),
               error);
}

} // namespace kiln::runtime
