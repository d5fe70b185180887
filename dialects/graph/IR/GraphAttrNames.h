// Names of the attributes that carry a model's contract through the compiler: module and @main attributes.
#ifndef KILN_DIALECTS_GRAPH_GRAPHATTRNAMES_H
#define KILN_DIALECTS_GRAPH_GRAPHATTRNAMES_H

namespace kiln {

/// Attribute names the importer puts on the module and on @main's arguments
/// and results, that graph passes read and update, and that the artifact
/// writer reads back. They live with the dialect (not the importer) so that
/// passes depend on the IR only. The namespace stays kiln::attrs, as every
/// user already spells it.
namespace attrs {
constexpr const char *kOpset = "kiln.opset";
constexpr const char *kSourceSha256 = "kiln.source_sha256";
constexpr const char *kProducer = "kiln.producer";
constexpr const char *kName = "kiln.name";     // ONNX tensor name
constexpr const char *kDtype = "kiln.dtype";   // ONNX TensorProto.DataType
constexpr const char *kDims = "kiln.dims";     // dim_param names ("" if static)
constexpr const char *kWeights = "kiln.weights"; // module: [ElementsAttr...]
constexpr const char *kWeightNames = "kiln.weight_names";
// Set by kiln-outline-weights on each weight argument of @main: its index in kiln.weights (such
// arguments are not part of the model's signature).
constexpr const char *kWeight = "kiln.weight";
// Set by kiln-pack-matmul-weights: per weight, [] (as imported) or [K, N, B] (stored as [N/B, K, B]).
constexpr const char *kWeightLayouts = "kiln.weight_layouts";
// Set by kiln-kv-cache-in-place on @main's arguments.
constexpr const char *kKvCache = "kiln.kv_cache";       // a KV cache input: the axis entries are appended on
constexpr const char *kKvPosition = "kiln.kv_position"; // the scalar input: entries already in every cache
constexpr const char *kKvRowPositions = "kiln.kv_row_positions"; // [batch] input: each row's own length
constexpr const char *kKvBlockTable = "kiln.kv_block_table"; // [batch, blocks] input of a paged cache
constexpr const char *kLogitRows = "kiln.logit_rows"; // scalar input: logits for each row's last N positions
// An scf.for whose iterations write disjoint elements, which its lowering knows and no analysis
// could prove (a paged KV write: each token to the slot its sequence's block table names).
constexpr const char *kDisjointIterations = "kiln.disjoint_iterations";
// On a view of the memory plan's arena: the planner positions [first, last] its buffer is live.
// Buffers whose spans overlap never share bytes; others may (the later one reusing the bytes).
constexpr const char *kPlanLive = "kiln.plan_live";
constexpr const char *kKvBlockSize = "kiln.kv_block_size";   // module: entries per block of paged caches
constexpr const char *kMaxPositions = "kiln.max_positions"; // module: rows of a learned position table
} // namespace attrs

} // namespace kiln

#endif
