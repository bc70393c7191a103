// First-run latency of MLX's JIT kernels on metal2vk (bench/mlx-tests-lavapipe.md): each op's first eval (kernel
// built in process, or read from the disk cache) against a second eval of the same op in the same process.
// Built against a scripts/build-mlx.sh tree B (metal2vk archives in B/metal2vk or $M2V_BUILD, here T):
//   clang++-22 -std=c++20 -O1 -I<mlx> -Iinclude/metal2vk/metal-cpp bench/mlx_kernel_first_use.cpp B/libmlx.a \
//     -Wl,--start-group T/metal/libm2v_metal.a T/mlx/libm2v_mlx.a T/runtime/libm2v_runtime.a T/compiler/libm2v_compiler.a \
//     T/spirv/libm2v_spirv.a T/lower/libm2v_lower.a T/frontend/libm2v_frontend.a T/common/libm2v_common.a \
//     -Wl,--end-group -lclang-cpp -lLLVM -lSPIRV-Tools-opt -lSPIRV-Tools -lvulkan -lopenblas B/mlx/io/libgguflib.a \
//     -L/usr/lib/llvm-22/lib -Wl,-rpath,/usr/lib/llvm-22/lib -o first_use
//   M2V_CACHE_DIR=$(mktemp -d) ./first_use   # cold; run again with the same directory: warm
#include "mlx/mlx.h"
#include <chrono>
#include <cstdio>
#include <functional>
using namespace mlx::core;
double ms(std::function<void()> f) {
  auto t = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}
int main() {
  double init = ms([] { eval(add(array(1.0f), array(2.0f))); });
  std::printf("first eval in process (device, metallib, first kernel): %.1f ms\n", init);
  auto x = random::uniform({256, 256});
  eval(x);
  struct Op { const char* name; std::function<array()> f; };
  Op ops[] = {
      {"exp f32 (unary)", [&] { return exp(x); }},
      {"multiply f16 (binary)", [&] { return multiply(astype(x, float16), astype(x, float16)); }},
      {"where (ternary)", [&] { return where(greater(x, array(0.5f)), x, array(0.0f)); }},
      {"transpose copy", [&] { return contiguous(transpose(x)); }},
      {"arange", [&] { return arange(0, 1000, 1); }},
      {"take (gather)", [&] { return take(x, arange(0, 16, 1), 0); }},
      {"fused compile (x*2+1)", [&] { return compile([](const std::vector<array>& in) {
                                          return std::vector<array>{exp(in[0] * 2.0f + 1.0f)}; })({x})[0]; }},
  };
  for (auto& op : ops) {
    double first = ms([&] { eval(op.f()); });
    double second = ms([&] { eval(op.f()); });
    std::printf("%-24s first %8.1f ms   again %6.1f ms\n", op.name, first, second);
  }
}
