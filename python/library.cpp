// metal2vk._core, the library face: compile a .metal file (MLX's kernel library, any multi-file project), then
// record dispatches the way Metal host code does (MTLComputeCommandEncoder: setBuffer, setBytes,
// setThreadgroupMemoryLength, function constants, dispatchThreads / dispatchThreadgroups) on the runtime's Stream.
// python/README.md documents it; corpus/mlx-library/run_library.py launches MLX's kernels with it.
#include "library.h"

#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "dims.h"
#include "metal2vk/compiler.h"
#include "metal2vk/mlx.h"
#include "metal2vk/runtime.h"

namespace py = pybind11;

namespace m2v::python {
namespace {

// A C-contiguous view of any buffer-protocol object (numpy arrays of every dtype, bytes, bytearray, memoryview).
// Non-contiguous numpy arrays are copied first; `keep` owns what the view points into.
py::buffer_info contiguousBytes(const py::handle& obj, py::object& keep) {
  keep = py::reinterpret_borrow<py::object>(obj);
  if (!py::isinstance<py::buffer>(keep)) keep = py::module_::import("numpy").attr("asarray")(obj);
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(keep).request();
  ssize_t expected = info.itemsize;
  bool contiguous = true;
  for (ssize_t i = info.ndim; i-- > 0;) {
    if (info.shape[size_t(i)] > 1 && info.strides[size_t(i)] != expected) contiguous = false;
    expected *= info.shape[size_t(i)];
  }
  if (!contiguous) {
    keep = py::module_::import("numpy").attr("ascontiguousarray")(keep);
    info = py::reinterpret_borrow<py::buffer>(keep).request();
  }
  return info;
}

size_t byteSize(const py::buffer_info& info) { return size_t(info.size) * size_t(info.itemsize); }

// A bare integer is a one-dimensional size; otherwise as metal_kernel's grids (dims.h).
Size3 toSize3(const py::handle& obj, const char* what) {
  if (py::isinstance<py::int_>(obj)) return {obj.cast<uint32_t>(), 1, 1};
  const std::array<uint32_t, 3> d = dims3(obj, what);
  return {d[0], d[1], d[2]};
}

py::object reflectionDict(const KernelReflection& r) { return py::module_::import("json").attr("loads")(toJson(r)); }

py::bytes spirvBytes(const std::vector<uint32_t>& words) {
  return py::bytes(reinterpret_cast<const char*>(words.data()), words.size() * 4);
}

std::vector<uint32_t> spirvWords(const py::handle& spirv) {
  std::string bytes;
  if (py::isinstance<py::str>(spirv)) {
    std::ifstream in(spirv.cast<std::string>(), std::ios::binary);
    if (!in) throw py::value_error("cannot read SPIR-V file " + spirv.cast<std::string>());
    std::ostringstream ss;
    ss << in.rdbuf();
    bytes = ss.str();
  } else {
    bytes = spirv.cast<py::bytes>();
  }
  if (bytes.size() % 4 != 0 || bytes.empty()) throw py::value_error("SPIR-V must be a non-empty multiple of 4 bytes");
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

// A compiled kernel: the runtime Kernel (created on the process's device when first dispatched) plus its module.
struct PyLibKernel {
  CompiledModule module;
  Kernel kernel;
  uint64_t generation = 0;  // mlx::deviceGeneration() the kernel was created under
  std::string matrixMode;   // M2V_SIMDGROUP_MATRIX it was created under: a change loads the kernel again

  const KernelReflection& reflection() const { return module.reflection; }
  const Kernel& onDevice() {
    uint64_t current = mlx::deviceGeneration();
    std::string mode = module.cooperative ? mlx::simdgroupMatrixMode() : std::string();
    if (!kernel || generation != current || mode != matrixMode) {
      kernel = mlx::createKernelFor(mlx::currentDevice(), module);
      generation = current;
      matrixMode = std::move(mode);
    }
    return kernel;
  }
  // "cooperative_matrix" or "shuffle" for a kernel with a cooperative-matrix build (on this process's device),
  // "" for one without.
  std::string simdgroupMatrixPath() {
    if (!module.cooperative) return "";
    return onDevice().reflection().cooperativeMatrixMultiplies ? "cooperative_matrix" : "shuffle";
  }
  // "native" when the kernel on the process's device narrows float -> bfloat on the bfloat16 type, "integer" when
  // it narrows in integer arithmetic, "" when it has no native-bfloat16 build (no narrowing, nothing to choose).
  std::string bfloatNarrowing() {
    if (!module.nativeBfloat16) return "";
    const KernelReflection& r = onDevice().reflection();
    if (r.cooperativeMatrixMultiplies) return "integer";  // the cooperative build keeps its own bfloat handling
    bool native = std::find(r.capabilities.begin(), r.capabilities.end(), "BFloat16TypeKHR") != r.capabilities.end();
    return native ? "native" : "integer";
  }
};

struct PyLibrary {
  std::map<std::string, std::shared_ptr<PyLibKernel>> kernels;
  std::string diagnostics;
  int status = 0;

  std::shared_ptr<PyLibKernel> get(const std::string& name) const {
    auto it = kernels.find(name);
    if (it != kernels.end()) return it->second;
    std::string msg = "no kernel '" + name + "' in this library";
    if (!diagnostics.empty()) msg += ":\n" + diagnostics;
    throw py::key_error(msg);
  }
};

struct PyStream {
  explicit PyStream(Stream s) : stream(std::move(s)) {}
  Stream stream;
  std::shared_ptr<PyLibKernel> current;  // keeps the bound kernel alive while recording
  // Recording, waits and pipeline builds run without the GIL, so Python threads record on their own streams at once
  // (the driver builds their pipelines side by side); two threads on one stream take turns. A method that keeps
  // the GIL may wait here; one that releases it locks only after releasing, so neither waits on the other.
  mutable std::mutex mutex;
  std::unique_lock<std::mutex> exclusive() const { return std::unique_lock(mutex); }
};

}  // namespace

void bindLibrary(py::module_& m) {
  py::class_<PyLibKernel, std::shared_ptr<PyLibKernel>>(m, "Kernel",
                                                        "A compiled kernel entry point: SPIR-V plus reflection.")
      .def_property_readonly("name", [](const PyLibKernel& k) { return k.reflection().entry; })
      .def_property_readonly("reflection", [](const PyLibKernel& k) { return reflectionDict(k.reflection()); })
      .def_property_readonly("spirv", [](const PyLibKernel& k) { return spirvBytes(k.module.spirv); })
      .def_property_readonly(
          "emulates_simdgroups", [](PyLibKernel& k) { return k.onDevice().emulatesSimdgroups(); },
          "Whether the kernel runs emulated 32-lane simdgroups on the current device (docs/ABI.md, Subgroups).")
      .def_property_readonly(
          "cooperative_spirv",
          [](const PyLibKernel& k) -> py::object {
            if (!k.module.cooperative) return py::none();
            return spirvBytes(k.module.cooperative->spirv);
          },
          "SPIR-V of the build whose simdgroup_matrix multiplies run on cooperative matrices (None: no such build).")
      .def_property_readonly(
          "cooperative_reflection",
          [](const PyLibKernel& k) -> py::object {
            if (!k.module.cooperative) return py::none();
            return reflectionDict(k.module.cooperative->reflection);
          },
          "Reflection of the build whose simdgroup_matrix multiplies run on cooperative matrices (None: no such "
          "build).")
      .def_property_readonly(
          "native_bfloat16_spirv",
          [](const PyLibKernel& k) -> py::object {
            if (!k.module.nativeBfloat16) return py::none();
            return spirvBytes(k.module.nativeBfloat16->spirv);
          },
          "SPIR-V of the build that narrows float to bfloat on VK_KHR_shader_bfloat16 (None: no such build).")
      .def_property_readonly(
          "native_bfloat16_reflection",
          [](const PyLibKernel& k) -> py::object {
            if (!k.module.nativeBfloat16) return py::none();
            return reflectionDict(k.module.nativeBfloat16->reflection);
          },
          "Reflection of the native-bfloat16 build (None: no such build).")
      .def_property_readonly("bfloat_narrowing", &PyLibKernel::bfloatNarrowing,
                             "'native' or 'integer': how this kernel rounds float to bfloat on the process's device "
                             "(M2V_NATIVE_BFLOAT16; '' when it has no native-bfloat16 build). Loads the kernel.")
      .def_property_readonly("simdgroup_matrix_path", &PyLibKernel::simdgroupMatrixPath,
                             "'cooperative_matrix' or 'shuffle': how this kernel multiplies simdgroup matrices on "
                             "the process's device ('' when it has no cooperative-matrix build). Loads the kernel.")
      .def("__repr__", [](const PyLibKernel& k) { return "<metal2vk.Kernel " + k.reflection().entry + ">"; });

  py::class_<PyLibrary>(m, "Library", "The kernels compiled from one .metal file, by entry name.")
      .def("__getitem__", &PyLibrary::get)
      .def("__contains__", [](const PyLibrary& l, const std::string& n) { return l.kernels.count(n) != 0; })
      .def("__len__", [](const PyLibrary& l) { return l.kernels.size(); })
      .def("names",
           [](const PyLibrary& l) {
             std::vector<std::string> names;
             for (const auto& [name, k] : l.kernels) names.push_back(name);
             return names;
           })
      .def_readonly("diagnostics", &PyLibrary::diagnostics)
      .def_readonly("status", &PyLibrary::status);

  m.def(
      "compile_library",
      [](const std::string& path, const std::vector<std::string>& entries, const std::vector<std::string>& include_dirs,
         const std::map<std::string, std::string>& defines, bool fast_math, unsigned jobs, bool partial,
         bool abort_checks) {
        CompileOptions options;
        options.entries = entries;
        options.includeDirs = include_dirs;
        for (const auto& [k, v] : defines) options.defines.emplace_back(k, v);
        options.fastMath = fast_math;
        options.jobs = jobs;
        options.abortChecks = abort_checks;
        CompileResult result;
        {
          py::gil_scoped_release release;
          result = compileFile(path, options);
        }
        auto lib = std::make_unique<PyLibrary>();
        lib->diagnostics = result.diagnostics.format();
        lib->status = int(result.status);
        if (result.status != Status::Ok && !partial) throw mlx::CompileError(result.status, lib->diagnostics, path);
        for (auto& k : result.kernels) {
          auto pk = std::make_shared<PyLibKernel>();
          pk->module = std::move(k);
          lib->kernels[pk->reflection().entry] = pk;
        }
        return lib;
      },
      py::arg("path"), py::kw_only(), py::arg("entries") = std::vector<std::string>{},
      py::arg("include_dirs") = std::vector<std::string>{}, py::arg("defines") = std::map<std::string, std::string>{},
      py::arg("fast_math") = false, py::arg("jobs") = 0u, py::arg("partial") = false, py::arg("abort_checks") = true,
      "Compiles a .metal file (only `entries` when given) like `m2v compile`. Raises CompileError (with "
      "`diagnostics` and `status`, the exit code) unless `partial=True`, which returns what compiled. "
      "`abort_checks=False` builds loops without the checks that let the runtime stop a kernel over its budget.");

  m.def(
      "load_kernel",
      [](const py::object& spirv, const std::string& reflection_json) {
        std::string error;
        auto r = reflectionFromJson(reflection_json, &error);
        if (!r) throw py::value_error("bad reflection JSON: " + error);
        auto k = std::make_shared<PyLibKernel>();
        k->module.reflection = std::move(*r);
        k->module.spirv = spirvWords(spirv);
        return k;
      },
      py::arg("spirv"), py::arg("reflection_json"),
      "A kernel from `m2v compile` output: SPIR-V (bytes or a .spv path) and the reflection JSON text.");

  py::class_<Buffer>(m, "Buffer", "A device buffer (MTLBuffer) on the process's device.")
      .def(py::init([](size_t nbytes) { return mlx::currentDevice().createBuffer(nbytes); }), py::arg("nbytes"))
      .def_property_readonly("nbytes", &Buffer::size)
      .def_property_readonly("device_address", &Buffer::deviceAddress);

  py::class_<PyStream>(m, "Stream",
                       "Records commands like an MTLComputeCommandEncoder; nothing waits until synchronize() or "
                       "read().")
      .def(py::init([](bool timestamps, uint32_t batch_size, uint32_t timeout_ms) {
             StreamOptions o;
             o.timestamps = timestamps;
             o.batchSize = batch_size;
             o.timeoutMs = timeout_ms;
             return std::make_unique<PyStream>(mlx::currentDevice().createStream(o));
           }),
           py::kw_only(), py::arg("timestamps") = false, py::arg("batch_size") = 256u, py::arg("timeout_ms") = 0u,
           "On the process's device (a new one if the last timed out or was lost). timeout_ms: host wait budget, "
           "0 for the device's.")
      .def_property(
          "timeout_ms",
          [](const PyStream& s) {
            auto exclusive = s.exclusive();
            return s.stream.timeoutMs();
          },
          [](PyStream& s, uint32_t ms) {
            auto exclusive = s.exclusive();
            s.stream.setTimeoutMs(ms);
          },
          "Host wait budget in ms (setting 0 restores the device's); a wait past it raises TimeoutError.")
      .def("set_kernel",
           [](PyStream& s, const std::shared_ptr<PyLibKernel>& k) {
             auto exclusive = s.exclusive();
             s.stream.setKernel(k->onDevice());
             s.current = k;
           })
      .def(
          "set_buffer",
          [](PyStream& s, const Buffer& b, uint32_t index, size_t offset) {
            auto exclusive = s.exclusive();
            s.stream.setBuffer(b, offset, index);
          },
          py::arg("buffer"), py::arg("index"), py::arg("offset") = 0)
      .def(
          "set_bytes",
          [](PyStream& s, const py::object& data, uint32_t index) {
            py::object keep;
            py::buffer_info info = contiguousBytes(data, keep);
            auto exclusive = s.exclusive();
            s.stream.setBytes(info.ptr, byteSize(info), index);
          },
          py::arg("data"), py::arg("index"), "setBytes: any buffer-protocol object (a numpy array, bytes).")
      .def(
          "set_threadgroup_memory_length",
          [](PyStream& s, uint32_t length, uint32_t index) {
            auto exclusive = s.exclusive();
            s.stream.setThreadgroupMemoryLength(length, index);
          },
          py::arg("length"), py::arg("index"))
      .def(
          "set_function_constant",
          [](PyStream& s, uint32_t index, const py::object& value) {
            auto exclusive = s.exclusive();
            if (py::isinstance<py::bool_>(value) || py::isinstance(value, py::module_::import("numpy").attr("bool_")))
              s.stream.setFunctionConstant(index, value.cast<bool>());
            else if (py::isinstance<py::float_>(value))
              s.stream.setFunctionConstant(index, value.cast<double>());
            else
              s.stream.setFunctionConstant(index, value.cast<int64_t>());
          },
          py::arg("index"), py::arg("value"),
          "By Metal index; converted to the type the kernel declares (bool, int, uint, float, half, ...).")
      .def(
          "dispatch_threads",
          [](PyStream& s, const py::object& grid, const py::object& tg) {
            Size3 threads = toSize3(grid, "grid"), threadgroup = toSize3(tg, "threadgroup");
            py::gil_scoped_release release;  // a first dispatch builds the pipeline: seconds for a large module
            auto exclusive = s.exclusive();
            s.stream.dispatchThreads(threads, threadgroup);
          },
          py::arg("grid"), py::arg("threadgroup"))
      .def(
          "dispatch_threadgroups",
          [](PyStream& s, const py::object& groups, const py::object& tg) {
            Size3 count = toSize3(groups, "groups"), threadgroup = toSize3(tg, "threadgroup");
            py::gil_scoped_release release;
            auto exclusive = s.exclusive();
            s.stream.dispatchThreadgroups(count, threadgroup);
          },
          py::arg("groups"), py::arg("threadgroup"))
      .def(
          "upload",
          [](PyStream& s, const Buffer& dst, const py::object& data, size_t offset) {
            py::object keep;
            py::buffer_info info = contiguousBytes(data, keep);
            auto exclusive = s.exclusive();
            s.stream.upload(dst, offset, info.ptr, byteSize(info));
          },
          py::arg("buffer"), py::arg("data"), py::arg("offset") = 0, "Copies the bytes now; the GPU copy is in order.")
      .def(
          "buffer",
          [](PyStream& s, const py::object& data) {
            py::object keep;
            py::buffer_info info = contiguousBytes(data, keep);
            Buffer b = mlx::currentDevice().createBuffer(std::max<size_t>(byteSize(info), 4));
            auto exclusive = s.exclusive();
            if (byteSize(info) > 0) s.stream.upload(b, 0, info.ptr, byteSize(info));
            return b;
          },
          py::arg("data"), "A new buffer holding `data` (uploaded in order with the recorded commands).")
      .def(
          "fill",
          [](PyStream& s, const Buffer& dst, uint8_t value, size_t offset, py::object size) {
            size_t n = size.is_none() ? dst.size() - offset : size.cast<size_t>();
            auto exclusive = s.exclusive();
            s.stream.fillBytes(dst, offset, n, value);
          },
          py::arg("buffer"), py::arg("value"), py::arg("offset") = 0, py::arg("size") = py::none())
      .def(
          "copy",
          [](PyStream& s, const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset, size_t size) {
            auto exclusive = s.exclusive();
            s.stream.copy(src, src_offset, dst, dst_offset, size);
          },
          py::arg("src"), py::arg("src_offset"), py::arg("dst"), py::arg("dst_offset"), py::arg("size"))
      .def(
          "read",
          [](PyStream& s, const Buffer& src, const py::object& dtype, const py::object& shape, size_t offset) {
            py::module_ np = py::module_::import("numpy");
            py::object out = np.attr("empty")(shape, dtype);
            py::buffer_info info = py::reinterpret_borrow<py::buffer>(out).request(true);
            const size_t n = byteSize(info);
            if (offset + n > src.size())
              throw py::value_error("read of " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                                    " overruns a buffer of " + std::to_string(src.size()));
            if (n > 0) {
              py::gil_scoped_release release;
              auto exclusive = s.exclusive();
              s.stream.readback(src, offset, info.ptr, n);
            }
            return out;
          },
          py::arg("buffer"), py::arg("dtype"), py::arg("shape"), py::arg("offset") = 0,
          "Blocking: waits for what was recorded, then returns a new numpy array of `dtype` and `shape`.")
      .def("commit",
           [](PyStream& s) {
             auto exclusive = s.exclusive();
             return s.stream.commit();
           })
      .def("synchronize",
           [](PyStream& s) {
             py::gil_scoped_release release;
             auto exclusive = s.exclusive();
             s.stream.synchronize();
           })
      .def(
          "take_timings",
          [](PyStream& s) {
            py::list out;
            auto exclusive = s.exclusive();
            for (const auto& t : s.stream.takeTimings()) {
              py::dict d;
              d["kernel"] = t.kernel;
              d["gpu_ns"] = t.gpuNs;
              d["start_ns"] = t.startNs;
              d["end_ns"] = t.endNs;
              out.append(d);
            }
            return out;
          },
          "GPU time of each dispatch since the last call (Stream(timestamps=True)), after synchronize().")
      .def("stats", [](const PyStream& s) {
        auto exclusive = s.exclusive();
        Stream::Stats st = s.stream.stats();
        py::dict d;
        d["dispatches"] = st.dispatches;
        d["barriers"] = st.barriers;
        d["submissions"] = st.submissions;
        d["host_waits"] = st.hostWaits;
        return d;
      });
}

}  // namespace m2v::python
