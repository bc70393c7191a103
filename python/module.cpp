// metal2vk._core: the Python face of m2v_mlx (mx.fast.metal_kernel on Vulkan). See python/README.md.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>
#include <cstring>

#include "metal2vk/compiler.h"
#include "metal2vk/mlx.h"
#include "metal2vk/runtime.h"
#include "dims.h"
#include "library.h"
#include "numpy_interop.h"

namespace py = pybind11;
using namespace m2v::mlx;
using m2v::python::dtypeKind;
using m2v::python::itemSize;

namespace {

// The numpy dtype that carries bfloat16 bits: uint16 with metadata {"m2v_dtype": "bfloat16"} (metal2vk.bfloat16).
py::dtype& bfloat16Dtype() {
  static py::dtype* d = [] {
    py::module_ np = py::module_::import("numpy");
    py::dict meta;
    meta["m2v_dtype"] = "bfloat16";
    return new py::dtype(np.attr("dtype")(np.attr("uint16"), py::arg("metadata") = meta));
  }();
  return *d;
}

std::optional<Dtype> dtypeFromNumpy(const py::dtype& dt) {
  py::object meta = dt.attr("metadata");
  if (!meta.is_none()) {
    py::dict m = meta.cast<py::dict>();
    if (m.contains("m2v_dtype")) return parseDtype(m["m2v_dtype"].cast<std::string>());
  }
  const char kind = dtypeKind(dt);
  const size_t size = size_t(itemSize(dt));
  if (std::string(py::str(dt.attr("name"))) == "bfloat16") return Dtype::BFloat16;  // ml_dtypes.bfloat16
  switch (kind) {
    case 'b': return Dtype::Bool;
    case 'u': return size == 1 ? Dtype::UInt8 : size == 2 ? Dtype::UInt16 : size == 4 ? Dtype::UInt32 : Dtype::UInt64;
    case 'i': return size == 1 ? Dtype::Int8 : size == 2 ? Dtype::Int16 : size == 4 ? Dtype::Int32 : Dtype::Int64;
    case 'f':
      if (size == 2) return Dtype::Float16;
      if (size == 4) return Dtype::Float32;
      if (size == 8) return Dtype::Float64;
      break;
    case 'c':
      if (size == 8) return Dtype::Complex64;
      break;
  }
  return std::nullopt;
}

// numpy dtypes, numpy scalar types, MLX-style names ("float32", "bfloat16"), metal2vk.bfloat16.
std::optional<Dtype> toDtype(const py::handle& obj) {
  if (py::isinstance<py::str>(obj)) {
    std::string s = obj.cast<std::string>();
    if (auto d = parseDtype(s)) return d;
  }
  if (py::isinstance<py::dtype>(obj)) return dtypeFromNumpy(py::reinterpret_borrow<py::dtype>(obj));
  // type objects (np.float32) and anything numpy can turn into a dtype
  if (py::isinstance<py::type>(obj) || py::hasattr(obj, "dtype")) {
    try {
      py::object np = py::module_::import("numpy");
      py::object d = py::hasattr(obj, "dtype") && !py::isinstance<py::type>(obj) ? obj.attr("dtype")
                                                                                   : np.attr("dtype")(obj);
      return dtypeFromNumpy(py::reinterpret_borrow<py::dtype>(d));
    } catch (const py::error_already_set&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

Dtype requireDtype(const py::handle& obj, const char* what) {
  if (auto d = toDtype(obj)) return *d;
  throw py::type_error(std::string("[metal_kernel] unsupported dtype for ") + what + ": " +
                       std::string(py::repr(obj)));
}

py::dtype numpyDtype(Dtype d) {
  switch (d) {
    case Dtype::Bool: return py::dtype("bool");
    case Dtype::UInt8: return py::dtype("uint8");
    case Dtype::UInt16: return py::dtype("uint16");
    case Dtype::UInt32: return py::dtype("uint32");
    case Dtype::UInt64: return py::dtype("uint64");
    case Dtype::Int8: return py::dtype("int8");
    case Dtype::Int16: return py::dtype("int16");
    case Dtype::Int32: return py::dtype("int32");
    case Dtype::Int64: return py::dtype("int64");
    case Dtype::Float16: return py::dtype("float16");
    case Dtype::BFloat16: return bfloat16Dtype();
    case Dtype::Float32: return py::dtype("float32");
    case Dtype::Float64: return py::dtype("float64");
    case Dtype::Complex64: return py::dtype("complex64");
  }
  return py::dtype("float32");
}

bool isBoolObject(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return true;
  py::object np = py::module_::import("numpy");
  return py::isinstance(v, np.attr("bool_"));
}
bool isIntObject(const py::handle& v) {
  if (py::isinstance<py::int_>(v)) return true;
  py::object np = py::module_::import("numpy");
  return py::isinstance(v, np.attr("integer"));
}

// One input: a Python scalar (bool -> bool, int -> int32 or int64, float -> float32) or an array-like.
// `keep` holds the numpy arrays whose memory the Array views.
Array toArray(const py::handle& obj, std::vector<py::object>& keep) {
  if (py::isinstance<py::bool_>(obj)) return Array::scalar<uint8_t>(Dtype::Bool, obj.cast<bool>() ? 1 : 0);
  if (py::isinstance<py::int_>(obj)) {
    long long v;
    try {
      v = obj.cast<long long>();
    } catch (const py::cast_error&) {
      throw py::value_error("[metal_kernel] integer input does not fit int64");
    }
    if (v >= INT32_MIN && v <= INT32_MAX) return Array::scalar<int32_t>(Dtype::Int32, int32_t(v));
    return Array::scalar<int64_t>(Dtype::Int64, int64_t(v));
  }
  if (py::isinstance<py::float_>(obj)) return Array::scalar<float>(Dtype::Float32, obj.cast<float>());
  py::module_ np = py::module_::import("numpy");
  py::array arr = py::isinstance<py::array>(obj) ? py::reinterpret_borrow<py::array>(obj)
                                                 : py::array(np.attr("asarray")(obj));
  std::optional<Dtype> d = dtypeFromNumpy(arr.dtype());
  if (!d) throw py::type_error("[metal_kernel] unsupported input dtype " + std::string(py::str(arr.dtype())));
  const ssize_t item = itemSize(arr.dtype());
  bool expressible = true;
  for (ssize_t i = 0; i < arr.ndim(); ++i)
    if (arr.strides(i) % item != 0) expressible = false;
  if (!expressible) arr = py::array(np.attr("ascontiguousarray")(arr));
  keep.push_back(arr);
  Array a;
  a.dtype = *d;
  a.shape.assign(arr.shape(), arr.shape() + arr.ndim());
  a.strides.resize(size_t(arr.ndim()));
  for (ssize_t i = 0; i < arr.ndim(); ++i) a.strides[size_t(i)] = arr.strides(i) / item;
  a.data = arr.data();
  return a;
}

// A list in name order, or a dict keyed by the names (MLX's older API).
std::vector<py::object> byNames(const py::handle& obj, const std::vector<std::string>& names, const char* what) {
  std::vector<py::object> out;
  if (py::isinstance<py::dict>(obj)) {
    py::dict d = py::reinterpret_borrow<py::dict>(obj);
    for (const auto& n : names) {
      if (!d.contains(n)) throw py::value_error(std::string("[metal_kernel] `") + what + "` has no entry '" + n + "'");
      out.push_back(d[py::str(n)]);
    }
    return out;
  }
  for (auto item : py::reinterpret_borrow<py::sequence>(obj)) out.push_back(py::reinterpret_borrow<py::object>(item));
  return out;
}

TemplateArgs toTemplate(const py::handle& obj) {
  TemplateArgs args;
  if (obj.is_none()) return args;
  std::vector<std::pair<py::object, py::object>> items;
  if (py::isinstance<py::dict>(obj)) {
    for (auto kv : py::reinterpret_borrow<py::dict>(obj))
      items.emplace_back(py::reinterpret_borrow<py::object>(kv.first), py::reinterpret_borrow<py::object>(kv.second));
  } else {
    for (auto item : py::reinterpret_borrow<py::sequence>(obj)) {
      py::sequence pair = py::reinterpret_borrow<py::sequence>(item);
      if (pair.size() != 2) throw py::value_error("[metal_kernel] template entries must be (name, value) pairs");
      items.emplace_back(pair[0], pair[1]);
    }
  }
  for (auto& [k, v] : items) {
    std::string name = k.cast<std::string>();
    // MLX checks bool, then int, then dtype (True is a bool, not an int).
    if (isBoolObject(v)) {
      args.emplace_back(name, TemplateArg(v.cast<bool>()));
    } else if (isIntObject(v)) {
      long long n = py::int_(v).cast<long long>();
      if (n < INT_MIN || n > INT_MAX) throw py::value_error("[metal_kernel] template int '" + name + "' overflows int");
      args.emplace_back(name, TemplateArg(int(n)));
    } else if (auto d = toDtype(v)) {
      args.emplace_back(name, TemplateArg(*d));
    } else {
      throw py::type_error("[metal_kernel] Invalid template argument. Must be int, bool, or dtype.");
    }
  }
  return args;
}

py::array toNumpy(const Array& a) {
  auto* holder = new std::shared_ptr<void>(a.owner);
  py::capsule cap(holder, [](void* p) { delete static_cast<std::shared_ptr<void>*>(p); });
  std::vector<ssize_t> shape(a.shape.begin(), a.shape.end());
  py::dtype dt = numpyDtype(a.dtype);
  std::vector<ssize_t> strides(shape.size());
  ssize_t stride = itemSize(dt);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return py::array(dt, shape, strides, a.data, cap);
}

struct PyKernel {
  MetalKernel kernel;
  explicit PyKernel(KernelSpec s) : kernel(std::move(s)) {}

  Call makeCall(const py::object& inputs, const py::object& outputShapes, const py::object& outputDtypes,
                const py::object& grid, const py::object& threadgroup, const py::object& tmpl,
                const py::object& initValue, std::vector<py::object>& keep) const {
    const KernelSpec& s = kernel.spec();
    Call c;
    for (auto& in : byNames(inputs, s.inputNames, "inputs")) c.inputs.push_back(toArray(in, keep));
    for (auto& sh : byNames(outputShapes, s.outputNames, "output_shapes")) {
      std::vector<int64_t> dims;
      if (isIntObject(sh)) dims.push_back(sh.cast<int64_t>());
      else
        for (auto d : py::reinterpret_borrow<py::sequence>(sh)) dims.push_back(d.cast<int64_t>());
      c.outputShapes.push_back(std::move(dims));
    }
    for (auto& d : byNames(outputDtypes, s.outputNames, "output_dtypes"))
      c.outputDtypes.push_back(requireDtype(d, "an output"));
    c.grid = m2v::python::dims3(grid, "grid", "[metal_kernel] ");
    c.threadgroup = m2v::python::dims3(threadgroup, "threadgroup", "[metal_kernel] ");
    c.templateArgs = toTemplate(tmpl);
    if (!initValue.is_none()) c.initValue = initValue.cast<float>();
    return c;
  }

  py::list call(const py::object& inputs, const py::object& outputShapes, const py::object& outputDtypes,
                const py::object& grid, const py::object& threadgroup, const py::object& tmpl,
                const py::object& initValue, bool verbose) const {
    std::vector<py::object> keep;
    Call c = makeCall(inputs, outputShapes, outputDtypes, grid, threadgroup, tmpl, initValue, keep);
    if (verbose) {
      std::vector<InputInfo> infos;
      for (const auto& a : c.inputs) infos.push_back({a.dtype, a.shape});
      if (infos.size() == kernel.spec().inputNames.size() && c.outputDtypes.size() == kernel.spec().outputNames.size()) {
        Assembly asmb = kernel.assemble(infos, c.outputDtypes, c.templateArgs);
        py::print("Generated source code for `" + kernel.spec().name + "`:\n```\n" + asmb.source + "\n```");
      }
    }
    std::vector<Array> outs;
    {
      py::gil_scoped_release release;
      outs = kernel(c);
    }
    py::list result;
    for (const auto& o : outs) result.append(toNumpy(o));
    return result;
  }

  std::string source(const py::object& inputs, const py::object& outputDtypes, const py::object& tmpl) const {
    std::vector<py::object> keep;
    std::vector<InputInfo> infos;
    for (auto& in : byNames(inputs, kernel.spec().inputNames, "inputs")) {
      Array a = toArray(in, keep);
      infos.push_back({a.dtype, a.shape});
    }
    std::vector<Dtype> dts;
    for (auto& d : byNames(outputDtypes, kernel.spec().outputNames, "output_dtypes"))
      dts.push_back(requireDtype(d, "an output"));
    return kernel.assemble(infos, dts, toTemplate(tmpl)).source;
  }
};

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "metal2vk: MLX-style Metal kernels (mx.fast.metal_kernel) on Vulkan";

  // Exceptions: metal2vk.Error is the base of everything metal2vk raises besides ValueError/TypeError.
  static py::exception<m2v::RuntimeError> error(m, "Error", PyExc_RuntimeError);
  static py::exception<CompileError> compileError(m, "CompileError", error.ptr());
  static py::exception<m2v::UnsupportedError> unsupported(m, "UnsupportedError", error.ptr());
  static py::exception<m2v::UsageError> usage(m, "UsageError", PyExc_ValueError);
  static py::exception<m2v::DeviceError> deviceError(m, "DeviceError", error.ptr());
  static py::exception<m2v::TimeoutError> timeoutError(m, "TimeoutError", deviceError.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CompileError& e) {
      py::handle type = compileError;
      py::object exc = type(e.what());
      exc.attr("diagnostics") = e.diagnostics;
      exc.attr("kernel_name") = e.kernelName;
      exc.attr("status") = int(e.status);
      PyErr_SetObject(compileError.ptr(), exc.ptr());
    } catch (const m2v::UnsupportedError& e) {
      unsupported(e.what());
    } catch (const m2v::UsageError& e) {
      usage(e.what());
    } catch (const m2v::TimeoutError& e) {
      timeoutError(e.what());
    } catch (const m2v::DeviceError& e) {
      deviceError(e.what());
    } catch (const m2v::RuntimeError& e) {
      error(e.what());
    }
  });

  py::class_<PyKernel>(m, "MetalKernel")
      .def(
          "__call__",
          [](const PyKernel& k, const py::object& inputs, const py::object& output_shapes,
             const py::object& output_dtypes, const py::object& grid, const py::object& threadgroup,
             const py::object& tmpl, const py::object& init_value, bool verbose, const py::object& stream) {
            return k.call(inputs, output_shapes, output_dtypes, grid, threadgroup, tmpl, init_value, verbose);
          },
          py::kw_only(), py::arg("inputs"), py::arg("output_shapes"), py::arg("output_dtypes"), py::arg("grid"),
          py::arg("threadgroup"), py::arg("template") = py::none(), py::arg("init_value") = py::none(),
          py::arg("verbose") = false, py::arg("stream") = py::none())
      .def(
          "source",
          [](const PyKernel& k, const py::object& inputs, const py::object& output_dtypes, const py::object& tmpl) {
            return k.source(inputs, output_dtypes, tmpl);
          },
          py::kw_only(), py::arg("inputs"), py::arg("output_dtypes"), py::arg("template") = py::none(),
          "MLX's assembled kernel text for these inputs (no compilation).")
      .def_property_readonly("name", [](const PyKernel& k) { return k.kernel.spec().name; })
      .def_property_readonly("input_names", [](const PyKernel& k) { return k.kernel.spec().inputNames; })
      .def_property_readonly("output_names", [](const PyKernel& k) { return k.kernel.spec().outputNames; });

  m.def(
      "metal_kernel",
      [](std::string name, std::vector<std::string> input_names, std::vector<std::string> output_names,
         std::string source, std::string header, bool ensure_row_contiguous, bool atomic_outputs) {
        KernelSpec s;
        s.name = std::move(name);
        s.inputNames = std::move(input_names);
        s.outputNames = std::move(output_names);
        s.source = std::move(source);
        s.header = std::move(header);
        s.ensureRowContiguous = ensure_row_contiguous;
        s.atomicOutputs = atomic_outputs;
        return std::make_unique<PyKernel>(std::move(s));
      },
      py::arg("name"), py::arg("input_names"), py::arg("output_names"), py::arg("source"),
      py::arg("header") = "", py::arg("ensure_row_contiguous") = true, py::arg("atomic_outputs") = false,
      "Like mx.fast.metal_kernel: returns a callable kernel(inputs=..., output_shapes=..., output_dtypes=..., "
      "grid=..., threadgroup=..., template=None, init_value=None, verbose=False) -> list of numpy arrays.");

  m.def("devices", []() { return listDevices(); }, "Vulkan 1.3 devices, as 'index: name [type]'.");
  m.def(
      "set_device",
      [](const py::object& sel) {
        std::string s = py::isinstance<py::int_>(sel) ? std::to_string(sel.cast<long long>()) : sel.cast<std::string>();
        py::gil_scoped_release release;
        setDevice(s);
      },
      py::arg("selector"), "Selects the device by index or name substring (drops the current one).");
  m.def("device_info", []() {
    const m2v::DeviceInfo& i = currentDevice().info();
    py::dict d;
    d["name"] = i.name;
    d["index"] = i.index;
    d["type"] = i.type;
    d["driver"] = i.driver;
    d["subgroup_size"] = i.subgroupSize;
    d["min_subgroup_size"] = i.minSubgroupSize;
    d["max_subgroup_size"] = i.maxSubgroupSize;
    d["required_subgroup_size"] = i.requiredSubgroupSizeInCompute;  // a kernel can ask for 32-wide simdgroups
    d["cooperative_matrix_shapes"] = i.cooperativeMatrixShapes;
    d["bfloat16_type"] = i.bfloat16Type;  // VK_KHR_shader_bfloat16's shaderBFloat16Type (native-bfloat16 builds)
    d["rounding_mode_rte_float16"] = i.roundingModeRTEFloat16;  // float controls (native-bfloat16 builds ask for it)
    d["linear_workgroups"] = i.linearWorkgroups;  // multi-dimensional threadgroups run as linear workgroups
    d["max_threads_per_threadgroup"] = i.maxWorkgroupInvocations;
    d["description"] = i.describe();
    d["timeout_ms"] = currentDevice().timeoutMs();
    return d;
  });
  m.def(
      "validation_messages",
      [](bool clear) {
        m2v::Device& d = currentDevice();
        std::vector<std::string> msgs = d.validationMessages();
        if (clear) d.clearValidationMessages();
        return msgs;
      },
      py::arg("clear") = true, "Vulkan validation messages since the last call (M2V_VALIDATION=1 enables the layer).");
  m.def("cache_stats", []() {
    CacheStats s = cacheStats();
    py::dict d;
    d["memory_hits"] = s.memoryHits;
    d["disk_hits"] = s.diskHits;
    d["compiles"] = s.compiles;
    d["disk_writes"] = s.diskWrites;
    return d;
  });
  m.def(
      "pipeline_stats",
      []() {
        m2v::DeviceStats s = currentDevice().stats();
        py::dict d;
        d["created"] = s.pipelinesCreated;
        d["memory_hits"] = s.pipelineMemoryHits;
        d["build_s"] = s.pipelineBuildSeconds;
        return d;
      },
      "The process's device's pipelines: how many were built, lookups the in-memory cache served, and the driver's "
      "build time summed over builds (threads building at once each count theirs).");
  m.def("cache_dir", []() { return moduleCacheDirectory(); });
  m.def(
      "cooperative_matrix_unavailable_reason",
      [](const std::string& element) { return cooperativeMatrixUnavailableReason(currentDevice(), element); },
      py::arg("element") = "f16",
      "Why the process's device does not run cooperative-matrix builds of simdgroup_matrix multiplies of `element` "
      "('f16' or 'bf16'; '' when it does: the device offers the shapes and its lane layout passed the probe kernel).");
  m.def("clear_memory_cache", []() { clearMemoryCache(); });
  m.def("compiler_version", []() { return std::string(m2v::compilerVersion()); });
  m.attr("bfloat16") = bfloat16Dtype();
  m2v::python::bindLibrary(m);
}
