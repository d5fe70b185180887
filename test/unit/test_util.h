// Helpers shared by the runtime unit tests: temp dirs, file I/O, and artifacts built around the C fixture.
#ifndef KILN_TEST_UNIT_TEST_UTIL_H
#define KILN_TEST_UNIT_TEST_UTIL_H

#include "format/artifact_format.h"

#include <string>
#include <vector>

namespace kiln::test {

// A fresh directory under $TMPDIR (or /tmp), removed by the destructor.
class TempDir {
public:
  TempDir();
  ~TempDir();
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

std::string readFile(const std::string &path);
void writeFile(const std::string &path, const std::string &bytes);

// The compiled fixture test/unit/fixtures/add_weight.c: y[batch,4] = x[batch,4] + w[4].
std::string addWeightCode();
// Metadata matching that fixture, runnable on this host.
artifact::Metadata addWeightMetadata();
extern const float kAddWeight[4];

// Writes an artifact with `meta` (default: addWeightMetadata), the fixture's code and weight w.
std::string writeAddWeightArtifact(const TempDir &dir, const std::string &name,
                                   const artifact::Metadata &meta = addWeightMetadata(),
                                   const std::string &code = addWeightCode());

} // namespace kiln::test

#endif
