// The importer's external-data checks against the traversal corpus: every way a model file has
// been used to read outside its directory (in onnx and elsewhere), and every size that could
// overflow or disagree, must be refused with an error that says why; the honest model must load.
#include "compiler/importer/ModelSource.h"
#include "compiler/importer/OnnxImporter.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

constexpr int kCount = 8; // W is float[8]: 32 bytes

struct Location {
  std::string location;
  std::string offset, length; // "" = not given
};

// x + W with W stored as described.
enum class Storage { External, RawShort, TypedEmpty };

std::string modelBytes(const Location &where, int64_t dim, Storage storage) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto *g = model.mutable_graph();
  g->set_name("external");
  auto declare = [](onnx::ValueInfoProto *v, const char *name) {
    v->set_name(name);
    auto *t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(kCount);
  };
  declare(g->add_input(), "x");
  declare(g->add_output(), "y");
  onnx::TensorProto *w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(dim);
  if (storage == Storage::RawShort) {
    w->set_raw_data(std::string(4 * kCount - 4, '\0'));
  } else if (storage == Storage::TypedEmpty) {
    w->add_float_data(1.0f); // one value where the dims ask for many
  } else {
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char *key, const std::string &value) {
      auto *e = w->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", where.location);
    if (!where.offset.empty())
      add("offset", where.offset);
    if (!where.length.empty())
      add("length", where.length);
  }
  onnx::NodeProto *n = g->add_node();
  n->set_op_type("Add");
  n->set_name("add");
  n->add_input("x");
  n->add_input("W");
  n->add_output("y");
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

class ExternalData : public ::testing::Test {
protected:
  std::string root, dir;

  void SetUp() override {
    char tmpl[] = "/tmp/kiln-external-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root = tmpl;
    dir = root + "/model";
    ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir((dir + "/sub").c_str(), 0700), 0);
    write(root + "/secret.bin", std::string(4 * kCount, 's'));
    write(dir + "/weights.bin", std::string(4 * kCount, '\0'));
  }
  void TearDown() override { std::system(("rm -rf '" + root + "'").c_str()); }

  static void write(const std::string &path, const std::string &bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }

  // Imports the model written with `where`; returns "" on success, else the error.
  std::string import(const Location &where, int64_t dim = kCount, Storage storage = Storage::External) {
    write(dir + "/model.onnx", modelBytes(where, dim, storage));
    mlir::MLIRContext context;
    std::string error;
    kiln::ImportedModel m = kiln::importOnnxFile(context, dir + "/model.onnx", error);
    if (m.module)
      return "";
    EXPECT_FALSE(error.empty());
    return error.empty() ? "(no message)" : error;
  }
};

#define EXPECT_REFUSED(call, phrase)                                                            \
  do {                                                                                          \
    std::string err = (call);                                                                   \
    EXPECT_NE(err.find(phrase), std::string::npos) << "error was: '" << err << "'";             \
  } while (0)

TEST_F(ExternalData, HonestModelLoads) {
  EXPECT_EQ(import({"weights.bin", "", ""}), "");
  EXPECT_EQ(import({"./weights.bin", "0", "32"}), "");
  write(dir + "/sub/w.bin", std::string(4 * kCount, '\0'));
  EXPECT_EQ(import({"sub/w.bin", "", ""}), "");
}

TEST_F(ExternalData, ParentDirectory) {
  EXPECT_REFUSED(import({"../secret.bin", "", ""}), "leaves the model's directory");
}

TEST_F(ExternalData, ParentHiddenBehindASubdirectory) {
  EXPECT_REFUSED(import({"sub/../../secret.bin", "", ""}), "leaves the model's directory");
  EXPECT_REFUSED(import({"a/../../secret.bin", "", ""}), "leaves the model's directory");
  // Even a `..` that would stay inside is refused: there is no need for one.
  EXPECT_REFUSED(import({"sub/../weights.bin", "", ""}), "leaves the model's directory");
}

TEST_F(ExternalData, BackslashSeparators) {
  EXPECT_REFUSED(import({"..\\secret.bin", "", ""}), "leaves the model's directory");
}

TEST_F(ExternalData, AbsolutePaths) {
  EXPECT_REFUSED(import({root + "/secret.bin", "", ""}), "absolute path");
  EXPECT_REFUSED(import({dir + "/weights.bin", "", ""}), "absolute path");
  EXPECT_REFUSED(import({"/etc/passwd", "", ""}), "absolute path");
}

TEST_F(ExternalData, SymlinkToAFileOutside) {
  ASSERT_EQ(::symlink("../secret.bin", (dir + "/link.bin").c_str()), 0);
  EXPECT_REFUSED(import({"link.bin", "", ""}), "symlink");
}

TEST_F(ExternalData, SymlinkEvenToAFileInside) {
  ASSERT_EQ(::symlink("weights.bin", (dir + "/alias.bin").c_str()), 0);
  EXPECT_REFUSED(import({"alias.bin", "", ""}), "symlink");
}

TEST_F(ExternalData, SymlinkedDirectoryOnTheWay) {
  ASSERT_EQ(::symlink("..", (dir + "/sub/up").c_str()), 0);
  EXPECT_REFUSED(import({"sub/up/secret.bin", "", ""}), "symlink");
  ASSERT_EQ(::symlink(root.c_str(), (dir + "/rootlink").c_str()), 0);
  EXPECT_REFUSED(import({"rootlink/secret.bin", "", ""}), "symlink");
}

TEST_F(ExternalData, HardLinkToAFileOutside) {
  ASSERT_EQ(::link((root + "/secret.bin").c_str(), (dir + "/hard.bin").c_str()), 0);
  EXPECT_REFUSED(import({"hard.bin", "", ""}), "hard links");
}

TEST_F(ExternalData, NotARegularFile) {
  EXPECT_REFUSED(import({"sub", "", ""}), "not a regular file");
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_REFUSED(import({"fifo", "", ""}), "not a regular file"); // and does not block
  EXPECT_REFUSED(import({"missing.bin", "", ""}), "not found");
}

TEST_F(ExternalData, NulByteInTheLocation) {
  EXPECT_REFUSED(import({std::string("weights.bin\0/../../secret.bin", 29), "", ""}), "NUL byte");
}

TEST_F(ExternalData, OffsetPlusLengthWraps) {
  // 2^64 - 16 would wrap to 16 when added to the 32 bytes; 19 digits is the most kiln parses.
  EXPECT_REFUSED(import({"weights.bin", "18446744073709551600", "32"}), "not a valid number");
  EXPECT_REFUSED(import({"weights.bin", "9999999999999999999", "32"}), "lies outside");
  EXPECT_REFUSED(import({"weights.bin", "8", "32"}), "lies outside");
  EXPECT_REFUSED(import({"weights.bin", "-8", ""}), "not a valid number");
}

TEST_F(ExternalData, LengthDisagreesWithDimsTimesDtype) {
  EXPECT_REFUSED(import({"weights.bin", "", "28"}), "does not match");
  EXPECT_REFUSED(import({"weights.bin", "", "36"}), "does not match");
  // Dims whose product overflows, and dims the file cannot back.
  EXPECT_REFUSED(import({"weights.bin", "", ""}, int64_t(1) << 62), "too large");
  EXPECT_REFUSED(import({"weights.bin", "", ""}, 1024), "lies outside");
}

TEST_F(ExternalData, RawDataShorterThanDims) {
  EXPECT_REFUSED(import({"", "", ""}, kCount, Storage::RawShort), "bytes of raw data");
}

TEST_F(ExternalData, TypedFieldsDoNotSizeAnAllocation) {
  // 2^39 floats (2 TiB) declared, one given: refused before anything that size is allocated.
  EXPECT_REFUSED(import({"", "", ""}, int64_t(1) << 39, Storage::TypedEmpty), "its shape needs");
}

} // namespace
