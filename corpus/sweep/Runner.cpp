// Runs corpus cases on a device: fresh seeded inputs, poisoned outputs, one checked dispatch, CPU reference compare.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <stdexcept>
#include <unistd.h>

#include "Corpus.h"
#include "host_types.h"

namespace m2v::corpus {

// --- references registry ---------------------------------------------------------------------------------------
static std::map<std::string, RefFn>& refRegistry() {
  static std::map<std::string, RefFn> r;
  return r;
}
RegisterRef::RegisterRef(const char* name, RefFn fn) { refRegistry()[name] = std::move(fn); }
const RefFn* findReference(const std::string& name) {
  auto it = refRegistry().find(name);
  return it == refRegistry().end() ? nullptr : &it->second;
}

const std::vector<double>& RefCtx::x(const std::string& name) const {
  auto it = in.find(name);
  if (it == in.end()) throw std::runtime_error("reference reads unknown buffer '" + name + "'");
  return it->second.v;
}
std::vector<double>& RefCtx::y(const std::string& name) {
  auto it = expected.find(name);
  if (it == expected.end()) throw std::runtime_error("reference writes unknown output '" + name + "'");
  return it->second.v;
}
double RefCtx::s(const std::string& name) const { return arr(name).at(0); }
const std::vector<double>& RefCtx::arr(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end()) throw std::runtime_error("reference reads unknown value '" + name + "'");
  return it->second;
}

double roundTo(const std::string& dtype, double v) {
  if (dtype == "f16") return host::roundHalf(float(v));
  if (dtype == "bf16") return host::roundBfloat(float(v));
  if (dtype == "f32") return double(float(v));
  return v;
}

namespace {

using host::dtypeSize;
bool isFloat(const std::string& t) { return t == "f32" || t == "f16" || t == "bf16"; }

void store(const std::string& t, double v, uint8_t* dst) { host::storeElement(t, v, dst); }
void storeBits(const std::string& t, uint64_t bits, uint8_t* dst) { std::memcpy(dst, &bits, dtypeSize(t)); }

double load(const std::string& t, const uint8_t* src) { return host::loadElement(t, src); }

std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

uint64_t caseSeed(uint64_t seed, const std::string& name) {
  uint64_t h = seed ^ 0x9e3779b97f4a7c15ull;
  for (char ch : name) h = (h ^ uint8_t(ch)) * 0x100000001b3ull;
  return h;
}

std::vector<uint8_t> packBytes(const BytesSpec& b) {
  std::vector<uint8_t> out;
  size_t align = 1;
  for (const BytesField& f : b.fields) {
    size_t sz = dtypeSize(f.dtype);
    align = std::max(align, sz);
    out.resize((out.size() + sz - 1) / sz * sz);
    for (double v : f.values) {
      out.resize(out.size() + sz);
      store(f.dtype, v, &out[out.size() - sz]);
    }
  }
  out.resize(std::max<size_t>(4, (out.size() + align - 1) / align * align));
  return out;
}

struct Failure {
  Stage stage;
  std::string cause, message;
};

}  // namespace

std::vector<CaseResult> runCases(const std::vector<Case>& cases, const Modules& modules, const RunOptions& options,
                                 SweepMeta& meta, std::ostream& log) {
  std::vector<CaseResult> results;
  uint64_t seed = options.seed ? options.seed
                               : uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) | 1;
  meta.seed = seed;
  DeviceOptions dopt;
  dopt.selector = options.device;
  Device device(dopt);
  meta.device = device.info().name;
  meta.driver = device.info().driver;
  log << "sweep: " << device.describe() << "\n";
  Stream stream = device.createStream(StreamOptions{256, true});
  std::map<std::string, Kernel> kernels;    // by module key
  std::map<std::string, std::string> refused;  // by module key: UnsupportedError text

  size_t done = 0;
  for (const Case& c : cases) {
    CaseResult r;
    r.name = c.name;
    r.source = c.source;
    r.entry = c.entry;
    r.dtype = c.dtype;
    r.tolerance = c.tolerance;
    r.memoryBound = c.memoryBound;
    r.seed = caseSeed(seed, c.name);
    if (options.progress) {
      log << "\r[" << ++done << "/" << cases.size() << "] running " << c.name << "\033[K" << std::flush;
    }
    if (device.faulted()) {
      // An earlier case timed out or lost the device: it keeps that failure, and this case runs on a new device.
      log << (options.progress ? "\r\033[K" : "") << "sweep: device faulted (" << device.faultReason()
          << "); opening a new one\n";
      kernels.clear();
      device = Device(dopt);
      stream = device.createStream(StreamOptions{256, true});
    }
    std::string key = moduleKey(c.source, c.entry);
    auto mit = modules.find(key);
    try {
      if (mit == modules.end()) throw Failure{Stage::None, "not compiled", "no module for entry '" + c.entry + "'"};
      const CompiledEntry& ce = mit->second;
      r.compileMs = ce.compileMs;
      if (ce.stage < Stage::Valid) throw Failure{ce.stage, ce.cause, ce.message};
      const RefFn* ref = findReference(c.ref);
      if (!ref) throw Failure{Stage::Valid, "manifest: unknown reference", "no reference named '" + c.ref + "'"};
      if (refused.count(key)) throw Failure{Stage::Valid, "refused by device", refused[key]};
      if (!kernels.count(key)) {
        try {
          kernels[key] = options.makeKernel ? options.makeKernel(device, ce) : device.createKernel(ce.spirv, ce.reflection);
        } catch (const UnsupportedError& e) {
          refused[key] = firstLine(e.what());
          std::string what = e.what();
          std::string cause = what.find("subgroup") != std::string::npos ? "refused by device: subgroup size"
                                                                         : "refused by device";
          throw Failure{Stage::Valid, cause, firstLine(what)};
        }
      }
      Kernel& kernel = kernels[key];

      // Inputs.
      std::mt19937_64 rng(r.seed);
      RefCtx ctx(c);
      std::map<std::string, Buffer> bufs;
      std::map<std::string, std::vector<uint8_t>> bytes;
      for (const BufferSpec& b : c.buffers) {
        size_t n = b.count(), es = dtypeSize(b.dtype);
        bufs[b.name] = device.createBuffer(std::max<size_t>((n * es + 3) / 4 * 4, 4));
      }
      for (const BufferSpec& b : c.buffers) {
        size_t n = b.count(), es = dtypeSize(b.dtype);
        std::vector<uint8_t> data(n * es, 0);
        auto arg = [&](size_t i, double def) {
          double v = def;
          if (i < b.initArgs.size()) v = std::strtod(b.initArgs[i].c_str(), nullptr);
          return v;
        };
        if (b.init == "rand") {
          double lo = arg(0, -1), hi = arg(1, 1);
          if (isFloat(b.dtype)) {
            std::uniform_real_distribution<double> d(lo, hi);
            for (size_t i = 0; i < n; ++i) store(b.dtype, d(rng), &data[i * es]);
          } else {
            std::uniform_int_distribution<int64_t> d{int64_t(lo), int64_t(hi)};
            for (size_t i = 0; i < n; ++i) store(b.dtype, double(d(rng)), &data[i * es]);
          }
        } else if (b.init == "iota") {
          for (size_t i = 0; i < n; ++i) store(b.dtype, arg(0, 0) + double(i) * arg(1, 1), &data[i * es]);
        } else if (b.init == "const") {
          for (size_t i = 0; i < n; ++i) store(b.dtype, arg(0, 0), &data[i * es]);
        } else if (b.init == "bits") {
          for (size_t i = 0; i < n; ++i) storeBits(b.dtype, rng(), &data[i * es]);
        } else if (b.init == "addrtable") {
          if (b.dtype != "u64") throw Failure{Stage::Valid, "manifest error", "addrtable needs dtype u64"};
          std::vector<std::string> names;
          for (const std::string& a : b.initArgs) names.push_back(a);
          if (names.size() != n) throw Failure{Stage::Valid, "manifest error", "addrtable size mismatch"};
          for (size_t i = 0; i < n; ++i) {
            if (!bufs.count(names[i])) throw Failure{Stage::Valid, "manifest error", "addrtable: no buffer " + names[i]};
            storeBits("u64", bufs[names[i]].deviceAddress(), &data[i * 8]);
          }
        }
        Array a{b.dtype, b.shape, std::vector<double>(n)};
        for (size_t i = 0; i < n; ++i) a.v[i] = load(b.dtype, &data[i * es]);
        if (b.role == "out") {
          stream.fillBytes(bufs[b.name], 0, bufs[b.name].size(), 0xff);  // poison
          Array e = a;
          std::fill(e.v.begin(), e.v.end(), NAN);
          ctx.expected[b.name] = e;
        } else {
          stream.upload(bufs[b.name], 0, data.data(), data.size());
          if (b.role == "inout") ctx.expected[b.name] = a;
        }
        ctx.in[b.name] = std::move(a);
      }
      for (const BytesSpec& b : c.bytes) {
        for (const BytesField& f : b.fields) {
          std::vector<double> v;
          for (double d : f.values) {
            uint8_t tmp[8];
            store(f.dtype, d, tmp);
            v.push_back(load(f.dtype, tmp));
          }
          ctx.values[f.name] = v;
        }
      }
      for (const FunctionConstantSpec& f : c.constants) ctx.values[f.name] = {f.value};
      for (auto& [k, v] : c.params) ctx.values[k] = {v};

      // Dispatch.
      stream.setKernel(kernel);
      for (const BufferSpec& b : c.buffers) stream.setBuffer(bufs[b.name], 0, b.index);
      for (const BytesSpec& b : c.bytes) {
        std::vector<uint8_t> p = packBytes(b);
        stream.setBytes(p.data(), p.size(), b.index);
      }
      for (const FunctionConstantSpec& f : c.constants) {
        if (f.dtype == "bool") stream.setFunctionConstant(f.index, f.value != 0);
        else if (f.dtype == "float" || f.dtype == "f32") stream.setFunctionConstant(f.index, float(f.value));
        else if (f.dtype == "uint" || f.dtype == "u32") stream.setFunctionConstant(f.index, uint32_t(f.value));
        else stream.setFunctionConstant(f.index, int32_t(f.value));
      }
      for (auto [i, n] : c.tgmem) stream.setThreadgroupMemoryLength(n, i);
      device.clearValidationMessages();
      try {
        if (c.groups) stream.dispatchThreadgroups(c.grid, c.threadgroup);
        else stream.dispatchThreads(c.grid, c.threadgroup);
        std::map<std::string, std::vector<uint8_t>> got;
        for (const BufferSpec& b : c.buffers) {
          if (b.role != "out" && b.role != "inout") continue;
          got[b.name].resize(b.count() * dtypeSize(b.dtype));
          stream.enqueueReadback(bufs[b.name], 0, got[b.name].data(), got[b.name].size());
        }
        stream.synchronize();
        double ns = 0;
        for (const DispatchTiming& t : stream.takeTimings()) ns += t.gpuNs;
        if (ns > 0) r.gpuUs = ns / 1000.0;
        if (options.repeat > 0) {
          // Back to back, as in a real graph, after warming up: the same dispatch for options.warmupMs (the GPU
          // leaves its idle clocks), then two untimed ones.
          auto dispatch = [&] {
            if (c.groups) stream.dispatchThreadgroups(c.grid, c.threadgroup);
            else stream.dispatchThreads(c.grid, c.threadgroup);
          };
          const auto warmStart = std::chrono::steady_clock::now();
          while (std::chrono::steady_clock::now() - warmStart < std::chrono::milliseconds(options.warmupMs)) {
            for (int i = 0; i < 16; ++i) dispatch();
            stream.synchronize();
          }
          (void)stream.takeTimings();
          const int warmup = 2;
          for (int i = 0; i < warmup + options.repeat; ++i) dispatch();
          stream.synchronize();
          std::vector<DispatchTiming> timings = stream.takeTimings();
          std::vector<double> times;
          for (size_t i = warmup; i < timings.size(); ++i) times.push_back(timings[i].gpuNs);
          std::sort(times.begin(), times.end());
          if (!times.empty() && times[times.size() / 2] > 0) r.gpuUs = times[times.size() / 2] / 1000.0;
        }
        if (device.validationMessageCount())
          throw Failure{Stage::Ran, "validation layer message", firstLine(device.validationMessages()[0])};
        r.stage = Stage::Ran;
        for (const BufferSpec& b : c.buffers) r.bytesMoved += double(b.count() * dtypeSize(b.dtype));

        // Reference and comparison.
        try {
          (*ref)(ctx);
        } catch (const std::exception& e) {
          throw Failure{Stage::Ran, "reference error", e.what()};
        }
        double maxErr = 0;
        size_t compared = 0;
        std::string where;
        for (const BufferSpec& b : c.buffers) {
          if (!got.count(b.name)) continue;
          const std::vector<double>& want = ctx.expected[b.name].v;
          size_t es = dtypeSize(b.dtype);
          for (size_t i = 0; i < want.size(); ++i) {
            if (std::isnan(want[i])) continue;
            ++compared;
            double g = load(b.dtype, &got[b.name][i * es]);
            double e = std::isnan(g) || std::isinf(g) != std::isinf(want[i])
                           ? INFINITY
                           : (std::isinf(g) && g == want[i] ? 0 : std::fabs(g - want[i]) / std::max(1.0, std::fabs(want[i])));
            if (e > maxErr || (std::isinf(e) && where.empty())) {
              if (e > maxErr) maxErr = e;
              if (e > c.tolerance)
                where = b.name + "[" + std::to_string(i) + "] = " + std::to_string(g) + ", expected " +
                        std::to_string(want[i]);
            }
          }
        }
        r.maxError = maxErr;
        if (!compared) throw Failure{Stage::Ran, "reference error", "the reference produced no expected values"};
        if (maxErr > c.tolerance) {
          char buf[64];
          std::snprintf(buf, sizeof buf, "max error %.3g > tolerance %.3g: ", maxErr, c.tolerance);
          throw Failure{Stage::Ran, "mismatch", buf + where};
        }
        r.stage = Stage::Matched;
      } catch (const UsageError& e) {
        throw Failure{Stage::Valid, "runtime usage error", firstLine(e.what())};
      } catch (const TimeoutError& e) {
        throw Failure{Stage::Valid, "timeout", firstLine(e.what())};
      } catch (const DeviceError& e) {
        throw Failure{Stage::Valid, "device error", firstLine(e.what())};
      }
    } catch (const Failure& f) {
      r.stage = f.stage;
      r.cause = f.cause;
      r.message = f.message;
    } catch (const std::exception& e) {
      r.cause = "runtime error";
      r.message = firstLine(e.what());
      if (r.stage < Stage::Valid && mit != modules.end()) r.stage = Stage::Valid;
    }
    results.push_back(r);
  }
  if (options.progress) log << "\r\033[K";
  return results;
}

}  // namespace m2v::corpus
