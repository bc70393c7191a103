// Metal's limits on a kernel signature, end to end: 1 to 31 buffer arguments (device, constant, `constant T&`
// scalars, mixed, function-constant-guarded), 1 to 31 [[threadgroup(n)]] arguments, function constants up to index
// 65535, through compileSource + Stream and through the MLX front door (MetalKernel); one past each limit is a compile
// error. The kernels are generated here; every output is checked against a reference computed on the CPU.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "metal2vk/compiler.h"
#include "metal2vk/mlx.h"
#include "metal2vk/runtime.h"

namespace m2v {
namespace {

constexpr uint32_t kThreads = 70;  // not a multiple of the threadgroup: the edge region runs too
constexpr uint32_t kThreadgroup = 32;

std::string diagnosticsText(const CompileResult& r) {
  std::string s;
  for (const Diagnostic& d : r.diagnostics.all()) s += d.message + "\n";
  return s;
}

const CompiledKernel& findKernel(const CompileResult& r, const std::string& entry) {
  for (const CompiledKernel& k : r.kernels)
    if (k.reflection.entry == entry) return k;
  throw std::runtime_error("no entry " + entry);
}

class LimitsTest : public ::testing::Test {
 protected:
  Device& device() { return mlx::currentDevice(); }
  void TearDown() override {
    for (const std::string& m : device().validationMessages()) ADD_FAILURE() << "validation: " << m;
    device().clearValidationMessages();
  }
};

// ---------------------------------------------------------------------------------------------------------------
// Buffer arguments.
//
// A kernel with `count` buffer arguments: one output and count-1 inputs. Input k is one of
//   device   `const device float* in_k`   holding in_k[i] = i + 10k
//   constant `constant float* in_k`       the same values
//   scalar   `constant float& in_k`       the value 7 + k (set with setBytes)
//   guarded  `const device float* in_k [[function_constant(has_k)]]`, present when k % 3 != 0 (the others are
//            left unbound, which Metal allows for arguments whose function constant is false)
// out[i] = sum over inputs of (k + 1) * value_k(i). The [[buffer(n)]] indices are a permutation of 0..count-1 so that
// the order of the parameters differs from the order of the indices.
enum class Kind { Device, Constant, Scalar, Guarded };

struct BufferKernel {
  std::string name;
  uint32_t count = 0;
  std::vector<Kind> kinds;        // per input k
  std::vector<uint32_t> indices;  // buffer index per input k; the output's is outIndex
  uint32_t outIndex = 0;
};

bool guardedPresent(uint32_t k) { return k % 3 != 0; }

float inputValue(const BufferKernel& bk, uint32_t k, uint32_t i) {
  if (bk.kinds[k] == Kind::Scalar) return 7.0f + float(k);
  if (bk.kinds[k] == Kind::Guarded && !guardedPresent(k)) return 0.0f;
  return float(i) + 10.0f * float(k);
}

BufferKernel makeBufferKernel(const std::string& variant, uint32_t count) {
  BufferKernel bk;
  bk.name = variant + "_" + std::to_string(count);
  bk.count = count;
  // A permutation of the indices: reverse order for odd counts, the output at index 0 for even ones.
  std::vector<uint32_t> order(count);
  for (uint32_t i = 0; i < count; ++i) order[i] = count % 2 ? count - 1 - i : (i + 1) % count;
  bk.outIndex = order[count - 1];
  for (uint32_t k = 0; k + 1 < count; ++k) {
    Kind kind = Kind::Device;
    if (variant == "constant")
      kind = Kind::Constant;
    else if (variant == "scalar")
      kind = Kind::Scalar;
    else if (variant == "mixed")
      kind = Kind(k % 3);
    else if (variant == "guarded")
      kind = k % 2 ? Kind::Guarded : Kind(k % 3);
    bk.kinds.push_back(kind);
    bk.indices.push_back(order[k]);
  }
  return bk;
}

std::string bufferKernelSource(const std::vector<BufferKernel>& kernels) {
  std::ostringstream s;
  s << "#include <metal_stdlib>\nusing namespace metal;\n";
  uint32_t maxInputs = 0;
  for (const BufferKernel& bk : kernels) maxInputs = std::max<uint32_t>(maxInputs, bk.kinds.size());
  for (uint32_t k = 0; k < maxInputs; ++k) s << "constant bool has_" << k << " [[function_constant(" << k << ")]];\n";
  for (const BufferKernel& bk : kernels) {
    s << "kernel void " << bk.name << "(";
    for (uint32_t k = 0; k < bk.kinds.size(); ++k) {
      switch (bk.kinds[k]) {
        case Kind::Device:
          s << "const device float* in_" << k;
          break;
        case Kind::Constant:
          s << "constant float* in_" << k;
          break;
        case Kind::Scalar:
          s << "constant float& in_" << k;
          break;
        case Kind::Guarded:
          s << "const device float* in_" << k;
          break;
      }
      s << " [[buffer(" << bk.indices[k] << ")";
      if (bk.kinds[k] == Kind::Guarded) s << ", function_constant(has_" << k << ")";
      s << "]],\n    ";
    }
    s << "device float* out [[buffer(" << bk.outIndex << ")]], uint i [[thread_position_in_grid]]) {\n";
    s << "  float acc = 0.0f;\n";
    for (uint32_t k = 0; k < bk.kinds.size(); ++k) {
      std::string value = bk.kinds[k] == Kind::Scalar ? "in_" + std::to_string(k) : "in_" + std::to_string(k) + "[i]";
      if (bk.kinds[k] == Kind::Guarded)
        s << "  if (has_" << k << ") ";
      else
        s << "  ";
      s << "acc += " << (k + 1) << ".0f * " << value << ";\n";
    }
    s << "  out[i] = acc + 0.5f;\n}\n";
  }
  return s.str();
}

std::vector<float> expectedOutput(const BufferKernel& bk) {
  std::vector<float> out(kThreads);
  for (uint32_t i = 0; i < kThreads; ++i) {
    float acc = 0;
    for (uint32_t k = 0; k < bk.kinds.size(); ++k) acc += float(k + 1) * inputValue(bk, k, i);
    out[i] = acc + 0.5f;
  }
  return out;
}

std::vector<float> runBufferKernel(Device& device, const CompiledKernel& ck, const BufferKernel& bk) {
  Kernel kernel = device.createKernel(ck.spirv, ck.reflection);
  Stream stream = device.createStream();
  stream.setKernel(kernel);
  std::vector<Buffer> keep;
  for (uint32_t k = 0; k < bk.kinds.size(); ++k) {
    if (bk.kinds[k] == Kind::Guarded) {
      stream.setFunctionConstant(k, guardedPresent(k));
      if (!guardedPresent(k)) continue;
    }
    if (bk.kinds[k] == Kind::Scalar) {
      float v = inputValue(bk, k, 0);
      stream.setBytes(&v, sizeof v, bk.indices[k]);
      continue;
    }
    std::vector<float> data(kThreads);
    for (uint32_t i = 0; i < kThreads; ++i) data[i] = inputValue(bk, k, i);
    Buffer b = device.createBuffer(data.size() * 4);
    stream.upload(b, 0, data.data(), data.size() * 4);
    stream.setBuffer(b, 0, bk.indices[k]);
    keep.push_back(b);
  }
  Buffer out = device.createBuffer(kThreads * 4);
  stream.fill(out, 0, kThreads * 4, 0xffffffffu);
  stream.setBuffer(out, 0, bk.outIndex);
  stream.dispatchThreads({kThreads, 1, 1}, {kThreadgroup, 1, 1});
  std::vector<float> result(kThreads);
  stream.readback(out, 0, result.data(), kThreads * 4);
  return result;
}

class BufferCounts : public LimitsTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(BufferCounts, OneToThirtyOneRunAndMatch) {
  const std::string variant = GetParam();
  std::vector<BufferKernel> kernels;
  for (uint32_t count = 1; count <= kMaxBufferArguments; ++count) kernels.push_back(makeBufferKernel(variant, count));
  // One source holds all 31 kernels: one parse, 31 entry points.
  CompileResult r = compileSource(bufferKernelSource(kernels), variant + ".metal");
  ASSERT_EQ(r.status, Status::Ok) << diagnosticsText(r);
  ASSERT_EQ(r.kernels.size(), kernels.size());
  for (const BufferKernel& bk : kernels) {
    SCOPED_TRACE(bk.name);
    const CompiledKernel& ck = findKernel(r, bk.name);
    // docs/ABI.md: the addresses live in the push block up to 13 buffers (14 without abort checks, which keep 8
    // bytes for the abort word's address), in an argument buffer beyond.
    EXPECT_EQ(ck.reflection.argumentBuffer, kPushArgsOffset + 8 * bk.count + 8 > kPushConstantLimit);
    EXPECT_EQ(ck.reflection.args.size(), bk.count);
    EXPECT_EQ(runBufferKernel(device(), ck, bk), expectedOutput(bk));
  }
}

INSTANTIATE_TEST_SUITE_P(Limits, BufferCounts, ::testing::Values("device", "constant", "scalar", "mixed", "guarded"),
                         [](const auto& info) { return info.param; });

// One past the limit, in each way a kernel can ask for it, is a compile error that names Metal's range.
struct TooMany {
  const char* what;
  std::string source;
  const char* message;
};

std::string implicitBuffers(uint32_t n) {
  std::string s = "kernel void k(";
  for (uint32_t i = 0; i < n; ++i) s += "device float* b" + std::to_string(i) + ", ";
  return s + "uint i [[thread_position_in_grid]]) { b0[i] = 1.0f; }\n";
}

std::string explicitBuffers(uint32_t n) {
  std::string s = "kernel void k(";
  for (uint32_t i = 0; i < n; ++i)
    s += "device float* b" + std::to_string(i) + " [[buffer(" + std::to_string(i) + ")]], ";
  return s + "uint i [[thread_position_in_grid]]) { b0[i] = 1.0f; }\n";
}

std::string threadgroupArgs(uint32_t n) {
  std::string s = "kernel void k(device float* out [[buffer(0)]], ";
  for (uint32_t i = 0; i < n; ++i)
    s += "threadgroup float* t" + std::to_string(i) + " [[threadgroup(" + std::to_string(i) + ")]], ";
  return s + "uint i [[thread_position_in_grid]]) { out[i] = t0[0]; }\n";
}

TEST_F(LimitsTest, BeyondMetalsLimitsIsACompileError) {
  const std::string prelude = "#include <metal_stdlib>\nusing namespace metal;\n";
  const std::vector<TooMany> cases = {
      {"32 explicit buffers", explicitBuffers(32), "buffer index 31 of 'b31' is out of range"},
      {"32 implicit buffers", implicitBuffers(32), "has more than 31 buffer arguments"},
      {"[[buffer(31)]]", "kernel void k(device float* b [[buffer(31)]]) { b[0] = 1.0f; }\n",
       "Metal allows [[buffer(0)]] to [[buffer(30)]]"},
      {"[[buffer(-1)]]", "kernel void k(device float* b [[buffer(-1)]]) { b[0] = 1.0f; }\n", "buffer index -1"},
      {"two [[buffer(3)]]",
       "kernel void k(device float* a [[buffer(3)]], device float* b [[buffer(3)]]) { a[0] = b[0]; }\n",
       "both use [[buffer(3)]]"},
      {"32 threadgroup arguments", threadgroupArgs(32), "threadgroup index 31 of 't31' is out of range"},
      {"[[function_constant(65536)]]",
       "constant int c [[function_constant(65536)]];\nkernel void k(device int* b [[buffer(0)]]) { b[0] = c; }\n",
       "Metal allows [[function_constant(0)]] to [[function_constant(65535)]]"},
  };
  for (const TooMany& c : cases) {
    SCOPED_TRACE(c.what);
    CompileResult r = compileSource(prelude + c.source, "too_many.metal");
    EXPECT_EQ(r.status, Status::UserError);
    EXPECT_TRUE(r.kernels.empty());
    EXPECT_NE(diagnosticsText(r).find(c.message), std::string::npos) << diagnosticsText(r);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Threadgroup-memory arguments: `count` dynamic [[threadgroup(n)]] arrays plus one static array. Thread t stores
// (n + 1) * t + n into array n, the threadgroup synchronises, then thread t reads its neighbour's slot of every array.
std::string threadgroupSource(uint32_t maxCount) {
  std::ostringstream s;
  s << "#include <metal_stdlib>\nusing namespace metal;\n";
  for (uint32_t count = 1; count <= maxCount; ++count) {
    s << "kernel void tg_" << count << "(device float* out [[buffer(0)]],\n";
    for (uint32_t n = 0; n < count; ++n) s << "    threadgroup float* t" << n << " [[threadgroup(" << n << ")]],\n";
    s << "    uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]],\n"
         "    uint size [[threads_per_threadgroup]]) {\n"
         "  threadgroup float fixed[64];\n"
         "  fixed[l] = float(l);\n";
    for (uint32_t n = 0; n < count; ++n) s << "  t" << n << "[l] = " << (n + 1) << ".0f * float(l) + " << n << ".0f;\n";
    s << "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
         "  uint j = (l + 1) % size;\n"
         "  float acc = fixed[j];\n";
    for (uint32_t n = 0; n < count; ++n) s << "  acc += t" << n << "[j];\n";
    s << "  out[i] = acc;\n}\n";
  }
  return s.str();
}

TEST_F(LimitsTest, ThreadgroupArgumentsOneToThirtyOne) {
  CompileResult r = compileSource(threadgroupSource(kMaxThreadgroupArguments), "threadgroup.metal");
  ASSERT_EQ(r.status, Status::Ok) << diagnosticsText(r);
  for (uint32_t count = 1; count <= kMaxThreadgroupArguments; ++count) {
    SCOPED_TRACE(count);
    const CompiledKernel& ck = findKernel(r, "tg_" + std::to_string(count));
    EXPECT_EQ(ck.reflection.dynamicThreadgroupMemory.size(), count);
    Kernel kernel = device().createKernel(ck.spirv, ck.reflection);
    Stream stream = device().createStream();
    stream.setKernel(kernel);
    Buffer out = device().createBuffer(kThreads * 4);
    stream.setBuffer(out, 0, 0);
    for (uint32_t n = 0; n < count; ++n) stream.setThreadgroupMemoryLength(kThreadgroup * 4, n);
    stream.dispatchThreads({kThreads, 1, 1}, {kThreadgroup, 1, 1});
    std::vector<float> result(kThreads);
    stream.readback(out, 0, result.data(), kThreads * 4);
    std::vector<float> expected(kThreads);
    for (uint32_t i = 0; i < kThreads; ++i) {
      uint32_t size = i / kThreadgroup < kThreads / kThreadgroup ? kThreadgroup : kThreads % kThreadgroup;
      uint32_t j = (i % kThreadgroup + 1) % size;
      float acc = float(j);
      for (uint32_t n = 0; n < count; ++n) acc += float(n + 1) * float(j) + float(n);
      expected[i] = acc;
    }
    EXPECT_EQ(result, expected);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Function constants: many of them (bool, int, uint, float, half), at indices from 0 up to Metal's last, 65535; some
// set, some left unset (0 and not defined); each one also guards a buffer argument's use.
TEST_F(LimitsTest, FunctionConstantsUpToIndex65535) {
  struct Fc {
    uint32_t index;
    const char* type;
    bool set;
    double value;
  };
  std::vector<Fc> fcs;
  const char* types[] = {"int", "uint", "float", "half", "bool"};
  for (uint32_t n = 0; n < 60; ++n) {
    uint32_t index = n < 50 ? n : 65535 - (59 - n) * 1000;  // 0..49, then up to 65535
    fcs.push_back({index, types[n % 5], n % 7 != 3, n % 5 == 4 ? double(n % 2) : double(n) + 1});
  }
  std::ostringstream s;
  s << "#include <metal_stdlib>\nusing namespace metal;\n";
  for (const Fc& f : fcs)
    s << "constant " << f.type << " c" << f.index << " [[function_constant(" << f.index << ")]];\n";
  s << "kernel void fcs(device float* out [[buffer(0)]], const device float* x [[buffer(1), "
       "function_constant(c"
    << fcs[4].index << ")]], uint i [[thread_position_in_grid]]) {\n  float acc = 0.0f;\n";
  for (const Fc& f : fcs)
    s << "  if (is_function_constant_defined(c" << f.index << ")) acc += float(c" << f.index << ") * "
      << (f.index % 13 + 1) << ".0f; else acc += 1000.0f;\n";
  s << "  if (c" << fcs[4].index << ") acc += x[i];\n  out[i] = acc;\n}\n";
  CompileResult r = compileSource(s.str(), "fcs.metal");
  ASSERT_EQ(r.status, Status::Ok) << diagnosticsText(r);
  const CompiledKernel& ck = findKernel(r, "fcs");
  EXPECT_EQ(ck.reflection.functionConstants.size(), fcs.size());
  Kernel kernel = device().createKernel(ck.spirv, ck.reflection);
  for (bool withX : {false, true}) {
    SCOPED_TRACE(withX);
    Stream stream = device().createStream();
    stream.setKernel(kernel);
    for (const Fc& f : fcs) {
      if (!f.set) continue;
      std::string t = f.type;
      double v = &f == &fcs[4] ? double(withX) : f.value;
      if (t == "int")
        stream.setFunctionConstant(f.index, int32_t(v));
      else if (t == "uint")
        stream.setFunctionConstant(f.index, uint32_t(v));
      else if (t == "bool")
        stream.setFunctionConstant(f.index, v != 0);
      else
        stream.setFunctionConstant(f.index, float(v));
    }
    Buffer x = device().createBuffer(kThreads * 4);
    std::vector<float> xs(kThreads);
    for (uint32_t i = 0; i < kThreads; ++i) xs[i] = float(i);
    stream.upload(x, 0, xs.data(), xs.size() * 4);
    if (withX) stream.setBuffer(x, 0, 1);
    Buffer out = device().createBuffer(kThreads * 4);
    stream.setBuffer(out, 0, 0);
    stream.dispatchThreads({kThreads, 1, 1}, {kThreadgroup, 1, 1});
    std::vector<float> result(kThreads);
    stream.readback(out, 0, result.data(), kThreads * 4);
    for (uint32_t i = 0; i < kThreads; ++i) {
      float acc = 0;
      for (const Fc& f : fcs) {
        double v = &f == &fcs[4] ? double(withX) : f.value;
        acc += f.set ? float(v) * float(f.index % 13 + 1) : 1000.0f;
      }
      if (withX) acc += float(i);
      ASSERT_EQ(result[i], acc) << "thread " << i;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The MLX front door: mx.fast.metal_kernel with 1 to 30 inputs and one output (31 buffers), inputs of every form MLX
// assembles (device arrays, constant arrays of < 8 elements, 0-d constant references); 31 inputs is one too many.
mlx::Array iotaArray(std::vector<int64_t> shape, float base) {
  mlx::Array a = mlx::Array::allocate(mlx::Dtype::Float32, std::move(shape));
  float* p = static_cast<float*>(a.mutableData());
  for (size_t i = 0; i < a.size(); ++i) p[i] = base + float(i);
  return a;
}

mlx::KernelSpec mlxSpec(uint32_t inputs) {
  mlx::KernelSpec spec;
  spec.name = "many_" + std::to_string(inputs);
  spec.outputNames = {"out"};
  std::string body = "uint i = thread_position_in_grid.x;\nfloat acc = 0.0f;\n";
  for (uint32_t k = 0; k < inputs; ++k) {
    std::string name = std::string("x").append(std::to_string(k));  // (GCC 12 warns wrongly on "x" + string)
    spec.inputNames.push_back(name);
    std::string value = k % 3 == 2 ? name : k % 3 == 1 ? name + "[i % 4]" : name + "[i]";
    body += "acc += " + std::to_string(k + 1) + ".0f * float(" + value + ");\n";
  }
  spec.source = body + "out[i] = acc;\n";
  return spec;
}

std::vector<mlx::Array> mlxInputs(uint32_t inputs) {
  std::vector<mlx::Array> arrays;
  for (uint32_t k = 0; k < inputs; ++k) {
    if (k % 3 == 2)
      arrays.push_back(mlx::Array::scalar(mlx::Dtype::Float32, 3.0f + float(k)));
    else if (k % 3 == 1)
      arrays.push_back(iotaArray({4}, 100.0f * float(k)));
    else
      arrays.push_back(iotaArray({kThreads}, 10.0f * float(k)));
  }
  return arrays;
}

TEST_F(LimitsTest, MlxMetalKernelOneToThirtyInputs) {
  for (uint32_t inputs = 1; inputs < kMaxBufferArguments; ++inputs) {
    SCOPED_TRACE(inputs);
    mlx::MetalKernel kernel(mlxSpec(inputs));
    mlx::Call call;
    call.inputs = mlxInputs(inputs);
    call.outputShapes = {{kThreads}};
    call.outputDtypes = {mlx::Dtype::Float32};
    call.grid = {kThreads, 1, 1};
    call.threadgroup = {kThreadgroup, 1, 1};
    std::vector<mlx::Array> outs = kernel(call);
    ASSERT_EQ(outs.size(), 1u);
    const float* got = outs[0].as<float>();
    for (uint32_t i = 0; i < kThreads; ++i) {
      float acc = 0;
      for (uint32_t k = 0; k < inputs; ++k) {
        float v = k % 3 == 2   ? 3.0f + float(k)
                  : k % 3 == 1 ? 100.0f * float(k) + float(i % 4)
                               : 10.0f * float(k) + float(i);
        acc += float(k + 1) * v;
      }
      ASSERT_EQ(got[i], acc) << "thread " << i;
    }
  }
}

TEST_F(LimitsTest, MlxMetalKernelThirtyOneInputsIsACompileError) {
  mlx::MetalKernel kernel(mlxSpec(kMaxBufferArguments));
  mlx::Call call;
  call.inputs = mlxInputs(kMaxBufferArguments);
  call.outputShapes = {{kThreads}};
  call.outputDtypes = {mlx::Dtype::Float32};
  call.grid = {kThreads, 1, 1};
  call.threadgroup = {kThreadgroup, 1, 1};
  try {
    kernel(call);
    FAIL() << "31 inputs and an output ran";
  } catch (const mlx::CompileError& e) {
    EXPECT_EQ(e.status, Status::UserError);
    EXPECT_NE(e.diagnostics.find("[[buffer(30)]]"), std::string::npos) << e.diagnostics;
  }
}

}  // namespace
}  // namespace m2v
