// The default domain's op table (ONNX op type -> importer), gathered from the op families' files.
#include "compiler/importer/NodeContext.h"

namespace kiln {

const llvm::StringMap<NodeImporter> &nodeImporters() {
  static const llvm::StringMap<NodeImporter> table = [] {
    llvm::StringMap<NodeImporter> t;
    // One call per op family (<Family>Importers.cpp, listed in NodeContext.h);
    // each op type is registered by exactly one family, so the order does not matter.
    addElementwiseImporters(t);
    addReductionImporters(t);
    addNormalizationImporters(t);
    addLinearAlgebraImporters(t);
    addConvolutionImporters(t);
    addPoolingImporters(t);
    addQuantizationImporters(t);
    addShapeImporters(t);
    addSlicingImporters(t);
    addIndexingImporters(t);
    addConstantImporters(t);
    addSamplingImporters(t);
    registerRecurrentImporters(t);
    addSignalImporters(t);
    addReverseSequenceImporter(t);
    addDataDependentImporters(t);
    addTextFeatureImporters(t);
    addStringImporters(t);
    return t;
  }();
  return table;
}

} // namespace kiln
