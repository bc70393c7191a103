// metal2vk's MLX front door: `mx.fast.metal_kernel` semantics on any Vulkan 1.3 device.
//
//   MetalKernel k({.name = "myexp", .inputNames = {"inp"}, .outputNames = {"out"}, .source = body});
//   auto outs = k(call);   // assembles MLX's kernel text, compiles it (cached), binds, dispatches, reads back
//
// Assembly follows ../shared/MLX_METAL_KERNEL.md character for character (docs/MLX.md): one buffer counter,
// substring detection of `<input>_shape/_strides/_ndim` and of the built-in attributes in the body, constant vs device
// by size (< 8 elements), references for 0-d inputs, atomic<T> outputs, MLX's separator quirk, the template
// instantiation line and the kernel name with its template hash and type suffixes. The text is compiled as
// `#include <mlx_prelude>` + the assembled text (the prelude stands for MLX's utils).
//
// Compiled modules are cached in memory and on disk (M2V_CACHE_DIR, default ~/.cache/metal2vk; "-" disables the disk
// cache), content-addressed by the compiled text, the compile options, m2v::compilerVersion() and the embedded
// metal_stdlib headers; writers use a temporary file + rename, so concurrent processes are safe.
//
// Errors: std::invalid_argument for what MLX rejects with invalid_argument (sizes, threadgroup too large, bad
// template values); mlx::CompileError for kernels that do not compile (carries the compiler's diagnostics);
// m2v::RuntimeError and subclasses (runtime.h) from the device, e.g. UnsupportedError for kernels that need 32-wide
// simdgroups on a device that cannot provide them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "metal2vk/compiler.h"
#include "metal2vk/diagnostics.h"
#include "metal2vk/reflection.h"

namespace m2v {
class Device;
class Kernel;
}

namespace m2v::mlx {

// ---------------------------------------------------------------------------------------------------------------
// dtypes
enum class Dtype : uint8_t {
  Bool, UInt8, UInt16, UInt32, UInt64, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64, Complex64
};
size_t itemSize(Dtype d);
// MLX's type string used in kernel text: "float", "float16_t", "bfloat16_t", "int32_t", "bool", "complex64_t", ...
const char* typeString(Dtype d);
// MLX's dtype name: "float32", "float16", "bfloat16", "int32", "bool", "complex64", ...
const char* dtypeName(Dtype d);
// Accepts dtype names ("float32", "bfloat16", "bool_"/"bool"), kernel type strings ("float", "half", "float16_t",
// "bfloat16_t", "int32_t", "uint"), and numpy's short names ("f4", "f2", "i4", ...).
std::optional<Dtype> parseDtype(std::string_view name);

// ---------------------------------------------------------------------------------------------------------------
// Host arrays: a strided view of host memory (inputs), or owned row-contiguous storage (outputs).
struct Array {
  Dtype dtype = Dtype::Float32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // in elements, one per axis; empty means row-contiguous
  const void* data = nullptr;    // the element at index (0, ..., 0)
  std::shared_ptr<void> owner;   // keeps `data` alive (optional for borrowed inputs)

  static Array allocate(Dtype dtype, std::vector<int64_t> shape);  // owned, row-contiguous, uninitialised
  template <class T> static Array scalar(Dtype dtype, T value);     // owned 0-d array
  size_t size() const;     // number of elements
  size_t nbytes() const { return size() * itemSize(dtype); }
  int ndim() const { return int(shape.size()); }
  std::vector<int64_t> effectiveStrides() const;  // strides, or the row-contiguous ones
  bool rowContiguous() const;                     // MLX's flag: axes of extent 1 do not count
  void* mutableData() const { return const_cast<void*>(data); }
  template <class T> const T* as() const { return static_cast<const T*>(data); }
};

template <class T> Array Array::scalar(Dtype dtype, T value) {
  Array a = allocate(dtype, {});
  static_assert(std::is_trivially_copyable_v<T>);
  if (sizeof(T) != itemSize(dtype)) throw std::invalid_argument("[metal_kernel] scalar size does not match its dtype");
  *static_cast<T*>(a.mutableData()) = value;
  return a;
}

// ---------------------------------------------------------------------------------------------------------------
// Kernel assembly (pure functions; MLX_METAL_KERNEL.md)
using TemplateArg = std::variant<bool, int, Dtype>;
using TemplateArgs = std::vector<std::pair<std::string, TemplateArg>>;

struct KernelSpec {
  std::string name;
  std::vector<std::string> inputNames;
  std::vector<std::string> outputNames;
  std::string source;  // the kernel body
  std::string header;  // text placed before the kernel
  bool ensureRowContiguous = true;
  bool atomicOutputs = false;
};

// What an input contributes to the text: its dtype and shape (the size decides constant vs device, 0-d a reference).
struct InputInfo {
  Dtype dtype = Dtype::Float32;
  std::vector<int64_t> shape;
};

struct ShapeInfo {
  bool shape = false, strides = false, ndim = false;
};

// One [[buffer(n)]] slot of the assembled kernel.
struct BufferSlot {
  enum class Kind { Input, Shape, Strides, Ndim, Output };
  Kind kind = Kind::Input;
  uint32_t which = 0;  // input or output number
  uint32_t index = 0;  // buffer index
};

struct Assembly {
  std::string kernelName;  // also the host_name of the template instantiation
  std::string source;      // MLX's text: header, template line, signature, body, instantiation line
  std::vector<BufferSlot> slots;
};

// `<name>_shape` / `_strides` / `_ndim` substrings of the body, per input name.
std::vector<ShapeInfo> detectShapeInfos(const std::string& source, const std::vector<std::string>& inputNames);
// The built-in attribute parameters the body mentions, in MLX's order, each as "  <type> <name> [[<name>]]".
std::vector<std::string> detectAttributes(const std::string& source);
// "<float, 3, 1>" (bools print as 1/0); empty for no template arguments.
std::string writeTemplateArgs(const TemplateArgs& args);
// "custom_kernel_<name>[_<hash>]_<in types with s/c>_<out types>"
std::string kernelName(const std::string& name, const std::vector<InputInfo>& inputs,
                       const std::vector<Dtype>& outputDtypes, const TemplateArgs& args);
Assembly assemble(const KernelSpec& spec, const std::vector<InputInfo>& inputs, const std::vector<Dtype>& outputDtypes,
                  const TemplateArgs& args);
// The text handed to the compiler: the prelude include, a #line reset, then MLX's text.
std::string compilerInput(const Assembly& assembly);

// ---------------------------------------------------------------------------------------------------------------
// Compiled-module cache
class CompileError : public std::runtime_error {
 public:
  CompileError(Status status, std::string diagnostics, std::string kernelName)
      : std::runtime_error("[metal_kernel] failed to compile " + kernelName + ":\n" + diagnostics),
        status(status), diagnostics(std::move(diagnostics)), kernelName(std::move(kernelName)) {}
  Status status;
  std::string diagnostics;
  std::string kernelName;
};

struct CacheStats {
  uint64_t memoryHits = 0, diskHits = 0, compiles = 0, diskWrites = 0;
};

// Compiles `compilerInput(assembly)` for the entry `assembly.kernelName`, through the caches. Throws CompileError.
std::shared_ptr<const CompiledModule> compileCached(const Assembly& assembly);
std::string cacheKey(const Assembly& assembly);     // hex content hash
std::string moduleCacheDirectory();                 // "" when the disk cache is disabled
CacheStats cacheStats();
void clearMemoryCache();  // for tests: forget compiled modules and libraries kept in memory
// Every kernel entry point of `source` (a whole library, as Metal's newLibrary(source) compiles it), through the
// same caches: memory, then a library file (library_file.h) in moduleCacheDirectory() keyed by the source, the
// options and the compiler's identity. `name` is the file name diagnostics use. Throws CompileError.
std::shared_ptr<const std::vector<CompiledKernel>> compileLibraryCached(const std::string& source,
                                                                        const std::string& name,
                                                                        const CompileOptions& options);

// ---------------------------------------------------------------------------------------------------------------
// The process's device (created lazily on first use; one per process)
std::vector<std::string> listDevices();
// Selects a device by index or name substring (runtime.h DeviceOptions::selector). Drops the current device.
void setDevice(const std::string& selector);
Device& currentDevice();
// Counts the devices currentDevice() has opened; it changes when a faulted device (timeout, device lost) is replaced.
// A Kernel created under an earlier generation belongs to the old device and must be created again.
uint64_t deviceGeneration();

// The kernel that runs `module` on `device`: its cooperative-matrix build (CompiledModule::cooperative) where the
// device runs cooperative matrices of every element type the build multiplies (f16, bf16: the shapes, and a probe
// kernel confirmed the lane layout) and M2V_SIMDGROUP_MATRIX (auto, shuffle or cooperative) allows; the portable
// build otherwise. With M2V_SIMDGROUP_MATRIX=cooperative a kernel that has a cooperative build and cannot use it
// throws UnsupportedError. docs/SIMDGROUP_MATRIX.md. The portable build is the native-bfloat16 one
// (CompiledModule::nativeBfloat16) where the module has it and DeviceInfo::runsNativeBfloat16() (the device has
// shaderBFloat16Type; M2V_NATIVE_BFLOAT16=0 turns it off).
Kernel createKernelFor(Device& device, const CompiledModule& module);
// Why `device` does not run cooperative-matrix builds of `element` ("f16" or "bf16") multiplies; empty when it does.
// Probes once per device and element type.
std::string cooperativeMatrixUnavailableReason(Device& device, const std::string& element = "f16");
// M2V_SIMDGROUP_MATRIX: "auto" (default), "shuffle" or "cooperative"; throws UsageError on anything else.
std::string simdgroupMatrixMode();

// ---------------------------------------------------------------------------------------------------------------
// MetalKernel: built once, called many times.
struct Call {
  std::vector<Array> inputs;
  std::vector<std::vector<int64_t>> outputShapes;
  std::vector<Dtype> outputDtypes;
  std::array<uint32_t, 3> grid{1, 1, 1};         // in threads
  std::array<uint32_t, 3> threadgroup{1, 1, 1};  // clamped to the grid per axis
  TemplateArgs templateArgs;
  std::optional<float> initValue;                // outputs are filled with it first
  bool verbose = false;                          // prints MLX's text to stdout
};

class MetalKernel {
 public:
  explicit MetalKernel(KernelSpec spec);
  ~MetalKernel();
  MetalKernel(MetalKernel&&) noexcept;
  MetalKernel& operator=(MetalKernel&&) noexcept;

  const KernelSpec& spec() const { return spec_; }
  const std::vector<ShapeInfo>& shapeInfos() const { return shapeInfos_; }
  const std::vector<std::string>& attributes() const { return attributes_; }

  // MLX's text for these inputs/outputs/template arguments (no compilation).
  Assembly assemble(const std::vector<InputInfo>& inputs, const std::vector<Dtype>& outputDtypes,
                    const TemplateArgs& args) const;
  // Validates, assembles, compiles (cached), runs and returns the outputs (owned, row-contiguous).
  std::vector<Array> operator()(const Call& call) const;

 private:
  struct Instances;
  KernelSpec spec_;
  std::vector<ShapeInfo> shapeInfos_;
  std::vector<std::string> attributes_;
  std::unique_ptr<Instances> instances_;
};

// ---------------------------------------------------------------------------------------------------------------
// Host conversions: one element of `dtype` from/to a double (half and bfloat16 round to nearest even; complex64 uses
// the real part and a zero imaginary part; bool is value != 0).
void encodeElement(Dtype dtype, double value, void* dst);
double decodeElement(Dtype dtype, const void* src);
uint16_t floatToHalfBits(float f);
float halfBitsToFloat(uint16_t h);
uint16_t floatToBfloat16Bits(float f);
float bfloat16BitsToFloat(uint16_t b);

// ---------------------------------------------------------------------------------------------------------------
// .npy files (format 1.0/2.0, little endian, C order; bfloat16 as '<u2' with the dtype recorded by the caller)
Array readNpy(const std::string& path, std::optional<Dtype> asDtype = std::nullopt);
void writeNpy(const std::string& path, const Array& array);

}  // namespace m2v::mlx
