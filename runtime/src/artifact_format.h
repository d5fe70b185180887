// Forwards to format/artifact_format.h for tools/compile only, until it moves to compiler/driver and includes that.
#ifndef KILN_RUNTIME_ARTIFACT_FORMAT_FORWARD_H
#define KILN_RUNTIME_ARTIFACT_FORMAT_FORWARD_H
#include "format/artifact_format.h"
#endif
