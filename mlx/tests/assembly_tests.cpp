// Golden tests of MLX's kernel assembly, each written from a rule of ../shared/MLX_METAL_KERNEL.md.
#include <gtest/gtest.h>

#include "metal2vk/mlx.h"

using namespace m2v::mlx;

namespace {

KernelSpec spec(std::string name, std::vector<std::string> in, std::vector<std::string> out, std::string source,
                std::string header = "") {
  KernelSpec s;
  s.name = std::move(name);
  s.inputNames = std::move(in);
  s.outputNames = std::move(out);
  s.source = std::move(source);
  s.header = std::move(header);
  return s;
}

}  // namespace

// The example of "The generated text, in order", exactly.
TEST(Assembly, DocumentedExample) {
  const std::string body = "  uint i = thread_position_in_grid.x;\n  out[i] = x[elem_to_loc(i, x_shape, x_strides, x_ndim)];";
  KernelSpec s = spec("myexp", {"x"}, {"out"}, body, "// header\n");
  Assembly a = assemble(s, {{Dtype::Float32, {4, 16}}}, {Dtype::Float32},
                        {{"T", Dtype::Float32}, {"N", 3}, {"B", true}});
  EXPECT_EQ(a.kernelName, "custom_kernel_myexp__float_3_1_float_float");
  const std::string k = a.kernelName;
  EXPECT_EQ(a.source,
            "// header\n"
            "template <typename T, int N, bool B>\n"
            "[[kernel]] void " + k + "(\n"
            "  const device float* x [[buffer(0)]],\n"
            "  const constant int* x_shape [[buffer(1)]],\n"
            "  const constant int64_t* x_strides [[buffer(2)]],\n"
            "  const constant int& x_ndim [[buffer(3)]],\n"
            "  device float* out [[buffer(4)]],\n"
            "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n" +
                body +
                "\n}\n"
                "\ntemplate [[host_name(\"" + k + "\")]] [[kernel]] decltype(" + k + "<float, 3, 1>) " + k +
                "<float, 3, 1>;\n");
  ASSERT_EQ(a.slots.size(), 5u);
  EXPECT_EQ(a.slots[4].kind, BufferSlot::Kind::Output);
  EXPECT_EQ(a.slots[4].index, 4u);
}

// Rule 1: one counter; each input then its shape/strides/ndim (only those present); outputs after all inputs.
TEST(Assembly, OneBufferCounter) {
  KernelSpec s = spec("k", {"a", "b", "c"}, {"o1", "o2"},
                      "o1[0] = a[0] + b_strides[0] + c_ndim; o2[0] = a_shape[0] + b[0] + c[0];");
  Assembly a = assemble(s, {{Dtype::Float32, {16}}, {Dtype::Int32, {16}}, {Dtype::Float16, {2, 8}}},
                        {Dtype::Float32, Dtype::Float32}, {});
  const std::string& t = a.source;
  EXPECT_NE(t.find("  const device float* a [[buffer(0)]],\n"
                   "  const constant int* a_shape [[buffer(1)]],\n"
                   "  const device int32_t* b [[buffer(2)]],\n"
                   "  const constant int64_t* b_strides [[buffer(3)]],\n"
                   "  const device float16_t* c [[buffer(4)]],\n"
                   "  const constant int& c_ndim [[buffer(5)]],\n"
                   "  device float* o1 [[buffer(6)]]"),
            std::string::npos)
      << t;
  // Rule 9: with shape buffers, no attribute and two outputs, MLX closes the signature after the first output.
  EXPECT_NE(t.find("  device float* o1 [[buffer(6)]]) {\n  device float* o2 [[buffer(7)]]) {\n"), std::string::npos)
      << t;
  std::vector<uint32_t> idx;
  for (auto& sl : a.slots) idx.push_back(sl.index);
  EXPECT_EQ(idx, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// Rule 4: plain substring search, so a local `max_shape` with an input named `max` adds a shape buffer.
TEST(Assembly, SubstringQuirkShiftsIndices) {
  KernelSpec s = spec("q", {"max", "y"}, {"out"},
                      "uint i = thread_position_in_grid.x; int max_shape = 3; out[i] = max[i] + y[i] + max_shape;");
  Assembly a = assemble(s, {{Dtype::Float32, {32}}, {Dtype::Float32, {32}}}, {Dtype::Float32}, {});
  EXPECT_NE(a.source.find("  const device float* max [[buffer(0)]],\n"
                          "  const constant int* max_shape [[buffer(1)]],\n"
                          "  const device float* y [[buffer(2)]],\n"
                          "  device float* out [[buffer(3)]],\n"),
            std::string::npos)
      << a.source;
  auto infos = detectShapeInfos(s.source, s.inputNames);
  EXPECT_TRUE(infos[0].shape);
  EXPECT_FALSE(infos[0].strides);
  EXPECT_FALSE(infos[1].shape);
}

// Rule 4: the header is never searched.
TEST(Assembly, HeaderIsNotSearched) {
  KernelSpec s = spec("h", {"x"}, {"out"}, "out[0] = x[0];",
                      "inline int f(constant int* x_shape, uint3 thread_position_in_grid) { return 0; }\n");
  Assembly a = assemble(s, {{Dtype::Float32, {16}}}, {Dtype::Float32}, {});
  EXPECT_EQ(a.source.find("const constant int* x_shape [[buffer"), std::string::npos);
  EXPECT_EQ(a.source.find("[[thread_position_in_grid]]"), std::string::npos);
  EXPECT_NE(a.source.find("  device float* out [[buffer(1)]]) {\nout[0] = x[0];\n}\n"), std::string::npos)
      << a.source;
}

// Rule 8: hash from "<float, 3, 1>" -> "_float_3_1" appended after "_"; type suffixes with s/c.
TEST(Assembly, TemplateHashDoubleUnderscore) {
  TemplateArgs t{{"T", Dtype::Float32}, {"N", 3}, {"B", true}};
  EXPECT_EQ(writeTemplateArgs(t), "<float, 3, 1>");
  EXPECT_EQ(kernelName("myexp", {{Dtype::Float32, {64}}}, {Dtype::Float32}, t),
            "custom_kernel_myexp__float_3_1_float_float");
  EXPECT_EQ(kernelName("k", {}, {Dtype::Int32}, {}), "custom_kernel_k_int32_t");
  EXPECT_EQ(kernelName("k", {{Dtype::BFloat16, {}}, {Dtype::Int32, {3}}, {Dtype::Float16, {8}}}, {Dtype::Float32},
                       {{"neg", -2}, {"f", false}}),
            "custom_kernel_k__-2_0_bfloat16_ts_int32_tc_float16_t_float");
}

// Rule 7: bools print as 1/0 in the instantiation, typename/int/bool in the template line, order as given.
TEST(Assembly, BoolsAsOneZero) {
  KernelSpec s = spec("b", {"x"}, {"out"}, "if (A && !B) out[0] = x[0];");
  Assembly a = assemble(s, {{Dtype::Float32, {8}}}, {Dtype::Float32}, {{"A", true}, {"B", false}, {"T", Dtype::Int64}});
  EXPECT_NE(a.source.find("template <bool A, bool B, typename T>\n[[kernel]] void " + a.kernelName + "(\n"),
            std::string::npos);
  EXPECT_NE(a.source.find("decltype(" + a.kernelName + "<1, 0, int64_t>) " + a.kernelName + "<1, 0, int64_t>;\n"),
            std::string::npos)
      << a.source;
  EXPECT_EQ(a.kernelName, "custom_kernel_b__1_0_int64_t_float_float");
}

// Rule 2: fewer than 8 elements -> constant, else device; 0-d -> constant reference; rule 4: no shape for 0-d.
TEST(Assembly, ConstantVersusDeviceBySize) {
  KernelSpec s = spec("c", {"a", "b", "c", "d", "e"}, {"out"},
                      "out[0] = a[0] + b[0] + c[0] + d + e[0] + d_shape[0] + a_ndim;");
  Assembly a = assemble(s,
                        {{Dtype::Float32, {7}},
                         {Dtype::Float32, {8}},
                         {Dtype::Float32, {2, 2}},
                         {Dtype::Float32, {}},
                         {Dtype::Float32, {1, 7}}},
                        {Dtype::Float32}, {});
  EXPECT_NE(a.source.find("  const constant float* a [[buffer(0)]],\n"
                          "  const constant int& a_ndim [[buffer(1)]],\n"
                          "  const device float* b [[buffer(2)]],\n"
                          "  const constant float* c [[buffer(3)]],\n"
                          "  const constant float& d [[buffer(4)]],\n"
                          "  const constant float* e [[buffer(5)]],\n"
                          "  device float* out [[buffer(6)]]) {\n"),
            std::string::npos)
      << a.source;
  EXPECT_EQ(a.source.find("d_shape [[buffer"), std::string::npos);
  EXPECT_EQ(a.kernelName, "custom_kernel_c_floatc_float_floatc_floats_floatc_float");
}

// The conformance example: template args (bool e, int f, typename T), 3-element int32, 2x2 bfloat16, float scalar,
// two outputs: buffer indices 0..5.
TEST(Assembly, ConformanceTemplateAndConstants) {
  KernelSpec s = spec("arg_test", {"a", "b", "c", "d"}, {"out1", "out2"},
                      "uint elem = thread_position_in_grid.x;\n"
                      "T tmp = a[0];\n"
                      "if (e) { out1[elem] = a[1] + b[2] + c[3] + d + f; } else { out1[elem] = 1; }\n"
                      "out2[elem] = a[1] + b[2] + c[1] - d;");
  Assembly a = assemble(s,
                        {{Dtype::Float32, {3, 2}}, {Dtype::Int32, {3}}, {Dtype::BFloat16, {2, 2}},
                         {Dtype::Float32, {}}},
                        {Dtype::Float32, Dtype::Int32}, {{"e", true}, {"f", 3}, {"T", Dtype::Float16}});
  EXPECT_EQ(a.kernelName, "custom_kernel_arg_test__1_3_float16_t_floatc_int32_tc_bfloat16_tc_floats_float_int32_t");
  EXPECT_NE(a.source.find("template <bool e, int f, typename T>\n"
                          "[[kernel]] void " + a.kernelName + "(\n"
                          "  const constant float* a [[buffer(0)]],\n"
                          "  const constant int32_t* b [[buffer(1)]],\n"
                          "  const constant bfloat16_t* c [[buffer(2)]],\n"
                          "  const constant float& d [[buffer(3)]],\n"
                          "  device float* out1 [[buffer(4)]],\n"
                          "  device int32_t* out2 [[buffer(5)]],\n"
                          "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n"),
            std::string::npos)
      << a.source;
}

// Rule 5: atomic outputs.
TEST(Assembly, AtomicOutputs) {
  KernelSpec s = spec("scatter", {"idx", "v"}, {"out", "count"},
                      "atomic_fetch_add_explicit(&out[idx[thread_position_in_grid.x]], v[0], memory_order_relaxed);");
  s.atomicOutputs = true;
  Assembly a = assemble(s, {{Dtype::Int32, {100}}, {Dtype::Float32, {100}}}, {Dtype::Float32, Dtype::Int32}, {});
  EXPECT_NE(a.source.find("  device atomic<float>* out [[buffer(2)]],\n"
                          "  device atomic<int32_t>* count [[buffer(3)]],\n"
                          "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {\n"),
            std::string::npos)
      << a.source;
}

// Rule 6: fixed order, comments count, dispatch_threads_per_threadgroup also adds threads_per_threadgroup.
TEST(Assembly, AttributeOrder) {
  KernelSpec s = spec("attrs", {}, {"out"},
                      "// threads_per_simdgroup\n"
                      "out[thread_index_in_simdgroup] = dispatch_threads_per_threadgroup.x + grid_size.x + "
                      "simdgroup_index_in_threadgroup + threadgroup_position_in_grid.x;");
  Assembly a = assemble(s, {}, {Dtype::UInt32}, {});
  EXPECT_EQ(a.source,
            "[[kernel]] void custom_kernel_attrs_uint32_t(\n"
            "  device uint32_t* out [[buffer(0)]],\n"
            "  uint3 dispatch_threads_per_threadgroup [[dispatch_threads_per_threadgroup]],\n"
            "  uint3 grid_size [[grid_size]],\n"
            "  uint simdgroup_index_in_threadgroup [[simdgroup_index_in_threadgroup]],\n"
            "  uint thread_index_in_simdgroup [[thread_index_in_simdgroup]],\n"
            "  uint3 threadgroup_position_in_grid [[threadgroup_position_in_grid]],\n"
            "  uint threads_per_simdgroup [[threads_per_simdgroup]],\n"
            "  uint3 threads_per_threadgroup [[threads_per_threadgroup]]) {\n" +
                s.source + "\n}\n");
  // `thread_index_in_simdgroup` and the threadgroup position are substrings of each other's neighbours only where
  // the names really contain them; `simdgroups_per_threadgroup` is absent.
  EXPECT_EQ(a.source.find("simdgroups_per_threadgroup [["), std::string::npos);
}

// Rule 9 (no attributes, no shape buffers): the last output closes the signature.
TEST(Assembly, SeparatorWithoutAttributes) {
  KernelSpec s = spec("sep", {"x"}, {"a", "b"}, "a[0] = x[0]; b[0] = x[1];");
  Assembly a = assemble(s, {{Dtype::Float32, {16}}}, {Dtype::Float32, Dtype::Float32}, {});
  EXPECT_NE(a.source.find("  device float* a [[buffer(1)]],\n  device float* b [[buffer(2)]]) {\n"),
            std::string::npos)
      << a.source;
}

TEST(Assembly, ThreeTypeStrings) {
  EXPECT_STREQ(typeString(Dtype::Float16), "float16_t");
  EXPECT_STREQ(typeString(Dtype::BFloat16), "bfloat16_t");
  EXPECT_STREQ(typeString(Dtype::Float64), "double");
  EXPECT_STREQ(typeString(Dtype::Complex64), "complex64_t");
  EXPECT_STREQ(typeString(Dtype::UInt8), "uint8_t");
  EXPECT_STREQ(typeString(Dtype::Bool), "bool");
  EXPECT_EQ(parseDtype("bfloat16"), Dtype::BFloat16);
  EXPECT_EQ(parseDtype("float32"), Dtype::Float32);
  EXPECT_EQ(parseDtype("int64"), Dtype::Int64);
  EXPECT_FALSE(parseDtype("float128"));
}

TEST(Assembly, SizeChecks) {
  KernelSpec s = spec("z", {"x"}, {"o"}, "o[0] = x[0];");
  EXPECT_THROW(assemble(s, {}, {Dtype::Float32}, {}), std::invalid_argument);
  EXPECT_THROW(assemble(s, {{Dtype::Float32, {8}}}, {}, {}), std::invalid_argument);
  KernelSpec none = spec("n", {}, {}, "");
  EXPECT_THROW(MetalKernel{none}, std::invalid_argument);
}

TEST(Assembly, CompilerInputKeepsLines) {
  KernelSpec s = spec("l", {"x"}, {"o"}, "o[0] = x[0];");
  Assembly a = assemble(s, {{Dtype::Float32, {8}}}, {Dtype::Float32}, {});
  EXPECT_EQ(compilerInput(a), "#include <mlx_prelude>\n#line 1\n" + a.source);
}

TEST(HostConvert, HalfAndBfloat) {
  EXPECT_EQ(floatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalfBits(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalfBits(1e6f), 0x7c00);
  EXPECT_EQ(floatToHalfBits(5.960464477539063e-08f), 0x0001);
  EXPECT_FLOAT_EQ(halfBitsToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(floatToBfloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(floatToBfloat16Bits(1.00390625f), 0x3f80);  // tie rounds to even
  EXPECT_FLOAT_EQ(bfloat16BitsToFloat(0x4049), 3.140625f);
}
