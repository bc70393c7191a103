// MLX programs on metal2vk: MLX's own C++ API and Metal backend (built by scripts/build-mlx.sh), timed on the default
// device. The same programs in PyTorch are bench/mlx_programs_torch.py; bench/mlx_programs.sh runs both in one lease.
//
//   mlx_programs [--json FILE] [--small] [--no-check]
//
// Programs: f16 matmul 4096^3, f32 softmax over the last axis of 8192x8192, and one training step of a 2-layer MLP
// (f32, batch 4096, 4096 -> 4096 -> 4096 relu, mean squared error) as mx::value_and_grad builds it. Each is evaluated
// until 0.5 s of warm-up has passed (the GPU's clock idles between bursts), then timed over repeated evals; then the
// result is checked against MLX's CPU device on the same inputs (matmul and MLP on their first rows: the CPU device
// would take minutes for the whole).
// Host overhead: metal2vk's Metal API counts dispatches and committed command buffers; per eval we report both and
// the host time per dispatch with the GPU's work kept trivially small (a chain of 1-element adds).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "metal2vk/metal_statistics.h"
#include "mlx/mlx.h"

namespace mx = mlx::core;
using Clock = std::chrono::steady_clock;

namespace {

// --no-check: time only. The CPU device reads GPU results through the host mapping of shared buffers, which on a
// discrete GPU is device memory across PCIe (uncached: minutes for these sizes); --small runs the checks quickly.
bool checkResults = true;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct Result {
  std::string name;
  double ms = 0;          // per eval, median of the timed repeats
  double work = 0;        // FLOPs or bytes per eval
  std::string unit;       // "TFLOP/s" or "GB/s"
  double maxError = 0;    // against the CPU device
  double dispatchesPerEval = 0, commandBuffersPerEval = 0;
};

// Runs `program` (which builds and evaluates its arrays) repeatedly: warm-up for 0.5 s, then `repeats` timed evals.
template <class F>
double timeProgram(F&& program, int repeats, Result& r) {
  auto start = Clock::now();
  while (seconds(start, Clock::now()) < 0.5) program();
  auto before = m2v::metal::statistics();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = Clock::now();
    program();
    ms.push_back(seconds(t0, Clock::now()) * 1e3);
  }
  auto after = m2v::metal::statistics();
  r.dispatchesPerEval = double(after.dispatches - before.dispatches) / repeats;
  r.commandBuffersPerEval = double(after.commandBuffersCommitted - before.commandBuffersCommitted) / repeats;
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double maxRelativeError(const mx::array& gpu, const mx::array& cpu) {
  auto diff = mx::max(mx::abs(mx::subtract(mx::astype(gpu, mx::float32, mx::Device::cpu),
                                           mx::astype(cpu, mx::float32, mx::Device::cpu), mx::Device::cpu),
                              mx::Device::cpu),
                      mx::Device::cpu);
  auto scale = mx::maximum(mx::max(mx::abs(mx::astype(cpu, mx::float32, mx::Device::cpu), mx::Device::cpu),
                                   mx::Device::cpu),
                           mx::array(1e-6f), mx::Device::cpu);
  return mx::divide(diff, scale, mx::Device::cpu).item<float>();
}

Result matmulF16(int n) {
  Result r{"matmul f16 " + std::to_string(n) + "^3"};
  mx::random::seed(1);
  auto a = mx::astype(mx::random::normal({n, n}), mx::float16);
  auto b = mx::astype(mx::random::normal({n, n}), mx::float16);
  mx::eval({a, b});
  r.ms = timeProgram([&] { mx::eval(mx::matmul(a, b)); }, 20, r);
  if (!checkResults) return r.maxError = NAN, r.work = 2.0 * n * n * double(n), r.unit = "TFLOP/s", r;
  // Checked on its first 64 rows (the CPU device's matmul of the whole is minutes of work).
  auto rows = mx::slice(a, {0, 0}, {64, n});
  auto gpu = mx::slice(mx::matmul(a, b), {0, 0}, {64, n});
  mx::eval(gpu);
  r.maxError = maxRelativeError(gpu, mx::matmul(mx::astype(rows, mx::float32, mx::Device::cpu),
                                                mx::astype(b, mx::float32, mx::Device::cpu), mx::Device::cpu));
  r.work = 2.0 * n * n * double(n);
  r.unit = "TFLOP/s";
  return r;
}

Result softmaxF32(int n) {
  Result r{"softmax f32 " + std::to_string(n) + "x" + std::to_string(n)};
  mx::random::seed(2);
  auto x = mx::random::normal({n, n});
  mx::eval(x);
  r.ms = timeProgram([&] { mx::eval(mx::softmax(x, -1)); }, 50, r);
  r.work = 2.0 * n * double(n) * 4;  // read and write once
  r.unit = "GB/s";
  if (!checkResults) return r.maxError = NAN, r;
  auto gpu = mx::softmax(x, -1);
  mx::eval(gpu);
  r.maxError = maxRelativeError(gpu, mx::softmax(x, -1, false, mx::Device::cpu));
  return r;
}

// loss = mean((relu(x W1 + b1) W2 + b2 - y)^2); value_and_grad over W1, b1, W2, b2.
Result mlpStep(int batch, int width) {
  Result r{"2-layer MLP f32 forward+backward, batch " + std::to_string(batch) + ", width " + std::to_string(width)};
  mx::random::seed(3);
  float s = 1.0f / std::sqrt(float(width));
  std::vector<mx::array> params = {mx::multiply(mx::random::normal({width, width}), mx::array(s)),
                                   mx::zeros({width}),
                                   mx::multiply(mx::random::normal({width, width}), mx::array(s)),
                                   mx::zeros({width})};
  auto x = mx::random::normal({batch, width});
  auto y = mx::random::normal({batch, width});
  mx::eval(params);
  mx::eval({x, y});
  auto lossOn = [](mx::Device device, mx::array x, mx::array y) {
    return [device, x, y](const std::vector<mx::array>& p) {
      auto h = mx::maximum(mx::add(mx::matmul(x, p[0], device), p[1], device), mx::array(0.0f), device);
      auto out = mx::add(mx::matmul(h, p[2], device), p[3], device);
      auto d = mx::subtract(out, y, device);
      return mx::mean(mx::multiply(d, d, device), false, device);
    };
  };
  const std::vector<int> all = {0, 1, 2, 3};
  auto step = mx::value_and_grad(lossOn(mx::Device::gpu, x, y), all);
  r.ms = timeProgram(
      [&] {
        auto [l, g] = step(params);
        g.push_back(l);
        mx::eval(g);
      },
      10, r);
  r.work = 2.0 * batch * double(width) * width * 5;  // forward 2 GEMMs; backward 3 (W2, h, W1: x needs none)
  r.unit = "TFLOP/s";
  if (!checkResults) return r.maxError = NAN, r;
  // Checked against the CPU device on the first 256 rows of the batch (the whole batch is minutes of CPU work).
  const int rows = std::min(batch, 256);
  auto xs = mx::slice(x, {0, 0}, {rows, width}), ys = mx::slice(y, {0, 0}, {rows, width});
  auto [loss, grads] = mx::value_and_grad(lossOn(mx::Device::gpu, xs, ys), all)(params);
  auto [lossCpu, gradsCpu] = mx::value_and_grad(lossOn(mx::Device::cpu, xs, ys), all)(params);
  grads.push_back(loss);
  gradsCpu.push_back(lossCpu);
  mx::eval(grads);
  mx::eval(gradsCpu);
  for (size_t i = 0; i < grads.size(); ++i) r.maxError = std::max(r.maxError, maxRelativeError(grads[i], gradsCpu[i]));
  return r;
}

// Host cost per dispatched kernel: a chain of 1-element adds, one eval per 1000 ops.
Result hostOverhead(int ops) {
  Result r{"host overhead: chain of " + std::to_string(ops) + " one-element adds, one eval"};
  auto x = mx::zeros({1});
  mx::eval(x);
  auto chain = [&] {
    auto y = x;
    for (int i = 0; i < ops; ++i) y = mx::add(y, mx::array(1.0f));
    mx::eval(y);
    return y;
  };
  r.maxError = std::abs(chain().item<float>() - float(ops)) / float(ops);
  r.ms = timeProgram(chain, 10, r);
  r.work = 0;
  r.unit = "us/op";
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each line as it is measured, even if a later program fails
  std::string json;
  bool smallSizes = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--json" && i + 1 < argc) json = argv[++i];
    if (std::string(argv[i]) == "--small") smallSizes = true;
    if (std::string(argv[i]) == "--no-check") checkResults = false;
  }
  mx::set_default_device(mx::Device::gpu);
  auto info = mx::device_info(mx::Device::gpu);
  std::string deviceName =
      info.count("device_name") ? std::get<std::string>(info.at("device_name")) : std::string("gpu");
  std::printf("device: %s\n", deviceName.c_str());
  const int scale = smallSizes ? 16 : 1;        // --small: a quick functional run (e.g. on a CPU device)
  std::vector<std::function<Result()>> programs = {[&] { return matmulF16(4096 / scale); },
                                                   [&] { return softmaxF32(8192 / scale); },
                                                   [&] { return mlpStep(4096 / scale, 4096 / scale); },
                                                   [&] { return hostOverhead(1000); }};
  std::ofstream out;
  if (!json.empty()) out.open(json);
  if (out) out << "{\"device\": \"" << deviceName << "\", \"programs\": [";
  bool first = true;
  for (auto& program : programs) {
    auto t0 = Clock::now();
    Result r;
    try {
      r = program();
    } catch (const std::exception& e) {
      std::printf("program failed: %s\n", e.what());
      continue;
    }
    std::fprintf(stderr, "%s: %.1f s including warm-up and the check\n", r.name.c_str(), seconds(t0, Clock::now()));
    double rate = r.unit == "TFLOP/s" ? r.work / (r.ms * 1e-3) / 1e12
                  : r.unit == "GB/s"  ? r.work / (r.ms * 1e-3) / 1e9
                                      : r.ms * 1e3 / std::max(1.0, r.dispatchesPerEval);
    std::printf("%-70s %9.3f ms  %8.2f %-7s  max rel error %.2g  dispatches/eval %.0f  command buffers/eval %.1f\n",
                r.name.c_str(), r.ms, rate, r.unit.c_str(), r.maxError, r.dispatchesPerEval,
                r.commandBuffersPerEval);
    if (out) {
      out << (first ? "\n" : ",\n") << "  {\"name\": \"" << r.name << "\", \"ms\": " << r.ms << ", \"rate\": " << rate
          << ", \"unit\": \"" << r.unit << "\", \"max_rel_error\": ";
      if (std::isnan(r.maxError))
        out << "null";
      else
        out << r.maxError;
      out << ", \"dispatches_per_eval\": " << r.dispatchesPerEval
          << ", \"command_buffers_per_eval\": " << r.commandBuffersPerEval << "}";
    }
    first = false;
  }
  if (out) out << "\n]}\n";
  return 0;
}
