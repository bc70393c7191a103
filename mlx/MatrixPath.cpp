// Which build of a kernel runs: the cooperative-matrix build of its simdgroup_matrix multiplies, or the portable
// one (docs/SIMDGROUP_MATRIX.md). The cooperative build assumes the device's per-lane matrix layout; a probe kernel
// that multiplies two fragment pairs through it, checked against the CPU, verifies that once per device.
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "metal2vk/compiler.h"
#include "metal2vk/mlx.h"
#include "metal2vk/runtime.h"

namespace m2v::mlx {

namespace {

// Two 8x8 multiplies that share B (the compiler pairs them into one 16x8x8 operation), with operands loaded and
// results stored through Apple's layout: every conversion of the cooperative build takes part.
constexpr const char* kProbeSource = R"(#include <metal_stdlib>
using namespace metal;
kernel void m2v_cooperative_matrix_probe(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]],
                                         device const float* c [[buffer(2)]], device float* d [[buffer(3)]]) {
  simdgroup_half8x8 a0, a1, bm;
  simdgroup_float8x8 c0, c1, d0, d1;
  simdgroup_load(a0, a);
  simdgroup_load(a1, a + 64);
  simdgroup_load(bm, b, 8, ulong2(0), true);
  simdgroup_load(c0, c);
  simdgroup_load(c1, c + 64);
  simdgroup_multiply_accumulate(d0, a0, bm, c0);
  simdgroup_multiply_accumulate(d1, a1, bm, c1);
  simdgroup_store(d0, d);
  simdgroup_store(d1, d + 64);
}
)";

std::string probeCooperativeLayout(Device& device) {
  CompileResult r = compileSource(kProbeSource, "m2v_cooperative_matrix_probe.metal");
  if (r.status != Status::Ok || r.kernels.size() != 1 || !r.kernels[0].cooperative)
    return "the probe kernel did not compile to a cooperative-matrix build:\n" + r.diagnostics.format();
  const CompiledKernel& k = r.kernels[0];
  // Small integers: every product and sum is exact in half and float, so any misplaced element shows.
  std::vector<uint16_t> a(128), b(64);
  std::vector<float> af(128), bf(64), c(128), want(128), got(128);
  for (int i = 0; i < 128; ++i) af[i] = float((i * 37 + 11) % 13 - 6), a[i] = floatToHalfBits(af[i]);
  for (int i = 0; i < 64; ++i) bf[i] = float((i * 29 + 5) % 11 - 5), b[i] = floatToHalfBits(bf[i]);
  for (int i = 0; i < 128; ++i) c[i] = float((i * 53 + 7) % 31 - 15);
  for (int f = 0; f < 2; ++f)
    for (int r8 = 0; r8 < 8; ++r8)
      for (int col = 0; col < 8; ++col) {
        float s = c[f * 64 + r8 * 8 + col];
        for (int kk = 0; kk < 8; ++kk) s += af[f * 64 + r8 * 8 + kk] * bf[col * 8 + kk];  // b loaded transposed
        want[f * 64 + r8 * 8 + col] = s;
      }
  try {
    Kernel portable = device.createKernel(k.spirv, k.reflection);
    Kernel kernel = device.createCooperativeKernel(k.cooperative->spirv, k.cooperative->reflection, portable);
    Buffer ab = device.createBuffer(256), bb = device.createBuffer(128), cb = device.createBuffer(512),
           db = device.createBuffer(512);
    Stream s = device.createStream();
    s.upload(ab, 0, a.data(), 256);
    s.upload(bb, 0, b.data(), 128);
    s.upload(cb, 0, c.data(), 512);
    s.setKernel(kernel);
    s.setBuffer(ab, 0, 0);
    s.setBuffer(bb, 0, 1);
    s.setBuffer(cb, 0, 2);
    s.setBuffer(db, 0, 3);
    s.dispatchThreadgroups({1, 1, 1}, {32, 1, 1});
    s.readback(db, 0, got.data(), 512);
  } catch (const std::exception& e) {
    return std::string("the probe kernel failed: ") + e.what();
  }
  for (int i = 0; i < 128; ++i)
    if (got[i] != want[i])
      return "the device's cooperative-matrix lane layout is not the one metal2vk's cooperative build assumes "
             "(probe element " +
             std::to_string(i) + ": " + std::to_string(got[i]) + ", expected " + std::to_string(want[i]) + ")";
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

std::string cooperativeMatrixUnavailableReason(Device& device) {
  static std::mutex mutex;
  static std::map<const void*, std::string> reasons;  // per device state, kept for the process
  std::lock_guard lock(mutex);
  auto it = reasons.find(device.state().get());
  if (it != reasons.end()) return it->second;
  const DeviceInfo& info = device.info();
  std::string reason;
  if (!info.cooperativeMatrix)
    reason = info.name + " has no VK_KHR_cooperative_matrix";
  else if (info.requiredSubgroupSizeInCompute && info.minSubgroupSize <= 32 && info.maxSubgroupSize >= 32)
    reason = probeCooperativeLayout(device);
  else
    reason = info.name + " cannot run 32-wide subgroups";
  reasons.emplace(device.state().get(), reason);
  return reason;
}

Kernel createKernelFor(Device& device, const CompiledModule& module) {
  Kernel portable = device.createKernel(module.spirv, module.reflection);
  if (!module.cooperative) return portable;
  std::string mode = simdgroupMatrixMode();
  if (mode == "shuffle") return portable;
  std::string why = cooperativeMatrixUnavailableReason(device);
  if (!why.empty()) {
    if (mode == "cooperative")
      throw UnsupportedError("kernel '" + module.reflection.entry + "': M2V_SIMDGROUP_MATRIX=cooperative, but " + why);
    return portable;
  }
  return device.createCooperativeKernel(module.cooperative->spirv, module.cooperative->reflection, portable);
}

}  // namespace m2v::mlx
