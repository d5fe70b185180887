// ptxas as a subprocess: the PTX is written to a temporary file, the cubin read back.
#include "compiler/targets/cuda/CudaTarget.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>
#include <optional>

namespace kiln {

bool isGpuArch(const std::string &arch) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0)
    return false;
  size_t i = 3, digits = 0;
  while (i < arch.size() && std::isdigit((unsigned char)arch[i]))
    ++i, ++digits;
  if (digits < 2 || digits > 3 || arch[3] == '0')
    return false;
  return i == arch.size() || (i + 1 == arch.size() && arch[i] == 'a');
}

std::string findPtxas(const std::string &requested) {
  if (requested == "none")
    return "";
  if (!requested.empty())
    return requested;
  if (llvm::ErrorOr<std::string> onPath = llvm::sys::findProgramByName("ptxas"))
    return *onPath;
  if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/ptxas"))
    return "/usr/local/cuda/bin/ptxas";
  return "";
}

bool assemblePtx(const std::string &ptxas, const std::string &ptx, const std::string &arch, std::string &cubin,
                 std::string &error) {
  llvm::SmallString<128> in, out, log;
  if (llvm::sys::fs::createTemporaryFile("kiln", "ptx", in) || llvm::sys::fs::createTemporaryFile("kiln", "cubin", out) ||
      llvm::sys::fs::createTemporaryFile("kiln", "log", log)) {
    error = "cannot create temporary files for ptxas";
    return false;
  }
  llvm::FileRemover removeIn(in), removeOut(out), removeLog(log);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in, ec);
    if (ec) {
      error = "cannot write " + std::string(in) + ": " + ec.message();
      return false;
    }
    os << ptx;
  }
  std::string archFlag = "-arch=" + arch;
  llvm::SmallVector<llvm::StringRef> args = {ptxas, archFlag, "-O3", in, "-o", out};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log), llvm::StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, /*SecondsToWait=*/600, 0, &message);
  if (rc != 0) {
    std::string text;
    if (auto buf = llvm::MemoryBuffer::getFile(log))
      text = (*buf)->getBuffer().take_front(2000).str();
    error = "ptxas (" + ptxas + ") failed" + (message.empty() ? "" : ": " + message) + (text.empty() ? "" : ":\n" + text);
    return false;
  }
  auto buf = llvm::MemoryBuffer::getFile(out);
  if (!buf) {
    error = "ptxas wrote no cubin";
    return false;
  }
  cubin = (*buf)->getBuffer().str();
  return true;
}

} // namespace kiln
