// m2v mlx SPEC.json [--print-source] [--verbose] [-o DIR] [--device SEL]: runs one mx.fast.metal_kernel call
// described in JSON (docs/MLX.md "The m2v mlx spec") and writes each output as DIR/<output name>.npy.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "Commands.h"
#include "metal2vk/mlx.h"
#include "metal2vk/runtime.h"

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace m2v::cli {

namespace {

struct SpecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

mlx::Dtype dtypeOf(const ojson& j, const std::string& where) {
  if (!j.is_string()) throw SpecError(where + ": dtype must be a string");
  auto d = mlx::parseDtype(j.get<std::string>());
  if (!d) throw SpecError(where + ": unknown dtype '" + j.get<std::string>() + "'");
  return *d;
}

std::vector<int64_t> shapeOf(const ojson& j, const std::string& where) {
  std::vector<int64_t> s;
  if (j.is_number_integer()) return {j.get<int64_t>()};
  if (!j.is_array()) throw SpecError(where + ": a shape is a list of integers");
  for (const auto& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) throw SpecError(where + ": bad dimension " + d.dump());
    s.push_back(d.get<int64_t>());
  }
  return s;
}

// The number of elements of a shape; refuses shapes whose size overflows or exceeds 2^36 elements.
size_t elementCount(const std::vector<int64_t>& shape, const std::string& where) {
  size_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, size_t(d), &n) || n > (size_t(1) << 36))
      throw SpecError(where + ": shape too large");
  return n;
}

// Nested lists -> shape + flat values.
void flatten(const ojson& j, size_t depth, std::vector<int64_t>& shape, std::vector<double>& values,
             const std::string& where) {
  if (j.is_array()) {
    if (shape.size() == depth) shape.push_back(int64_t(j.size()));
    else if (shape[depth] != int64_t(j.size())) throw SpecError(where + ": ragged nested lists");
    for (const auto& e : j) flatten(e, depth + 1, shape, values, where);
    return;
  }
  if (depth != shape.size()) throw SpecError(where + ": ragged nested lists");
  if (j.is_boolean()) values.push_back(j.get<bool>() ? 1 : 0);
  else if (j.is_number()) values.push_back(j.get<double>());
  else throw SpecError(where + ": values must be numbers or booleans");
}

mlx::Array makeInput(const ojson& j, size_t i, const fs::path& specDir) {
  const std::string where = "inputs[" + std::to_string(i) + "]";
  // Scalars follow MLX's Python rules: bool -> bool, int -> int32 (int64 if needed), float -> float32.
  if (j.is_boolean()) return mlx::Array::scalar<uint8_t>(mlx::Dtype::Bool, j.get<bool>() ? 1 : 0);
  if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    if (v >= INT32_MIN && v <= INT32_MAX) return mlx::Array::scalar<int32_t>(mlx::Dtype::Int32, int32_t(v));
    return mlx::Array::scalar<int64_t>(mlx::Dtype::Int64, v);
  }
  if (j.is_number_float()) return mlx::Array::scalar<float>(mlx::Dtype::Float32, j.get<float>());
  if (!j.is_object()) throw SpecError(where + ": an input is a scalar or an object with data, random or npy");
  std::optional<mlx::Dtype> dtype;
  if (j.contains("dtype")) dtype = dtypeOf(j["dtype"], where);
  if (j.contains("npy")) {
    fs::path p = j["npy"].get<std::string>();
    if (p.is_relative()) p = specDir / p;
    return mlx::readNpy(p.string(), dtype);
  }
  std::vector<int64_t> shape;
  std::vector<double> values;
  if (j.contains("data")) {
    flatten(j["data"], 0, shape, values, where);
    if (j.contains("shape")) {
      shape = shapeOf(j["shape"], where);
      size_t n = elementCount(shape, where);
      if (n != values.size()) throw SpecError(where + ": shape does not match the number of values");
    }
  } else if (j.contains("random")) {
    if (!j.contains("shape")) throw SpecError(where + ": random inputs need a shape");
    shape = shapeOf(j["shape"], where);
    size_t n = elementCount(shape, where);
    std::mt19937_64 gen(j.value("seed", uint64_t(i + 1)));
    std::string kind = j["random"].get<std::string>();
    double lo = j.value("low", kind == "int" ? 0.0 : 0.0), hi = j.value("high", kind == "int" ? 10.0 : 1.0);
    values.resize(n);
    if (kind == "normal") {
      std::normal_distribution<double> dist(j.value("mean", 0.0), j.value("std", 1.0));
      for (auto& v : values) v = dist(gen);
    } else if (kind == "uniform") {
      std::uniform_real_distribution<double> dist(lo, hi);
      for (auto& v : values) v = dist(gen);
    } else if (kind == "int") {
      std::uniform_int_distribution<int64_t> dist(int64_t(lo), int64_t(hi) - 1);
      for (auto& v : values) v = double(dist(gen));
    } else {
      throw SpecError(where + ": random is one of normal, uniform, int");
    }
    if (!dtype) dtype = kind == "int" ? mlx::Dtype::Int32 : mlx::Dtype::Float32;
  } else {
    throw SpecError(where + ": an input object needs data, random or npy");
  }
  mlx::Array a = mlx::Array::allocate(dtype.value_or(mlx::Dtype::Float32), shape);
  uint8_t* dst = static_cast<uint8_t*>(a.mutableData());
  const size_t item = mlx::itemSize(a.dtype);
  for (size_t e = 0; e < values.size(); ++e) mlx::encodeElement(a.dtype, values[e], dst + e * item);
  return a;
}

mlx::TemplateArgs templateOf(const ojson& j) {
  mlx::TemplateArgs args;
  auto one = [&](const std::string& name, const ojson& v) {
    if (v.is_boolean()) args.emplace_back(name, mlx::TemplateArg(v.get<bool>()));
    else if (v.is_number_integer()) args.emplace_back(name, mlx::TemplateArg(v.get<int>()));
    else if (v.is_string()) args.emplace_back(name, mlx::TemplateArg(dtypeOf(v, "template " + name)));
    else throw SpecError("template " + name + ": Invalid template argument. Must be int, bool, or dtype.");
  };
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) one(it.key(), it.value());
  } else if (j.is_array()) {
    for (const auto& p : j) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_string())
        throw SpecError("template entries are [name, value] pairs");
      one(p[0].get<std::string>(), p[1]);
    }
  } else if (!j.is_null()) {
    throw SpecError("template is a list of [name, value] pairs or an object");
  }
  return args;
}

std::array<uint32_t, 3> dimsOf(const ojson& j, const char* what) {
  std::array<uint32_t, 3> d{1, 1, 1};
  if (!j.is_array() || j.empty() || j.size() > 3) throw SpecError(std::string(what) + " is a list of 1 to 3 integers");
  for (size_t i = 0; i < j.size(); ++i) d[i] = j[i].get<uint32_t>();
  return d;
}

std::string readText(const ojson& spec, const char* key, const char* fileKey, const fs::path& dir) {
  if (spec.contains(fileKey)) {
    fs::path p = spec[fileKey].get<std::string>();
    if (p.is_relative()) p = dir / p;
    std::ifstream in(p);
    if (!in) throw SpecError(std::string("cannot read ") + p.string());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  return spec.value(key, std::string());
}

std::string preview(const mlx::Array& a) {
  std::ostringstream os;
  os << "[";
  size_t n = std::min<size_t>(a.size(), 6);
  for (size_t i = 0; i < n; ++i)
    os << (i ? ", " : "")
       << mlx::decodeElement(a.dtype, static_cast<const uint8_t*>(a.data) + i * mlx::itemSize(a.dtype));
  if (a.size() > n) os << ", ...";
  return os.str() + "]";
}

}  // namespace

extern const char kMlxUsage[] =
    R"(mlx SPEC.json [--print-source] [--verbose] [-o DIR] [--device SEL]
    Run one mx.fast.metal_kernel call described in JSON (inputs inline, random or .npy; docs/MLX.md) and write
    each output as DIR/NAME.npy; --print-source prints MLX's assembled kernel text instead of running.
)";

int mlxCommand(const Args& args) {
  std::string specPath, outDir = ".", device;
  bool printSource = false, verbose = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--print-source") printSource = true;
    else if (a == "--verbose") verbose = true;
    else if (a == "-o" || a == "--device") {
      if (i + 1 >= args.size()) return usageError("mlx", a + " needs a value");
      (a == "-o" ? outDir : device) = args[++i];
    } else if (!a.empty() && a[0] == '-') return usageError("mlx", "unknown option '" + a + "'");
    else if (specPath.empty()) specPath = a;
    else return usageError("mlx", "more than one spec file");
  }
  if (specPath.empty()) return usageError("mlx", "no SPEC.json given");

  try {
    std::ifstream in(specPath);
    if (!in) return usageError("mlx", "cannot read " + specPath);
    ojson spec;
    try {
      spec = ojson::parse(in);
    } catch (const ojson::parse_error& e) {
      throw SpecError(std::string("invalid JSON: ") + e.what());
    }
    const fs::path dir = fs::absolute(specPath).parent_path();

    mlx::KernelSpec ks;
    ks.name = spec.at("name").get<std::string>();
    ks.inputNames = spec.value("input_names", std::vector<std::string>{});
    ks.outputNames = spec.at("output_names").get<std::vector<std::string>>();
    ks.source = readText(spec, "source", "source_file", dir);
    ks.header = readText(spec, "header", "header_file", dir);
    ks.ensureRowContiguous = spec.value("ensure_row_contiguous", true);
    ks.atomicOutputs = spec.value("atomic_outputs", false);
    mlx::MetalKernel kernel(ks);

    mlx::Call call;
    const ojson inputs = spec.value("inputs", ojson::array());
    for (size_t i = 0; i < inputs.size(); ++i) call.inputs.push_back(makeInput(inputs[i], i, dir));
    for (const auto& s : spec.at("output_shapes")) call.outputShapes.push_back(shapeOf(s, "output_shapes"));
    for (const auto& d : spec.at("output_dtypes")) call.outputDtypes.push_back(dtypeOf(d, "output_dtypes"));
    call.templateArgs = templateOf(spec.value("template", ojson()));

    if (printSource) {
      std::vector<mlx::InputInfo> infos;
      for (const auto& a : call.inputs) infos.push_back({a.dtype, a.shape});
      std::cout << kernel.assemble(infos, call.outputDtypes, call.templateArgs).source;
      return 0;
    }
    call.grid = dimsOf(spec.at("grid"), "grid");
    call.threadgroup = dimsOf(spec.at("threadgroup"), "threadgroup");
    if (spec.contains("init_value") && !spec["init_value"].is_null()) call.initValue = spec["init_value"].get<float>();
    call.verbose = verbose || spec.value("verbose", false);

    if (!device.empty()) mlx::setDevice(device);
    std::cerr << mlx::currentDevice().describe() << "\n";
    std::vector<mlx::Array> outs = kernel(call);
    fs::create_directories(outDir);
    for (size_t o = 0; o < outs.size(); ++o) {
      fs::path p = fs::path(outDir) / (ks.outputNames[o] + ".npy");
      mlx::writeNpy(p.string(), outs[o]);
      std::cout << ks.outputNames[o] << ": " << mlx::dtypeName(outs[o].dtype) << " (";
      for (size_t d = 0; d < outs[o].shape.size(); ++d) std::cout << (d ? ", " : "") << outs[o].shape[d];
      std::cout << ") -> " << p.string() << "  " << preview(outs[o]) << "\n";
    }
    return 0;
  } catch (const mlx::CompileError& e) {
    std::cerr << e.diagnostics;
    return int(e.status);
  } catch (const SpecError& e) {
    std::cerr << "m2v mlx: " << specPath << ": " << e.what() << "\n";
    return 1;
  } catch (const ojson::exception& e) {
    std::cerr << "m2v mlx: " << specPath << ": " << e.what() << "\n";
    return 1;
  } catch (const UnsupportedError& e) {
    std::cerr << "m2v mlx: unsupported: " << e.what() << "\n";
    return 3;
  } catch (const DeviceError& e) {
    std::cerr << "m2v mlx: device error: " << e.what() << "\n";
    return 5;
  } catch (const UsageError& e) {
    std::cerr << "m2v mlx: " << e.what() << "\n";
    return 1;
  } catch (const std::invalid_argument& e) {
    std::cerr << "m2v mlx: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "m2v mlx: " << specPath << ": the inputs or outputs do not fit in memory\n";
    return 1;
  }
}

}  // namespace m2v::cli
