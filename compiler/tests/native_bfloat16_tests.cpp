// The native-bfloat16 build: only kernels that narrow float to bfloat get it; it differs from the portable build in
// the narrowings (OpFConvert to SPV_KHR_bfloat16's type instead of the integer rounding) and in declaring
// BFloat16TypeKHR and RoundingModeRTE (16-bit results round to nearest even, as Metal's do); emitting it leaves the
// portable build byte for byte what it is without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "metal2vk/compiler.h"

namespace {

const char kSource[] = R"(
#include <metal_stdlib>
using namespace metal;

kernel void narrow(const device float4* in [[buffer(0)]], device bfloat4* out [[buffer(1)]],
                   device bfloat* one [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = bfloat4(in[i] * 2.0f);
  one[i] = bfloat(in[i].x + 1.0f);
}

kernel void widen_only(const device bfloat* in [[buffer(0)]], device float* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
  out[i] = float(in[i]) * 3.0f;
}

kernel void no_bfloat(device float* data [[buffer(0)]], uint i [[thread_position_in_grid]]) { data[i] += 1.0f; }
)";

constexpr uint32_t kOpCapability = 17, kOpExecutionMode = 16, kOpTypeFloat = 22, kOpTypeVector = 23, kOpFConvert = 115,
                   kOpIsNan = 156;
constexpr uint32_t kBFloat16Type = 5116, kBFloat16CooperativeMatrix = 5118, kRoundingModeRTE = 4467;  // capabilities
constexpr uint32_t kExecutionModeRoundingModeRTE = 4462;

struct Module {
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> insts;  // opcode, operands
  explicit Module(const std::vector<uint32_t>& words) {
    for (size_t at = 5; at < words.size() && words[at] >> 16; at += words[at] >> 16)
      insts.emplace_back(words[at] & 0xffff,
                         std::vector<uint32_t>(words.begin() + at + 1, words.begin() + at + (words[at] >> 16)));
  }
  size_t count(uint32_t op) const {
    return std::count_if(insts.begin(), insts.end(), [&](const auto& i) { return i.first == op; });
  }
  bool hasCapability(uint32_t c) const {
    return std::any_of(insts.begin(), insts.end(),
                       [&](const auto& i) { return i.first == kOpCapability && i.second == std::vector<uint32_t>{c}; });
  }
  // Execution modes' operands after the entry point (mode, literals...).
  std::vector<std::vector<uint32_t>> executionModes() const {
    std::vector<std::vector<uint32_t>> out;
    for (const auto& [op, args] : insts)
      if (op == kOpExecutionMode) out.emplace_back(args.begin() + 1, args.end());
    return out;
  }
  // Result types of OpFConvert that are the bfloat16 type or vectors of it, by component count (1 for scalars).
  std::vector<uint32_t> bfloatConversions() const {
    std::map<uint32_t, uint32_t> bf;  // type id -> component count
    for (const auto& [op, args] : insts) {
      if (op == kOpTypeFloat && args.size() == 3 && args[1] == 16 && args[2] == 0) bf[args[0]] = 1;
      if (op == kOpTypeVector && bf.count(args[1])) bf[args[0]] = args[2];
    }
    std::vector<uint32_t> out;
    for (const auto& [op, args] : insts)
      if (op == kOpFConvert && bf.count(args[0])) out.push_back(bf[args[0]]);
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::map<std::string, m2v::CompiledKernel> compile(bool native) {
  m2v::CompileOptions options;
  options.nativeBfloat16 = native;
  m2v::CompileResult r = m2v::compileSource(kSource, "native_bfloat16_test.metal", options);
  EXPECT_EQ(r.status, m2v::Status::Ok) << r.diagnostics.format();
  EXPECT_TRUE(r.diagnostics.all().empty()) << r.diagnostics.format();
  std::map<std::string, m2v::CompiledKernel> out;
  for (m2v::CompiledKernel& k : r.kernels) out[k.reflection.entry] = std::move(k);
  return out;
}

TEST(NativeBfloat16, OnlyKernelsThatNarrowHaveIt) {
  auto kernels = compile(true);
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_TRUE(kernels["narrow"].nativeBfloat16);
  EXPECT_FALSE(kernels["widen_only"].nativeBfloat16);
  EXPECT_FALSE(kernels["no_bfloat"].nativeBfloat16);
  for (const auto& [name, k] : compile(false)) EXPECT_FALSE(k.nativeBfloat16) << name;
}

TEST(NativeBfloat16, NarrowsWithConversionsUnderTheTypeCapabilityAlone) {
  auto kernels = compile(true);
  const m2v::CompiledKernel& k = kernels["narrow"];
  ASSERT_TRUE(k.nativeBfloat16);
  Module portable(k.spirv), native(k.nativeBfloat16->spirv);
  // portable: integer rounding (an IsNan per narrowing), no bfloat16 type
  EXPECT_TRUE(portable.bfloatConversions().empty());
  EXPECT_EQ(portable.count(kOpIsNan), 2u);
  EXPECT_FALSE(portable.hasCapability(kBFloat16Type));
  EXPECT_FALSE(portable.hasCapability(kRoundingModeRTE));
  // native: one scalar and one 4-wide conversion to the bfloat16 type, no integer rounding
  EXPECT_EQ(native.bfloatConversions(), (std::vector<uint32_t>{1, 4}));
  EXPECT_EQ(native.count(kOpIsNan), 0u);
  EXPECT_TRUE(native.hasCapability(kBFloat16Type));
  EXPECT_FALSE(native.hasCapability(kBFloat16CooperativeMatrix));
  // 16-bit results round to nearest even (float controls)
  EXPECT_TRUE(native.hasCapability(kRoundingModeRTE));
  auto modes = native.executionModes();
  EXPECT_NE(std::find(modes.begin(), modes.end(), std::vector<uint32_t>{kExecutionModeRoundingModeRTE, 16}),
            modes.end());
  // the reflection is the portable one's but for the capabilities and the extension
  m2v::KernelReflection r = k.nativeBfloat16->reflection;
  EXPECT_NE(std::find(r.extensions.begin(), r.extensions.end(), "SPV_KHR_bfloat16"), r.extensions.end());
  std::erase(r.capabilities, "BFloat16TypeKHR");
  std::erase(r.capabilities, "RoundingModeRTE");
  std::erase(r.extensions, "SPV_KHR_bfloat16");
  EXPECT_EQ(m2v::toJson(r), m2v::toJson(k.reflection));
}

TEST(NativeBfloat16, PortableBuildIsUnchangedByIt) {
  auto with = compile(true), without = compile(false);
  for (const auto& [name, k] : with) {
    EXPECT_EQ(k.spirv, without[name].spirv) << name;
    EXPECT_EQ(m2v::toJson(k.reflection), m2v::toJson(without[name].reflection)) << name;
  }
}

}  // namespace
