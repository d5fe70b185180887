// A session's cache of device buffers (device_pool.h).
#include "device_pool.h"

#include "device.h"

namespace kiln::runtime {

size_t DevicePool::roundUp(size_t bytes) {
  size_t size = 256;
  while (size < bytes && size <= (size_t(1) << 62))
    size <<= 1;
  return size;
}

DevicePool::~DevicePool() {
  trim();
  for (auto &[ptr, size] : live_)
    device_.deallocate(ptr);
}

void *DevicePool::allocate(size_t bytes) {
  if (bytes > (size_t(1) << 46))
    return nullptr; // no GPU has that much; also keeps roundUp from overflowing
  const size_t size = roundUp(bytes);
  void *ptr = nullptr;
  auto it = free_.find(size);
  if (it != free_.end()) {
    ptr = it->second;
    free_.erase(it);
    cached_ -= size;
  } else {
    ptr = device_.allocate(size, 256);
    if (!ptr && cached_ > 0) {
      trim(); // other size classes may be what the device is missing
      ptr = device_.allocate(size, 256);
    }
    if (!ptr)
      return nullptr;
  }
  live_.emplace(ptr, size);
  return ptr;
}

void DevicePool::release(void *ptr) {
  auto it = ptr ? live_.find(ptr) : live_.end();
  if (it == live_.end())
    return;
  const size_t size = it->second;
  live_.erase(it);
  if (cached_ + size > kMaxCachedBytes) {
    device_.deallocate(ptr);
    return;
  }
  free_.emplace(size, ptr);
  cached_ += size;
}

void DevicePool::trim() {
  for (auto &[size, ptr] : free_)
    device_.deallocate(ptr);
  free_.clear();
  cached_ = 0;
}

} // namespace kiln::runtime
