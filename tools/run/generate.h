// kiln-run generate: decoding with a decoder artifact (see kiln-run generate --help).
#ifndef KILN_TOOLS_RUN_GENERATE_H
#define KILN_TOOLS_RUN_GENERATE_H

namespace kiln::tools {
/// argv holds the arguments after "generate". Throws std::runtime_error or kiln errors as messages.
int runGenerate(int argc, char **argv);
} // namespace kiln::tools

#endif
