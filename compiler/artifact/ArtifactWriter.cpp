// Builds artifact metadata (signature, lineage, target, weights, kernels) from module attributes.
#include "compiler/artifact/ArtifactWriter.h"

#include "compiler/importer/OnnxImporter.h"
#include "dialects/graph/IR/Graph.h"
#include "passes/host/Passes.h"
#include "runtime/include/kiln/abi.h"
#include "format/artifact_format.h"
#include "format/weight_files.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <map>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;

namespace kiln {
namespace {

/// Bytes of an ElementsAttr weight: resources by reference, dense by raw
/// data (splats expanded into `scratch`).
bool weightBytes(Attribute attr, std::vector<char> &scratch, artifact::WeightSource &src) {
  auto elements = dyn_cast<ElementsAttr>(attr);
  ArrayRef<char> bytes;
  if (!elements || !graph::constantBytes(elements, scratch, bytes))
    return false;
  src.data = bytes.data();
  src.size = bytes.size();
  return true;
}

uint32_t onnxDtype(Type t) {
  if (t.isF32()) return 1;
  if (t.isF64()) return 11;
  if (t.isF16()) return 10;
  if (t.isBF16()) return 16;
  if (t.isInteger(1)) return 9;
  if (t.isInteger(8)) return 3;
  if (t.isInteger(16)) return 5;
  if (t.isInteger(32)) return 6;
  if (t.isInteger(64)) return 7;
  return 0;
}

artifact::TensorSignature signatureOf(DictionaryAttr attrs) {
  artifact::TensorSignature sig;
  if (!attrs)
    return sig;
  if (auto n = attrs.getAs<StringAttr>(attrs::kName))
    sig.name = n.str();
  if (auto d = attrs.getAs<IntegerAttr>(attrs::kDtype))
    sig.dtype = d.getInt();
  return sig;
}

/// --weights=external: the manifest of `meta` from the weights' sources; the weights the compiler
/// transformed (or that are inline or unaligned in the ONNX files) written to `<path>.weights`.
LogicalResult externalizeWeights(const ArtifactInputs &in, const std::string &path, artifact::Metadata &meta,
                                 const std::vector<artifact::WeightSource> &sources, std::string &error) {
  artifact::ExternalWeights &x = meta.external;
  x.present = true;
  x.refs.resize(sources.size());
  std::map<std::string, uint32_t> fileIndex;
  std::vector<artifact::WeightSource> beside;
  std::vector<size_t> besideWeights;
  for (size_t i = 0; i < sources.size(); ++i) {
    const artifact::WeightSource &src = sources[i];
    std::string location;
    uint64_t offset = 0;
    if (src.panel == 0 && src.size > 0 && in.locateExternal &&
        in.locateExternal(src.data, src.size, location, offset) && offset % artifact::kWeightAlignment == 0) {
      auto [it, inserted] = fileIndex.try_emplace(location, uint32_t(x.files.size()));
      if (inserted)
        x.files.push_back({location, artifact::WeightFileOrigin::Source, 0, ""});
      x.refs[i] = {it->second, offset, src.size};
      continue;
    }
    beside.push_back(src);
    besideWeights.push_back(i);
  }
  // Each source file's size and digest, opened under the importer's rules.
  for (artifact::ExternalFile &f : x.files) {
    int fd = artifact::openInside(in.modelDir, f.name, &error);
    if (fd < 0)
      return failure();
    struct stat st;
    bool ok = ::fstat(fd, &st) == 0 && artifact::sha256OfFile(fd, &f.sha256, &error);
    ::close(fd);
    if (!ok) {
      error = "hashing external data file '" + f.name + "': " + error;
      return failure();
    }
    f.size = uint64_t(st.st_size);
  }
  if (!beside.empty()) {
    const std::string name = path.substr(path.find_last_of('/') + 1) + ".weights";
    artifact::ExternalFile f{name, artifact::WeightFileOrigin::Kiln, 0, ""};
    std::vector<uint64_t> offsets;
    if (!artifact::writeWeightsFile(path + ".weights", beside, &offsets, &f, &error))
      return failure();
    const uint32_t index = uint32_t(x.files.size());
    x.files.push_back(f);
    for (size_t j = 0; j < beside.size(); ++j)
      x.refs[besideWeights[j]] = {index, offsets[j], beside[j].size};
  }
  return success();
}

} // namespace

void recordSignature(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return;
  Builder b(module.getContext());
  auto describe = [&](Type t, DictionaryAttr attrs) {
    auto rt = cast<RankedTensorType>(t);
    SmallVector<NamedAttribute> entries(attrs ? attrs.getValue() : ArrayRef<NamedAttribute>{});
    entries.push_back(b.getNamedAttr("shape", b.getDenseI64ArrayAttr(rt.getShape())));
    return b.getDictionaryAttr(entries);
  };
  SmallVector<Attribute> inputs, outputs;
  for (unsigned i = 0; i < main.getNumArguments(); ++i)
    if (!main.getArgAttr(i, attrs::kWeight)) // weights are not part of the signature
      inputs.push_back(describe(main.getArgument(i).getType(), main.getArgAttrDict(i)));
  for (unsigned i = 0; i < main.getNumResults(); ++i)
    outputs.push_back(describe(main.getResultTypes()[i], main.getResultAttrDict(i)));
  module->setAttr("kiln.signature",
                  b.getDictionaryAttr({b.getNamedAttr("inputs", b.getArrayAttr(inputs)),
                                       b.getNamedAttr("outputs", b.getArrayAttr(outputs))}));
}

LogicalResult writeModelArtifact(const ArtifactInputs &in, const std::string &path,
                                 std::string &error) {
  ModuleOp module = in.module;
  artifact::Metadata meta;
  meta.abiVersion = KILN_ABI_VERSION;
  meta.compilerVersion = in.compilerVersion;
  if (auto s = module->getAttrOfType<StringAttr>(attrs::kSourceSha256))
    meta.sourceModelSha256 = s.str();
  if (auto s = module->getAttrOfType<StringAttr>(attrs::kProducer))
    meta.producer = s.str();
  if (auto o = module->getAttrOfType<IntegerAttr>(attrs::kOpset))
    meta.opsetVersion = o.getInt();
  meta.targetTriple = in.target.triple;
  meta.targetCpu = in.target.cpu;
  meta.cpuFeatures = in.target.cpuFeatures;
  meta.passes = in.phases;
  meta.entrySymbol = KILN_ABI_ENTRY_SYMBOL;
  meta.quantization = in.quantization;
  meta.cuda = in.target.cuda;

  auto signature = module->getAttrOfType<DictionaryAttr>("kiln.signature");
  if (!signature) {
    error = "internal: the module lost its signature";
    return failure();
  }
  auto readList = [&](StringRef key, std::vector<artifact::TensorSignature> &out) {
    auto list = signature.getAs<ArrayAttr>(key);
    for (Attribute a : list ? list : ArrayAttr()) {
      auto d = cast<DictionaryAttr>(a);
      artifact::TensorSignature sig = signatureOf(d);
      auto shape = d.getAs<DenseI64ArrayAttr>("shape");
      auto names = d.getAs<ArrayAttr>(attrs::kDims);
      for (size_t i = 0; shape && i < shape.size(); ++i) {
        artifact::Dim dim;
        dim.size = shape[i] == ShapedType::kDynamic ? -1 : shape[i];
        if (dim.size < 0 && names && i < names.size())
          dim.symbol = cast<StringAttr>(names[i]).str();
        sig.dims.push_back(dim);
      }
      out.push_back(sig);
    }
  };
  readList("inputs", meta.inputs);
  readList("outputs", meta.outputs);
  // Inputs that kiln-kv-cache-in-place turned into runtime-owned caches.
  auto inputList = signature.getAs<ArrayAttr>("inputs");
  for (auto [i, a] : llvm::enumerate(inputList ? inputList : ArrayAttr())) {
    auto d = cast<DictionaryAttr>(a);
    if (auto axis = d.getAs<IntegerAttr>(attrs::kKvCache))
      meta.decoder.caches.push_back({uint32_t(i), uint32_t(axis.getInt())});
    if (d.get(attrs::kKvPosition)) {
      meta.decoder.present = true;
      meta.decoder.positionInput = uint32_t(i);
    }
  }
  meta.decoder.maxContext = in.maxContext;
  if (auto rows = module->getAttrOfType<IntegerAttr>(attrs::kMaxPositions))
    meta.decoder.maxContext = std::min<int64_t>(meta.decoder.maxContext, rows.getInt());

  std::vector<artifact::WeightSource> sources;
  std::vector<std::vector<char>> scratch;
  auto weights = module->getAttrOfType<ArrayAttr>(attrs::kWeights);
  auto weightNames = module->getAttrOfType<ArrayAttr>(attrs::kWeightNames);
  auto layouts = module->getAttrOfType<ArrayAttr>(attrs::kWeightLayouts);
  scratch.reserve(weights ? weights.size() : 0);
  for (size_t i = 0; weights && i < weights.size(); ++i) {
    auto type = cast<ShapedType>(cast<TypedAttr>(weights[i]).getType());
    artifact::WeightInfo w;
    w.name = weightNames ? cast<StringAttr>(weightNames[i]).str() : "weight_" + std::to_string(i);
    w.dtype = onnxDtype(type.getElementType());
    w.dims.assign(type.getShape().begin(), type.getShape().end());
    scratch.emplace_back();
    artifact::WeightSource src;
    if (!weightBytes(weights[i], scratch.back(), src)) {
      error = "internal: weight '" + w.name + "' has no readable bytes";
      return failure();
    }
    src.dropAfterWrite = in.isFileBacked && in.isFileBacked(src.data, src.size);
    // Stored as column panels: the entry receives [N/B, K, B]. [K, N, B, 1]:
    // the source is the transposed matrix, [N, K] row-major (convolutions).
    auto layout = layouts && i < layouts.size() ? dyn_cast<DenseI64ArrayAttr>(layouts[i]) : DenseI64ArrayAttr();
    if (layout && (layout.size() == 3 || layout.size() == 4)) {
      src.rows = layout[0];
      src.cols = layout[1];
      src.panel = layout[2];
      src.transposed = layout.size() == 4 && layout[3] != 0;
      src.elementSize = type.getElementTypeBitWidth() / 8;
      w.dims = {layout[1] / layout[2], layout[0], layout[2]};
    }
    meta.weights.push_back(w);
    sources.push_back(src);
  }

  std::map<int32_t, artifact::KernelInfo> kernels;
  module.walk([&](LLVM::LLVMFuncOp f) {
    auto id = f->getAttrOfType<IntegerAttr>(abi::kKernelId);
    if (!id)
      return;
    artifact::KernelInfo k;
    k.name = f.getName().str();
    if (auto names = f->getAttrOfType<ArrayAttr>(abi::kSourceNodes))
      for (Attribute n : names)
        k.sourceNodes.push_back(cast<StringAttr>(n).str());
    kernels[id.getInt()] = k;
  });
  // CUDA kernels: one per launch site, in kernel-id order.
  if (auto table = module->getAttrOfType<ArrayAttr>("kiln.cuda_kernels")) {
    for (auto [i, entry] : llvm::enumerate(table)) {
      auto dict = dyn_cast<DictionaryAttr>(entry);
      auto name = dict ? dict.getAs<StringAttr>("name") : StringAttr();
      if (!name) {
        error = "internal: malformed kiln.cuda_kernels";
        return failure();
      }
      artifact::KernelInfo k;
      k.name = name.str();
      if (auto names = dict.getAs<ArrayAttr>("source_nodes"))
        for (Attribute n : names)
          k.sourceNodes.push_back(cast<StringAttr>(n).str());
      kernels[int32_t(i)] = k;
      auto params = dict.getAs<StringAttr>("params");
      meta.cuda.kernelParams.push_back(params ? params.str() : std::string());
    }
  }
  for (auto &[id, k] : kernels) {
    if (id != (int32_t)meta.kernels.size()) {
      error = "internal: kernel ids are not dense";
      return failure();
    }
    meta.kernels.push_back(k);
  }
  if (in.externalWeights) {
    if (failed(externalizeWeights(in, path, meta, sources, error)))
      return failure();
    sources.clear();
  }
  if (!artifact::writeArtifact(path, meta, in.code, sources, &error))
    return failure();
  return success();
}

} // namespace kiln
