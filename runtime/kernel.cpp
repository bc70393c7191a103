// Kernels: module + reflection checks against the device, specialisation and the device-wide pipeline cache.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <string>
#include <unordered_map>

#include "internal.h"
#include "subgroup_width_probe.h"  // generated: const uint32_t kSubgroupWidthProbe[]

namespace m2v {

namespace {

// M2V_SIMDGROUPS: auto (native 32-wide subgroups where the device has them, emulated otherwise), native (never
// emulate) or emulated (emulate wherever the module can, e.g. to measure the emulation on a 32-wide GPU).
std::string simdgroupMode() {
  static const std::string mode = [] {
    const char* env = std::getenv("M2V_SIMDGROUPS");
    std::string m = env && *env ? env : "auto";
    if (m != "auto" && m != "native" && m != "emulated")
      throw UsageError("M2V_SIMDGROUPS must be auto, native or emulated (got '" + m + "')");
    return m;
  }();
  return mode;
}

std::array<uint64_t, 2> hashWords(std::span<const uint32_t> words, uint32_t salt) {
  // FNV-1a over the bytes and a multiply-xorshift mix over the words: two independent hashes, so an in-memory
  // cache collision would need both to collide.
  uint64_t fnv = 0xcbf29ce484222325ull ^ salt;
  uint64_t mix = 0x9e3779b97f4a7c15ull + salt;
  for (uint32_t w : words) {
    for (int b = 0; b < 4; ++b) {
      fnv ^= (w >> (8 * b)) & 0xff;
      fnv *= 0x100000001b3ull;
    }
    mix ^= w;
    mix *= 0xff51afd7ed558ccdull;
    mix ^= mix >> 33;
  }
  return {fnv, mix ^ words.size()};
}

std::string stripType(std::string type) {
  for (const char* word : {"const ", "constant ", "thread "})
    for (size_t pos; (pos = type.find(word)) != std::string::npos;) type.erase(pos, std::strlen(word));
  type.erase(std::remove(type.begin(), type.end(), ' '), type.end());
  return type;
}

bool isReadOnlyParam(const KernelParam& p) {
  if (p.addressSpace == "constant") return true;
  // "const device T*": the pointee is const. A trailing "* const" only makes the pointer const.
  return p.type.rfind("const ", 0) == 0 || p.type.find(" const ") < p.type.find('*');
}

uint16_t floatToHalf(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint32_t sign = (bits >> 16) & 0x8000;
  int32_t exponent = int32_t((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffff;
  if (((bits >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00 | (mantissa ? 0x200 : 0));  // inf / nan
  if (exponent >= 31) return uint16_t(sign | 0x7c00);                                          // overflow
  if (exponent <= 0) {                                                                          // subnormal / zero
    if (exponent < -10) return uint16_t(sign);
    mantissa |= 0x800000;
    uint32_t shift = uint32_t(14 - exponent);
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: correct rounding
  return uint16_t(half);
}

// SpecId -> byte size of every specialization constant in a SPIR-V module (bool: 4, as VkBool32).
std::unordered_map<uint32_t, uint32_t> scanSpecConstants(std::span<const uint32_t> words) {
  std::unordered_map<uint32_t, uint32_t> specIdOf;   // result id -> SpecId
  std::unordered_map<uint32_t, uint32_t> typeBytes;  // type id -> bytes (0: bool)
  std::unordered_map<uint32_t, uint32_t> sizes;
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16, op = words[i] & 0xffff;
    if (count == 0 || i + count > words.size()) break;
    const uint32_t* w = &words[i];
    if (op == 71 && count >= 4 && w[2] == 1) specIdOf[w[1]] = w[3];  // OpDecorate %id SpecId n
    else if (op == 20) typeBytes[w[1]] = 0;                          // OpTypeBool
    else if ((op == 21 || op == 22) && count >= 3) typeBytes[w[1]] = w[2] / 8;  // OpTypeInt / OpTypeFloat
    else if ((op == 48 || op == 49) && count >= 3) {                  // OpSpecConstantTrue/False %type %id
      if (auto it = specIdOf.find(w[2]); it != specIdOf.end()) sizes[it->second] = 4;
    } else if (op == 50 && count >= 3) {                              // OpSpecConstant %type %id value
      auto it = specIdOf.find(w[2]);
      auto t = typeBytes.find(w[1]);
      if (it != specIdOf.end() && t != typeBytes.end()) sizes[it->second] = t->second ? t->second : 4;
    }
    i += count;
  }
  return sizes;
}

// Bytes of `value` as the reflected Metal type; the size must equal the SPIR-V spec constant's width.
std::vector<uint8_t> constantBytes(const FunctionConstant& fc, const ConstantValue& value) {
  const std::string type = stripType(fc.type);
  auto asInt = [&] { return value.kind == ConstantValue::Kind::Float ? int64_t(value.f) : value.i; };
  auto asFloat = [&] { return value.kind == ConstantValue::Kind::Float ? value.f : double(value.i); };
  std::vector<uint8_t> out;
  auto put = [&](const void* p, size_t n) { out.assign(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n); };
  if (type == "bool") {
    uint32_t b = value.kind == ConstantValue::Kind::Float ? value.f != 0 : value.i != 0;  // VkBool32
    put(&b, 4);
  } else if (type == "char" || type == "uchar" || type == "int8_t" || type == "uint8_t") {
    uint8_t v = uint8_t(asInt());
    put(&v, 1);
  } else if (type == "short" || type == "ushort" || type == "int16_t" || type == "uint16_t") {
    uint16_t v = uint16_t(asInt());
    put(&v, 2);
  } else if (type == "int" || type == "uint" || type == "int32_t" || type == "uint32_t" || type == "unsigned") {
    uint32_t v = uint32_t(asInt());
    put(&v, 4);
  } else if (type == "long" || type == "ulong" || type == "int64_t" || type == "uint64_t" || type == "size_t") {
    uint64_t v = uint64_t(asInt());
    put(&v, 8);
  } else if (type == "float") {
    float v = float(asFloat());
    put(&v, 4);
  } else if (type == "half") {
    uint16_t v = floatToHalf(float(asFloat()));
    put(&v, 2);
  } else if (type == "bfloat") {
    uint32_t bits = std::bit_cast<uint32_t>(float(asFloat()));
    uint16_t v = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);  // round to nearest even
    put(&v, 2);
  } else {
    throw UsageError("function constant '" + fc.name + "' has unsupported type '" + fc.type + "'");
  }
  return out;
}

bool capabilitySupported(const DeviceInfo& info, const std::string& cap) {
  if (cap == "Int64") return info.shaderInt64;
  if (cap == "Int16") return info.shaderInt16;
  if (cap == "Int8") return info.shaderInt8;
  if (cap == "Float16") return info.shaderFloat16;
  if (cap == "StorageBuffer8BitAccess" || cap == "UniformAndStorageBuffer8BitAccess") return info.storageBuffer8Bit;
  if (cap == "StorageBuffer16BitAccess" || cap == "UniformAndStorageBuffer16BitAccess") return info.storageBuffer16Bit;
  if (cap == "AtomicFloat32AddEXT" || cap == "AtomicFloat64AddEXT") return info.atomicFloat;
  if (cap == "AtomicFloat16AddEXT" || cap == "AtomicFloat16MinMaxEXT" || cap == "AtomicFloat32MinMaxEXT" ||
      cap == "AtomicFloat64MinMaxEXT")
    return info.atomicFloat2;
  if (cap == "CooperativeMatrixKHR") return info.cooperativeMatrix;
  if (cap == "BFloat16TypeKHR") return info.bfloat16Type;
  if (cap == "RoundingModeRTE") return info.roundingModeRTEFloat16;  // the only width our modules ask it for
  if (cap == "BFloat16CooperativeMatrixKHR") return info.bfloat16CooperativeMatrix;
  return true;  // core capabilities of Vulkan 1.3 compute, or ones the driver will check itself
}

}  // namespace

Kernel Device::createKernel(std::span<const uint32_t> spirv, const KernelReflection& reflection) {
  const DeviceInfo& info = state_->info;
  const std::string name = "kernel '" + reflection.entry + "'";
  if (spirv.size() < 5 || spirv[0] != 0x07230203u) throw UsageError(name + ": not a SPIR-V module");
  // Simdgroup functions: native 32-wide subgroups where the device runs them, else the module's emulated body.
  bool emulate = false;
  if (uint32_t want = reflection.requiredSubgroupSize) {
    if (!std::has_single_bit(want)) throw UsageError(name + ": required_subgroup_size must be a power of two");
    const std::string mode = simdgroupMode();
    std::string nativeMissing;
    if (!info.requiredSubgroupSizeInCompute || want < info.minSubgroupSize || want > info.maxSubgroupSize)
      nativeMissing = info.name + " provides " + std::to_string(info.minSubgroupSize) + ".." +
                      std::to_string(info.maxSubgroupSize) +
                      (info.requiredSubgroupSizeInCompute ? "" : " without subgroup size control in compute");
    else if (mode != "emulated")
      if (uint32_t lanes = measureSubgroupWidth(want); lanes != want)
        nativeMissing = info.name + " accepts required subgroup size " + std::to_string(want) +
                        " but a probe kernel ran with " + std::to_string(lanes) + " lanes per subgroup (driver bug)";
    emulate = mode == "emulated" || (mode == "auto" && !nativeMissing.empty());
    if (emulate && !reflection.emulatedSimdgroups)
      throw UnsupportedError(name + " uses simdgroup functions, which " +
                             (nativeMissing.empty() ? std::string("M2V_SIMDGROUPS=emulated asks to emulate")
                                                    : "need " + std::to_string(want) + "-wide subgroups (" +
                                                          nativeMissing + ") or emulation") +
                             ", and they cannot be emulated: " +
                             (reflection.simdgroupEmulationRefused.empty() ? "the module has no emulated body"
                                                                           : reflection.simdgroupEmulationRefused) +
                             "; refusing to run it rather than compute a wrong answer");
    if (!emulate && !nativeMissing.empty())
      throw UnsupportedError(name + " uses simdgroup functions and needs " + std::to_string(want) +
                             "-wide subgroups, but " + nativeMissing +
                             " (M2V_SIMDGROUPS=native); refusing to run it rather than compute a wrong answer");
  }
  for (const std::string& cap : reflection.capabilities)
    if (!capabilitySupported(info, cap))
      throw UnsupportedError(name + " needs SPIR-V capability " + cap + ", which " + info.name + " does not support");
  uint32_t push = reflection.pushConstantSize;
  if (push < 16 || push % 4 || push > kPushConstantLimit || push > info.maxPushConstantsSize)
    throw UsageError(name + ": push constant size " + std::to_string(push) + " is outside 16..128 or not 4-aligned");

  return createKernelUnchecked(spirv, reflection, emulate);
}

Kernel Device::createCooperativeKernel(std::span<const uint32_t> spirv, const KernelReflection& reflection,
                                      const Kernel& portable) {
  const DeviceInfo& info = state_->info;
  std::vector<std::string> shapes = reflection.cooperativeMatrixShapes;
  if (shapes.empty()) shapes.push_back("16x8x8 f16*f16+f32");  // reflection written before shapes were recorded
  for (const std::string& shape : shapes)
    if (!info.offersCooperativeMatrix(shape))
      throw UnsupportedError("kernel '" + reflection.entry + "': its cooperative-matrix build needs the " + shape +
                             " cooperative matrix shape, which " + info.name + " does not offer");
  if (!portable || portable.object()->device != state_)
    throw UsageError("createCooperativeKernel: the portable kernel must belong to this device");
  Kernel k = createKernel(spirv, reflection);
  k.object()->portable = portable.object();
  return k;
}

// Runs the embedded probe with `requested` as required subgroup size and returns the lanes per subgroup it saw
// (the minimum over one 64-thread workgroup). Cached per device. Host wait: kernel creation only, once.
uint32_t Device::measureSubgroupWidth(uint32_t requested) {
  std::lock_guard lock(state_->subgroupProbeMutex);
  for (const auto& [size, lanes] : state_->measuredSubgroupWidths)
    if (size == requested) return lanes;
  KernelReflection probe;
  probe.entry = "m2v_subgroup_width_probe";
  probe.pushConstantSize = 24;
  probe.args = {{0, 16}};
  probe.params = {{"lanes", "device uint*", "device", ParamKind::Buffer, 0, "", ""}};
  probe.requiredSubgroupSize = requested;
  const uint32_t threads = 64;
  uint32_t lanes = 0;
  if (uint64_t(state_->info.maxComputeWorkgroupSubgroups) * requested >= threads) {
    Kernel kernel = createKernelUnchecked(
        std::span<const uint32_t>(kSubgroupWidthProbe, sizeof kSubgroupWidthProbe / 4), probe);
    Buffer out = createBuffer(threads * 4);
    Stream stream = createStream();
    stream.setKernel(kernel);
    stream.setBuffer(out, 0, 0);
    stream.dispatchThreadgroups({1, 1, 1}, {threads, 1, 1});
    std::vector<uint32_t> seen(threads);
    stream.readback(out, 0, seen.data(), threads * 4);
    lanes = UINT32_MAX;
    for (uint32_t v : seen) lanes = std::min(lanes, v / 1000);
  }
  state_->measuredSubgroupWidths.emplace_back(requested, lanes);
  return lanes;
}

Kernel Device::createKernelUnchecked(std::span<const uint32_t> spirv, const KernelReflection& reflection,
                                     bool emulateSimdgroups) {
  const std::string name = "kernel '" + reflection.entry + "'";
  const uint32_t push = reflection.pushConstantSize;
  auto object = std::make_shared<KernelObject>();
  object->device = state_;
  object->reflection = reflection;
  object->emulatesSimdgroups = emulateSimdgroups;
  uint32_t salt = push | object->requiredSubgroupSize() << 8 | uint32_t(reflection.argumentBuffer) << 16;
  object->moduleHash = hashWords(spirv, salt);
  object->specConstantBytes = scanSpecConstants(spirv);
  for (const PushArg& a : reflection.args) {
    KernelArg arg{a.buffer, a.offset, false, false};
    for (const KernelParam& p : reflection.params)
      if (p.kind == ParamKind::Buffer && p.index == a.buffer) {
        arg.readOnly = isReadOnlyParam(p);
        arg.optional = !p.functionConstant.empty() || !a.used;
      }
    if (a.offset % 8)
      throw UsageError(name + ": buffer(" + std::to_string(a.buffer) + ") address offset is not 8-aligned");
    if (reflection.argumentBuffer)
      object->argumentBufferSize = std::max(object->argumentBufferSize, a.offset + 8);
    else if (a.offset < kPushArgsOffset || a.offset + 8 > push)
      throw UsageError(name + ": buffer(" + std::to_string(a.buffer) + ") address lies outside the push block");
    object->args.push_back(arg);
  }
  if (reflection.argumentBuffer && push < kPushArgsOffset + 8)
    throw UsageError(name + ": argument buffer address does not fit in the push block");

  VkShaderModuleCreateInfo moduleInfo{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  moduleInfo.codeSize = spirv.size() * 4;
  moduleInfo.pCode = spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  vkCheck(vkCreateShaderModule(state_->vk(), &moduleInfo, nullptr, &module), "vkCreateShaderModule", state_.get());
  object->module = UniqueShaderModule(state_->vk(), module);
  return Kernel(std::move(object));
}

bool KernelObject::needsRelayout(const Size3& tg) const {
  const DeviceInfo& info = device->info;
  return tg.x > info.maxWorkgroupSize[0] || tg.y > info.maxWorkgroupSize[1] || tg.z > info.maxWorkgroupSize[2];
}

bool KernelObject::runsLinear(const Size3& tg) const {
  if (tg.y == 1 && tg.z == 1) return false;  // one-dimensional already
  return canRelayout(tg) && (needsRelayout(tg) || device->info.linearWorkgroups);
}

bool KernelObject::canRelayout(const Size3& tg) const {
  return specConstantBytes.count(kThreadgroupShapeSpecBase) != 0 &&
         uint64_t(tg.x) * tg.y * tg.z <= device->info.maxWorkgroupSize[0];
}

const KernelReflection& Kernel::reflection() const {
  if (!object_) throw UsageError("empty Kernel");
  return object_->reflection;
}

bool Kernel::emulatesSimdgroups() const {
  if (!object_) throw UsageError("empty Kernel");
  return object_->emulatesSimdgroups;
}

bool Kernel::mayWriteBuffer(uint32_t index) const {
  if (!object_) throw UsageError("empty Kernel");
  for (const KernelArg& arg : object_->args)
    if (arg.bufferIndex == index) return !arg.readOnly;
  return false;
}

// One line per pipeline executable: "m2v pipeline statistics: ENTRY (TGxTGyTGz) built in MS ms, EXECUTABLE: NAME
// VALUE, ...".
static void printPipelineStatistics(VkDevice vk, VkPipeline pipeline, const std::string& entry, const Size3& tg,
                                    uint64_t buildNs) {
  auto properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(vk, "vkGetPipelineExecutablePropertiesKHR"));
  auto statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(vk, "vkGetPipelineExecutableStatisticsKHR"));
  if (!properties || !statistics) return;
  VkPipelineInfoKHR info{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR, nullptr, pipeline};
  uint32_t count = 0;
  if (properties(vk, &info, &count, nullptr) != VK_SUCCESS) return;
  std::vector<VkPipelineExecutablePropertiesKHR> executables(count, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  if (properties(vk, &info, &count, executables.data()) != VK_SUCCESS) return;
  for (uint32_t i = 0; i < count; ++i) {
    VkPipelineExecutableInfoKHR which{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR, nullptr, pipeline, i};
    uint32_t n = 0;
    if (statistics(vk, &which, &n, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> stats(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (statistics(vk, &which, &n, stats.data()) != VK_SUCCESS) continue;
    std::string line = "m2v pipeline statistics: " + entry + " (" + std::to_string(tg.x) + "x" +
                       std::to_string(tg.y) + "x" + std::to_string(tg.z) + ") built in " +
                       std::to_string(buildNs / 1000000) + " ms, " + executables[i].name + ":";
    for (uint32_t j = 0; j < n; ++j) {
      const VkPipelineExecutableStatisticKHR& st = stats[j];
      std::string value;
      switch (st.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: value = st.value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: value = std::to_string(st.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: value = std::to_string(st.value.u64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: value = std::to_string(st.value.f64); break;
        default: value = "?";
      }
      line += std::string(j ? ", " : " ") + st.name + " " + value;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

VkPipeline KernelObject::pipelineFor(const Size3& tg, const Size3& nominal, const std::vector<std::pair<uint32_t, ConstantValue>>& constants,
                                     const std::vector<std::pair<uint32_t, uint32_t>>& threadgroupLengths,
                                     VkPipelineLayout* layout) {
  const DeviceInfo& info = device->info;
  const std::string name = "kernel '" + reflection.entry + "'";

  // Specialisation data and the cache key are built together: the key is exactly the bytes that specialise.
  std::vector<VkSpecializationMapEntry> entries;
  std::vector<uint8_t> data;
  std::string key(reinterpret_cast<const char*>(moduleHash.data()), sizeof(moduleHash));
  auto add = [&](uint32_t specId, const void* bytes, size_t size) {
    auto declared = specConstantBytes.find(specId);
    if (declared == specConstantBytes.end()) return;  // not in the module: nothing to specialise
    // Fit little-endian integer/bool bytes to the module's declared width (truncate or zero-extend).
    std::vector<uint8_t> value(static_cast<const uint8_t*>(bytes), static_cast<const uint8_t*>(bytes) + size);
    value.resize(declared->second, 0);
    entries.push_back({specId, uint32_t(data.size()), value.size()});
    data.insert(data.end(), value.begin(), value.end());
  };
  // A multi-dimensional shape runs as a one-dimensional workgroup of the same size (a shape past the device's
  // per-axis limits must); the module recovers Metal's positions from the linear index (docs/ABI.md).
  // Stream::validateThreadgroup checked that a shape that must, can.
  const bool relayout = runsLinear(tg);
  const uint32_t wg[3] = {relayout ? tg.x * tg.y * tg.z : tg.x, relayout ? 1 : tg.y, relayout ? 1 : tg.z};
  for (uint32_t i = 0; i < 3; ++i) add(kWorkgroupSizeSpecBase + i, &wg[i], 4);
  if (relayout) {
    const uint32_t shape[3] = {tg.x, tg.y, tg.z};
    for (uint32_t i = 0; i < 3; ++i) add(kThreadgroupShapeSpecBase + i, &shape[i], 4);
  }
  const uint32_t nominalSize[3] = {nominal.x, nominal.y, nominal.z};
  for (uint32_t i = 0; i < 3; ++i) add(kNominalThreadgroupSpecBase + i, &nominalSize[i], 4);
  const uint32_t emulate = emulatesSimdgroups;
  add(kEmulateSimdgroupsSpecId, &emulate, 4);

  for (const FunctionConstant& fc : reflection.functionConstants) {
    auto it = std::find_if(constants.begin(), constants.end(), [&](const auto& c) { return c.first == fc.index; });
    uint32_t defined = it != constants.end();
    // Unset constants read as 0/false and "not defined" (ABI), so pass that explicitly.
    std::vector<uint8_t> bytes = constantBytes(fc, defined ? it->second : ConstantValue{});
    add(fc.specId, bytes.data(), bytes.size());
    add(fc.definedSpecId, &defined, 4);
  }

  uint64_t sharedBytes = reflection.staticThreadgroupBytes;
  for (const DynamicThreadgroupMemory& d : reflection.dynamicThreadgroupMemory) {
    auto it = std::find_if(threadgroupLengths.begin(), threadgroupLengths.end(),
                           [&](const auto& l) { return l.first == d.index; });
    uint32_t length = it != threadgroupLengths.end() ? it->second : 0;
    sharedBytes += length;
    if (it != threadgroupLengths.end()) add(d.specId, &length, 4);  // unset: keep the module's default
    else key += "u";
  }
  // Emulated simdgroups exchange words through 4 words per thread (the threadgroup rounded up to whole simdgroups),
  // and a loop's vote counts in one more word.
  if (emulatesSimdgroups) sharedBytes += 4 * 4 * ((uint64_t(tg.x) * tg.y * tg.z + 31) / 32 * 32) + 4;
  if (sharedBytes > info.maxSharedMemoryBytes)
    throw UsageError(name + " needs " + std::to_string(sharedBytes) + " bytes of threadgroup memory; the device allows " +
                     std::to_string(info.maxSharedMemoryBytes));
  if (requiredSubgroupSize() && info.maxComputeWorkgroupSubgroups &&
      uint64_t(tg.x) * tg.y * tg.z > uint64_t(info.maxComputeWorkgroupSubgroups) * requiredSubgroupSize())
    throw UsageError(name + ": threadgroup too large for " + std::to_string(requiredSubgroupSize()) +
                     "-wide subgroups (at most " + std::to_string(info.maxComputeWorkgroupSubgroups) + " subgroups)");
  key.append(reinterpret_cast<const char*>(data.data()), data.size());
  for (const auto& e : entries) key.append(reinterpret_cast<const char*>(&e.constantID), 4);

  std::unique_lock lock(device->pipelineMutex);
  *layout = device->layoutForPushSize(reflection.pushConstantSize);
  for (;;) {
    if (auto it = device->pipelines.find(key); it != device->pipelines.end()) {
      device->pipelineMemoryHits.fetch_add(1, std::memory_order_relaxed);
      return it->second.get();
    }
    if (device->pipelinesBuilding.insert(key).second) break;  // this thread builds it
    device->pipelineBuilt.wait(lock);                         // another thread is building the same pipeline
  }
  lock.unlock();

  VkSpecializationInfo specialization{uint32_t(entries.size()), entries.data(), data.size(), data.data()};
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroupSize{
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
  subgroupSize.requiredSubgroupSize = requiredSubgroupSize();
  VkComputePipelineCreateInfo pipelineInfo{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipelineInfo.flags = VK_PIPELINE_CREATE_DISPATCH_BASE_BIT;  // edge regions start at a workgroup offset
  pipelineInfo.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipelineInfo.stage.pNext = requiredSubgroupSize() ? &subgroupSize : nullptr;
  pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipelineInfo.stage.module = module.get();
  pipelineInfo.stage.pName = reflection.spirvEntry.c_str();
  pipelineInfo.stage.pSpecializationInfo = &specialization;
  pipelineInfo.layout = *layout;
  if (device->pipelineStatistics) pipelineInfo.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  // The pipeline cache is internally synchronised (created without EXTERNALLY_SYNCHRONIZED).
  VkPipeline pipeline = VK_NULL_HANDLE;
  const auto start = std::chrono::steady_clock::now();
  VkResult result =
      vkCreateComputePipelines(device->vk(), device->pipelineCache.get(), 1, &pipelineInfo, nullptr, &pipeline);
  const uint64_t buildNs = uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  // The driver's statistics queries run outside the lock too.
  if (result == VK_SUCCESS && device->pipelineStatistics)
    printPipelineStatistics(device->vk(), pipeline, reflection.entry, tg, buildNs);
  lock.lock();
  device->pipelineBuildNs += buildNs;
  device->pipelinesBuilding.erase(key);
  device->pipelineBuilt.notify_all();  // waiters find the pipeline, or build it themselves after a failure
  vkCheck(result, "vkCreateComputePipelines", device.get());
  device->pipelines.emplace(std::move(key), UniquePipeline(device->vk(), pipeline));
  device->pipelinesCreated++;
  device->pipelineCacheDirty = true;
  return pipeline;
}

}  // namespace m2v
