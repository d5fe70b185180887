// .npy and TensorProto codecs. TensorProto is decoded by hand (a handful of fields of a simple wire
// format) so kiln-run does not pull protobuf into the runtime's dependency set.
#include "tensor_file.h"

#include "format/dtype.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kiln::tools {
namespace {


// Element count of `shape`, false on negative dims or overflow.
bool elementCount(const std::vector<int64_t> &shape, uint64_t *n) {
  uint64_t c = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d != 0 && c > (uint64_t(1) << 62) / uint64_t(d)))
      return false;
    c *= uint64_t(d);
  }
  *n = c;
  return true;
}


// Value of `'key': ` in a numpy header dict, as the raw text up to the next top-level ',' or '}'.
bool dictValue(const std::string &header, const std::string &key, std::string *value) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos)
    return false;
  size_t colon = header.find(':', k);
  if (colon == std::string::npos)
    return false;
  size_t i = colon + 1;
  while (i < header.size() && header[i] == ' ')
    ++i;
  size_t end = i;
  if (end < header.size() && header[end] == '(')
    end = header.find(')', end);
  else
    end = header.find_first_of(",}", end);
  if (end == std::string::npos)
    return false;
  *value = header.substr(i, end - i + (header[end] == ')' ? 1 : 0));
  return true;
}

} // namespace

bool parseNpy(const std::string &c, HostTensor *out, std::string *error) {
  if (c.size() < 10 || c.compare(0, 6, "\x93NUMPY") != 0) {
    *error = "not a .npy file (bad magic)";
    return false;
  }
  const uint8_t major = uint8_t(c[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = uint8_t(c[8]) | (size_t(uint8_t(c[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (c.size() < 12) {
      *error = "truncated .npy header";
      return false;
    }
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= size_t(uint8_t(c[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    *error = ".npy format version " + std::to_string(major) + " is not supported";
    return false;
  }
  if (headerLen > c.size() - headerStart) {
    *error = "truncated .npy header";
    return false;
  }
  const std::string header = c.substr(headerStart, headerLen);
  std::string descr, fortran, shape;
  if (!dictValue(header, "descr", &descr) || !dictValue(header, "fortran_order", &fortran) ||
      !dictValue(header, "shape", &shape)) {
    *error = "malformed .npy header: " + header;
    return false;
  }
  if (fortran.rfind("True", 0) == 0) {
    *error = "Fortran-order .npy arrays are not supported (save with np.ascontiguousarray)";
    return false;
  }
  if (descr.size() < 5 || descr.front() != '\'' || descr.back() != '\'') {
    *error = "unsupported .npy dtype " + descr;
    return false;
  }
  const char order = descr[1];
  const std::string code = descr.substr(2, descr.size() - 3);
  const artifact::DtypeInfo *type = artifact::findNpyDtype(code.c_str());
  out->dtype = type ? type->code : 0;
  const bool singleByte = out->dtype && elementSize(out->dtype) == 1;
  if (!out->dtype || !(order == '<' || order == '=' || (order == '|' && singleByte))) {
    *error = "unsupported .npy dtype " + descr + " (supported: little-endian bool, int8-64, uint8-64, float16/32/64)";
    return false;
  }
  // shape: "()", "(5,)", "(2, 3)"
  out->shape.clear();
  std::string dims = shape.substr(1, shape.size() - 2);
  std::stringstream ss(dims);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(' ');
    if (b == std::string::npos)
      continue;
    char *endp = nullptr;
    errno = 0;
    long long v = std::strtoll(item.c_str() + b, &endp, 10);
    if (errno != 0 || v < 0 || (*endp != '\0' && *endp != ' ' && *endp != 'L')) {
      *error = "malformed .npy shape " + shape;
      return false;
    }
    out->shape.push_back(v);
  }
  uint64_t n = 0;
  if (!elementCount(out->shape, &n) || n > (uint64_t(1) << 62) / elementSize(out->dtype)) {
    *error = "invalid .npy shape " + shape;
    return false;
  }
  const uint64_t bytes = n * elementSize(out->dtype);
  const uint64_t available = c.size() - headerStart - headerLen;
  if (available != bytes) {
    *error = ".npy data has " + std::to_string(available) + " bytes; shape " + shape + " needs " +
             std::to_string(bytes);
    return false;
  }
  out->bytes = c.substr(headerStart + headerLen);
  out->name.clear();
  return true;
}

bool encodeNpy(const HostTensor &t, std::string *out, std::string *error) {
  const artifact::DtypeInfo *type = artifact::findDtype(t.dtype);
  const char *code = type && *type->npy ? type->npy : nullptr;
  if (!code) {
    *error = "dtype " + std::to_string(t.dtype) + " cannot be written as .npy";
    return false;
  }
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i)
    shape += std::to_string(t.shape[i]) + (t.shape.size() == 1 ? "," : i + 1 < t.shape.size() ? ", " : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + (elementSize(t.dtype) == 1 ? "|" : "<") + code +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // numpy pads the header with spaces so the data starts 64-byte aligned, ending in '\n'.
  const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  if (header.size() > 0xffff) {
    *error = "shape too long for a .npy v1 header";
    return false;
  }
  out->assign("\x93NUMPY\x01\x00", 8);
  out->push_back(char(header.size() & 0xff));
  out->push_back(char(header.size() >> 8));
  *out += header;
  *out += t.bytes;
  return true;
}

uint32_t elementSize(uint32_t dtype) {
  const artifact::DtypeInfo *d = artifact::findDtype(dtype);
  return d && dtype != 8 ? d->size : 0;
}

bool readWholeFile(const std::string &path, std::string *out, std::string *error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    *error = "cannot read '" + path + "'";
    return false;
  }
  *out = std::move(ss).str();
  return true;
}

bool readTensorFile(const std::string &path, HostTensor *out, std::string *error) {
  auto endsWith = [&](const char *ext) {
    size_t n = std::strlen(ext);
    return path.size() >= n && path.compare(path.size() - n, n, ext) == 0;
  };
  const bool npy = endsWith(".npy"), pb = endsWith(".pb");
  if (!npy && !pb) {
    *error = "'" + path + "': unknown tensor file type (expected .npy or .pb)";
    return false;
  }
  std::string contents;
  if (!readWholeFile(path, &contents, error))
    return false;
  std::string why;
  if (npy ? parseNpy(contents, out, &why) : parseTensorProto(contents, out, &why))
    return true;
  *error = "'" + path + "': " + why;
  return false;
}

bool writeNpyFile(const std::string &path, const HostTensor &t, std::string *error) {
  std::string bytes;
  if (!encodeNpy(t, &bytes, error))
    return false;
  std::ofstream o(path, std::ios::binary | std::ios::trunc);
  o.write(bytes.data(), std::streamsize(bytes.size()));
  o.close();
  if (!o) {
    *error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

} // namespace kiln::tools
