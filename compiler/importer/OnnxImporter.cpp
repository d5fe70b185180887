// Reads an ONNX ModelProto and builds @main in the graph dialect: signature, weights, nodes in order.
#include "compiler/importer/OnnxImporter.h"
#include "compiler/importer/ModelSource.h"
#include "compiler/importer/NodeContext.h"
#include "compiler/importer/ControlFlowImporters.h"
#include "compiler/importer/SequenceImporters.h"

#include "dialects/graph/IR/Graph.h"
#include "dialects/graph/IR/GraphAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

using namespace mlir;

namespace kiln {
namespace {

constexpr const char *kTrainingDomain = "ai.onnx.preview.training";

std::string hexDigest(ArrayRef<uint8_t> bytes) {
  static const char *digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

/// How much of an operand's shape is part of the graph's structure, not a
/// size: a shape, axes, pads or scales operand's length decides a result's
/// rank or how many values the op reads, a scalar given as [1] is one value,
/// and the last dim of GatherND/ScatterND indices (the coordinates' length)
/// or of a DFT signal (real or complex) decides a rank or a layout.
/// --symbolic-input-dims keeps these dims when such an operand is a graph
/// input (a static-rank compiler cannot leave a rank to run time).
enum class Structure { None, AllDims, LastDim };

Structure structureOfOperand(llvm::StringRef op, int index) {
  static const llvm::StringMap<SmallVector<int>> operands = {
      {"Reshape", {1}},         {"Expand", {1}},        {"ConstantOfShape", {0}},
      {"Tile", {1}},            {"Slice", {1, 2, 3, 4}}, {"Squeeze", {1}},
      {"Unsqueeze", {1}},       {"Pad", {1, 2, 3}},     {"Resize", {1, 2, 3}},
      {"Upsample", {1}},        {"Split", {1}},         {"TopK", {1}},
      {"OneHot", {1, 2}},       {"CumSum", {1}},        {"Range", {0, 1, 2}},
      {"Clip", {1, 2}},         {"Trilu", {1}},         {"Dropout", {1, 2}},
      {"NonMaxSuppression", {2, 3, 4}}, {"DFT", {1, 2}}, {"STFT", {1, 2, 3}},
      {"HannWindow", {0}},      {"HammingWindow", {0}}, {"BlackmanWindow", {0}},
      {"MelWeightMatrix", {0, 1, 2, 3, 4}}, {"SplitToSequence", {1}},
      {"SequenceAt", {1}},     {"SequenceInsert", {2}}, {"SequenceErase", {1}},
      {"QuantizeLinear", {1, 2}},
      {"DequantizeLinear", {1, 2}}, {"ReverseSequence", {1}}};
  static const llvm::StringMap<SmallVector<int>> lastDims = {
      {"GatherND", {1}}, {"ScatterND", {1}}, {"DFT", {0}}, {"STFT", {0}}};
  if (op.starts_with("Reduce"))
    return index == 1 ? Structure::AllDims : Structure::None;
  auto it = operands.find(op);
  if (it != operands.end() && llvm::is_contained(it->second, index))
    return Structure::AllDims;
  auto last = lastDims.find(op);
  if (last != lastDims.end() && llvm::is_contained(last->second, index))
    return Structure::LastDim;
  return Structure::None;
}

class GraphImporter : public SubgraphImporter {
public:
  GraphImporter(MLIRContext &ctx, ModelSource &source, std::string &error,
                const ImportOptions &options)
      : ctx(ctx), source(source), error(error), options(options), builder(&ctx) {}

  OwningOpRef<ModuleOp> run(const std::string &sha256);
  FailureOr<SmallVector<Value>> importSubgraph(const onnx::GraphProto &graph, ArrayRef<Value> inputs) override;
  Value lookupName(llvm::StringRef name) const override {
    auto it = values.find(name);
    return it == values.end() ? Value() : it->second;
  }

private:
  LogicalResult importSignatureType(const onnx::ValueInfoProto &info,
                                    RankedTensorType &type,
                                    SmallVector<Attribute> &dimNames,
                                    int32_t &dtype);
  LogicalResult importNode(const onnx::NodeProto &node, size_t index);
  Value lookup(const std::string &name) const {
    auto it = values.find(name);
    return it == values.end() ? Value() : it->second;
  }

  MLIRContext &ctx;
  ModelSource &source;
  std::string &error;
  ImportOptions options;
  OpBuilder builder;
  int64_t opset = 0;         // of the default domain
  int64_t trainingOpset = 0; // of ai.onnx.preview.training
  llvm::StringMap<Value> values;
  // Sequences resolved while importing (SequenceImporters.cpp), by name.
  llvm::StringMap<SequenceElements> sequences;
  // Subgraphs being imported inside one another (If branches, Scan bodies).
  int subgraphDepth = 0;
  llvm::StringSet<> unsupportedOutputs;
};

LogicalResult GraphImporter::importSignatureType(
    const onnx::ValueInfoProto &info, RankedTensorType &type,
    SmallVector<Attribute> &dimNames, int32_t &dtype) {
  if (!info.type().has_tensor_type()) {
    error = "graph input/output '" + info.name() +
            "' is not a tensor (sequences, maps and optionals are unsupported)";
    return failure();
  }
  const auto &tt = info.type().tensor_type();
  dtype = tt.elem_type();
  Type et = onnxElementType(&ctx, dtype);
  if (!et) {
    error = "graph input/output '" + info.name() + "' has unsupported data type " +
            std::to_string(dtype);
    return failure();
  }
  if (!tt.has_shape()) {
    error = "graph input '" + info.name() + "' has no shape (unknown rank)";
    return failure();
  }
  SmallVector<int64_t> dims;
  for (const auto &d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) {
      dims.push_back(d.dim_value());
      dimNames.push_back(builder.getStringAttr(""));
    } else {
      dims.push_back(ShapedType::kDynamic);
      dimNames.push_back(builder.getStringAttr(d.has_dim_param() ? d.dim_param() : ""));
    }
  }
  type = RankedTensorType::get(dims, et);
  return success();
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node,
                                        size_t index) {
  std::string name = node.name().empty()
                         ? node.op_type() + "_" + std::to_string(index)
                         : node.name();
  // Each domain has its own table and opset version.
  bool training = node.domain() == kTrainingDomain;
  if (!node.domain().empty() && node.domain() != "ai.onnx" && !training) {
    error = "unsupported op '" + node.op_type() + "' from domain '" +
            node.domain() + "' (node '" + name + "')";
    return failure();
  }
  int64_t version = training ? trainingOpset : opset;
  if (version == 0) {
    error = "node '" + name + "' (" + node.op_type() + ") is in domain '" +
            (training ? node.domain() : std::string("ai.onnx")) +
            "', which the model does not import";
    return failure();
  }
  if (training && version != 1) {
    error = "unsupported " + node.domain() + " opset " + std::to_string(version) +
            " (node '" + name + "'; kiln knows version 1)";
    return failure();
  }
  const auto &table = training ? trainingImporters() : nodeImporters();
  auto it = table.find(node.op_type());
  const auto &sequenceTable = sequenceImporters();
  auto seqIt = training ? sequenceTable.end() : sequenceTable.find(node.op_type());
  const auto &controlTable = controlFlowImporters();
  auto controlIt = training ? controlTable.end() : controlTable.find(node.op_type());
  bool gradient = training && node.op_type() == "Gradient";
  if (it == table.end() && seqIt == sequenceTable.end() && controlIt == controlTable.end() && !gradient) {
    error = "unsupported op '" + node.op_type() + "' " +
            (training ? "from domain '" + node.domain() + "' " : std::string()) +
            "(node '" + name + "', opset " + std::to_string(version) + ")";
    return failure();
  }
  SmallVector<Value> inputs;
  SmallVector<const SequenceElements *> sequenceInputs;
  for (const std::string &in : node.input()) {
    auto seq = sequences.find(in);
    sequenceInputs.push_back(seq == sequences.end() ? nullptr : &seq->second);
    if (seq != sequences.end() && seqIt == sequenceTable.end()) {
      error = "node '" + name + "' (" + node.op_type() + ") takes the sequence '" + in +
              "'; kiln supports sequences only between sequence ops";
      return failure();
    }
    if (in.empty() || seq != sequences.end()) {
      inputs.push_back(Value());
      continue;
    }
    Value v = lookup(in);
    if (!v) {
      if (unsupportedOutputs.contains(in))
        error = "node '" + name + "' (" + node.op_type() + ") uses '" + in +
                "', an output kiln does not compute";
      else
        error = "node '" + name + "' (" + node.op_type() + ") input '" + in +
                "' is not a graph input, an initializer or an earlier node's output";
      return failure();
    }
    if (isStringType(v.getType()) && !acceptsStringInputs(node.op_type())) {
      error = "unsupported string input '" + in + "' to op '" + node.op_type() + "' (node '" + name +
              "', opset " + std::to_string(version) + ")";
      return failure();
    }
    inputs.push_back(v);
  }
  Location loc = NameLoc::get(builder.getStringAttr(name));
  // The context must reference the model's own node: constants imported
  // from its attributes point into it.
  NodeContext context(node, name, builder, loc, version, source, std::move(inputs), error);
  if (seqIt != sequenceTable.end()) {
    auto result = seqIt->second(context, sequenceInputs);
    if (failed(result)) {
      if (error.empty())
        error = "node '" + name + "' (" + node.op_type() + "): import failed";
      return failure();
    }
    if (node.output_size() >= 1 && !node.output(0).empty()) {
      if (result->isSequence)
        sequences[node.output(0)] = std::move(result->values);
      else
        values[node.output(0)] = result->values[0];
    }
    return success();
  }
  auto results = gradient                         ? importGradient(context, *this)
                 : controlIt != controlTable.end() ? controlIt->second(context, *this)
                                                   : it->second(context);
  if (failed(results)) {
    if (error.empty())
      error = "node '" + name + "' (" + node.op_type() + "): import failed";
    return failure();
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    if (i < (int)results->size())
      values[node.output(i)] = (*results)[i];
    else
      unsupportedOutputs.insert(node.output(i));
  }
  return success();
}

FailureOr<SmallVector<Value>> GraphImporter::importSubgraph(const onnx::GraphProto &graph,
                                                            ArrayRef<Value> inputs) {
  // Unrolled bodies nest (a Scan in a Scan): bound the depth so that a
  // hostile model cannot exhaust the stack.
  constexpr int kMaxSubgraphDepth = 16;
  if (subgraphDepth >= kMaxSubgraphDepth) {
    error = "subgraph '" + graph.name() + "' is nested more than " + std::to_string(kMaxSubgraphDepth) + " deep";
    return failure();
  }
  if (graph.input_size() != (int)inputs.size()) {
    error = "subgraph '" + graph.name() + "' has " + std::to_string(graph.input_size()) + " inputs, " +
            std::to_string(inputs.size()) + " given";
    return failure();
  }
  // The subgraph sees the enclosing values; the names it defines shadow them
  // only until it ends.
  llvm::StringMap<Value> outerValues = values;
  llvm::StringMap<SequenceElements> outerSequences = sequences;
  llvm::scope_exit restore([&] {
    values = std::move(outerValues);
    sequences = std::move(outerSequences);
    --subgraphDepth;
  });
  ++subgraphDepth;
  for (int i = 0; i < graph.input_size(); ++i) {
    values[graph.input(i).name()] = inputs[i];
    sequences.erase(graph.input(i).name());
  }
  for (const auto &init : graph.initializer()) {
    auto attr = importTensor(&ctx, init, source, error);
    if (failed(attr))
      return failure();
    values[init.name()] =
        graph::ConstantOp::create(builder, NameLoc::get(builder.getStringAttr(init.name())), *attr);
  }
  for (int i = 0; i < graph.node_size(); ++i)
    if (failed(importNode(graph.node(i), i)))
      return failure();
  SmallVector<Value> outputs;
  for (const auto &out : graph.output()) {
    Value v = lookup(out.name());
    if (!v) {
      error = "subgraph '" + graph.name() + "' output '" + out.name() + "' " +
              (sequences.count(out.name()) ? "is a sequence" : "is not produced by any node");
      return failure();
    }
    outputs.push_back(v);
  }
  return outputs;
}

OwningOpRef<ModuleOp> GraphImporter::run(const std::string &sha256) {
  const onnx::ModelProto &model = source.model;
  for (const auto &imp : model.opset_import()) {
    if (imp.domain().empty() || imp.domain() == "ai.onnx")
      opset = imp.version();
    else if (imp.domain() == kTrainingDomain)
      trainingOpset = imp.version();
  }
  // A model of training-domain nodes alone need not import the default opset.
  if (opset == 0 && trainingOpset == 0) {
    error = "the model imports no version of the default ONNX opset";
    return nullptr;
  }
  if (!model.has_graph()) {
    error = "the model has no graph";
    return nullptr;
  }
  const onnx::GraphProto &g = model.graph();

  // Diagnostics from shape inference are turned into the one-line error.
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error && error.empty()) {
      std::string where;
      if (auto nl = dyn_cast<NameLoc>(d.getLocation()))
        where = "node '" + nl.getName().str() + "': ";
      error = where + d.str();
    }
    return success();
  });

  auto module = ModuleOp::create(UnknownLoc::get(&ctx));
  OwningOpRef<ModuleOp> owned(module);
  if (opset != 0)
    module->setAttr(attrs::kOpset, builder.getI64IntegerAttr(opset));
  module->setAttr(attrs::kSourceSha256, builder.getStringAttr(sha256));
  module->setAttr(attrs::kProducer,
                  builder.getStringAttr(model.producer_name() + " " +
                                        model.producer_version()));

  // Initializers first (an input that is also an initializer is a constant).
  llvm::StringSet<> initializerNames;
  for (const auto &init : g.initializer())
    initializerNames.insert(init.name());

  // Input name -> how much of its shape stays static (the strongest use wins).
  llvm::StringMap<Structure> structuralInputs;
  if (options.symbolicInputDims)
    for (const auto &node : g.node())
      for (int i = 0; i < node.input_size(); ++i) {
        Structure st = structureOfOperand(node.op_type(), i);
        Structure &kept = structuralInputs[node.input(i)];
        if (st == Structure::AllDims || (st == Structure::LastDim && kept == Structure::None))
          kept = st;
      }

  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::string> argNames;
  for (const auto &in : g.input()) {
    if (initializerNames.contains(in.name()))
      continue;
    RankedTensorType type;
    SmallVector<Attribute> dims;
    int32_t dtype;
    if (failed(importSignatureType(in, type, dims, dtype)))
      return nullptr;
    if (options.symbolicInputDims) {
      Structure kept = structuralInputs.lookup(in.name());
      SmallVector<int64_t> dims(type.getRank(), ShapedType::kDynamic);
      if (kept == Structure::AllDims)
        dims.assign(type.getShape().begin(), type.getShape().end());
      else if (kept == Structure::LastDim && type.getRank() > 0)
        dims.back() = type.getShape().back();
      type = RankedTensorType::get(dims, type.getElementType());
    }
    argTypes.push_back(type);
    argNames.push_back(in.name());
    argAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr(attrs::kName, builder.getStringAttr(in.name())),
         builder.getNamedAttr(attrs::kDtype, builder.getI32IntegerAttr(dtype)),
         builder.getNamedAttr(attrs::kDims, builder.getArrayAttr(dims))}));
  }

  builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(builder, UnknownLoc::get(&ctx), "main",
                                   builder.getFunctionType(argTypes, {}));
  func.setAllArgAttrs(argAttrs);
  Block *body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);
  for (size_t i = 0; i < argNames.size(); ++i)
    values[argNames[i]] = body->getArgument(i);

  for (const auto &init : g.initializer()) {
    auto attr = importTensor(&ctx, init, source, error);
    if (failed(attr))
      return nullptr;
    values[init.name()] = graph::ConstantOp::create(
        builder, NameLoc::get(builder.getStringAttr(init.name())), *attr);
  }

  for (int i = 0; i < g.node_size(); ++i)
    if (failed(importNode(g.node(i), i)))
      return nullptr;

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  for (const auto &out : g.output()) {
    Value v = lookup(out.name());
    if (!v) {
      error = sequences.count(out.name())
                  ? "graph output '" + out.name() + "' is a sequence (kiln's outputs are tensors)"
                  : "graph output '" + out.name() + "' is not produced by any node";
      return nullptr;
    }
    RankedTensorType declared;
    SmallVector<Attribute> dims;
    int32_t dtype = 0;
    auto vt = cast<RankedTensorType>(v.getType());
    if (out.type().has_tensor_type() && out.type().tensor_type().has_shape() &&
        succeeded(importSignatureType(out, declared, dims, dtype)) &&
        declared.getRank() == vt.getRank()) {
      // Keep the model's dim names; sizes come from inference.
    } else {
      error.clear();
      dims.assign(vt.getRank(), builder.getStringAttr(""));
      dtype = out.type().tensor_type().elem_type();
    }
    results.push_back(v);
    resultTypes.push_back(v.getType());
    resultAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr(attrs::kName, builder.getStringAttr(out.name())),
         builder.getNamedAttr(attrs::kDtype, builder.getI32IntegerAttr(dtype)),
         builder.getNamedAttr(attrs::kDims, builder.getArrayAttr(dims))}));
  }
  func::ReturnOp::create(builder, UnknownLoc::get(&ctx), results);
  func.setType(builder.getFunctionType(argTypes, resultTypes));
  func.setAllResultAttrs(resultAttrs);

  if (failed(verify(module))) {
    if (error.empty())
      error = "the imported module failed verification";
    return nullptr;
  }
  return owned;
}

} // namespace

ImportedModel importOnnxBytes(MLIRContext &context, llvm::StringRef bytes, const std::string &modelDir,
                              const std::string &displayName, std::string &error,
                              const ImportOptions &options) {
  context.getOrLoadDialect<graph::GraphDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
  ImportedModel result;
  auto source = std::make_shared<ModelSource>();
  if (bytes.size() > (size_t)INT32_MAX) {
    error = "'" + displayName + "' is over 2 GiB; store large weights as external data";
    return result;
  }
  if (!source->model.ParseFromArray(bytes.data(), (int)bytes.size())) {
    error = "'" + displayName + "' is not a valid ONNX model (protobuf parse failed)";
    return result;
  }
  std::string sha = hexDigest(llvm::SHA256::hash(
      ArrayRef<uint8_t>((const uint8_t *)bytes.data(), bytes.size())));

  // External data resolves against the canonical directory (TensorImport.cpp keeps it inside).
  SmallString<256> dir(modelDir.empty() ? "." : modelDir);
  llvm::sys::fs::make_absolute(dir);
  SmallString<256> real;
  if (llvm::sys::fs::real_path(dir, real))
    real = dir;
  source->modelDir = std::string(real);

  GraphImporter importer(context, *source, error, options);
  result.module = importer.run(sha);
  if (!result.module && error.empty())
    error = "import failed";
  result.source = source;
  return result;
}

ImportedModel importOnnxFile(MLIRContext &context, const std::string &path,
                             std::string &error, const ImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read '" + path + "': " + buffer.getError().message();
    return {};
  }
  SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  return importOnnxBytes(context, (*buffer)->getBuffer(), std::string(dir), path, error, options);
}

} // namespace kiln
