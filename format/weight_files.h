// Weights outside the artifact (kiln-compile --weights=external; docs/artifact.md "External weights
// section" and "The kiln weights file"): the rules for the files' names, opening them without leaving
// their directory, checking their size and SHA-256, and the kiln weights file the compiler writes
// beside the artifact for the weights it transformed. No LLVM: the runtime links this.
#ifndef KILN_FORMAT_WEIGHT_FILES_H
#define KILN_FORMAT_WEIGHT_FILES_H

#include "format/artifact_format.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::artifact {

// A name a manifest may hold: relative, '/'-separated, no empty, "." or ".." component, no
// backslash or NUL, at most 4096 bytes. The same rules the importer applies to ONNX locations.
bool checkWeightFileName(const std::string &name, std::string *why);

// Opens `name` (checked as above) inside `dir` read-only: each component with O_NOFOLLOW relative
// to the one before (openat), so a symlink anywhere on the way is refused and nothing can be
// swapped between check and open; the file must be regular with one link (a hard link is how a
// file from elsewhere would appear inside the directory). Returns the descriptor, or -1 with a
// one-line reason naming the file.
int openInside(const std::string &dir, const std::string &name, std::string *error);

// SHA-256 (64 lowercase hex digits) of the whole open file, read in 4 MiB blocks from the start
// (no mapping, nothing held). False with a reason on a read error.
bool sha256OfFile(int fd, std::string *hexDigest, std::string *error);

// The kiln weights file: a 4096-byte header, then the weights, each at a multiple of 64.
//   0  8  magic 89 4B 57 54 53 0D 0A 1A ("\x89KWTS\r\n\x1a")
//   8  4  u32 version (1)      12 4 u32 reserved (0)
//  16  8  u64 file size       24 32 SHA-256 of the bytes from 4096 to the end
//  56     zero up to 4096
constexpr uint64_t kWeightsFileHeaderSize = 4096;

// Writes `weights` (packed as WeightSource says) to `path` atomically; `offsets` receives each
// weight's offset in the file and `file` its size and SHA-256 (name and origin are left alone).
bool writeWeightsFile(const std::string &path, const std::vector<WeightSource> &weights,
                      std::vector<uint64_t> *offsets, ExternalFile *file, std::string *error);

// Checks the header of a kiln weights file held in memory (magic, version, size); the digest of the
// data is checked only when `checkDigest`.
bool checkWeightsFile(const uint8_t *data, uint64_t size, bool checkDigest, std::string *error);

} // namespace kiln::artifact

#endif
