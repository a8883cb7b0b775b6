// Tests of the single-file GGUF reader (core/gguf.h) on small files written by the test
// writer (tests/support/gguf_writer.h): valid v2/v3 files with every metadata value type, lazy
// arrays, alignment; and one test per rejection kind, each checking the FormatError's file,
// field and byte offset. Offsets are computed by hand from the layout in core/gguf.h:
//   header 24 bytes; a kv with key "a" starts at 24: key length 24..31, key byte 32, value
//   type 33..36, value at 37. A tensor info for name "w" at P: name P..P+8, n_dims P+9,
//   ne[0] P+13, ne[1] P+21, ... then u32 type and u64 offset.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/ggml_type.h"
#include "core/gguf.h"
#include "tests/support/gguf_writer.h"

namespace moepack {
namespace {

using test::ByteBuf;
using test::GgufLayout;
using test::GgufWriter;
using test::TensorSpec;
namespace TV = test::TV;

constexpr const char* kName = "mem.gguf";

GgufFile parse_bytes(std::vector<uint8_t> bytes, const GgufLimits& limits = {}) {
  return GgufFile::parse(make_memory_source(kName, std::move(bytes)), limits);
}

// Parses `bytes`; succeeds iff a FormatError naming kName, `field` and `offset` is thrown (and
// its message contains `what` if given).
::testing::AssertionResult Rejects(const std::vector<uint8_t>& bytes, const std::string& field,
                                   uint64_t offset, const GgufLimits& limits = {},
                                   const std::string& what = "") {
  try {
    parse_bytes(bytes, limits);
  } catch (const FormatError& e) {
    if (e.file() != kName || e.field() != field || e.offset() != offset ||
        std::string(e.what()).find(what) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "wrong FormatError: file=\"" << e.file() << "\" field=\"" << e.field()
             << "\" offset=" << e.offset() << " message: " << e.what() << "\n  expected field=\""
             << field << "\" offset=" << offset << (what.empty() ? "" : " containing \"" + what + "\"");
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw something else: " << e.what();
  }
  return ::testing::AssertionFailure() << "parsed without error";
}

// Header only: magic, version, n_tensors, n_kv.
ByteBuf header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
  ByteBuf b;
  b.raw("GGUF", 4).u32(version).u64(n_tensors).u64(n_kv);
  return b;
}

// A tensor info record.
std::vector<uint8_t> tensor_record(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                                   uint64_t offset) {
  ByteBuf b;
  b.str(name).u32(static_cast<uint32_t>(ne.size()));
  for (uint64_t d : ne) b.u64(d);
  b.u32(type).u64(offset);
  return b.bytes();
}

// ---------------------------------------------------------------------------------------------
// Valid files

TEST(GgufValid, EveryScalarTypeV3) {
  GgufWriter w;
  w.kv("u8", TV::u8(200));
  w.kv("i8", TV::i8(-5));
  w.kv("u16", TV::u16(60000));
  w.kv("i16", TV::i16(-30000));
  w.kv("u32", TV::u32(4000000000u));
  w.kv("i32", TV::i32(-2000000000));
  w.kv("f32", TV::f32(1.5f));
  w.kv("bool", TV::boolean(true));
  w.kv("str", TV::str("h\xc3\xa9llo"));
  w.kv("u64", TV::u64((1ull << 63) + 5));
  w.kv("i64", TV::i64(-(1ll << 62)));
  w.kv("f64", TV::f64(3.25));
  w.kv("empty", TV::str(""));
  const GgufFile f = parse_bytes(w.build());
  EXPECT_EQ(f.version(), 3u);
  ASSERT_EQ(f.metadata().size(), 13u);
  EXPECT_EQ(f.tensors().size(), 0u);
  EXPECT_EQ(f.alignment(), 32u);
  // Layout by hand: "u8" kv at 24: key length 24, key 32..33, type 34, value 38.
  EXPECT_EQ(f.metadata()[0].key_offset, 24u);
  EXPECT_EQ(f.metadata()[0].value_offset, 38u);
  // "i8" kv at 39: key 47..48, type 49, value 53.
  EXPECT_EQ(f.metadata()[1].key_offset, 39u);
  EXPECT_EQ(f.metadata()[1].value_offset, 53u);

  EXPECT_EQ(f.get_uint("u8"), 200u);
  EXPECT_EQ(f.get_int("i8"), -5);
  EXPECT_EQ(f.get_uint("u16"), 60000u);
  EXPECT_EQ(f.get_int("i16"), -30000);
  EXPECT_EQ(f.get_uint("u32"), 4000000000u);
  EXPECT_EQ(f.get_int("i32"), -2000000000);
  EXPECT_EQ(f.get_float("f32"), 1.5);
  EXPECT_EQ(f.get_bool("bool"), true);
  EXPECT_EQ(f.get_string("str"), "h\xc3\xa9llo");
  EXPECT_EQ(f.get_uint("u64"), (1ull << 63) + 5);
  EXPECT_EQ(f.get_int("i64"), -(1ll << 62));
  EXPECT_EQ(f.get_float("f64"), 3.25);
  EXPECT_EQ(f.get_string("empty"), "");
  EXPECT_EQ(f.get_float("u32"), 4000000000.0);  // integers read as numbers
  EXPECT_EQ(f.find("u8")->value.type, GgufValueType::UINT8);
  EXPECT_EQ(f.find("f64")->value.type, GgufValueType::FLOAT64);
  EXPECT_EQ(f.get_uint("absent"), std::nullopt);
  EXPECT_EQ(f.get_string("absent"), std::nullopt);
  EXPECT_EQ(f.get_array("absent"), nullptr);
}

TEST(GgufValid, GetterTypeErrorsNameKeyAndOffset) {
  GgufWriter w;
  w.kv("neg", TV::i32(-1));      // at 24: value at 24+8+3+4 = 39
  w.kv("s", TV::str("x"));       // at 43: value at 43+8+1+4 = 56
  w.kv("big", TV::u64(~0ull));   // at 56+9 = 65: value at 65+8+3+4 = 80
  const GgufFile f = parse_bytes(w.build());
  try {
    (void)f.get_uint("neg");
    FAIL() << "negative value read as unsigned";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "key \"neg\"");
    EXPECT_EQ(e.offset(), 39u);
  }
  try {
    (void)f.get_uint("s");
    FAIL() << "string read as unsigned";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), kName);
    EXPECT_EQ(e.field(), "key \"s\"");
    EXPECT_EQ(e.offset(), 56u);
  }
  try {
    (void)f.get_int("big");
    FAIL() << "2^64-1 read as int64";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), "key \"big\"");
    EXPECT_EQ(e.offset(), 80u);
  }
  EXPECT_THROW((void)f.get_string("neg"), FormatError);
  EXPECT_THROW((void)f.get_bool("neg"), FormatError);
  EXPECT_THROW((void)f.get_array("neg"), FormatError);
  EXPECT_THROW((void)f.get_float("s"), FormatError);
  EXPECT_EQ(f.get_int("neg"), -1);
}

TEST(GgufValid, ArraysOfEveryKindAndNested) {
  GgufWriter w;
  w.kv("u8s", TV::arr_u8({1, 2, 255}));
  w.kv("i32s", TV::arr_i32({-7, 0, 2147483647}));
  w.kv("f32s", TV::arr_f32({0.5f, -2.0f}));
  w.kv("strs", TV::arr_str({"a", "", "xyz"}));
  w.kv("bools", TV::array_of(test::kGgufBool, {TV::boolean(true), TV::boolean(false)}));
  w.kv("u64s", TV::array_of(test::kGgufU64, {TV::u64(1ull << 40)}));
  w.kv("f64s", TV::array_of(test::kGgufF64, {TV::f64(-0.25)}));
  w.kv("empty", TV::arr_u32({}));
  // [[1, 2], [3]] and [[["p"], ["q", "r"]]]
  w.kv("nested", TV::array_of(test::kGgufArray, {TV::arr_u32({1, 2}), TV::arr_u32({3})}));
  w.kv("deep", TV::array_of(test::kGgufArray,
                            {TV::array_of(test::kGgufArray, {TV::arr_str({"p"}), TV::arr_str({"q", "r"})})}));
  const GgufFile f = parse_bytes(w.build());

  const GgufArray* a = f.get_array("u8s");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->resident);
  EXPECT_EQ(a->elem_type, GgufValueType::UINT8);
  ASSERT_EQ(a->count, 3u);
  EXPECT_EQ(a->int_at(2), 255);
  // "u8s" kv at 24: key 32..34, type 35, elem type 39, count 43, elements at 51.
  EXPECT_EQ(a->file_offset, 51u);
  EXPECT_EQ(a->encoded_bytes, 3u);
  EXPECT_THROW((void)a->int_at(3), Error);

  a = f.get_array("i32s");
  ASSERT_EQ(a->count, 3u);
  EXPECT_EQ(a->int_at(0), -7);
  EXPECT_EQ(a->int_at(2), 2147483647);
  EXPECT_EQ(a->float_at(0), -7.0);

  a = f.get_array("f32s");
  EXPECT_EQ(a->float_at(0), 0.5);
  EXPECT_EQ(a->float_at(1), -2.0);
  EXPECT_THROW((void)a->int_at(0), Error);

  a = f.get_array("strs");
  ASSERT_EQ(a->strings.size(), 3u);
  EXPECT_EQ(a->strings[0], "a");
  EXPECT_EQ(a->strings[1], "");
  EXPECT_EQ(a->strings[2], "xyz");
  EXPECT_EQ(a->encoded_bytes, 3u * 8 + 4);
  EXPECT_THROW((void)a->float_at(0), Error);

  a = f.get_array("bools");
  ASSERT_EQ(a->count, 2u);
  EXPECT_EQ(a->raw[0], 1);
  EXPECT_EQ(a->raw[1], 0);

  EXPECT_EQ(f.get_array("u64s")->int_at(0), 1ll << 40);
  EXPECT_EQ(f.get_array("f64s")->float_at(0), -0.25);
  EXPECT_EQ(f.get_array("empty")->count, 0u);
  EXPECT_EQ(f.get_array("empty")->elem_type, GgufValueType::UINT32);

  a = f.get_array("nested");
  ASSERT_EQ(a->elem_type, GgufValueType::ARRAY);
  ASSERT_EQ(a->arrays.size(), 2u);
  ASSERT_EQ(a->arrays[0].count, 2u);
  EXPECT_EQ(a->arrays[0].int_at(1), 2);
  ASSERT_EQ(a->arrays[1].count, 1u);
  EXPECT_EQ(a->arrays[1].int_at(0), 3);
  // Encoded: 2 x (u32 type + u64 count) + 3 x u32 = 24 + 12 = 36 bytes.
  EXPECT_EQ(a->encoded_bytes, 36u);

  a = f.get_array("deep");
  ASSERT_EQ(a->arrays.size(), 1u);
  ASSERT_EQ(a->arrays[0].arrays.size(), 2u);
  EXPECT_EQ(a->arrays[0].arrays[0].strings.at(0), "p");
  EXPECT_EQ(a->arrays[0].arrays[1].strings.at(1), "r");
}

TEST(GgufValid, V2WithTensors) {
  GgufWriter w;
  w.version = 2;
  w.tensor(TensorSpec("a", test::kF32, {8, 4}).with_fill(0x11));
  w.tensor(TensorSpec("bb", test::kQ4_K, {256, 2}).with_fill(0x22));
  const std::vector<uint8_t> bytes = w.build();
  // Infos: "a" 9 + 4 + 16 + 4 + 8 = 41 bytes at 24; "bb" 10 + 4 + 16 + 4 + 8 = 42 at 65;
  // end 107, data section at 128. "a" = 32 f32 = 128 bytes at 128; "bb" = 2 q4_K blocks of
  // 144 bytes = 288 at 256. File: 544 bytes.
  ASSERT_EQ(bytes.size(), 544u);
  const GgufFile f = parse_bytes(bytes);
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.data_start(), 128u);
  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensorInfo& ta = f.tensors()[0];
  EXPECT_EQ(ta.name, "a");
  EXPECT_EQ(ta.type, GgmlType::F32);
  EXPECT_EQ(ta.n_dims, 2u);
  EXPECT_EQ(ta.ne[0], 8u);
  EXPECT_EQ(ta.ne[1], 4u);
  EXPECT_EQ(ta.ne[2], 1u);
  EXPECT_EQ(ta.n_elements(), 32u);
  EXPECT_EQ(ta.nbytes, 128u);
  EXPECT_EQ(ta.offset, 0u);
  EXPECT_EQ(ta.file_offset, 128u);
  EXPECT_EQ(ta.info_offset, 24u);
  const GgufTensorInfo* tb = f.find_tensor("bb");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->type, GgmlType::Q4_K);
  EXPECT_EQ(tb->nbytes, 288u);
  EXPECT_EQ(tb->offset, 128u);
  EXPECT_EQ(tb->file_offset, 256u);
  EXPECT_EQ(tb->info_offset, 65u);
  EXPECT_EQ(f.find_tensor("c"), nullptr);

  uint8_t buf[4] = {};
  f.read_tensor_data(*tb, 284, buf, 4);
  EXPECT_EQ(buf[0], 0x22);
  EXPECT_EQ(buf[3], 0x22);
  f.read_tensor_data(ta, 0, buf, 1);
  EXPECT_EQ(buf[0], 0x11);
  EXPECT_THROW(f.read_tensor_data(*tb, 285, buf, 4), Error);
  EXPECT_THROW(f.read_tensor_data(ta, ~0ull, buf, 2), Error);
}

TEST(GgufValid, V3FromDiskNamesThePath) {
  test::TempDir dir;
  GgufWriter w;
  w.kv("general.architecture", TV::str("llama"));
  w.tensor("w", test::kQ8_0, {64, 3});  // 2 blocks x 34 B x 3 rows = 204 B
  test::write_file(dir.file("m.gguf"), w.build());
  const GgufFile f = GgufFile::open(dir.file("m.gguf"));
  EXPECT_EQ(f.path(), dir.file("m.gguf"));
  EXPECT_EQ(f.tensors().at(0).nbytes, 204u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_THROW(GgufFile::open(dir.file("missing.gguf")), IoError);
}

TEST(GgufValid, GeneralAlignment) {
  GgufWriter w;
  w.alignment = 64;
  w.kv("general.alignment", TV::u32(64));
  w.tensor("t", test::kF32, {4});
  w.tensor("u", test::kF32, {4});
  GgufLayout lay;
  const std::vector<uint8_t> bytes = w.build(&lay);
  // kv: 24 + 8 + 17 + 4 + 4 = 57; "t" info 33 bytes -> 90; "u" -> 123; data at 128 (64-aligned).
  // "t" (16 bytes) at relative 0, "u" at the next multiple of 64.
  EXPECT_EQ(lay.infos_end, 123u);
  const GgufFile f = parse_bytes(bytes);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_start(), 128u);
  EXPECT_EQ(f.tensors()[0].file_offset, 128u);
  EXPECT_EQ(f.tensors()[1].offset, 64u);
  EXPECT_EQ(f.tensors()[1].file_offset, 192u);

  // The same offsets are not aligned for 128.
  GgufWriter w2;
  w2.alignment = 64;
  w2.kv("general.alignment", TV::u32(128));
  w2.tensor("t", test::kF32, {4});
  w2.tensor("u", test::kF32, {4});
  // "u" offset field: 90 + 9 + 4 + 8 + 4 = 115.
  EXPECT_TRUE(Rejects(w2.build(), "tensor \"u\" offset", 115u));
}

TEST(GgufValid, TensorNameOf63BytesAndEmptyTensors) {
  GgufWriter w;
  w.tensor(std::string(63, 'n'), test::kF32, {4});
  w.tensor("zero", test::kF32, {0, 7});  // 0 elements, 0 bytes
  const GgufFile f = parse_bytes(w.build());
  EXPECT_EQ(f.tensors()[0].name.size(), 63u);
  EXPECT_EQ(f.tensors()[1].nbytes, 0u);
}

TEST(GgufValid, LazyArraysAndLoadArray) {
  GgufLimits lim;
  lim.max_inline_array_bytes = 64;
  std::vector<uint32_t> nums(100);
  for (uint32_t k = 0; k < 100; ++k) nums[k] = k * 3;
  std::vector<std::string> strs;
  for (int k = 0; k < 50; ++k) strs.push_back("s" + std::to_string(k));
  GgufWriter w;
  w.kv("nums", TV::arr_u32(nums));
  w.kv("strs", TV::arr_str(strs));
  w.kv("nest", TV::array_of(test::kGgufArray, {TV::arr_u32(nums), TV::arr_str({"x"})}));
  w.kv("small", TV::arr_u8({9}));
  const GgufFile f = parse_bytes(w.build(), lim);

  const GgufArray* a = f.get_array("nums");
  EXPECT_FALSE(a->resident);
  EXPECT_EQ(a->count, 100u);
  EXPECT_EQ(a->elem_type, GgufValueType::UINT32);
  // kv at 24: key 32..35, type 36, elem type 40, count 44, elements at 52.
  EXPECT_EQ(a->file_offset, 52u);
  EXPECT_EQ(a->encoded_bytes, 400u);
  EXPECT_TRUE(a->raw.empty());
  EXPECT_THROW((void)a->int_at(0), Error);
  const GgufArray full = f.load_array(*a);
  EXPECT_TRUE(full.resident);
  EXPECT_EQ(full.int_at(99), 297);
  EXPECT_EQ(full.int_at(1), 3);

  const GgufArray* s = f.get_array("strs");
  EXPECT_FALSE(s->resident);
  const GgufArray sfull = f.load_array(*s);
  ASSERT_EQ(sfull.strings.size(), 50u);
  EXPECT_EQ(sfull.strings[49], "s49");

  const GgufArray* n = f.get_array("nest");
  EXPECT_FALSE(n->resident);
  const GgufArray nfull = f.load_array(*n);
  ASSERT_EQ(nfull.arrays.size(), 2u);
  EXPECT_EQ(nfull.arrays[0].int_at(50), 150);
  EXPECT_EQ(nfull.arrays[1].strings.at(0), "x");

  EXPECT_TRUE(f.get_array("small")->resident);
  // load_array of a resident array returns it as is.
  EXPECT_EQ(f.load_array(*f.get_array("small")).int_at(0), 9);

  // A cap below the encoded size is a FormatError at the elements.
  try {
    (void)f.load_array(*a, 399);
    FAIL() << "load_array ignored max_bytes";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.file(), kName);
    EXPECT_EQ(e.field(), "array");
    EXPECT_EQ(e.offset(), 52u);
  }
}

TEST(GgufValid, LargeArrayStaysOnDiskWithDefaultLimits) {
  // 1.5 MiB of u8 is above the default 1 MiB inline limit.
  GgufWriter w;
  w.kv("big", TV::arr_u8(std::vector<uint8_t>(3u << 19, 7)));
  const GgufFile f = parse_bytes(w.build());
  const GgufArray* a = f.get_array("big");
  EXPECT_FALSE(a->resident);
  EXPECT_EQ(a->count, 3u << 19);
  EXPECT_LT(f.metadata_bytes(), 1u << 16);
  const GgufArray full = f.load_array(*a);
  EXPECT_EQ(full.int_at((3u << 19) - 1), 7);
}

// Every prefix of a valid file is rejected with a FormatError (never a crash or another error).
TEST(GgufValid, EveryTruncationIsAFormatError) {
  GgufWriter w;
  w.kv("general.alignment", TV::u32(32));
  w.kv("s", TV::str("hello"));
  w.kv("n", TV::array_of(test::kGgufArray, {TV::arr_str({"a", "b"}), TV::arr_str({})}));
  w.kv("f", TV::arr_f32({1, 2, 3}));
  w.tensor("x", test::kQ4_0, {64, 2});
  w.tensor("y", test::kF16, {3});
  const std::vector<uint8_t> bytes = w.build();
  ASSERT_NO_THROW(parse_bytes(bytes));
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      parse_bytes(test::truncate(bytes, n));
      ADD_FAILURE() << "prefix of " << n << " bytes parsed";
    } catch (const FormatError& e) {
      EXPECT_EQ(e.file(), kName);
      EXPECT_LE(e.offset(), bytes.size()) << n;
      // A user with a cut-short download reads that it is one, whatever field it ends in.
      EXPECT_NE(std::string(e.what()).find("the file looks truncated"), std::string::npos) << n << ": " << e.what();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Header

TEST(GgufReject, BadMagic) {
  ByteBuf b;
  b.raw("GGUX", 4).u32(3).u64(0).u64(0);
  EXPECT_TRUE(Rejects(b.bytes(), "magic", 0));
  ByteBuf b2;
  b2.raw("FUGG", 4).u32(3).u64(0).u64(0);
  EXPECT_TRUE(Rejects(b2.bytes(), "magic", 0));
}

TEST(GgufReject, Version1) {
  EXPECT_TRUE(Rejects(header(1, 0, 0).bytes(), "version", 4, {}, "v1"));
}

TEST(GgufReject, BigEndian) {
  // A big-endian v3 file: version bytes 00 00 00 03, counts big-endian too.
  ByteBuf b;
  b.raw("GGUF", 4).raw("\0\0\0\3", 4).zeros(16);
  EXPECT_TRUE(Rejects(b.bytes(), "version", 4, {}, "big-endian"));
  ByteBuf b2;
  b2.raw("GGUF", 4).raw("\0\0\0\2", 4).zeros(16);
  EXPECT_TRUE(Rejects(b2.bytes(), "version", 4, {}, "big-endian"));
}

TEST(GgufReject, UnknownVersion) {
  EXPECT_TRUE(Rejects(header(4, 0, 0).bytes(), "version", 4));
  EXPECT_TRUE(Rejects(header(0, 0, 0).bytes(), "version", 4));
  EXPECT_TRUE(Rejects(header(0xFFFFFFFFu, 0, 0).bytes(), "version", 4));
}

TEST(GgufReject, TruncatedHeader) {
  const std::vector<uint8_t> h = header(3, 0, 0).bytes();
  ASSERT_NO_THROW(parse_bytes(h));
  EXPECT_TRUE(Rejects(test::truncate(h, 23), "header", 0));
  EXPECT_TRUE(Rejects(test::truncate(h, 4), "header", 0));
  EXPECT_TRUE(Rejects({}, "header", 0));
  EXPECT_TRUE(Rejects(test::truncate(h, 2), "header", 0));  // "GG": a GGUF cut short
}

// A short file that does not start as GGUF is "not a GGUF file", not a truncated one (a QA trial's
// 12-byte text file was called an interrupted download).
TEST(GgufReject, ShortFileThatIsNotGguf) {
  const std::string text = "hello world\n";
  EXPECT_TRUE(Rejects(std::vector<uint8_t>(text.begin(), text.end()), "magic", 0));
  EXPECT_TRUE(Rejects({'G', 'X'}, "magic", 0));
}

TEST(GgufReject, NKvTooLargeForFile) {
  // 2 kv need at least 2 x 14 bytes after the header; this file has 14.
  ByteBuf b = header(3, 0, 2);
  b.str("a").u32(test::kGgufU8).u8(1);
  EXPECT_TRUE(Rejects(b.bytes(), "n_kv", 16));
  EXPECT_TRUE(Rejects(header(3, 0, ~0ull).bytes(), "n_kv", 16));
  EXPECT_TRUE(Rejects(header(3, 0, 1ull << 63).zeros(100).bytes(), "n_kv", 16));
}

TEST(GgufReject, NKvAboveLimit) {
  GgufWriter w;
  w.kv("a", TV::u8(1)).kv("b", TV::u8(2)).kv("c", TV::u8(3));
  GgufLimits lim;
  lim.max_kv = 2;
  EXPECT_TRUE(Rejects(w.build(), "n_kv", 16, lim));
  lim.max_kv = 3;
  EXPECT_NO_THROW(parse_bytes(w.build(), lim));
}

TEST(GgufReject, NTensorsTooLargeForFile) {
  // One tensor info needs at least 33 bytes; 32 are left.
  EXPECT_TRUE(Rejects(header(3, 1, 0).zeros(32).bytes(), "n_tensors", 8));
  EXPECT_TRUE(Rejects(header(3, ~0ull, 0).zeros(4096).bytes(), "n_tensors", 8));
  EXPECT_TRUE(Rejects(header(3, 1ull << 62, 0).bytes(), "n_tensors", 8));
}

TEST(GgufReject, NTensorsAboveLimit) {
  GgufWriter w;
  w.tensor("a", test::kF32, {1}).tensor("b", test::kF32, {1});
  GgufLimits lim;
  lim.max_tensors = 1;
  EXPECT_TRUE(Rejects(w.build(), "n_tensors", 8, lim));
  // A limit, not a file cut short: no "truncated" in the message.
  try {
    parse_bytes(w.build(), lim);
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// Key/value pairs

TEST(GgufReject, TruncatedKey) {
  // Key length 20 but only 6 key bytes left.
  ByteBuf b = header(3, 0, 1);
  b.u64(20).raw("abcdef", 6);
  EXPECT_TRUE(Rejects(b.bytes(), "metadata[0] key", 24));
  // The second key's length field is cut: kv 0 = "a" string of 40 bytes (24..84), 3 bytes left.
  ByteBuf b2 = header(3, 0, 2);
  b2.str("a").u32(test::kGgufString).str(std::string(40, 'x')).zeros(3);
  EXPECT_TRUE(Rejects(b2.bytes(), "metadata[1] key", 85));
}

TEST(GgufReject, TruncatedValue) {
  // u32 value with 2 of its 4 bytes.
  ByteBuf b = header(3, 0, 1);
  b.str("a").u32(test::kGgufU32).u16(7);
  EXPECT_TRUE(Rejects(b.bytes(), "key \"a\"", 37));
  // String value of 100 bytes with 2 present.
  ByteBuf b2 = header(3, 0, 1);
  b2.str("a").u32(test::kGgufString).u64(100).raw("xy", 2);
  EXPECT_TRUE(Rejects(b2.bytes(), "key \"a\"", 37));
  // Array element type cut after 1 byte.
  ByteBuf b3 = header(3, 0, 1);
  b3.str("a").u32(test::kGgufArray).u8(4);
  EXPECT_TRUE(Rejects(b3.bytes(), "key \"a\" (array element type)", 37));
  // Array of 10 u32 with 2 present: the count (at 41) is checked against the bytes left.
  ByteBuf b4 = header(3, 0, 1);
  b4.str("a").u32(test::kGgufArray).u32(test::kGgufU32).u64(10).u32(1).u32(2);
  EXPECT_TRUE(Rejects(b4.bytes(), "key \"a\"", 41));
  // Value type cut: "abcdef" key (24..37), 2 bytes of the type at 38.
  ByteBuf b5 = header(3, 0, 1);
  b5.str("abcdef").u16(4);
  EXPECT_TRUE(Rejects(b5.bytes(), "key \"abcdef\" (value type)", 38));
}

TEST(GgufReject, StringLengthTooLarge) {
  ByteBuf b = header(3, 0, 1);
  b.str("a").u32(test::kGgufString).u64(1ull << 63).zeros(8);
  EXPECT_TRUE(Rejects(b.bytes(), "key \"a\"", 37, {}, "exceeds the limit"));
  ByteBuf b2 = header(3, 0, 1);
  b2.str("a").u32(test::kGgufString).u64(~0ull);
  EXPECT_TRUE(Rejects(b2.bytes(), "key \"a\"", 37));
  // Under the limit but one byte more than the file has left (10 left after the length).
  ByteBuf b3 = header(3, 0, 1);
  b3.str("a").u32(test::kGgufString).u64(11).zeros(10);
  EXPECT_TRUE(Rejects(b3.bytes(), "key \"a\"", 37, {}, "past the end"));
  // Above a lowered max_string_bytes although the bytes are there.
  GgufLimits lim;
  lim.max_string_bytes = 9;
  ByteBuf b4 = header(3, 0, 1);
  b4.str("a").u32(test::kGgufString).str("0123456789");
  EXPECT_TRUE(Rejects(b4.bytes(), "key \"a\"", 37, lim, "exceeds the limit"));
  try {
    parse_bytes(b4.bytes(), lim);
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  // A key length above max_key_bytes.
  ByteBuf b5 = header(3, 0, 1);
  b5.u64(1ull << 40).zeros(16);
  EXPECT_TRUE(Rejects(b5.bytes(), "metadata[0] key", 24, {}, "exceeds the limit"));
  // A string element of an array: kv "a" array of 1 string; element length at 49.
  ByteBuf b6 = header(3, 0, 1);
  b6.str("a").u32(test::kGgufArray).u32(test::kGgufString).u64(1).u64(1ull << 62).zeros(8);
  EXPECT_TRUE(Rejects(b6.bytes(), "key \"a\"[0]", 49));
}

TEST(GgufReject, ArrayCountTooLarge) {
  ByteBuf b = header(3, 0, 1);
  b.str("a").u32(test::kGgufArray).u32(test::kGgufU8).u64(1ull << 62).zeros(64);
  EXPECT_TRUE(Rejects(b.bytes(), "key \"a\"", 41));
  // count x 8 would wrap around 2^64 in unchecked arithmetic.
  ByteBuf b2 = header(3, 0, 1);
  b2.str("a").u32(test::kGgufArray).u32(test::kGgufU64).u64((1ull << 61) + 1).zeros(64);
  EXPECT_TRUE(Rejects(b2.bytes(), "key \"a\"", 41));
  ByteBuf b3 = header(3, 0, 1);
  b3.str("a").u32(test::kGgufArray).u32(test::kGgufString).u64(~0ull).zeros(64);
  EXPECT_TRUE(Rejects(b3.bytes(), "key \"a\"", 41));
  ByteBuf b4 = header(3, 0, 1);
  b4.str("a").u32(test::kGgufArray).u32(test::kGgufArray).u64(1ull << 60).zeros(64);
  EXPECT_TRUE(Rejects(b4.bytes(), "key \"a\"", 41));
  // A nested array's count: inner header at 49 (type) / 53 (count).
  ByteBuf b5 = header(3, 0, 1);
  b5.str("a").u32(test::kGgufArray).u32(test::kGgufArray).u64(1).u32(test::kGgufU32).u64(1000).zeros(16);
  EXPECT_TRUE(Rejects(b5.bytes(), "key \"a\"[0]", 53));
}

// d levels of [[...[u8]...]] with one element per level.
test::TestValue nested(int levels) {
  test::TestValue v = TV::arr_u8({42});
  for (int k = 1; k < levels; ++k) v = TV::array_of(test::kGgufArray, {v});
  return v;
}

TEST(GgufReject, NestingTooDeep) {
  // 8 levels (the default max_array_depth) parse.
  GgufWriter ok;
  ok.kv("a", nested(8));
  const GgufFile f = parse_bytes(ok.build());
  const GgufArray* a = f.get_array("a");
  for (int k = 1; k < 8; ++k) a = &a->arrays.at(0);
  EXPECT_EQ(a->int_at(0), 42);
  // 9 levels: level d's header is at 37 + 12 (d - 1); level 9 at 133.
  GgufWriter bad;
  bad.kv("a", nested(9));
  std::string field = "key \"a\"";
  for (int k = 0; k < 8; ++k) field += "[0]";
  EXPECT_TRUE(Rejects(bad.build(), field, 133, {}, "nested deeper"));
  // With max_array_depth = 2, level 3 (at 61) is too deep.
  GgufLimits lim;
  lim.max_array_depth = 2;
  GgufWriter three;
  three.kv("a", nested(3));
  EXPECT_TRUE(Rejects(three.build(), "key \"a\"[0][0]", 61, lim));
  // 100 levels: still rejected at level 9.
  GgufWriter deep;
  deep.kv("a", nested(100));
  EXPECT_TRUE(Rejects(deep.build(), field, 133));
}

TEST(GgufReject, UnknownValueType) {
  GgufWriter w;
  w.kv("a", TV::raw(13, {0, 0, 0, 0}));
  EXPECT_TRUE(Rejects(w.build(), "key \"a\" (value type)", 33));
  GgufWriter w2;
  w2.kv("a", TV::raw(0xFFFFFFFFu, std::vector<uint8_t>(16)));
  EXPECT_TRUE(Rejects(w2.build(), "key \"a\" (value type)", 33));
  GgufWriter w3;
  w3.kv("a", TV::array_raw(13, 1, std::vector<uint8_t>(16)));
  EXPECT_TRUE(Rejects(w3.build(), "key \"a\" (array element type)", 37));
  // The element type of a nested array: inner header at 49.
  GgufWriter w4;
  w4.kv("a", TV::array_of(test::kGgufArray, {TV::array_raw(99, 0)}));
  EXPECT_TRUE(Rejects(w4.build(), "key \"a\"[0] (array element type)", 49));
}

TEST(GgufReject, DuplicateKey) {
  GgufWriter w;
  w.kv("a", TV::u8(1)).kv("a", TV::u8(2));  // second kv at 24 + 14 = 38
  EXPECT_TRUE(Rejects(w.build(), "key \"a\"", 38, {}, "duplicate"));
}

TEST(GgufReject, EmptyKey) {
  GgufWriter w;
  w.kv("", TV::u8(1));
  EXPECT_TRUE(Rejects(w.build(), "metadata[0] key", 24, {}, "empty"));
  GgufWriter w2;
  w2.kv("a", TV::u8(1)).kv("", TV::u8(2));
  EXPECT_TRUE(Rejects(w2.build(), "metadata[1] key", 38, {}, "empty"));
}

TEST(GgufReject, Alignment) {
  // general.alignment kv at 24: key 32..48, type 49, value 53.
  auto with = [](test::TestValue v) {
    GgufWriter w;
    w.kv("general.alignment", std::move(v));
    return w.build();
  };
  const std::string field = "key \"general.alignment\"";
  EXPECT_TRUE(Rejects(with(TV::u32(48)), field, 53, {}, "power of two"));
  EXPECT_TRUE(Rejects(with(TV::u32(0)), field, 53, {}, "power of two"));
  EXPECT_TRUE(Rejects(with(TV::u32(3)), field, 53));
  EXPECT_TRUE(Rejects(with(TV::u64(1ull << 31)), field, 53));
  EXPECT_TRUE(Rejects(with(TV::i32(32)), field, 53, {}, "unsigned"));
  EXPECT_TRUE(Rejects(with(TV::str("32")), field, 53));
  EXPECT_TRUE(Rejects(with(TV::f32(32.0f)), field, 53));
  EXPECT_TRUE(Rejects(with(TV::arr_u32({32})), field, 53));
  EXPECT_EQ(parse_bytes(with(TV::u32(1))).alignment(), 1u);
  EXPECT_EQ(parse_bytes(with(TV::u32(4096))).alignment(), 4096u);
}

TEST(GgufReject, MetadataMemoryBudget) {
  GgufLimits lim;
  lim.max_metadata_bytes = 1000;
  // A 2000-byte string value (below max_string_bytes) exceeds the 1000-byte budget: at 37.
  GgufWriter w;
  w.kv("a", TV::str(std::string(2000, 's')));
  EXPECT_TRUE(Rejects(w.build(), "key \"a\"", 37, lim, "metadata exceeds"));
  // An inline array of 300 u8 (charged well over 1000 bytes with bookkeeping): at 37.
  GgufWriter w2;
  w2.kv("a", TV::arr_u8(std::vector<uint8_t>(300, 1)));
  EXPECT_TRUE(Rejects(w2.build(), "key \"a\"", 37, lim, "metadata exceeds"));
  // Many small strings add up: 40 kv of 100-byte strings; some kv past the first fails.
  GgufWriter w3;
  for (int k = 0; k < 40; ++k) w3.kv("k" + std::to_string(k), TV::str(std::string(100, 'x')));
  try {
    parse_bytes(w3.build(), lim);
    FAIL() << "budget not enforced across keys";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("metadata exceeds"), std::string::npos);
  }
  // The same files parse with the default budget.
  EXPECT_NO_THROW(parse_bytes(w.build()));
  EXPECT_NO_THROW(parse_bytes(w3.build()));
}

// ---------------------------------------------------------------------------------------------
// Tensor infos (n_kv = 0: the first info is at 24; "w" n_dims at 33, ne[0] at 37)

TEST(GgufReject, TruncatedTensorInfo) {
  // Name of 20 bytes (24..51), n_dims 2 at 52, ne[0] at 56 with 1 of its 8 bytes.
  ByteBuf b = header(3, 1, 0);
  const std::string name(20, 't');
  b.str(name).u32(2).u8(0);
  EXPECT_TRUE(Rejects(b.bytes(), "tensor \"" + name + "\" ne", 56));
  // kv "a" = 40-byte string (24..84); tensor "w" info at 85: type at 106 cut after 2 bytes.
  ByteBuf b2 = header(3, 1, 1);
  b2.str("a").u32(test::kGgufString).str(std::string(40, 'x'));
  b2.str("w").u32(1).u64(32).u16(0);
  EXPECT_TRUE(Rejects(b2.bytes(), "tensor \"w\" type", 106));
  // ... and its offset at 110 cut after 3 bytes.
  ByteBuf b3 = header(3, 1, 1);
  b3.str("a").u32(test::kGgufString).str(std::string(40, 'x'));
  b3.str("w").u32(1).u64(32).u32(test::kF32).zeros(3);
  EXPECT_TRUE(Rejects(b3.bytes(), "tensor \"w\" offset", 110));
  // The name itself: length 30 with 25 bytes present (33 left in all).
  ByteBuf b4 = header(3, 1, 0);
  b4.u64(30).raw(std::string(25, 'n').data(), 25);
  EXPECT_TRUE(Rejects(b4.bytes(), "tensor[0] name", 24));
}

TEST(GgufReject, TensorNDims) {
  for (uint32_t n : {0u, 5u, 0xFFFFFFFFu}) {
    GgufWriter w;
    w.tensor(TensorSpec("w", test::kF32, {32, 1, 1, 1, 1}).with_n_dims(n));
    EXPECT_TRUE(Rejects(w.build(), "tensor \"w\" n_dims", 33, {}, "1..4")) << n;
  }
  // n_dims 0 with no ne written at all (info of 25 bytes + padding to 64).
  GgufWriter w;
  w.tensor(TensorSpec("w", test::kF32, {}));
  EXPECT_TRUE(Rejects(w.build(), "tensor \"w\" n_dims", 33));
}

TEST(GgufReject, TensorNeOverflow) {
  // 2^32 x 2^32 elements wrap a 64-bit product: ne[1] at 45.
  GgufWriter w;
  w.tensor(TensorSpec("w", test::kF32, {1ull << 32, 1ull << 32}).with_offset(0).with_data_bytes(0));
  EXPECT_TRUE(Rejects(w.build(), "tensor \"w\" ne[1]", 45));
  // 2^62 x 2 = 2^63 does not fit int64 (ggml's int64_t ne).
  GgufWriter w2;
  w2.tensor(TensorSpec("w", test::kI32, {1ull << 62, 2}).with_offset(0).with_data_bytes(0));
  EXPECT_TRUE(Rejects(w2.build(), "tensor \"w\" ne[1]", 45));
  // ne[0] negative as int64.
  GgufWriter w3;
  w3.tensor(TensorSpec("w", test::kF32, {1ull << 63}).with_offset(0).with_data_bytes(0));
  EXPECT_TRUE(Rejects(w3.build(), "tensor \"w\" ne[0]", 37));
  // ne[3] of a 4-d tensor: 2^20 x 2^20 x 2^20 x 2^20 = 2^80; ne[3] at 61.
  GgufWriter w4;
  w4.tensor(TensorSpec("w", test::kF32, {1ull << 20, 1ull << 20, 1ull << 20, 1ull << 20}).with_offset(0).with_data_bytes(0));
  EXPECT_TRUE(Rejects(w4.build(), "tensor \"w\" ne[3]", 61));
  // 2^62 f32 elements fit int64 but their 2^64 bytes do not fit u64: reported at ne (37).
  GgufWriter w5;
  w5.tensor(TensorSpec("w", test::kF32, {1ull << 62}).with_offset(0).with_data_bytes(0));
  EXPECT_TRUE(Rejects(w5.build(), "tensor \"w\" ne", 37, {}, "overflows"));
}

TEST(GgufReject, TensorTypeUnknownOrRemoved) {
  // Removed from ggml: 4, 5 (Q4_2, Q4_3), 31-33 (Q4_0_4_4...), 36-38 (IQ4_NL_4_4...); 42+ unknown.
  for (uint32_t t : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u, 1000u, 0xFFFFFFFFu}) {
    GgufWriter w;
    w.tensor(TensorSpec("w", t, {256}).with_data_bytes(1024));
    // type at 24 + 9 + 4 + 8 = 45.
    EXPECT_TRUE(Rejects(w.build(), "tensor \"w\" type", 45, {}, "unknown ggml type")) << t;
  }
}

TEST(GgufReject, TensorRowNotMultipleOfBlock) {
  struct Case {
    uint32_t type;
    uint64_t ne0;
  };
  for (Case c : {Case{test::kQ4_K, 128}, Case{test::kQ8_0, 33}, Case{test::kMXFP4, 16},
                 Case{test::kQ6_K, 255}, Case{test::kQ4_0, 1}}) {
    GgufWriter w;
    w.tensor(TensorSpec("w", c.type, {c.ne0, 2}).with_data_bytes(4096));
    EXPECT_TRUE(Rejects(w.build(), "tensor \"w\" ne[0]", 37, {}, "block size")) << c.type;
  }
}

TEST(GgufReject, DuplicateTensorName) {
  GgufWriter w;
  w.tensor("w", test::kF32, {8}).tensor("w", test::kF32, {8});  // second info at 24 + 33 = 57
  EXPECT_TRUE(Rejects(w.build(), "tensor \"w\" name", 57, {}, "duplicate"));
}

TEST(GgufReject, TensorNameTooLongOrEmpty) {
  GgufWriter w;
  w.tensor(std::string(64, 'n'), test::kF32, {8});
  EXPECT_TRUE(Rejects(w.build(), "tensor[0] name", 24, {}, "limit of 63"));
  GgufWriter w2;
  w2.tensor("", test::kF32, {8});
  EXPECT_TRUE(Rejects(w2.build(), "tensor[0] name", 24, {}, "empty"));
}

TEST(GgufReject, TensorOffsetNotAligned) {
  GgufWriter w;
  w.tensor(TensorSpec("w", test::kF32, {8}).with_offset(4));  // offset field at 24 + 9 + 4 + 8 + 4 = 49
  EXPECT_TRUE(Rejects(w.build(), "tensor \"w\" offset", 49, {}, "alignment"));
  GgufWriter w2;
  w2.tensor(TensorSpec("w", test::kF32, {8}).with_offset(31));
  EXPECT_TRUE(Rejects(w2.build(), "tensor \"w\" offset", 49));
}

TEST(GgufReject, TensorDataOutsideFile) {
  // 32 bytes of data declared, none written (the file ends at the data section, 64).
  GgufWriter w;
  w.write_data = false;
  w.tensor("w", test::kF32, {8});
  EXPECT_TRUE(Rejects(w.build(), "tensor \"w\" offset", 49, {}, "outside the file"));
  // One byte short.
  GgufWriter w1;
  w1.tensor("w", test::kF32, {8});
  std::vector<uint8_t> b = w1.build();
  ASSERT_EQ(b.size(), 96u);
  EXPECT_TRUE(Rejects(test::truncate(b, 95), "tensor \"w\" offset", 49));
  // Aligned offset so large that data_start + offset wraps.
  GgufWriter w2;
  w2.tensor(TensorSpec("w", test::kF32, {8}).with_offset(~0ull - 31));
  EXPECT_TRUE(Rejects(w2.build(), "tensor \"w\" offset", 49));
  // Infos end at 57 with no padding: the data section (64) starts past the end.
  ByteBuf b3 = header(3, 1, 0);
  b3.raw(tensor_record("w", {0}, test::kF32, 0));
  ASSERT_EQ(b3.size(), 57u);
  EXPECT_TRUE(Rejects(b3.bytes(), "data section", 57));
}

TEST(GgufReject, OverlappingTensors) {
  // "a" 64 bytes at 0; "b" 32 bytes at 32. "b" info at 57, its offset field at 82.
  GgufWriter w;
  w.tensor(TensorSpec("a", test::kF32, {16}).with_offset(0));
  w.tensor(TensorSpec("b", test::kF32, {8}).with_offset(32));
  EXPECT_TRUE(Rejects(w.build(), "tensor \"b\" offset", 82, {}, "overlaps tensor \"a\""));
  // Listed the other way round: the tensor that starts later is named.
  GgufWriter w2;
  w2.tensor(TensorSpec("b", test::kF32, {8}).with_offset(32));
  w2.tensor(TensorSpec("a", test::kF32, {16}).with_offset(0));
  EXPECT_TRUE(Rejects(w2.build(), "tensor \"b\" offset", 49, {}, "overlaps"));
  // Same offset.
  GgufWriter w3;
  w3.tensor(TensorSpec("a", test::kF32, {8}).with_offset(0));
  w3.tensor(TensorSpec("b", test::kF32, {8}).with_offset(0));
  try {
    parse_bytes(w3.build());
    FAIL() << "tensors at the same offset accepted";
  } catch (const FormatError& e) {
    EXPECT_TRUE(e.offset() == 49u || e.offset() == 82u) << e.offset();
  }
  // Adjacent tensors do not overlap.
  GgufWriter ok;
  ok.tensor(TensorSpec("a", test::kF32, {8}).with_offset(0));
  ok.tensor(TensorSpec("b", test::kF32, {8}).with_offset(32));
  EXPECT_NO_THROW(parse_bytes(ok.build()));
}

// Random byte flips in a valid file never crash the parser: it returns or throws FormatError.
TEST(GgufReject, ByteFlipsNeverCrash) {
  GgufWriter w;
  w.kv("general.alignment", TV::u32(32));
  w.kv("s", TV::arr_str({"a", "bc"}));
  w.kv("n", TV::array_of(test::kGgufArray, {TV::arr_u32({1, 2})}));
  w.tensor("x", test::kQ4_K, {256, 2});
  w.tensor("y", test::kF32, {4});
  const std::vector<uint8_t> bytes = w.build();
  uint32_t rng = 12345;
  for (size_t pos = 0; pos < 200 && pos < bytes.size(); ++pos) {
    for (int k = 0; k < 4; ++k) {
      rng = rng * 1664525u + 1013904223u;
      std::vector<uint8_t> b = bytes;
      b[pos] = static_cast<uint8_t>(rng >> 24);
      try {
        parse_bytes(b);
      } catch (const FormatError& e) {
        EXPECT_EQ(e.file(), kName);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ggml type table against ggml-common.h (block structs typed in by hand)

TEST(GgmlType, BlockSizesMatchGgml) {
  struct Row {
    uint32_t id;
    const char* name;
    uint32_t block;
    uint32_t bytes;
  };
  const Row rows[] = {
      {0, "f32", 1, 4},          {1, "f16", 1, 2},          {2, "q4_0", 32, 18},
      {3, "q4_1", 32, 20},       {6, "q5_0", 32, 22},       {7, "q5_1", 32, 24},
      {8, "q8_0", 32, 34},       {9, "q8_1", 32, 36},       {10, "q2_K", 256, 84},
      {11, "q3_K", 256, 110},    {12, "q4_K", 256, 144},    {13, "q5_K", 256, 176},
      {14, "q6_K", 256, 210},    {15, "q8_K", 256, 292},    {16, "iq2_xxs", 256, 66},
      {17, "iq2_xs", 256, 74},   {18, "iq3_xxs", 256, 98},  {19, "iq1_s", 256, 50},
      {20, "iq4_nl", 32, 18},    {21, "iq3_s", 256, 110},   {22, "iq2_s", 256, 82},
      {23, "iq4_xs", 256, 136},  {24, "i8", 1, 1},          {25, "i16", 1, 2},
      {26, "i32", 1, 4},         {27, "i64", 1, 8},         {28, "f64", 1, 8},
      {29, "iq1_m", 256, 56},    {30, "bf16", 1, 2},        {34, "tq1_0", 256, 54},
      {35, "tq2_0", 256, 66},    {39, "mxfp4", 32, 17},
  };
  for (const Row& r : rows) {
    const auto t = ggml_type_traits(r.id);
    ASSERT_TRUE(t.has_value()) << r.name;
    EXPECT_EQ(t->name, r.name);
    EXPECT_EQ(t->block_size, r.block) << r.name;
    EXPECT_EQ(t->type_size, r.bytes) << r.name;
    EXPECT_EQ(t->quantized, r.block > 1) << r.name;
    EXPECT_EQ(ggml_type_from_name(r.name), static_cast<GgmlType>(r.id)) << r.name;
  }
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u, 100u, 0xFFFFFFFEu, 0xFFFFFFFFu}) {
    EXPECT_FALSE(ggml_type_traits(id).has_value()) << id;
  }
  EXPECT_EQ(ggml_type_name(GgmlType::Q4_K), "q4_K");
  EXPECT_EQ(ggml_type_from_name("F16"), GgmlType::F16);
  EXPECT_EQ(ggml_type_from_name("Q6_K"), GgmlType::Q6_K);
  EXPECT_EQ(ggml_type_from_name("q4_2"), std::nullopt);
  EXPECT_EQ(ggml_type_from_name(""), std::nullopt);
  // Rows: 256 q4_K = 144 B; 4096 q6_K = 16 x 210 = 3360 B; 64 q8_0 = 68 B; 2880 mxfp4 = 90 x 17.
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q4_K, 256), 144u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q6_K, 4096), 3360u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q8_0, 64), 68u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::MXFP4, 2880), 1530u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::F32, 7), 28u);
  EXPECT_EQ(ggml_row_bytes(GgmlType::Q4_K, 100), std::nullopt);
  EXPECT_EQ(ggml_row_bytes(GgmlType::F32, 1ull << 63), std::nullopt);  // 2^65 bytes
}

}  // namespace
}  // namespace moepack

namespace moepack {
namespace {

// A damaged name holding a NUL (or another control byte) is shown whole, escaped, so the
// message still names the field and the offset after it.
// A count no real file could hold (2^40 strings need 8 TiB) is a damaged field, not a file cut
// short: no truncation hint.
TEST(GgufReject, AnImpossibleCountIsNotCalledTruncation) {
  ByteBuf b = header(3, 0, 1);
  b.str("a").u32(test::kGgufArray).u32(test::kGgufString).u64(uint64_t{1} << 40).zeros(64);
  try {
    parse_bytes(b.bytes());
    ADD_FAILURE() << "parsed";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("runs past the end"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST(GgufReject, ControlBytesInNamesAreEscapedNotCut) {
  const FormatError e("x.gguf", std::string("tensor \"a\0b\x07\"", 13), 1234, "bad\x01");
  EXPECT_EQ(std::string(e.what()), "x.gguf: tensor \"a\\x00b\\x07\" at byte 1234: bad\\x01");
  EXPECT_EQ(e.field(), "tensor \"a\\x00b\\x07\"");
  EXPECT_EQ(printable("caf\xc3\xa9 ok"), "caf\xc3\xa9 ok");  // UTF-8 is kept
}

}  // namespace
}  // namespace moepack
