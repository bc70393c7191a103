// Memory bandwidth of a translated kernel: copy_scale_f4 (kernels/copy_scale.metal, compiled by `m2v compile` at
// build time) against the same op hand-written in GLSL (kernels/copy_scale_glsl.comp), in one run on one device.
// dst = src * s over float4; GB/s counts bytes read + written (2 x buffer size) per dispatch, from GPU timestamps.
//
// Usage: m2v_stream_bench [--sizes-mib 2048,4096] [--reps 20] [--threadgroup 256] [--modules DIR]
// Modules: DIR, else $M2V_BENCH_MODULES, else bench_modules/ next to this binary (copy_scale_f4.{spv,json},
// copy_scale_glsl.{spv,json}). Links only m2v_runtime + Vulkan: copy the binary and bench_modules/ to the device.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "metal2vk/runtime.h"

namespace fs = std::filesystem;
using namespace m2v;

namespace {

std::string readText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Kernel loadKernel(Device& device, const fs::path& dir, const std::string& name) {
  std::string bytes = readText(dir / (name + ".spv"));
  std::string json = readText(dir / (name + ".json"));
  std::string error;
  auto reflection = reflectionFromJson(json, &error);
  if (bytes.empty() || !reflection)
    throw std::runtime_error("cannot load module " + (dir / name).string() + ".{spv,json}: " + error);
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), words.size() * 4);
  return device.createKernel(words, *reflection);
}

struct Result {
  double bestNs = 0, medianNs = 0;
  bool correct = false;
};

Result measure(Device& device, const Kernel& kernel, const Buffer& src, const Buffer& dst, size_t bytes, int reps,
               uint32_t tg) {
  const uint64_t vec4s = bytes / 16;
  const uint32_t gx = uint32_t(std::min<uint64_t>(vec4s, 1u << 20));
  const uint32_t gy = uint32_t(vec4s / gx);
  StreamOptions options;
  options.timestamps = true;
  Stream stream = device.createStream(options);
  const float scale = 2.0f;
  stream.fill(dst, 0, bytes, 0xffffffffu);  // poison
  stream.setKernel(kernel);
  stream.setBuffer(src, 0, 0);
  stream.setBuffer(dst, 0, 1);
  stream.setBytes(&scale, 4, 2);
  for (int r = 0; r < reps + 1; ++r) stream.dispatchThreads({gx, gy, 1}, {tg, 1, 1});  // first one is warm-up
  stream.synchronize();
  std::vector<DispatchTiming> timings = stream.takeTimings();
  std::vector<double> ns;
  for (size_t i = 1; i < timings.size(); ++i) ns.push_back(timings[i].gpuNs);
  std::sort(ns.begin(), ns.end());
  Result r;
  if (!ns.empty()) r.bestNs = ns.front(), r.medianNs = ns[ns.size() / 2];
  // src holds float(i % 1024) per float; check a few float4s at the start, middle and end.
  r.correct = true;
  for (uint64_t at : {uint64_t(0), vec4s / 2, uint64_t(gx) * gy - 1}) {
    float got[4];
    stream.readback(dst, at * 16, got, 16);
    for (int k = 0; k < 4; ++k) r.correct &= got[k] == float((at * 4 + k) % 1024) * scale;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizesMiB = {2048, 4096};
  int reps = 20;
  uint32_t tg = 256;
  fs::path modules;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "usage: %s [--sizes-mib 2048,4096] [--reps 20] [--threadgroup 256] [--modules DIR]\n", argv[0]);
      return 2;
    }
    std::string v = argv[++i];
    if (a == "--sizes-mib") {
      sizesMiB.clear();
      std::stringstream ss(v);
      for (std::string part; std::getline(ss, part, ',');) sizesMiB.push_back(std::strtoull(part.c_str(), nullptr, 10));
    } else if (a == "--reps") reps = std::max(1, std::atoi(v.c_str()));
    else if (a == "--threadgroup") tg = uint32_t(std::atoi(v.c_str()));
    else if (a == "--modules") modules = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (modules.empty()) {
    if (const char* env = std::getenv("M2V_BENCH_MODULES"); env && *env) modules = env;
    else modules = fs::read_symlink("/proc/self/exe").parent_path() / "bench_modules";
  }
  try {
    Device device;
    std::printf("%s\n", device.describe().c_str());
    Kernel translated = loadKernel(device, modules, "copy_scale_f4");
    Kernel glsl = loadKernel(device, modules, "copy_scale_glsl");
    if (device.info().timestampPeriodNs == 0) {
      std::fprintf(stderr, "device has no compute timestamps\n");
      return 1;
    }
    std::printf("%-10s %-26s %12s %12s %12s %8s\n", "size", "kernel", "best us", "median us", "best GB/s", "check");
    bool allCorrect = true;
    for (size_t mib : sizesMiB) {
      size_t bytes = mib << 20;
      if (bytes % (16u << 20)) {
        std::fprintf(stderr, "size %zu MiB: must be a multiple of 16 MiB\n", mib);
        return 2;
      }
      Buffer src = device.createBuffer(bytes), dst = device.createBuffer(bytes);
      {
        // Initialise src in 64 MiB chunks: float(i % 1024).
        Stream init = device.createStream();
        std::vector<float> chunk(std::min<size_t>(bytes, 64u << 20) / 4);
        for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = float(i % 1024);
        for (size_t off = 0; off < bytes; off += chunk.size() * 4) {
          init.upload(src, off, chunk.data(), std::min(chunk.size() * 4, bytes - off));
          init.synchronize();  // staging memory stays bounded
        }
      }
      double gbs[2] = {0, 0};
      const char* names[2] = {"copy_scale_f4 (Metal->m2v)", "copy_scale_glsl (GLSL)"};
      const Kernel* kernels[2] = {&translated, &glsl};
      for (int k = 0; k < 2; ++k) {
        Result r = measure(device, *kernels[k], src, dst, bytes, reps, tg);
        gbs[k] = r.bestNs > 0 ? 2.0 * double(bytes) / r.bestNs : 0;
        allCorrect &= r.correct;
        std::printf("%6zu MiB %-26s %12.1f %12.1f %12.1f %8s\n", mib, names[k], r.bestNs / 1e3, r.medianNs / 1e3, gbs[k],
                    r.correct ? "ok" : "WRONG");
      }
      std::printf("%6zu MiB translated / GLSL = %.3f\n", mib, gbs[1] > 0 ? gbs[0] / gbs[1] : 0.0);
    }
    if (size_t n = device.validationMessageCount()) {
      std::fprintf(stderr, "%zu validation messages, first: %s\n", n, device.validationMessages()[0].c_str());
      return 1;
    }
    return allCorrect ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "m2v_stream_bench: %s\n", e.what());
    return 1;
  }
}
