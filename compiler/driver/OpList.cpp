// The importer's op tables, merged into one sorted list.
#include "compiler/driver/OpList.h"

#include "compiler/importer/ControlFlowImporters.h"
#include "compiler/importer/NodeContext.h"
#include "compiler/importer/SequenceImporters.h"

#include <algorithm>

namespace kiln::driver {

std::vector<std::string> supportedOps() {
  std::vector<std::string> names;
  for (const auto &entry : nodeImporters())
    names.push_back(entry.getKey().str());
  for (const auto &entry : sequenceImporters())
    names.push_back(entry.getKey().str());
  for (const auto &entry : controlFlowImporters())
    names.push_back(entry.getKey().str());
  for (const auto &entry : trainingImporters())
    names.push_back(entry.getKey().str());
  names.push_back("Gradient"); // ai.onnx.preview.training, imported with the graph importer's scope
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace kiln::driver
