// A session's cache of device buffers, so steady requests on a GPU make no cuMemAlloc/cuMemFree.
#ifndef KILN_RUNTIME_DEVICE_POOL_H
#define KILN_RUNTIME_DEVICE_POOL_H

#include <cstddef>
#include <map>
#include <unordered_map>

namespace kiln::runtime {

class Device;

// The buffers of a session's requests (staged inputs, outputs, data-sized intermediates) go back
// here instead of to the driver and serve the next requests: cuMemAlloc costs microseconds and
// cuMemFree waits for the whole GPU, which a decode step cannot afford. Sizes are rounded up to a
// power of two (256 bytes at least), so a block fits every request of its class. Reusing a block
// within a run is safe because all of a session's work runs in order on its one stream. At most
// kMaxCachedBytes are kept; the rest goes back to the driver. One run at a time (like a session).
class DevicePool {
public:
  static constexpr size_t kMaxCachedBytes = size_t(1) << 30;

  explicit DevicePool(Device &device) : device_(device) {}
  ~DevicePool();
  DevicePool(const DevicePool &) = delete;
  DevicePool &operator=(const DevicePool &) = delete;

  // Null when the device is out of memory even after the cache was given back.
  void *allocate(size_t bytes);
  // `ptr` must come from allocate (null is ignored).
  void release(void *ptr);
  size_t cachedBytes() const { return cached_; }
  // The size a request of `bytes` is served with: a power of two, 256 bytes at least.
  static size_t roundUp(size_t bytes);

private:
  void trim(); // gives every cached block back to the driver

  Device &device_;
  std::unordered_map<void *, size_t> live_; // block -> its rounded size
  std::multimap<size_t, void *> free_;      // rounded size -> cached block
  size_t cached_ = 0;
};

} // namespace kiln::runtime

#endif
