// Names, safe opening and checksums of external weight files; the kiln weights file's header
// (its writer shares the weight packing of artifact_format.cpp and lives there).
#include "format/weight_files.h"

#include "support/sha256/sha256.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::artifact {

namespace {
// The file's '/'-separated components, "." and empty ones dropped.
std::vector<std::string> components(const std::string &name) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos)
      end = name.size();
    std::string part = name.substr(start, end - start);
    if (!part.empty() && part != ".")
      parts.push_back(part);
    start = end + 1;
  }
  return parts;
}

constexpr uint8_t kWeightsMagic[8] = {0x89, 'K', 'W', 'T', 'S', '\r', '\n', 0x1a};

uint64_t readU64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(p[i]) << (8 * i);
  return v;
}
} // namespace

bool checkWeightFileName(const std::string &name, std::string *why) {
  if (name.empty()) {
    *why = "the file name is empty";
    return false;
  }
  if (name.size() > 4096 || name.find('\0') != std::string::npos) {
    *why = "the file name is over 4096 bytes or contains a NUL byte";
    return false;
  }
  if (name[0] == '/') {
    *why = "'" + name + "' is an absolute path; it must be relative to the weights directory";
    return false;
  }
  if (name.find('\\') != std::string::npos) {
    *why = "'" + name + "' contains a backslash";
    return false;
  }
  std::vector<std::string> parts = components(name);
  for (const std::string &p : parts)
    if (p == "..") {
      *why = "'" + name + "' leaves the weights directory";
      return false;
    }
  if (parts.empty()) {
    *why = "'" + name + "' names no file";
    return false;
  }
  return true;
}

int openInside(const std::string &dir, const std::string &name, std::string *error) {
  std::string why;
  if (!checkWeightFileName(name, &why)) {
    *error = "weight file " + why;
    return -1;
  }
  int cur = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cur < 0) {
    *error = "cannot open the weights directory '" + dir + "': " + std::strerror(errno);
    return -1;
  }
  const std::vector<std::string> parts = components(name);
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    // O_NONBLOCK: a FIFO planted as the weight file must not hang the load.
    int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (last ? O_NONBLOCK : O_DIRECTORY);
    int next = ::openat(cur, parts[i].c_str(), flags);
    if (next < 0) {
      int err = errno;
      struct stat st;
      bool isLink = ::fstatat(cur, parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
      ::close(cur);
      if (isLink || err == ELOOP)
        *error = "weight file '" + name + "' in '" + dir + "' goes through a symlink, which kiln refuses";
      else if (err == ENOENT)
        *error = "weight file '" + name + "' not found in '" + dir + "'";
      else
        *error = "cannot open weight file '" + name + "' in '" + dir + "': " + std::strerror(err);
      return -1;
    }
    ::close(cur);
    cur = next;
  }
  struct stat st;
  if (::fstat(cur, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(cur);
    *error = "weight file '" + name + "' in '" + dir + "' is not a regular file";
    return -1;
  }
  if (st.st_nlink != 1) {
    ::close(cur);
    *error = "weight file '" + name + "' in '" + dir + "' has " + std::to_string(st.st_nlink) +
             " hard links, which kiln refuses (it may be a file from outside the directory)";
    return -1;
  }
  // Back to blocking reads for the checksum.
  int fl = ::fcntl(cur, F_GETFL);
  if (fl >= 0)
    ::fcntl(cur, F_SETFL, fl & ~O_NONBLOCK);
  return cur;
}

bool sha256OfFile(int fd, std::string *hexDigest, std::string *error) {
  std::vector<uint8_t> buffer(size_t(4) << 20);
  sha256::Hasher h;
  uint64_t offset = 0;
  for (;;) {
    ssize_t n = ::pread(fd, buffer.data(), buffer.size(), off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      *error = std::string("read failed: ") + std::strerror(errno);
      return false;
    }
    if (n == 0)
      break;
    h.update(buffer.data(), size_t(n));
    offset += uint64_t(n);
  }
  *hexDigest = sha256::hex(h.finish());
  return true;
}

bool checkWeightsFile(const uint8_t *data, uint64_t size, bool checkDigest, std::string *error) {
  if (size < kWeightsFileHeaderSize || std::memcmp(data, kWeightsMagic, sizeof(kWeightsMagic)) != 0) {
    *error = "not a kiln weights file (bad magic or shorter than its header)";
    return false;
  }
  const uint32_t version = uint32_t(data[8]) | uint32_t(data[9]) << 8 | uint32_t(data[10]) << 16 |
                           uint32_t(data[11]) << 24;
  if (version != 1) {
    *error = "kiln weights file version " + std::to_string(version) + "; this runtime reads 1";
    return false;
  }
  if (readU64(data + 16) != size) {
    *error = "kiln weights file truncated or padded: header says " + std::to_string(readU64(data + 16)) +
             " bytes, got " + std::to_string(size);
    return false;
  }
  if (checkDigest) {
    sha256::Digest d = sha256::hash(data + kWeightsFileHeaderSize, size - kWeightsFileHeaderSize);
    if (std::memcmp(d.data(), data + 24, 32) != 0) {
      *error = "kiln weights file's data does not match the SHA-256 in its header";
      return false;
    }
  }
  return true;
}

// The header's magic for the writer in artifact_format.cpp.
void weightsFileMagic(uint8_t out[8]) { std::memcpy(out, kWeightsMagic, 8); }

} // namespace kiln::artifact
