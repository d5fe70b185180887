// The CUDA driver API through dlopen: a symbol table filled at load time, so this runtime links no
// CUDA library and loads on machines without one; CUDA artifacts then fail to load with a clear error.
#include "cuda_device.h"

#include <cstdlib>
#include <dlfcn.h>
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

struct CudaDriver {
  void *library = nullptr;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(void **, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(void *);
  CUresult (*cuModuleLoadData)(void **, const void *);
  CUresult (*cuModuleUnload)(void *);
  CUresult (*cuModuleGetFunction)(void **, void *, const char *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
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
    get(cuCtxSetCurrent, "cuCtxSetCurrent");
    get(cuModuleLoadData, "cuModuleLoadData");
    get(cuModuleUnload, "cuModuleUnload");
    get(cuModuleGetFunction, "cuModuleGetFunction");
    get(cuMemAlloc, "cuMemAlloc_v2");
    get(cuMemFree, "cuMemFree_v2");
    get(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    get(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    get(cuMemsetD8, "cuMemsetD8_v2");
    get(cuStreamCreate, "cuStreamCreate");
    get(cuStreamDestroy, "cuStreamDestroy_v2");
    get(cuStreamSynchronize, "cuStreamSynchronize");
    get(cuLaunchKernel, "cuLaunchKernel");
    get(cuGetErrorString, "cuGetErrorString");
    get(cuEventCreate, "cuEventCreate");
    get(cuEventDestroy, "cuEventDestroy_v2");
    get(cuEventRecord, "cuEventRecord");
    get(cuEventElapsedTime, "cuEventElapsedTime");
    return ok;
  }
};

bool CudaDevice::check(int result, const char *what, std::string &error) const {
  if (result == 0)
    return true;
  const char *text = nullptr;
  if (driver_->cuGetErrorString(result, &text) != 0 || !text)
    text = "unknown error";
  error = std::string(what) + " failed: " + text + " (CUDA error " + std::to_string(result) + ")";
  return false;
}

bool CudaDevice::makeCurrent(std::string &error) const {
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
  if (!d->check(cu.cuDevicePrimaryCtxRetain(&d->context_, d->device_), "cuDevicePrimaryCtxRetain", error))
    return nullptr;
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
  std::string error;
  if (blas_ && makeCurrent(error))
    blas_.reset(); // its handle belongs to the context released below
  if (module_)
    driver_->cuModuleUnload(module_);
  if (context_)
    driver_->cuDevicePrimaryCtxRelease(device_);
}

void *CudaDevice::allocate(size_t bytes, size_t) {
  std::string error;
  if (!makeCurrent(error))
    return nullptr;
  CUdeviceptr p = 0;
  if (driver_->cuMemAlloc(&p, bytes == 0 ? 1 : bytes) != 0)
    return nullptr;
  return reinterpret_cast<void *>(p);
}

void CudaDevice::deallocate(void *ptr) {
  std::string error;
  if (ptr && makeCurrent(error))
    driver_->cuMemFree(reinterpret_cast<CUdeviceptr>(ptr));
}

bool CudaDevice::upload(void *device, const void *host, size_t bytes, std::string &error) {
  if (bytes == 0)
    return true;
  return makeCurrent(error) &&
         check(driver_->cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(device), host, bytes), "copy to the GPU", error);
}

bool CudaDevice::zero(void *device, size_t bytes, std::string &error) {
  if (bytes == 0)
    return true;
  return makeCurrent(error) &&
         check(driver_->cuMemsetD8(reinterpret_cast<CUdeviceptr>(device), 0, bytes), "clearing GPU memory", error);
}

bool CudaDevice::download(void *host, const void *device, size_t bytes, std::string &error) {
  if (bytes == 0)
    return true;
  return makeCurrent(error) &&
         check(driver_->cuMemcpyDtoH(host, reinterpret_cast<CUdeviceptr>(device), bytes), "copy from the GPU", error);
}

bool CudaDevice::createStream(void **stream, std::string &error) {
  *stream = nullptr;
  return makeCurrent(error) && check(driver_->cuStreamCreate(stream, 0), "cuStreamCreate", error);
}

void CudaDevice::destroyStream(void *stream) {
  std::string error;
  if (stream && makeCurrent(error))
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
  return makeCurrent(error) &&
         check(driver_->cuLaunchKernel(functions_[id], unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2]),
                                       unsigned(block[0]), unsigned(block[1]), unsigned(block[2]),
                                       unsigned(sharedBytes), stream, params, nullptr),
               "cuLaunchKernel", error);
}

void *CudaDevice::createEvent(std::string &error) {
  void *event = nullptr;
  if (!makeCurrent(error) || !check(driver_->cuEventCreate(&event, 0), "cuEventCreate", error))
    return nullptr;
  return event;
}

void CudaDevice::destroyEvent(void *event) {
  std::string error;
  if (event && makeCurrent(error))
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

Device::GemmResult CudaDevice::gemm(void *stream, const kiln_abi_gemm &product, void *workspace,
                                    uint64_t workspaceBytes, std::string &error) {
  if (!makeCurrent(error))
    return GemmResult::Failed;
  std::call_once(blasLoaded_, [&] { blas_ = CudaBlas::load(blasWhy_); });
  BlasPlan plan;
  std::string why;
  if (!blas_ || !planGemm(product, plan, why))
    return GemmResult::Declined;
  switch (blas_->run(plan, stream, workspace, workspaceBytes, error)) {
  case CudaBlas::Result::Done:
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
  return makeCurrent(error) && check(driver_->cuStreamSynchronize(stream), "running the kernels", error);
}

} // namespace kiln::runtime
