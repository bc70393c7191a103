// Compiles a Metal kernel with metal2vk::compiler, runs it with metal2vk::runtime on the default Vulkan device and
// checks the result on the CPU. Exit 0 and "consumer: ok" when every element matches.
#include <cstdio>
#include <vector>

#include "metal2vk/compiler.h"
#include "metal2vk/runtime.h"

static const char* kSource = R"(
#include <metal_stdlib>
using namespace metal;
kernel void axpb(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant float& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  y[i] = a * x[i] + 1.0f;
}
)";

int main() {
  m2v::CompileResult compiled = m2v::compileSource(kSource, "axpb.metal");
  if (compiled.status != m2v::Status::Ok || compiled.kernels.size() != 1) {
    std::fprintf(stderr, "consumer: compile failed (%zu kernels)\n", compiled.kernels.size());
    return 1;
  }
  const m2v::CompiledKernel& k = compiled.kernels[0];
  m2v::Device device;
  std::printf("%s\n", device.describe().c_str());
  const uint32_t n = 1000;
  std::vector<float> x(n), y(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = float(i) * 0.5f;
  float a = 3.0f;
  m2v::Buffer bx = device.createBuffer(n * sizeof(float)), by = device.createBuffer(n * sizeof(float));
  m2v::Stream stream = device.createStream();
  stream.upload(bx, 0, x.data(), x.size() * sizeof(float));
  stream.setKernel(device.createKernel(k.spirv, k.reflection));
  stream.setBuffer(bx, 0, 0);
  stream.setBuffer(by, 0, 1);
  stream.setBytes(&a, sizeof a, 2);
  stream.dispatchThreads({n, 1, 1}, {64, 1, 1});
  stream.readback(by, 0, y.data(), y.size() * sizeof(float));
  for (uint32_t i = 0; i < n; ++i)
    if (y[i] != a * x[i] + 1.0f) {
      std::fprintf(stderr, "consumer: y[%u] = %g, expected %g\n", i, y[i], a * x[i] + 1.0f);
      return 1;
    }
  std::printf("consumer: ok (%u elements, compiler %s)\n", n, m2v::compilerVersion());
  return 0;
}
