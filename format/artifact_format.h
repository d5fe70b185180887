// The kiln artifact file format: one encoder/decoder shared by the compiler (writer) and the runtime (reader).
// No LLVM/MLIR here: the runtime links this file, and builds it when built on its own. The format is
// documented in docs/artifact.md.
#ifndef KILN_ARTIFACT_FORMAT_H
#define KILN_ARTIFACT_FORMAT_H

#include "format/dtype.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::artifact {

// Bumped on any incompatible change; the runtime refuses other versions with a message naming both.
constexpr uint32_t kFormatVersion = 1;

// Element types use ONNX TensorProto.DataType codes: dtypeSize, dtypeName and the table (dtype.h).

struct Dim {
  int64_t size = -1;   // >= 0 when static, -1 when symbolic
  std::string symbol;  // the ONNX dim_param name when symbolic ("" if the model gave none)
};

struct TensorSignature {
  std::string name;
  uint32_t dtype = 0;
  std::vector<Dim> dims;
};

struct WeightInfo {
  std::string name;
  uint32_t dtype = 0;
  std::vector<int64_t> dims;
  uint64_t offset = 0;  // from the start of the weights section; multiple of kWeightAlignment
  uint64_t size = 0;    // bytes
};
constexpr uint64_t kWeightAlignment = 64;

struct KernelInfo {
  std::string name;                     // symbol-like name of the kernel
  std::vector<std::string> sourceNodes; // ONNX node names it came from
};

// Decoders compiled with a runtime-owned KV cache (optional section 4; docs/artifact.md).
struct KvCacheInfo {
  uint32_t input = 0; // index into inputs: a float cache with room for the whole context along `axis`
  uint32_t axis = 0;
};
// The name kiln-kv-cache-in-place gives the decoder's [batch] int64 input holding each row's own
// length (where the row appends); found by name, so the decoder section's layout is unchanged.
inline constexpr const char *kRowPositionsInput = "kiln.row_positions";
// Paged caches' [batch, blocks per sequence] int64 input: the pool block of each sequence's
// entries [block * i, block * (i + 1)), the block being the caches' static size along their axis.
inline constexpr const char *kBlockTableInput = "kiln.block_table";
// kiln-last-position-logits' int64 scalar input: the logits output holds each row's last N
// positions (1 for a decode step or a prefill; K + 1 to verify K speculated tokens in one run).
inline constexpr const char *kLogitRowsInput = "kiln.logit_rows";

struct DecoderInfo {
  bool present = false;
  uint32_t positionInput = 0; // index into inputs: int64 scalar, entries already in every cache
  int64_t maxContext = 0;     // default cache capacity in tokens
  std::vector<KvCacheInfo> caches;
};

// Accuracy of a quantized artifact against the float compile of the same model, measured by
// kiln-compile (--calibration / --max-error ...) on the calibration inputs. Figures are doubles;
// NaN marks one that was not measured.
struct OutputAccuracy {
  std::string name;        // the output (for decoders: "logits", over every teacher-forced position)
  double maxAbsError = 0;  // max |quantized - float|
  double maxRelError = 0;  // maxAbsError / max |float|
  double cosine = 0;       // cosine similarity of the two outputs, flattened over all samples
};
struct AccuracyReport {
  bool present = false;
  std::string inputs;      // where the inputs came from, e.g. "calibration dir data (2 samples)"
  uint32_t samples = 0;    // model runs (or teacher-forced sequences) compared
  std::vector<OutputAccuracy> outputs;
  // Decoders only (NaN otherwise): top-1 agreement of next-token predictions over `positions`
  // teacher-forced positions, and the perplexity of the float and quantized artifacts there.
  uint64_t positions = 0;
  double top1Agreement = 0;
  double perplexityFloat = 0;
  double perplexityQuantized = 0;
  std::string tokens;      // where the teacher-forced tokens came from ("" when not a decoder)
};
// The weight quantization recipe (optional section 5; docs/artifact.md), written with --quantize.
// A figure of a report for people: "%.4g" by default, NaN (not measured) and infinities spelled out.
std::string formatFigure(double v, const char *format = "%.4g");

struct QuantizationInfo {
  bool present = false;
  std::string mode;                // "int8" | "int4" | "int8-dynamic"
  uint32_t groupSize = 0;          // int4: group along K; 0: one scale per output channel (int8 modes)
  std::string scaleType;           // "f32" | "f16"
  std::vector<std::string> keep;   // --quantize-keep patterns left in float
  AccuracyReport accuracy;         // present only when the accuracy check ran
};

// Artifacts compiled with --target=cuda (optional section 6; docs/artifact.md): the kernels' device
// code. The code section is then the host program, which launches kernel i of `kernels` by name.
struct CudaInfo {
  bool present = false;
  std::string arch;  // "sm_90": what the PTX targets and the cubin (if any) was assembled for
  std::string ptx;   // PTX text, loadable (JIT-compiled by the driver) on arch and newer GPUs
  std::string cubin; // ptxas's ELF for exactly `arch`; "" when ptxas was not found at compile time
  // Per kernel (indexed like Metadata::kernels): its parameters as the launch passes them, so the
  // runtime can check pointer arguments against live device allocations (KILN_CUDA_CHECK_POINTERS).
  // Space-separated, one entry per source-level argument: "mR:E" a memref of rank R and E-byte
  // elements (3 + 2R launch parameters: allocated and aligned pointers, offset, sizes, strides),
  // "sB" a B-byte scalar (one parameter). Empty for artifacts written before the table existed.
  std::vector<std::string> kernelParams;
};

// Weights kept outside the artifact (optional section 7, kiln-compile --weights=external;
// docs/artifact.md): the files they lie in, each named relative to a directory and checked by size
// and SHA-256 at load, and where each weight lies in them. The weights section is then empty.
enum class WeightFileOrigin : uint32_t {
  Source = 0, // an ONNX external data file, looked up in the weights directory the caller gives
  Kiln = 1,   // the kiln weights file the compiler wrote (transformed weights), beside the artifact
};
struct ExternalFile {
  std::string name;   // relative, '/'-separated, no "." or ".." component (checkWeightFileName)
  WeightFileOrigin origin = WeightFileOrigin::Source;
  uint64_t size = 0;  // the whole file, bytes
  std::string sha256; // of the whole file, 64 lowercase hex digits
};
struct ExternalRef {
  uint32_t file = 0;   // index into files
  uint64_t offset = 0; // within the file; multiple of kWeightAlignment
  uint64_t size = 0;   // bytes, the weight's size
};
struct ExternalWeights {
  bool present = false;
  std::vector<ExternalFile> files;
  std::vector<ExternalRef> refs; // one per weight, in metadata order
};

struct Metadata {
  uint32_t formatVersion = kFormatVersion;
  uint32_t abiVersion = 0;       // KILN_ABI_VERSION of the generated code
  std::string compilerVersion;
  std::string sourceModelSha256; // hex
  std::string producer;          // ONNX producer_name + version
  int64_t opsetVersion = 0;
  std::string targetTriple;
  std::string targetCpu;
  std::vector<std::string> cpuFeatures; // features the code needs, e.g. "avx2", "fma"
  std::vector<std::string> passes;      // pipeline phases run, in order
  std::string entrySymbol;              // "kiln_entry"
  std::vector<TensorSignature> inputs;
  std::vector<TensorSignature> outputs;
  std::vector<WeightInfo> weights;      // in the order the entry receives them, after the inputs
  std::vector<KernelInfo> kernels;      // indexed by kernel_id of kiln_abi_context::parallel_for
  DecoderInfo decoder;
  QuantizationInfo quantization;
  CudaInfo cuda;
  ExternalWeights external;
};

struct WeightSource {
  const void *data = nullptr; // bytes to stream into the weights section (e.g. from a mapped model)
  uint64_t size = 0;
  // The bytes are a read-only file mapping: once written, their pages are dropped from the
  // process (madvise), so streaming gigabytes of weights never holds them all in memory.
  bool dropAfterWrite = false;
  // When panel > 0 the bytes are a row-major [rows, cols] matrix of elementSize-byte elements,
  // written as column panels [cols / panel, rows, panel] (kiln-pack-matmul-weights).
  uint64_t rows = 0, cols = 0, panel = 0, elementSize = 0;
  // With panel > 0: the bytes are the transpose, a row-major [cols, rows] matrix (a convolution's
  // [Cout, K] weight); the panels are still those of the [rows, cols] matrix.
  bool transposed = false;
};

// Writes the artifact to `path` (via a temporary file renamed into place). Offsets and sizes of
// `meta.weights` are computed here and overwrite what the caller set. Byte-deterministic.
// With meta.external present, `weights` must be empty: each weight's size comes from its ref,
// its offset is 0 and the weights section is empty (the kiln weights file: weight_files.h).
bool writeArtifact(const std::string &path, Metadata meta, const std::string &code,
                   const std::vector<WeightSource> &weights, std::string *error);

// A parsed view of an artifact held in memory (e.g. a read-only mapping of the file).
struct ArtifactView {
  Metadata meta;
  const uint8_t *code = nullptr;
  uint64_t codeSize = 0;
  const uint8_t *weights = nullptr; // weights section start, aligned to 4096 in the file
  uint64_t weightsSize = 0;
};

// Validates every offset and size against `size`; never reads out of bounds. On failure returns false
// and says why in `error` (e.g. "not a kiln artifact (bad magic)", "artifact format version 2, runtime reads 1").
bool parseArtifact(const uint8_t *data, uint64_t size, ArtifactView *out, std::string *error);

// Writes a parsed artifact again under new metadata (e.g. with an accuracy report added) at `path`,
// atomically: code and weights are copied from `view` as stored, weight names, dtypes and dims must
// stay those of view.meta. The bytes equal those writeArtifact would have produced with `meta`.
bool rewriteArtifact(const std::string &path, const ArtifactView &view, Metadata meta, std::string *error);

} // namespace kiln::artifact

#endif
