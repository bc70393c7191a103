// Which build of a kernel runs: the cooperative-matrix build of its simdgroup_matrix multiplies, or the portable
// one (docs/SIMDGROUP_MATRIX.md). The cooperative build assumes the device's per-lane matrix layouts; a probe kernel
// per element type, checked against the CPU, verifies them once per device.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "metal2vk/compiler.h"
#include "metal2vk/mlx.h"
#include "metal2vk/runtime.h"

namespace m2v::mlx {

namespace {

constexpr uint32_t kCooperativeMatrixLoadOpcode = 4457;  // OpCooperativeMatrixLoadKHR

bool usesOpcode(const std::vector<uint32_t>& spirv, uint32_t opcode) {
  for (size_t at = 5; at < spirv.size() && spirv[at] >> 16; at += spirv[at] >> 16)
    if ((spirv[at] & 0xffff) == opcode) return true;
  return false;
}

// A probe kernel: Metal source with every form the cooperative build gives a multiply of one element type, operands
// loaded and results stored through Apple's layout so that every conversion takes part, and the products it
// computes. Inputs: a (four 8x8 fragments), b (8x8 blocks), c (two float fragments); output d, 64 floats each.
struct Term {
  int a;            // fragment of a
  int b;            // offset of an 8x8 block of b
  bool transposed;  // loaded transposed: element (k, n) at b + n * 8 + k
};
struct ProbeOutput {
  int c;  // fragment of c
  std::vector<Term> terms;
};
struct Probe {
  const char* source;
  const char* element;              // "f16" or "bf16"
  std::vector<std::string> shapes;  // the shapes the build must use
  bool cooperativeLoads;            // and B fragments through cooperative-matrix loads
  int bValues;                      // elements of b
  std::vector<ProbeOutput> outputs;
};

// f16: two multiplies that share B (one 16x8x8 operation, B loaded transposed from device memory, element by
// element), and two such pairs chained along k (one 16x8x16 operation) whose B fragments come from a threadgroup
// tile (a copy of b) through the device's matrix loads, row-major and column-major.
const Probe kHalfProbe{R"(#include <metal_stdlib>
using namespace metal;
kernel void m2v_cooperative_matrix_probe(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]],
                                         device const float* c [[buffer(2)]], device float* d [[buffer(3)]],
                                         ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup half tile[128];
  for (ushort i = lane; i < 128; i += 32) tile[i] = b[i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_half8x8 a0, a1, a2, a3, bt, b0, b1;
  simdgroup_float8x8 c0, c1, d0, d1, e0, e1;
  simdgroup_load(a0, a);
  simdgroup_load(a1, a + 64);
  simdgroup_load(a2, a + 128);
  simdgroup_load(a3, a + 192);
  simdgroup_load(bt, b, 8, ulong2(0), true);
  simdgroup_load(b0, tile);
  simdgroup_load(b1, tile + 64, 8, ulong2(0), true);
  simdgroup_load(c0, c);
  simdgroup_load(c1, c + 64);
  simdgroup_multiply_accumulate(d0, a0, bt, c0);
  simdgroup_multiply_accumulate(d1, a1, bt, c1);
  simdgroup_multiply_accumulate(e0, a2, b0, c0);
  simdgroup_multiply_accumulate(e1, a3, b0, c1);
  simdgroup_multiply_accumulate(e0, a0, b1, e0);
  simdgroup_multiply_accumulate(e1, a1, b1, e1);
  simdgroup_store(d0, d);
  simdgroup_store(d1, d + 64);
  simdgroup_store(e0, d + 128);
  simdgroup_store(e1, d + 192);
}
)",
                       "f16",
                       {"16x8x8 f16*f16+f32", "16x8x16 f16*f16+f32"},
                       true,
                       128,
                       {{0, {{0, 0, true}}},
                        {1, {{1, 0, true}}},
                        {0, {{2, 0, false}, {0, 64, true}}},
                        {1, {{3, 0, false}, {1, 64, true}}}}};

// bf16 (one shape, 16x16x16): a pair of multiplies that share B (16x8x8, padded), one multiply chained along k
// (16x8x16, padded), and two pairs chained along k that share A (one whole 16x16x16 operation).
const Probe kBfloatProbe{R"(#include <metal_stdlib>
using namespace metal;
kernel void m2v_cooperative_matrix_probe_bf16(device const bfloat* a [[buffer(0)]], device const bfloat* b [[buffer(1)]],
                                              device const float* c [[buffer(2)]], device float* d [[buffer(3)]]) {
  simdgroup_bfloat8x8 a0, a1, a2, a3, b0, b1, b2, b3;
  simdgroup_float8x8 c0, c1, d0, d1, e0, e1, f0, f1, g0;
  simdgroup_load(a0, a);
  simdgroup_load(a1, a + 64);
  simdgroup_load(a2, a + 128);
  simdgroup_load(a3, a + 192);
  simdgroup_load(b0, b);
  simdgroup_load(b1, b + 64, 8, ulong2(0), true);
  simdgroup_load(b2, b + 128);
  simdgroup_load(b3, b + 192, 8, ulong2(0), true);
  simdgroup_load(c0, c);
  simdgroup_load(c1, c + 64);
  simdgroup_multiply_accumulate(d0, a0, b0, c0);
  simdgroup_multiply_accumulate(d1, a1, b0, c1);
  simdgroup_multiply_accumulate(e0, a2, b1, c0);
  simdgroup_multiply_accumulate(e1, a3, b1, c1);
  simdgroup_multiply_accumulate(f0, a2, b3, c1);
  simdgroup_multiply_accumulate(f1, a3, b3, c0);
  simdgroup_multiply_accumulate(e0, a0, b2, e0);
  simdgroup_multiply_accumulate(e1, a1, b2, e1);
  simdgroup_multiply_accumulate(f0, a0, b0, f0);
  simdgroup_multiply_accumulate(f1, a1, b0, f1);
  simdgroup_multiply_accumulate(g0, a1, b2, c0);
  simdgroup_multiply_accumulate(g0, a3, b1, g0);
  simdgroup_store(d0, d);
  simdgroup_store(d1, d + 64);
  simdgroup_store(e0, d + 128);
  simdgroup_store(e1, d + 192);
  simdgroup_store(f0, d + 256);
  simdgroup_store(f1, d + 320);
  simdgroup_store(g0, d + 384);
}
)",
                         "bf16",
                         {"16x16x16 bf16*bf16+f32"},
                         false,
                         256,
                         {{0, {{0, 0, false}}},
                          {1, {{1, 0, false}}},
                          {0, {{2, 64, true}, {0, 128, false}}},
                          {1, {{3, 64, true}, {1, 128, false}}},
                          {1, {{2, 192, true}, {0, 0, false}}},
                          {0, {{3, 192, true}, {1, 0, false}}},
                          {0, {{1, 128, false}, {3, 64, true}}}}};

uint16_t elementBits(const std::string& element, float v) {
  if (element == "f16") return floatToHalfBits(v);
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return static_cast<uint16_t>(bits >> 16);  // bfloat: the probe's values are small integers, exact
}

std::string runProbe(Device& device, const Probe& probe) {
  CompileResult r = compileSource(probe.source, "m2v_cooperative_matrix_probe.metal");
  if (r.status != Status::Ok || r.kernels.size() != 1 || !r.kernels[0].cooperative)
    return "the " + std::string(probe.element) + " probe kernel did not compile to a cooperative-matrix build:\n" +
           r.diagnostics.format();
  const CompiledKernel& k = r.kernels[0];
  std::vector<std::string> shapes = k.cooperative->reflection.cooperativeMatrixShapes, expected = probe.shapes;
  std::sort(shapes.begin(), shapes.end());
  std::sort(expected.begin(), expected.end());
  if (shapes != expected || (probe.cooperativeLoads && !usesOpcode(k.cooperative->spirv, kCooperativeMatrixLoadOpcode)))
    return "the " + std::string(probe.element) +
           " probe kernel's cooperative-matrix build lacks a form of multiply or load it is meant to check";
  // Small integers: every product and sum is exact in half, bfloat and float, so any misplaced element shows.
  const int nb = probe.bValues, nd = 64 * static_cast<int>(probe.outputs.size());
  std::vector<uint16_t> a(256), b(nb);
  std::vector<float> af(256), bf(nb), c(128), want(nd), got(nd);
  for (int i = 0; i < 256; ++i) af[i] = float((i * 37 + 11) % 13 - 6), a[i] = elementBits(probe.element, af[i]);
  for (int i = 0; i < nb; ++i) bf[i] = float((i * 29 + 5) % 11 - 5), b[i] = elementBits(probe.element, bf[i]);
  for (int i = 0; i < 128; ++i) c[i] = float((i * 53 + 7) % 31 - 15);
  for (size_t o = 0; o < probe.outputs.size(); ++o)
    for (int row = 0; row < 8; ++row)
      for (int col = 0; col < 8; ++col) {
        const ProbeOutput& out = probe.outputs[o];
        float v = c[out.c * 64 + row * 8 + col];
        for (const Term& t : out.terms)
          for (int kk = 0; kk < 8; ++kk)
            v += af[t.a * 64 + row * 8 + kk] * bf[t.b + (t.transposed ? col * 8 + kk : kk * 8 + col)];
        want[o * 64 + row * 8 + col] = v;
      }
  try {
    Kernel portable = device.createKernel(k.spirv, k.reflection);
    Kernel kernel = device.createCooperativeKernel(k.cooperative->spirv, k.cooperative->reflection, portable);
    Buffer ab = device.createBuffer(512), bb = device.createBuffer(2 * nb), cb = device.createBuffer(512),
           db = device.createBuffer(4 * nd);
    Stream s = device.createStream();
    s.upload(ab, 0, a.data(), 512);
    s.upload(bb, 0, b.data(), 2 * nb);
    s.upload(cb, 0, c.data(), 512);
    s.setKernel(kernel);
    s.setBuffer(ab, 0, 0);
    s.setBuffer(bb, 0, 1);
    s.setBuffer(cb, 0, 2);
    s.setBuffer(db, 0, 3);
    s.dispatchThreadgroups({1, 1, 1}, {32, 1, 1});
    s.readback(db, 0, got.data(), 4 * nd);
  } catch (const std::exception& e) {
    return "the " + std::string(probe.element) + " probe kernel failed: " + e.what();
  }
  int wrong = 0, first = -1;
  for (int i = 0; i < nd; ++i)
    if (got[i] != want[i]) wrong += 1, first = first < 0 ? i : first;
  if (wrong)
    return "the device's " + std::string(probe.element) +
           " cooperative-matrix lane layout is not the one metal2vk's cooperative build assumes (" +
           std::to_string(wrong) + " of " + std::to_string(nd) + " probe elements differ; element " +
           std::to_string(first) + ": " + std::to_string(got[first]) + ", expected " + std::to_string(want[first]) +
           ")";
  return {};
}

}  // namespace

std::string simdgroupMatrixMode() {
  const char* env = std::getenv("M2V_SIMDGROUP_MATRIX");
  std::string mode = env && *env ? env : "auto";
  if (mode != "auto" && mode != "shuffle" && mode != "cooperative")
    throw UsageError("M2V_SIMDGROUP_MATRIX must be auto, shuffle or cooperative (got '" + mode + "')");
  return mode;
}

std::string cooperativeMatrixUnavailableReason(Device& device, const std::string& element) {
  if (element != "f16" && element != "bf16") throw UsageError("cooperative matrices of '" + element + "': f16 or bf16");
  static std::mutex mutex;
  static std::map<std::pair<const void*, std::string>, std::string> reasons;  // per device state, kept for the process
  std::lock_guard lock(mutex);
  auto key = std::make_pair(static_cast<const void*>(device.state().get()), element);
  if (auto it = reasons.find(key); it != reasons.end()) return it->second;
  const DeviceInfo& info = device.info();
  const Probe& probe = element == "f16" ? kHalfProbe : kBfloatProbe;
  std::string reason;
  if (!info.cooperativeMatrix)
    reason = info.name + " has no VK_KHR_cooperative_matrix";
  else if (!std::all_of(probe.shapes.begin(), probe.shapes.end(),
                        [&](const std::string& shape) { return info.offersCooperativeMatrix(shape); }))
    reason = info.name + " lacks a cooperative matrix shape of " + element + " (needs " + probe.shapes.front() +
             (probe.shapes.size() > 1 ? " and " + probe.shapes.back() : "") + ")";
  else if (element == "bf16" && !info.bfloat16CooperativeMatrix)
    reason = info.name + " has no bfloat cooperative matrices (VK_KHR_shader_bfloat16)";
  else if (!info.requiredSubgroupSizeInCompute || info.minSubgroupSize > 32 || info.maxSubgroupSize < 32)
    reason = info.name + " cannot run 32-wide subgroups";
  else
    reason = runProbe(device, probe);
  reasons.emplace(key, reason);
  return reason;
}

Kernel createKernelFor(Device& device, const CompiledModule& module) {
  // The portable build: its native-bfloat16 emission where the device has the bfloat16 type (M2V_NATIVE_BFLOAT16).
  const CompiledModule& base =
      module.nativeBfloat16 && device.info().runsNativeBfloat16() ? *module.nativeBfloat16 : module;
  Kernel portable = device.createKernel(base.spirv, base.reflection);
  if (!module.cooperative) return portable;
  std::string mode = simdgroupMatrixMode();
  if (mode == "shuffle") return portable;
  // Each element type the build multiplies needs its own probe to have passed.
  const std::vector<std::string>& shapes = module.cooperative->reflection.cooperativeMatrixShapes;
  for (const std::string element : {"f16", "bf16"}) {
    std::string operands = " " + element + "*";  // "16x8x8 f16*f16+f32"
    bool uses = std::any_of(shapes.begin(), shapes.end(),
                            [&](const std::string& shape) { return shape.find(operands) != std::string::npos; });
    if (!uses && !(shapes.empty() && element == "f16")) continue;  // reflection before shapes were recorded: f16
    std::string why = cooperativeMatrixUnavailableReason(device, element);
    if (why.empty()) continue;
    if (mode == "cooperative")
      throw UnsupportedError("kernel '" + module.reflection.entry + "': M2V_SIMDGROUP_MATRIX=cooperative, but " + why);
    return portable;
  }
  return device.createCooperativeKernel(module.cooperative->spirv, module.cooperative->reflection, portable);
}

}  // namespace m2v::mlx
