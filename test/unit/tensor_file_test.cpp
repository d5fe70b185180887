// .npy and TensorProto codecs (support/tensorio): typed and raw fields, dtypes, malformed files, the dtype table.
#include "tensor_file.h"
#include "tensor_compare.h"
#include "tensor_proto_writer.h"

#include "format/dtype.h"
#include "kiln/kiln.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace kiln::tools;

TEST(TensorFile, NpyRoundTripAllDtypes) {
  for (uint32_t dtype : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 9u, 10u, 11u, 12u, 13u}) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {5}, {2, 3}, {0, 4}}) {
      HostTensor t;
      t.dtype = dtype;
      t.shape = shape;
      int64_t n = 1;
      for (int64_t d : shape)
        n *= d;
      const size_t size = dtype == 1 || dtype == 6 || dtype == 12 ? 4 : dtype == 7 || dtype == 11 || dtype == 13 ? 8
                          : dtype == 4 || dtype == 5 || dtype == 10 ? 2 : 1;
      for (int64_t i = 0; i < n * int64_t(size); ++i)
        t.bytes.push_back(char(i * 7 + 1));
      std::string file, error;
      ASSERT_TRUE(encodeNpy(t, &file, &error)) << error;
      EXPECT_EQ((file.size() - t.bytes.size()) % 64, 0u) << "data starts 64-byte aligned";
      HostTensor back;
      ASSERT_TRUE(parseNpy(file, &back, &error)) << error;
      EXPECT_EQ(back.dtype, dtype);
      EXPECT_EQ(back.shape, shape);
      EXPECT_EQ(back.bytes, t.bytes);
    }
  }
}

TEST(TensorFile, NpyErrors) {
  HostTensor t;
  std::string error;
  EXPECT_FALSE(parseNpy("nope", &t, &error));
  EXPECT_EQ(error, "not a .npy file (bad magic)");
  HostTensor f{1, {2}, std::string(8, '\0'), ""};
  std::string file;
  ASSERT_TRUE(encodeNpy(f, &file, &error));
  EXPECT_FALSE(parseNpy(file.substr(0, file.size() - 1), &t, &error));
  EXPECT_NE(error.find("needs 8"), std::string::npos) << error;
  std::string big = file;
  big.replace(big.find("<f4"), 3, ">f4");
  EXPECT_FALSE(parseNpy(big, &t, &error));
  EXPECT_NE(error.find("unsupported .npy dtype"), std::string::npos) << error;
  std::string fortran = file;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_FALSE(parseNpy(fortran, &t, &error));
  EXPECT_NE(error.find("Fortran"), std::string::npos) << error;
}

TEST(TensorFile, TensorProtoRawAndTyped) {
  HostTensor t;
  std::string error;
  const float values[] = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  std::string raw(reinterpret_cast<const char *>(values), sizeof(values));
  ASSERT_TRUE(parseTensorProto(kiln::test::tensorProto("x", 1, {2, 3}, raw), &t, &error)) << error;
  EXPECT_EQ(t.name, "x");
  EXPECT_EQ(t.dtype, 1u);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.bytes, raw);

  // Typed float_data, packed and unpacked, gives the same bytes.
  for (bool packed : {true, false}) {
    ASSERT_TRUE(parseTensorProto(kiln::test::tensorProtoFloats("x", {2, 3}, {values, values + 6}, packed), &t, &error))
        << error;
    EXPECT_EQ(t.bytes, raw);
  }
  // int32_data carries int8 and float16 bit patterns; int64_data int64.
  ASSERT_TRUE(parseTensorProto(kiln::test::tensorProtoInts(3, 5, {3}, {-1, 2, -128}), &t, &error)) << error;
  EXPECT_EQ(t.bytes, std::string("\xff\x02\x80", 3));
  ASSERT_TRUE(parseTensorProto(kiln::test::tensorProtoInts(10, 5, {1}, {0x3c00}), &t, &error)) << error;
  EXPECT_EQ(formatValues(t, 4), "[1]");
  ASSERT_TRUE(parseTensorProto(kiln::test::tensorProtoInts(7, 7, {2}, {-5, int64_t(1) << 40}), &t, &error)) << error;
  int64_t v[2];
  std::memcpy(v, t.bytes.data(), 16);
  EXPECT_EQ(v[0], -5);
  EXPECT_EQ(v[1], int64_t(1) << 40);
  // Scalar: no dims, one value.
  ASSERT_TRUE(parseTensorProto(kiln::test::tensorProtoInts(9, 5, {}, {1}), &t, &error)) << error;
  EXPECT_TRUE(t.shape.empty());
  EXPECT_EQ(formatValues(t, 4), "[true]");
}

TEST(TensorFile, TensorProtoErrors) {
  HostTensor t;
  std::string error;
  EXPECT_FALSE(parseTensorProto(kiln::test::tensorProto("x", 1, {2, 3}, std::string(20, '\0')), &t, &error));
  EXPECT_NE(error.find("need 24"), std::string::npos) << error;
  EXPECT_FALSE(parseTensorProto(kiln::test::tensorProtoInts(6, 5, {3}, {1, 2}), &t, &error));
  EXPECT_NE(error.find("has 2 values; its shape needs 3"), std::string::npos) << error;
  // A string tensor's values live in string_data; raw_data cannot hold them.
  EXPECT_FALSE(parseTensorProto(kiln::test::tensorProto("s", 8, {1}, ""), &t, &error));
  EXPECT_NE(error.find("string TensorProto has 0 values in string_data; its shape needs 1"), std::string::npos)
      << error;
  const std::string good = kiln::test::tensorProto("x", 1, {2}, std::string(8, '\1'));
  for (size_t n = 1; n < good.size(); ++n)
    EXPECT_FALSE(parseTensorProto(good.substr(0, n), &t, &error)) << n;
}

TEST(TensorCompare, Tolerances) {
  auto f32 = [](std::vector<float> v) {
    return HostTensor{1, {int64_t(v.size())}, std::string(reinterpret_cast<char *>(v.data()), v.size() * 4), ""};
  };
  EXPECT_TRUE(compareTensors(f32({1.0f, NAN, INFINITY}), f32({1.0005f, NAN, INFINITY}), 1e-3, 1e-5).ok);
  EXPECT_FALSE(compareTensors(f32({1.0f}), f32({1.01f}), 1e-3, 1e-5).ok);
  EXPECT_FALSE(compareTensors(f32({NAN}), f32({1.0f}), 1e-3, 1e-5).ok);
  EXPECT_FALSE(compareTensors(f32({-INFINITY}), f32({INFINITY}), 1e-3, 1e-5).ok);
  auto r = compareTensors(f32({1, 2}), f32({1, 2, 3}), 1e-3, 1e-5);
  EXPECT_EQ(r.detail, "shape mismatch: got [2], expected [3]");
  HostTensor i{7, {1}, std::string(8, '\0'), ""}, j = i;
  j.bytes[0] = 1;
  EXPECT_FALSE(compareTensors(i, j, 1, 1).ok) << "integers compare exactly";
}

// One dtype table (format/dtype.h) serves the format, the runtime's C API and the tensor files.
TEST(DtypeTable, TensorFilesRuntimeAndFormatAgree) {
  for (uint32_t code = 0; code < 40; ++code) {
    const kiln::artifact::DtypeInfo *d = kiln::artifact::findDtype(code);
    EXPECT_EQ(kiln_dtype_size(kiln_dtype(code)), d ? d->size : 0u) << code;
    EXPECT_STREQ(kiln_dtype_name(kiln_dtype(code)), kiln::artifact::dtypeName(code)) << code;
    EXPECT_EQ(kiln::tools::elementSize(code), d && code != 8 ? d->size : 0u) << code;
    if (d)
      EXPECT_EQ(kiln::tools::dtypeName(code), d->name);
    else
      EXPECT_EQ(kiln::tools::dtypeName(code), "dtype(" + std::to_string(code) + ")");
    if (!d || !*d->npy)
      continue;
    // Every type numpy can hold goes through .npy and back.
    kiln::tools::HostTensor t;
    t.dtype = code;
    t.shape = {3};
    t.bytes.assign(3 * d->size, '\x01');
    std::string npy, error;
    ASSERT_TRUE(kiln::tools::encodeNpy(t, &npy, &error)) << d->name << ": " << error;
    kiln::tools::HostTensor back;
    ASSERT_TRUE(kiln::tools::parseNpy(npy, &back, &error)) << d->name << ": " << error;
    EXPECT_EQ(back.dtype, code);
    EXPECT_EQ(back.bytes, t.bytes);
    EXPECT_EQ(kiln::artifact::findNpyDtype(d->npy), d);
  }
  std::string npy, error;
  kiln::tools::HostTensor bf16;
  bf16.dtype = 16;
  bf16.shape = {1};
  bf16.bytes = "ab";
  EXPECT_FALSE(kiln::tools::encodeNpy(bf16, &npy, &error)) << "numpy has no bfloat16";
  EXPECT_NE(error.find("cannot be written as .npy"), std::string::npos) << error;
}
