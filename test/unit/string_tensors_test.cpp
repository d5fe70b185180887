// String tensors: the public API (create, read, deep copies), numpy's float text, parsing, and the kernels' arena.
#include "string_tensors.h"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace {

using kiln::runtime::formatFloat;
using kiln::runtime::parseFloat;

TEST(StringTensors, CreateAndReadOwnCopies) {
  std::string a = "monday", b(3, '\0'); // embedded NULs survive: sizes, not strlen
  b[1] = 'x';
  const char *strings[] = {a.data(), b.data(), ""};
  const size_t sizes[] = {a.size(), b.size(), 0};
  const int64_t shape[] = {3};
  kiln_tensor *t = nullptr;
  ASSERT_EQ(kiln_tensor_create_strings(shape, 1, strings, sizes, &t), nullptr);
  a = "MUTATE"; // the tensor holds its own bytes
  size_t n = 99;
  const char *s0 = kiln_tensor_string(t, 0, &n);
  EXPECT_EQ(std::string(s0, n), "monday");
  const char *s1 = kiln_tensor_string(t, 1, &n);
  EXPECT_EQ(std::string(s1, n), std::string("\0x\0", 3));
  const char *s2 = kiln_tensor_string(t, 2, &n);
  ASSERT_NE(s2, nullptr);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(kiln_tensor_string(t, 3, &n), nullptr);
  EXPECT_EQ(kiln_tensor_dtype(t), KILN_DTYPE_STRING);
  EXPECT_EQ(kiln_tensor_byte_size(t), 3 * sizeof(kiln_string));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(kiln_tensor_data_const(t)) % 16, 0u);

  // create_copy of string elements copies the bytes they point at as well.
  kiln_tensor *copy = nullptr;
  ASSERT_EQ(kiln_tensor_create_copy(KILN_DTYPE_STRING, shape, 1, kiln_tensor_data_const(t), kiln_tensor_byte_size(t),
                                    &copy),
            nullptr);
  kiln_tensor_destroy(t);
  EXPECT_EQ(std::string(kiln_tensor_string(copy, 0, &n), n), "monday");
  kiln_tensor_destroy(copy);
}

TEST(StringTensors, NulTerminatedAndErrors) {
  const char *strings[] = {"ab", "c", "", "def"};
  const int64_t shape[] = {2, 2};
  kiln::Tensor t = kiln::Tensor(nullptr);
  kiln_tensor *raw = nullptr;
  ASSERT_EQ(kiln_tensor_create_strings(shape, 2, strings, nullptr, &raw), nullptr);
  t = kiln::Tensor(raw);
  EXPECT_EQ(t.string(3), "def");
  EXPECT_EQ(t.string(2), "");
  const char *withNull[] = {"a", nullptr};
  const int64_t two[] = {2};
  kiln_error *e = kiln_tensor_create_strings(two, 1, withNull, nullptr, &raw);
  ASSERT_NE(e, nullptr);
  EXPECT_NE(std::string(kiln_error_message(e)).find("string 1 is NULL"), std::string::npos);
  kiln_error_free(e);
  // Not a string tensor: no element to read.
  kiln::Tensor f = kiln::Tensor::fromVector<float>(KILN_DTYPE_FLOAT32, {1}, {1.0f});
  EXPECT_EQ(kiln_tensor_string(f.get(), 0, nullptr), nullptr);
  kiln::Tensor w = kiln::Tensor::strings({2}, {"x", "yz"});
  EXPECT_EQ(w.string(1), "yz");
}

// numpy's str() of float32/float64 values (checked against numpy 1.24).
TEST(StringTensors, FormatFloatLikeNumpy) {
  EXPECT_EQ(formatFloat(float(0.03918779268860817), true), "0.039187793");
  EXPECT_EQ(formatFloat(0.9767611026763916, true), "0.9767611");
  EXPECT_EQ(formatFloat(float(1e-5), true), "1e-05");
  EXPECT_EQ(formatFloat(float(1e-4), true), "1e-04"); // float32(1e-4) is just below 1e-4
  EXPECT_EQ(formatFloat(float(1e16), true), "1e+16");
  EXPECT_EQ(formatFloat(float(123456789.0), true), "123456790.0");
  EXPECT_EQ(formatFloat(100000.0, true), "100000.0");
  EXPECT_EQ(formatFloat(1.0, true), "1.0");
  EXPECT_EQ(formatFloat(-0.0, true), "-0.0");
  EXPECT_EQ(formatFloat(float(3.4028235e38), true), "3.4028235e+38");
  EXPECT_EQ(formatFloat(float(1.5e-7), true), "1.5e-07");
  EXPECT_EQ(formatFloat(std::numeric_limits<float>::denorm_min(), true), "1e-45");
  EXPECT_EQ(formatFloat(std::nan(""), true), "nan");
  EXPECT_EQ(formatFloat(-INFINITY, true), "-inf");
  EXPECT_EQ(formatFloat(0.1, false), "0.1");
  EXPECT_EQ(formatFloat(2.5e-310, false), "2.5e-310");
  EXPECT_EQ(formatFloat(0.1f, false), "0.10000000149011612");
}

TEST(StringTensors, ParseFloat) {
  auto parse = [](const std::string &s, bool single = true) {
    double v = -1;
    EXPECT_TRUE(parseFloat(s.data(), int64_t(s.size()), single, &v)) << s;
    return v;
  };
  EXPECT_EQ(parse("0.47892547"), double(0.47892547f));
  EXPECT_EQ(parse(" +1.5\n"), 1.5);
  EXPECT_EQ(parse("-INF"), -INFINITY);
  EXPECT_EQ(parse("+INF"), INFINITY);
  EXPECT_EQ(parse("Infinity"), INFINITY);
  EXPECT_TRUE(std::isnan(parse("NaN")));
  EXPECT_EQ(parse(".5"), 0.5);
  EXPECT_EQ(parse("1e3"), 1000.0);
  EXPECT_EQ(parse("0.1", false), 0.1);
  EXPECT_EQ(parse("1e60"), INFINITY); // beyond float: rounds to infinity as numpy does
  EXPECT_EQ(parse("-1e400", false), -INFINITY);
  EXPECT_EQ(parse("1e-400", false), 0.0);
  EXPECT_EQ(parse("1e-45"), double(std::numeric_limits<float>::denorm_min()));
  double v;
  for (std::string bad : {"", " ", "2x", "+-1", "--1", "0x10", "1 2"})
    EXPECT_FALSE(parseFloat(bad.data(), int64_t(bad.size()), true, &v)) << bad;
}

TEST(StringTensors, KernelsUseTheRunArena) {
  kiln::runtime::StringRun run;
  kiln_abi_string s = kiln::runtime::stringFromFloat(run, 0.25, 32);
  EXPECT_EQ(std::string(s.data, size_t(s.size)), "0.25");
  std::string big(100000, 'a'); // larger than an arena block
  kiln_abi_string u = kiln::runtime::stringChangeCase(run, big.data(), int64_t(big.size()), 1);
  EXPECT_EQ(std::string(u.data, size_t(u.size)), std::string(100000, 'A'));
  EXPECT_EQ(std::string(s.data, size_t(s.size)), "0.25"); // earlier strings stay put
  const std::string mixed = "Ünïcode ÆØ Ωμέγα Привет";
  kiln_abi_string lower = kiln::runtime::stringChangeCase(run, mixed.data(), int64_t(mixed.size()), 0);
  EXPECT_EQ(std::string(lower.data, size_t(lower.size)), "ünïcode æø ωμέγα привет");
  EXPECT_EQ(kiln::runtime::stringEqual("MonDay", 6, "monday", 6, 1), 1);
  EXPECT_EQ(kiln::runtime::stringEqual("MonDay", 6, "monday", 6, 0), 0);
  EXPECT_EQ(kiln::runtime::stringEqual("ДА", 4, "да", 4, 1), 1);
  EXPECT_EQ(kiln::runtime::stringEqual("a", 1, "ab", 2, 1), 0);
  EXPECT_TRUE(run.error.empty());
  EXPECT_TRUE(std::isnan(kiln::runtime::stringToFloat(run, "abc", 3, 32)));
  EXPECT_EQ(run.error, "cannot cast the string 'abc' to a number");
  EXPECT_FALSE(run.outOfMemory);
}

} // namespace
