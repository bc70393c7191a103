// `m2v examples`: compile and run the bundled kernels, each checked against a CPU reference written from its meaning.
#include "examples.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "host_types.h"
#include "metal2vk/compiler.h"
#include "metal2vk/runtime.h"

namespace m2v::examples {

namespace {

struct Ctx {
  Device& device;
  Stream& stream;
  std::map<std::string, Kernel>& kernels;
  std::mt19937& rng;

  std::vector<float> randomFloats(size_t n, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
  }
  template <typename T>
  Buffer upload(const std::vector<T>& data) {
    Buffer b = device.createBuffer(data.size() * sizeof(T));
    stream.upload(b, 0, data.data(), data.size() * sizeof(T));
    return b;
  }
  // Output buffer poisoned with 0xFF bytes (NaN for floats).
  Buffer poisoned(size_t bytes) {
    Buffer b = device.createBuffer(bytes);
    stream.fillBytes(b, 0, bytes, 0xff);
    return b;
  }
  template <typename T>
  std::vector<T> read(const Buffer& b, size_t n) {
    std::vector<T> out(n);
    stream.readback(b, 0, out.data(), n * sizeof(T));
    return out;
  }
};

double relError(double got, double want) {
  if (std::isnan(got) != std::isnan(want)) return INFINITY;
  return std::fabs(got - want) / std::max(1.0, std::fabs(want));
}

template <typename A, typename B>
double maxError(const std::vector<A>& got, const std::vector<B>& want) {
  if (got.size() != want.size()) return INFINITY;
  double e = 0;
  for (size_t i = 0; i < got.size(); ++i) e = std::max(e, relError(double(got[i]), double(want[i])));
  return e;
}

struct Example {
  std::string name;
  std::string file;
  std::vector<std::string> entries;
  double tolerance;
  std::function<double(Ctx&)> run;  // returns the max error
};

std::vector<Example> allExamples() {
  std::vector<Example> ex;
  ex.push_back({"saxpy", "saxpy.metal", {"saxpy"}, 1e-5, [](Ctx& c) {
                  const uint32_t n = 100003;
                  auto x = c.randomFloats(n), y = c.randomFloats(n);
                  float a = std::uniform_real_distribution<float>(-2, 2)(c.rng);
                  Buffer bx = c.upload(x), by = c.upload(y);
                  c.stream.setKernel(c.kernels["saxpy"]);
                  c.stream.setBuffer(bx, 0, 0);
                  c.stream.setBuffer(by, 0, 1);
                  c.stream.setBytes(&a, 4, 2);
                  c.stream.setBytes(&n, 4, 3);
                  c.stream.dispatchThreads({n, 1, 1}, {256, 1, 1});
                  auto got = c.read<float>(by, n);
                  std::vector<float> want(n);
                  for (uint32_t i = 0; i < n; ++i) want[i] = a * x[i] + y[i];
                  return maxError(got, want);
                }});
  ex.push_back({"softmax (simd)", "softmax.metal", {"softmax"}, 1e-5, [](Ctx& c) {
                  const uint32_t rows = 64, cols = 1000;
                  auto x = c.randomFloats(size_t(rows) * cols, -8, 8);
                  Buffer bx = c.upload(x), by = c.poisoned(x.size() * 4);
                  c.stream.setKernel(c.kernels["softmax"]);
                  c.stream.setBuffer(bx, 0, 0);
                  c.stream.setBuffer(by, 0, 1);
                  c.stream.setBytes(&cols, 4, 2);
                  c.stream.dispatchThreadgroups({rows, 1, 1}, {256, 1, 1});
                  auto got = c.read<float>(by, x.size());
                  std::vector<double> want(x.size());
                  for (uint32_t r = 0; r < rows; ++r) {
                    double m = -INFINITY, s = 0;
                    for (uint32_t j = 0; j < cols; ++j) m = std::max(m, double(x[r * cols + j]));
                    for (uint32_t j = 0; j < cols; ++j) s += std::exp(double(x[r * cols + j]) - m);
                    for (uint32_t j = 0; j < cols; ++j) want[r * cols + j] = std::exp(double(x[r * cols + j]) - m) / s;
                  }
                  return maxError(got, want);
                }});
  ex.push_back({"layer norm (tg reduce)", "layer_norm.metal", {"layer_norm"}, 1e-4, [](Ctx& c) {
                  const uint32_t rows = 48, cols = 777;
                  struct {
                    uint32_t cols;
                    float eps;
                  } p{cols, 1e-5f};
                  auto x = c.randomFloats(size_t(rows) * cols, -3, 5), w = c.randomFloats(cols), b = c.randomFloats(cols);
                  Buffer bx = c.upload(x), bw = c.upload(w), bb = c.upload(b), by = c.poisoned(x.size() * 4);
                  c.stream.setKernel(c.kernels["layer_norm"]);
                  c.stream.setBuffer(bx, 0, 0);
                  c.stream.setBuffer(bw, 0, 1);
                  c.stream.setBuffer(bb, 0, 2);
                  c.stream.setBuffer(by, 0, 3);
                  c.stream.setBytes(&p, sizeof p, 4);
                  c.stream.dispatchThreadgroups({rows, 1, 1}, {128, 1, 1});
                  auto got = c.read<float>(by, x.size());
                  std::vector<double> want(x.size());
                  for (uint32_t r = 0; r < rows; ++r) {
                    double mean = 0, var = 0;
                    for (uint32_t j = 0; j < cols; ++j) mean += x[r * cols + j];
                    mean /= cols;
                    for (uint32_t j = 0; j < cols; ++j) var += (x[r * cols + j] - mean) * (x[r * cols + j] - mean);
                    var /= cols;
                    for (uint32_t j = 0; j < cols; ++j)
                      want[r * cols + j] = (x[r * cols + j] - mean) / std::sqrt(var + 1e-5) * w[j] + b[j];
                  }
                  return maxError(got, want);
                }});
  ex.push_back({"gemm tiled 16x16", "gemm_tiled.metal", {"gemm_tiled"}, 1e-4, [](Ctx& c) {
                  const uint32_t M = 93, N = 130, K = 71;
                  auto A = c.randomFloats(size_t(M) * K), B = c.randomFloats(size_t(K) * N);
                  Buffer ba = c.upload(A), bb = c.upload(B), bc = c.poisoned(size_t(M) * N * 4);
                  uint32_t mnk[4] = {M, N, K, 0};
                  c.stream.setKernel(c.kernels["gemm_tiled"]);
                  c.stream.setBuffer(ba, 0, 0);
                  c.stream.setBuffer(bb, 0, 1);
                  c.stream.setBuffer(bc, 0, 2);
                  c.stream.setBytes(mnk, 16, 3);
                  c.stream.dispatchThreadgroups({(N + 15) / 16, (M + 15) / 16, 1}, {16, 16, 1});
                  auto got = c.read<float>(bc, size_t(M) * N);
                  std::vector<double> want(size_t(M) * N);
                  for (uint32_t i = 0; i < M; ++i)
                    for (uint32_t j = 0; j < N; ++j) {
                      double s = 0;
                      for (uint32_t k = 0; k < K; ++k) s += double(A[i * K + k]) * B[k * N + j];
                      want[i * N + j] = s;
                    }
                  return maxError(got, want);
                }});
  ex.push_back({"rms norm (half)", "rms_norm.metal", {"rms_norm"}, 2e-3, [](Ctx& c) {
                  const uint32_t rows = 32, cols = 1000;
                  const float eps = 1e-6f;
                  auto xf = c.randomFloats(size_t(rows) * cols, -4, 4), wf = c.randomFloats(cols, 0.5f, 1.5f);
                  std::vector<uint16_t> x(xf.size()), w(cols);
                  for (size_t i = 0; i < x.size(); ++i) x[i] = host::floatToHalf(xf[i]);
                  for (size_t i = 0; i < cols; ++i) w[i] = host::floatToHalf(wf[i]);
                  Buffer bx = c.upload(x), bw = c.upload(w), by = c.poisoned(x.size() * 2);
                  c.stream.setKernel(c.kernels["rms_norm"]);
                  c.stream.setBuffer(bx, 0, 0);
                  c.stream.setBuffer(bw, 0, 1);
                  c.stream.setBuffer(by, 0, 2);
                  c.stream.setBytes(&cols, 4, 3);
                  c.stream.setBytes(&eps, 4, 4);
                  c.stream.dispatchThreadgroups({rows, 1, 1}, {256, 1, 1});
                  auto raw = c.read<uint16_t>(by, x.size());
                  std::vector<float> got(raw.size());
                  for (size_t i = 0; i < raw.size(); ++i) got[i] = host::halfToFloat(raw[i]);
                  std::vector<double> want(x.size());
                  for (uint32_t r = 0; r < rows; ++r) {
                    double ss = 0;
                    for (uint32_t j = 0; j < cols; ++j) ss += double(host::halfToFloat(x[r * cols + j])) * host::halfToFloat(x[r * cols + j]);
                    double inv = 1.0 / std::sqrt(ss / cols + eps);
                    for (uint32_t j = 0; j < cols; ++j)
                      want[r * cols + j] = host::halfToFloat(x[r * cols + j]) * inv * host::halfToFloat(w[j]);
                  }
                  return maxError(got, want);
                }});
  ex.push_back({"rope", "rope.metal", {"rope"}, 1e-4, [](Ctx& c) {
                  const uint32_t seq = 33, heads = 4, dim = 64;
                  const float base = 10000.0f;
                  auto x = c.randomFloats(size_t(seq) * heads * dim);
                  Buffer bx = c.upload(x), by = c.poisoned(x.size() * 4);
                  c.stream.setKernel(c.kernels["rope"]);
                  c.stream.setBuffer(bx, 0, 0);
                  c.stream.setBuffer(by, 0, 1);
                  c.stream.setBytes(&heads, 4, 2);
                  c.stream.setBytes(&dim, 4, 3);
                  c.stream.setBytes(&base, 4, 4);
                  c.stream.dispatchThreads({dim / 2, heads, seq}, {32, 2, 2});
                  auto got = c.read<float>(by, x.size());
                  std::vector<double> want(x.size());
                  for (uint32_t p = 0; p < seq; ++p)
                    for (uint32_t h = 0; h < heads; ++h)
                      for (uint32_t i = 0; i < dim / 2; ++i) {
                        double theta = p * std::pow(double(base), -2.0 * i / dim);
                        size_t at = (size_t(p) * heads + h) * dim;
                        double a = x[at + i], b = x[at + i + dim / 2];
                        want[at + i] = a * std::cos(theta) - b * std::sin(theta);
                        want[at + i + dim / 2] = a * std::sin(theta) + b * std::cos(theta);
                      }
                  return maxError(got, want);
                }});
  ex.push_back({"histogram (atomics)", "histogram.metal", {"histogram"}, 0, [](Ctx& c) {
                  const uint32_t n = 50001;
                  std::vector<uint32_t> v(n);
                  for (auto& x : v) x = c.rng() % 100000;
                  Buffer bv = c.upload(v), bh = c.device.createBuffer(64 * 4);
                  c.stream.fill(bh, 0, 64 * 4, 0);
                  c.stream.setKernel(c.kernels["histogram"]);
                  c.stream.setBuffer(bv, 0, 0);
                  c.stream.setBuffer(bh, 0, 1);
                  c.stream.setBytes(&n, 4, 2);
                  c.stream.dispatchThreads({n, 1, 1}, {256, 1, 1});
                  auto got = c.read<uint32_t>(bh, 64);
                  std::vector<uint32_t> want(64, 0);
                  for (uint32_t x : v) want[x % 64]++;
                  return maxError(got, want);
                }});
  ex.push_back({"prefix sum (2-level)", "prefix_sum.metal", {"scan_blocks", "add_block_offsets"}, 0, [](Ctx& c) {
                  const uint32_t n = 200000, block = 256, blocks = (n + block - 1) / block;
                  std::vector<int32_t> in(n);
                  for (auto& x : in) x = int32_t(c.rng() % 21) - 10;
                  Buffer bin = c.upload(in), bout = c.poisoned(n * 4), sums = c.poisoned(blocks * 4),
                         scanned = c.poisoned(blocks * 4), total = c.poisoned(4);
                  c.stream.setKernel(c.kernels["scan_blocks"]);
                  c.stream.setBuffer(bin, 0, 0);
                  c.stream.setBuffer(bout, 0, 1);
                  c.stream.setBuffer(sums, 0, 2);
                  c.stream.setBytes(&n, 4, 3);
                  c.stream.dispatchThreadgroups({blocks, 1, 1}, {block, 1, 1});
                  c.stream.setBuffer(sums, 0, 0);
                  c.stream.setBuffer(scanned, 0, 1);
                  c.stream.setBuffer(total, 0, 2);
                  c.stream.setBytes(&blocks, 4, 3);
                  c.stream.dispatchThreadgroups({1, 1, 1}, {1024, 1, 1});
                  c.stream.setKernel(c.kernels["add_block_offsets"]);
                  c.stream.setBuffer(bout, 0, 0);
                  c.stream.setBuffer(scanned, 0, 1);
                  c.stream.setBytes(&n, 4, 2);
                  c.stream.dispatchThreads({n, 1, 1}, {block, 1, 1});
                  auto got = c.read<int32_t>(bout, n);
                  std::vector<int32_t> want(n);
                  int32_t run = 0;
                  for (uint32_t i = 0; i < n; ++i) want[i] = run += in[i];
                  return maxError(got, want);
                }});
  return ex;
}

std::string firstLine(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 160 ? line.substr(0, 157) + "..." : line;
}

}  // namespace

std::vector<std::string> names() {
  std::vector<std::string> n;
  for (const Example& e : allExamples()) n.push_back(e.name);
  return n;
}

std::vector<Result> runAll(const Options& options, std::ostream& log) {
  std::string dir = options.dir;
  if (dir.empty()) {
    const char* env = std::getenv("M2V_EXAMPLES_DIR");
    dir = env && *env ? env : M2V_EXAMPLES_SOURCE_DIR;
    // An installed m2v (the portable archive: bin/m2v, examples/) uses the examples beside it.
    std::error_code ec;
    std::filesystem::path installed = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "../examples";
    if (!(env && *env) && !ec && std::filesystem::exists(installed / "saxpy.metal", ec))
      dir = installed.lexically_normal().string();
  }
  DeviceOptions dopts;
  dopts.selector = options.device;
  Device device(dopts);
  log << device.describe() << "\n";
  std::mt19937 rng(options.seed ? options.seed : std::random_device{}());

  std::vector<Result> results;
  for (const Example& ex : allExamples()) {
    if (!options.filter.empty() && ex.name.find(options.filter) == std::string::npos) continue;
    Result r;
    r.name = ex.name;
    r.tolerance = ex.tolerance;
    CompileOptions copts;
    copts.entries = ex.entries;
    auto t0 = std::chrono::steady_clock::now();
    CompileResult compiled = compileFile((std::filesystem::path(dir) / ex.file).string(), copts);
    r.compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (compiled.status != Status::Ok) {
      r.status = "FAILED: compile: " + firstLine(compiled.diagnostics.format());
      r.failed = true;
      results.push_back(r);
      continue;
    }
    try {
      std::map<std::string, Kernel> kernels;
      for (const CompiledKernel& k : compiled.kernels) kernels[k.reflection.entry] = device.createKernel(k.spirv, k.reflection);
      for (const std::string& e : ex.entries)
        if (!kernels.count(e)) throw UsageError("entry point '" + e + "' not found in " + ex.file);
      StreamOptions sopts;
      sopts.timestamps = true;
      Stream stream = device.createStream(sopts);
      Ctx ctx{device, stream, kernels, rng};
      r.maxError = ex.run(ctx);
      std::vector<DispatchTiming> timings = stream.takeTimings();
      if (!timings.empty()) {
        r.gpuUs = 0;
        for (const DispatchTiming& t : timings) r.gpuUs += t.gpuNs / 1000.0;
      }
      if (!(r.maxError <= ex.tolerance)) {
        r.status = "MISMATCH";
        r.failed = true;
      } else {
        r.status = "ok";
      }
      if (device.validationMessageCount()) {
        r.status += " (" + std::to_string(device.validationMessageCount()) + " validation messages: " +
                    firstLine(device.validationMessages()[0]) + ")";
        r.failed = true;
        device.clearValidationMessages();
      }
    } catch (const UnsupportedError& e) {
      r.status = std::string("refused: ") + firstLine(e.what());
    } catch (const std::exception& e) {
      r.status = std::string("FAILED: ") + firstLine(e.what());
      r.failed = true;
    }
    results.push_back(r);
  }
  return results;
}

void printTable(const std::vector<Result>& results, std::ostream& out) {
  out << std::left << std::setw(24) << "kernel" << std::right << std::setw(12) << "compile ms" << std::setw(12)
      << "GPU us" << std::setw(12) << "max error" << "  status\n";
  for (const Result& r : results) {
    std::ostringstream gpu, err;
    if (r.gpuUs >= 0) gpu << std::fixed << std::setprecision(1) << r.gpuUs;
    else gpu << "-";
    if (r.maxError >= 0) err << std::scientific << std::setprecision(2) << r.maxError;
    else err << "-";
    out << std::left << std::setw(24) << r.name << std::right << std::setw(12) << std::fixed << std::setprecision(1)
        << r.compileMs << std::setw(12) << gpu.str() << std::setw(12) << err.str() << "  " << r.status << "\n";
  }
}

}  // namespace m2v::examples
