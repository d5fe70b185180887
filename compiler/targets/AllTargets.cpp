// Registers the targets listed in Targets.def: adding a target adds a line there, nothing here.
#include "compiler/targets/TargetBackend.h"

namespace kiln {

#define KILN_TARGET(Name) void register##Name##TargetBackends();
#include "compiler/targets/Targets.def"

void registerAllTargetBackends() {
  static const bool done = [] {
#define KILN_TARGET(Name) register##Name##TargetBackends();
#include "compiler/targets/Targets.def"
    return true;
  }();
  (void)done;
}

} // namespace kiln
