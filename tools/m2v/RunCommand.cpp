// m2v run: compile one entry point and run it once (or --repeat N times) on a Vulkan device.
//
//   m2v run K.metal --entry NAME --grid X[,Y,Z] --threadgroup X[,Y,Z] [--groups X[,Y,Z]] --arg INDEX=SPEC ...
//           [--out INDEX=FILE] [--time] [--device SEL] [-I DIR] [-D N=V] [--fc INDEX=VALUE] [--tgmem INDEX=BYTES]
//           [--repeat N] [--seed S]
// SPEC: DTYPE:COUNT:rand | DTYPE:COUNT:const:V | DTYPE:COUNT:iota | DTYPE:COUNT:zero | DTYPE:file:PATH |
//       DTYPE:scalar:V   (dtypes f32 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64 bool)
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>

#include "Commands.h"
#include "examples.h"
#include "host_types.h"
#include "metal2vk/compiler.h"
#include "metal2vk/mlx.h"
#include "metal2vk/runtime.h"

namespace m2v::cli {

namespace {

struct DType {
  const char* name;
  size_t size;
  bool isFloat, isSigned;
};

const DType kDTypes[] = {
    {"f32", 4, true, true},  {"f16", 2, true, true},  {"bf16", 2, true, true}, {"i8", 1, false, true},
    {"i16", 2, false, true}, {"i32", 4, false, true}, {"i64", 8, false, true}, {"u8", 1, false, false},
    {"u16", 2, false, false}, {"u32", 4, false, false}, {"u64", 8, false, false}, {"bool", 1, false, false},
};

const DType* findDType(const std::string& name) {
  for (const DType& d : kDTypes)
    if (name == d.name) return &d;
  if (name == "float") return &kDTypes[0];
  if (name == "half") return &kDTypes[1];
  if (name == "int") return &kDTypes[5];
  if (name == "uint") return &kDTypes[9];
  return nullptr;
}

// Stores `v` (a float for float types, an integer otherwise) as one element of `t` at `dst`.
void storeValue(const DType& t, double v, uint8_t* dst) { host::storeElement(t.name, v, dst); }
double loadValue(const DType& t, const uint8_t* src) { return host::loadElement(t.name, src); }

// "const device float*" -> "float"; "" when the pointee is not a plain scalar.
std::string pointeeScalar(std::string type) {
  for (const char* word : {"const ", "volatile ", "device ", "constant ", "threadgroup ", "thread "})
    for (size_t pos; (pos = type.find(word)) != std::string::npos;) type.erase(pos, std::strlen(word));
  while (!type.empty() && (type.back() == '*' || type.back() == '&' || type.back() == ' ')) type.pop_back();
  return type;
}

struct ArgSpec {
  uint32_t index = 0;
  const DType* type = nullptr;
  bool scalar = false;
  std::vector<uint8_t> bytes;
};

bool parseUint(const std::string& s, uint64_t& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtoull(s.c_str(), &end, 0);
  return end && *end == 0;
}

bool parseDouble(const std::string& s, double& out) {
  if (s.empty()) return false;
  if (s == "true") return out = 1, true;
  if (s == "false") return out = 0, true;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end && *end == 0;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) parts.push_back(cur);
  if (!s.empty() && s.back() == sep) parts.push_back("");
  return parts;
}

bool parseSize3(const std::string& s, Size3& out) {
  auto parts = split(s, ',');
  if (parts.empty() || parts.size() > 3) return false;
  uint32_t v[3] = {1, 1, 1};
  for (size_t i = 0; i < parts.size(); ++i) {
    uint64_t x;
    if (!parseUint(parts[i], x) || x == 0 || x > 0xffffffffu) return false;
    v[i] = uint32_t(x);
  }
  out = {v[0], v[1], v[2]};
  return true;
}

// "INDEX=REST" -> index, rest.
bool splitIndex(const std::string& s, uint32_t& index, std::string& rest) {
  size_t eq = s.find('=');
  uint64_t i;
  if (eq == std::string::npos || !parseUint(s.substr(0, eq), i) || i > 4096) return false;
  index = uint32_t(i);
  rest = s.substr(eq + 1);
  return true;
}

// Parses SPEC into bytes. Returns an error message, empty on success.
std::string parseArg(const std::string& text, std::mt19937_64& rng, ArgSpec& arg) {
  std::string spec;
  if (!splitIndex(text, arg.index, spec)) return "expected INDEX=SPEC, got '" + text + "'";
  auto parts = split(spec, ':');
  if (parts.size() < 3) return "SPEC '" + spec + "' needs DTYPE:COUNT:KIND, DTYPE:file:PATH or DTYPE:scalar:V";
  arg.type = findDType(parts[0]);
  if (!arg.type) return "unknown dtype '" + parts[0] + "' (f32 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64 bool)";
  const DType& t = *arg.type;
  if (parts[1] == "file") {
    std::string path = spec.substr(parts[0].size() + 6);
    std::ifstream in(path, std::ios::binary);
    if (!in) return "cannot read '" + path + "'";
    arg.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (arg.bytes.empty() || arg.bytes.size() % t.size) return "'" + path + "' is empty or not a whole number of " + t.name;
    return "";
  }
  if (parts[1] == "scalar") {
    double v;
    if (parts.size() != 3 || !parseDouble(parts[2], v)) return "bad scalar '" + spec + "'";
    arg.scalar = true;
    arg.bytes.resize(t.size);
    storeValue(t, v, arg.bytes.data());
    return "";
  }
  uint64_t count;
  if (!parseUint(parts[1], count) || count == 0 || count > (uint64_t(1) << 34) / t.size)
    return "bad element count '" + parts[1] + "'";
  arg.bytes.assign(count * t.size, 0);
  const std::string& kind = parts[2];
  if (kind == "zero" && parts.size() == 3) return "";
  if (kind == "const") {
    double v;
    if (parts.size() != 4 || !parseDouble(parts[3], v)) return "const needs a value: DTYPE:COUNT:const:V";
    std::vector<uint8_t> one(t.size);
    storeValue(t, v, one.data());
    for (uint64_t i = 0; i < count; ++i) std::memcpy(&arg.bytes[i * t.size], one.data(), t.size);
    return "";
  }
  if (kind == "iota" && parts.size() == 3) {
    for (uint64_t i = 0; i < count; ++i) storeValue(t, double(i), &arg.bytes[i * t.size]);
    return "";
  }
  if (kind == "rand" && parts.size() == 3) {
    std::uniform_real_distribution<double> uni(-1.0, 1.0);
    for (uint64_t i = 0; i < count; ++i) {
      double v;
      if (t.isFloat) v = uni(rng);
      else if (std::string(t.name) == "bool") v = double(rng() & 1);
      else if (t.isSigned) v = double(int64_t(rng() % 201) - 100);
      else v = double(rng() % 101);
      storeValue(t, v, &arg.bytes[i * t.size]);
    }
    return "";
  }
  return "unknown SPEC kind '" + kind + "' (rand, const:V, iota, zero, file:PATH, scalar:V)";
}

std::string summary(const DType& t, const std::vector<uint8_t>& bytes, size_t shown = 8) {
  std::ostringstream out;
  size_t count = bytes.size() / t.size;
  out << t.name << "[" << count << "] {";
  out << std::setprecision(7);
  for (size_t i = 0; i < count && i < shown; ++i) out << (i ? ", " : "") << loadValue(t, &bytes[i * t.size]);
  if (count > shown) out << ", ...";
  out << "}";
  return out.str();
}

// "true"/"false"/number, converted to the declared function-constant type.
bool setConstant(Stream& stream, const KernelReflection& r, uint32_t index, const std::string& text, std::string& err) {
  const FunctionConstant* fc = nullptr;
  for (const FunctionConstant& c : r.functionConstants)
    if (c.index == index) fc = &c;
  double v;
  if (!parseDouble(text, v)) return err = "bad function constant value '" + text + "'", false;
  if (!fc) return err = "kernel '" + r.entry + "' has no function constant at index " + std::to_string(index), false;
  const std::string& type = fc->type;
  if (type == "bool") stream.setFunctionConstant(index, v != 0);
  else if (type == "float" || type == "half" || type == "bfloat") stream.setFunctionConstant(index, float(v));
  else if (type == "double") stream.setFunctionConstant(index, v);
  else if (type == "long" || type == "ulong") stream.setFunctionConstant(index, int64_t(v));
  else if (type.rfind("u", 0) == 0) stream.setFunctionConstant(index, uint32_t(int64_t(v)));
  else stream.setFunctionConstant(index, int32_t(int64_t(v)));
  return true;
}

}  // namespace

extern const char kRunUsage[] =
    R"(run FILE.metal --entry NAME --grid X[,Y,Z] | --groups X[,Y,Z]  --threadgroup X[,Y,Z] --arg INDEX=SPEC...
    [--out INDEX=FILE]... [--time] [--repeat N] [--device SEL] [--fc INDEX=VALUE]... [--tgmem INDEX=BYTES]...
    [-I DIR]... [-D NAME[=VALUE]]... [--seed S]
    Compile one kernel and run it (--grid: dispatchThreads, --groups: dispatchThreadgroups). SPEC is
    DTYPE:COUNT:rand | DTYPE:COUNT:const:V | DTYPE:COUNT:iota | DTYPE:COUNT:zero | DTYPE:file:PATH | DTYPE:scalar:V
    with DTYPE one of f32 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64 bool. Writable buffers are summarised unless
    --out writes them (raw bytes); --time prints GPU time per dispatch. The device goes to stderr.
)";

int runCommand(const Args& args) {
  CompileOptions options;
  std::string input, entry, deviceSel;
  Size3 grid, threadgroup, groups;
  bool haveGrid = false, haveTg = false, haveGroups = false, time = false;
  uint64_t repeat = 1, seed = 0;
  bool haveSeed = false;
  std::vector<std::string> argTexts, outTexts, fcTexts, tgTexts;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    static const char* kValued[] = {"--entry", "--grid", "--threadgroup", "--groups", "--arg", "--out", "--device",
                                    "-I", "-D", "--fc", "--tgmem", "--repeat", "--seed"};
    bool valued = false;
    for (const char* f : kValued) valued |= a == f;
    if (valued) {
      if (i + 1 >= args.size()) return usageError("run", a + " needs a value");
      const std::string& v = args[++i];
      if (a == "--entry") entry = v;
      else if (a == "--grid") {
        if (!(haveGrid = parseSize3(v, grid))) return usageError("run", "bad --grid '" + v + "' (X[,Y,Z], each >= 1)");
      } else if (a == "--threadgroup") {
        if (!(haveTg = parseSize3(v, threadgroup))) return usageError("run", "bad --threadgroup '" + v + "'");
      } else if (a == "--groups") {
        if (!(haveGroups = parseSize3(v, groups))) return usageError("run", "bad --groups '" + v + "'");
      } else if (a == "--arg") argTexts.push_back(v);
      else if (a == "--out") outTexts.push_back(v);
      else if (a == "--device") deviceSel = v;
      else if (a == "-I") options.includeDirs.push_back(v);
      else if (a == "-D") {
        size_t eq = v.find('=');
        options.defines.emplace_back(v.substr(0, eq), eq == std::string::npos ? "" : v.substr(eq + 1));
      } else if (a == "--fc") fcTexts.push_back(v);
      else if (a == "--tgmem") tgTexts.push_back(v);
      else if (a == "--repeat") {
        if (!parseUint(v, repeat) || repeat == 0) return usageError("run", "bad --repeat '" + v + "'");
      } else if (a == "--seed") {
        if (!parseUint(v, seed)) return usageError("run", "bad --seed '" + v + "'");
        haveSeed = true;
      }
    } else if (a.rfind("-I", 0) == 0 && a.size() > 2) {
      options.includeDirs.push_back(a.substr(2));
    } else if (a.rfind("-D", 0) == 0 && a.size() > 2) {
      size_t eq = a.find('=');
      options.defines.emplace_back(a.substr(2, eq - 2), eq == std::string::npos ? "" : a.substr(eq + 1));
    } else if (a == "--time") {
      time = true;
    } else if (!a.empty() && a[0] == '-') {
      return usageError("run", "unknown option '" + a + "'");
    } else if (input.empty()) {
      input = a;
    } else {
      return usageError("run", "more than one input file");
    }
  }
  if (input.empty()) return usageError("run", "no input file");
  if (entry.empty()) return usageError("run", "--entry NAME is required");
  if (!haveTg) return usageError("run", "--threadgroup X[,Y,Z] is required");
  if (haveGrid == haveGroups) return usageError("run", "give exactly one of --grid (dispatchThreads) and --groups (dispatchThreadgroups)");

  std::mt19937_64 rng(haveSeed ? seed : uint64_t(std::random_device{}()));
  std::vector<ArgSpec> specs;
  for (const std::string& t : argTexts) {
    ArgSpec spec;
    std::string err = parseArg(t, rng, spec);
    if (!err.empty()) return usageError("run", "--arg: " + err);
    for (const ArgSpec& s : specs)
      if (s.index == spec.index) return usageError("run", "--arg " + std::to_string(spec.index) + " given twice");
    specs.push_back(std::move(spec));
  }
  std::map<uint32_t, std::string> outs;
  for (const std::string& t : outTexts) {
    uint32_t index;
    std::string path;
    if (!splitIndex(t, index, path) || path.empty()) return usageError("run", "bad --out '" + t + "' (INDEX=FILE)");
    outs[index] = path;
  }

  // Compile.
  options.entries = {entry};
  auto t0 = std::chrono::steady_clock::now();
  CompileResult result = compileFile(input, options);
  double compileMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cerr << result.diagnostics.format();
  if (result.status != Status::Ok) return static_cast<int>(result.status);
  const CompiledKernel* compiled = nullptr;
  for (const CompiledKernel& k : result.kernels)
    if (k.reflection.entry == entry) compiled = &k;
  if (!compiled) {
    std::cerr << "m2v run: no kernel entry point named '" << entry << "' in " << input << "\n";
    return static_cast<int>(Status::UserError);
  }
  const KernelReflection& refl = compiled->reflection;
  for (const PushArg& pa : refl.args) {
    bool given = false;
    for (const ArgSpec& s : specs) given |= s.index == pa.buffer;
    if (!given) return usageError("run", "kernel '" + entry + "' needs --arg " + std::to_string(pa.buffer) + "=SPEC");
  }
  // A buffer whose elements are narrower than the parameter's makes the kernel read past its end: refuse that.
  for (const KernelParam& p : refl.params) {
    if (p.kind != ParamKind::Buffer) continue;
    const DType* want = findDType(pointeeScalar(p.type));
    for (const ArgSpec& s : specs)
      if (s.index == p.index && want && s.type && s.type->size != want->size && s.type->size < want->size)
        return usageError("run", "--arg " + std::to_string(s.index) + " gives " + s.type->name + " elements but '" +
                                     p.name + "' is " + p.type);
  }
  for (const auto& [index, path] : outs) {
    bool ok = false;
    for (const ArgSpec& s : specs) ok |= s.index == index && !s.scalar;
    if (!ok) return usageError("run", "--out " + std::to_string(index) + ": no buffer --arg with that index");
  }

  try {
    DeviceOptions dopts;
    dopts.selector = deviceSel;
    Device device(dopts);
    std::cerr << "m2v run: " << device.describe() << "\n";
    std::cerr << "m2v run: compiled '" << entry << "' in " << std::fixed << std::setprecision(1) << compileMs
              << " ms\n" << std::defaultfloat;
    Kernel kernel;
    try {
      kernel = mlx::createKernelFor(device, *compiled);
      if (compiled->cooperative)
        std::cerr << "m2v run: simdgroup_matrix multiplies on "
                  << (kernel.reflection().cooperativeMatrixMultiplies ? "cooperative matrices" : "subgroup shuffles")
                  << "\n";
      if (compiled->nativeBfloat16)
        std::cerr << "m2v run: float -> bfloat narrowing "
                  << (device.info().runsNativeBfloat16() ? "on the bfloat16 type (native-bfloat16 build)"
                                                         : "in integer arithmetic (portable build)")
                  << "\n";
    } catch (const UnsupportedError& e) {
      std::cerr << "m2v run: refused: " << e.what() << "\n";
      return static_cast<int>(Status::Unsupported);
    }
    StreamOptions sopts;
    sopts.timestamps = time;
    Stream stream = device.createStream(sopts);
    std::map<uint32_t, Buffer> buffers;
    for (const ArgSpec& s : specs) {
      if (s.scalar) continue;
      Buffer b = device.createBuffer(s.bytes.size());
      stream.upload(b, 0, s.bytes.data(), s.bytes.size());
      buffers[s.index] = b;
    }
    stream.setKernel(kernel);
    for (const ArgSpec& s : specs) {
      if (s.scalar) stream.setBytes(s.bytes.data(), s.bytes.size(), s.index);
      else stream.setBuffer(buffers[s.index], 0, s.index);
    }
    for (const std::string& t : fcTexts) {
      uint32_t index;
      std::string value, err;
      if (!splitIndex(t, index, value)) return usageError("run", "bad --fc '" + t + "' (INDEX=VALUE)");
      if (!setConstant(stream, refl, index, value, err)) return usageError("run", "--fc: " + err);
    }
    for (const std::string& t : tgTexts) {
      uint32_t index;
      std::string value;
      uint64_t bytes;
      if (!splitIndex(t, index, value) || !parseUint(value, bytes) || bytes > 0xffffffffu)
        return usageError("run", "bad --tgmem '" + t + "' (INDEX=BYTES)");
      stream.setThreadgroupMemoryLength(uint32_t(bytes), index);
    }
    for (uint64_t r = 0; r < repeat; ++r) {
      if (haveGroups) stream.dispatchThreadgroups(groups, threadgroup);
      else stream.dispatchThreads(grid, threadgroup);
    }
    std::map<uint32_t, std::vector<uint8_t>> results;
    for (auto& [index, buffer] : buffers) {
      results[index].resize(buffer.size());
      stream.enqueueReadback(buffer, 0, results[index].data(), buffer.size());
    }
    stream.synchronize();

    for (const ArgSpec& s : specs) {
      if (s.scalar) continue;
      const std::vector<uint8_t>& bytes = results[s.index];
      if (auto it = outs.find(s.index); it != outs.end()) {
        std::ofstream f(it->second, std::ios::binary);
        f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        if (!f) {
          std::cerr << "m2v run: cannot write " << it->second << "\n";
          return static_cast<int>(Status::UserError);
        }
        std::cout << "buffer(" << s.index << ") -> " << it->second << " (" << bytes.size() << " bytes)\n";
        continue;
      }
      std::string type;
      for (const KernelParam& p : refl.params)
        if (p.kind == ParamKind::Buffer && p.index == s.index) type = p.type;
      bool readOnly = type.rfind("const ", 0) == 0 || type.find("constant") != std::string::npos;
      if (!readOnly) std::cout << "buffer(" << s.index << ") " << summary(*s.type, bytes) << "\n";
    }
    if (time) {
      std::vector<DispatchTiming> timings = stream.takeTimings();
      if (timings.empty()) {
        std::cout << "time: the device has no compute timestamps\n";
      } else {
        double total = 0, best = 1e300;
        for (const DispatchTiming& t : timings) total += t.gpuNs, best = std::min(best, t.gpuNs);
        std::cout << std::fixed << std::setprecision(2) << "time: " << timings.size() << " dispatch(es), mean "
                  << total / timings.size() / 1000.0 << " us, min " << best / 1000.0 << " us (GPU)\n";
      }
    }
    if (size_t n = device.validationMessageCount()) {
      for (const std::string& m : device.validationMessages()) std::cerr << "validation: " << m << "\n";
      std::cerr << "m2v run: " << n << " Vulkan validation message(s)\n";
      return static_cast<int>(Status::InternalError);
    }
  } catch (const UsageError& e) {
    std::cerr << "m2v run: " << e.what() << "\n";
    return static_cast<int>(Status::UsageError);
  } catch (const UnsupportedError& e) {
    std::cerr << "m2v run: refused: " << e.what() << "\n";
    return static_cast<int>(Status::Unsupported);
  } catch (const DeviceError& e) {
    // The GPU may still be running the kernel that timed out; normal exit would run the driver's teardown, which can
    // wait for it forever. Leave now.
    std::cerr << "m2v run: device failure: " << e.what() << std::endl;
    std::cout.flush();
    std::_Exit(static_cast<int>(Status::DeviceError));
  } catch (const RuntimeError& e) {
    std::cerr << "m2v run: " << e.what() << "\n";
    return static_cast<int>(Status::DeviceError);
  }
  return 0;
}

extern const char kExamplesUsage[] =
    R"(examples [--device SEL] [--filter SUBSTR] [--dir DIR] [--seed S]
    Compile and run the bundled example kernels, check each against its CPU reference and print a table.
    Exit code 1 when a result does not match or a kernel fails.
)";

// m2v examples [--device SEL] [--filter SUBSTR] [--dir DIR] [--seed S]: exit 1 on a mismatch or failure, 0 when
// every example is ok or refused for a documented reason (e.g. no 32-wide subgroups).
int examplesCommand(const Args& args) {
  examples::Options options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--device" || a == "--filter" || a == "--dir" || a == "--seed") {
      if (i + 1 >= args.size()) return usageError("examples", a + " needs a value");
      const std::string& v = args[++i];
      if (a == "--device") options.device = v;
      else if (a == "--filter") options.filter = v;
      else if (a == "--dir") options.dir = v;
      else {
        uint64_t seed;
        if (!parseUint(v, seed)) return usageError("examples", "bad --seed '" + v + "'");
        options.seed = unsigned(seed);
      }
    } else {
      return usageError("examples", "unknown argument '" + a + "'");
    }
  }
  try {
    std::vector<examples::Result> results = examples::runAll(options, std::cerr);
    examples::printTable(results, std::cout);
    int failed = 0;
    for (const examples::Result& r : results) failed += r.failed;
    if (results.empty()) std::cerr << "m2v examples: no example matches '" << options.filter << "'\n";
    return failed ? static_cast<int>(Status::UserError) : 0;
  } catch (const UsageError& e) {
    std::cerr << "m2v examples: " << e.what() << "\n";
    return static_cast<int>(Status::UsageError);
  } catch (const RuntimeError& e) {
    std::cerr << "m2v examples: device failure: " << e.what() << "\n";
    return static_cast<int>(Status::DeviceError);
  }
}

}  // namespace m2v::cli
