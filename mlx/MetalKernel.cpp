// MetalKernel: MLX's metal_kernel call on the metal2vk runtime.
#include <algorithm>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <numeric>
#include <unordered_map>

#include "metal2vk/mlx.h"
#include "metal2vk/runtime.h"

namespace m2v::mlx {

// ---------------------------------------------------------------------------------------------------------------
// Arrays
Array Array::allocate(Dtype dtype, std::vector<int64_t> shape) {
  Array a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  // Shapes come from files and JSON: a negative extent or a size that overflows is refused, never wrapped around.
  size_t elements = 1;
  for (int64_t d : a.shape)
    if (d < 0 || __builtin_mul_overflow(elements, size_t(d), &elements))
      throw std::invalid_argument("[metal_kernel] array shape is negative or too large");
  if (size_t bytes = 0; __builtin_mul_overflow(elements, itemSize(dtype), &bytes) || bytes > (size_t(1) << 40))
    throw std::invalid_argument("[metal_kernel] array of " + std::to_string(elements) + " elements is too large");
  size_t bytes = std::max<size_t>(a.nbytes(), 1);
  std::shared_ptr<uint8_t[]> storage(new uint8_t[bytes]);
  a.data = storage.get();
  a.owner = std::shared_ptr<void>(storage, storage.get());
  return a;
}

size_t Array::size() const {
  size_t n = 1;
  for (int64_t s : shape) n *= size_t(s);
  return n;
}

std::vector<int64_t> Array::effectiveStrides() const {
  if (!strides.empty()) return strides;
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

bool Array::rowContiguous() const {
  if (strides.empty()) return true;
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != acc) return size() == 0;
    acc *= shape[i];
  }
  return true;
}

namespace {

// Row-major copy of a strided array (MLX copies on the GPU; the result is the same).
Array toRowContiguous(const Array& in) {
  Array out = Array::allocate(in.dtype, in.shape);
  const size_t item = itemSize(in.dtype), n = in.size();
  const std::vector<int64_t> strides = in.effectiveStrides();
  const int nd = in.ndim();
  std::vector<int64_t> idx(nd, 0);
  const uint8_t* src = static_cast<const uint8_t*>(in.data);
  uint8_t* dst = static_cast<uint8_t*>(out.mutableData());
  int64_t off = 0;
  for (size_t e = 0; e < n; ++e) {
    std::memcpy(dst + e * item, src + off * int64_t(item), item);
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[d] < in.shape[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (in.shape[d] - 1);
      idx[d] = 0;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The process's device, stream and buffer pool. Calls are serialised by `mutex`.
struct BufferPool {
  std::multimap<size_t, Buffer> free;
  size_t pooledBytes = 0;
  static constexpr size_t kMaxPooled = size_t(512) << 20;

  static size_t bucket(size_t bytes) {
    size_t b = 256;
    while (b < bytes) b <<= 1;
    return b;
  }
  Buffer take(Device& dev, size_t bytes) {
    size_t b = bucket(bytes);
    auto it = free.find(b);
    if (it != free.end()) {
      Buffer buf = it->second;
      free.erase(it);
      pooledBytes -= b;
      return buf;
    }
    return dev.createBuffer(b);
  }
  void give(Buffer buf) {
    size_t b = buf.size();
    if (pooledBytes + b > kMaxPooled) return;
    pooledBytes += b;
    free.emplace(b, std::move(buf));
  }
};

struct Runtime {
  std::recursive_mutex mutex;
  std::string selector;
  std::unique_ptr<Device> device;
  std::unique_ptr<Stream> stream;
  BufferPool pool;
  uint64_t generation = 0;  // bumped when the device changes

  Device& dev() {
    // After a timeout or a lost device the old Device runs nothing more: the next caller gets a new one (the fault
    // stays with the work that caused it). Kernels created on the old device are recreated (generation).
    if (device && device->faulted()) reset();
    if (!device) {
      DeviceOptions o;
      o.selector = selector;
      device = std::make_unique<Device>(o);
      ++generation;
    }
    return *device;
  }
  Stream& str() {
    if (!stream) stream = std::make_unique<Stream>(dev().createStream());
    return *stream;
  }
  void reset() {
    pool.free.clear();
    pool.pooledBytes = 0;
    stream.reset();
    device.reset();
  }
};

Runtime& runtime() {
  static Runtime* r = new Runtime();  // never destroyed: Vulkan teardown at exit order is not ours to decide
  return *r;
}

std::string shapeText(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

std::vector<std::string> listDevices() { return Device::list(); }

void setDevice(const std::string& selector) {
  Runtime& r = runtime();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  r.reset();
  r.selector = selector;
  r.dev();  // fail now on a bad selector
}

Device& currentDevice() {
  Runtime& r = runtime();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  return r.dev();
}

uint64_t deviceGeneration() {
  Runtime& r = runtime();
  std::lock_guard<std::recursive_mutex> lock(r.mutex);
  r.dev();
  return r.generation;
}

// ---------------------------------------------------------------------------------------------------------------
// MetalKernel
struct MetalKernel::Instances {
  struct Instance {
    Assembly assembly;
    std::shared_ptr<const CompiledModule> module;
    Kernel kernel;
    uint64_t generation = 0;
  };
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Instance>> byName;
};

MetalKernel::MetalKernel(KernelSpec spec)
    : spec_(std::move(spec)), instances_(std::make_unique<Instances>()) {
  if (spec_.outputNames.empty()) throw std::invalid_argument("[metal_kernel] Must specify at least one output.");
  shapeInfos_ = detectShapeInfos(spec_.source, spec_.inputNames);
  attributes_ = detectAttributes(spec_.source);
}
MetalKernel::~MetalKernel() = default;
MetalKernel::MetalKernel(MetalKernel&&) noexcept = default;
MetalKernel& MetalKernel::operator=(MetalKernel&&) noexcept = default;

Assembly MetalKernel::assemble(const std::vector<InputInfo>& inputs, const std::vector<Dtype>& outputDtypes,
                               const TemplateArgs& args) const {
  return mlx::assemble(spec_, inputs, outputDtypes, args);
}

std::vector<Array> MetalKernel::operator()(const Call& call) const {
  const size_t nin = spec_.inputNames.size(), nout = spec_.outputNames.size();
  auto sizeError = [](const char* what, size_t want, size_t got) {
    return std::invalid_argument(std::string("[metal_kernel] Expected `") + what + "` to have size " +
                                 std::to_string(want) + " but got size " + std::to_string(got) + ".");
  };
  if (call.inputs.size() != nin) throw sizeError("inputs", nin, call.inputs.size());
  if (call.outputShapes.size() != nout) throw sizeError("output_shapes", nout, call.outputShapes.size());
  if (call.outputDtypes.size() != nout) throw sizeError("output_dtypes", nout, call.outputDtypes.size());
  for (const auto& s : call.outputShapes)
    for (int64_t d : s)
      if (d < 0) throw std::invalid_argument("[metal_kernel] Negative output dimension in " + shapeText(s) + ".");
  for (size_t i = 0; i < nin; ++i) {
    const Array& a = call.inputs[i];
    if (!a.data && a.size() > 0)
      throw std::invalid_argument("[metal_kernel] Input '" + spec_.inputNames[i] + "' has no data.");
    if (!a.strides.empty() && a.strides.size() != a.shape.size())
      throw std::invalid_argument("[metal_kernel] Input '" + spec_.inputNames[i] + "' has " +
                                  std::to_string(a.strides.size()) + " strides for " +
                                  std::to_string(a.shape.size()) + " axes.");
  }

  std::vector<InputInfo> infos;
  infos.reserve(nin);
  for (const Array& a : call.inputs) infos.push_back({a.dtype, a.shape});
  const std::string name = kernelName(spec_.name, infos, call.outputDtypes, call.templateArgs);

  Runtime& rt = runtime();
  std::lock_guard<std::recursive_mutex> lock(rt.mutex);
  Device& dev = rt.dev();

  // The kernel name encodes everything the text depends on besides the spec (template arguments, input dtypes
  // and their address spaces, output dtypes), so it identifies the instance.
  std::shared_ptr<Instances::Instance> inst;
  {
    std::lock_guard<std::mutex> ilock(instances_->mutex);
    auto it = instances_->byName.find(name);
    if (it != instances_->byName.end()) inst = it->second;
  }
  if (!inst || inst->generation != rt.generation) {
    auto fresh = std::make_shared<Instances::Instance>();
    fresh->assembly = inst ? inst->assembly : assemble(infos, call.outputDtypes, call.templateArgs);
    if (call.verbose) {
      std::cout << "Generated source code for `" << spec_.name << "`:\n```\n" << fresh->assembly.source << "\n```"
                << std::endl;
    }
    fresh->module = inst ? inst->module : compileCached(fresh->assembly);
    fresh->kernel = createKernelFor(dev, *fresh->module);
    fresh->generation = rt.generation;
    std::lock_guard<std::mutex> ilock(instances_->mutex);
    instances_->byName[name] = fresh;
    inst = fresh;
  } else if (call.verbose) {
    std::cout << "Generated source code for `" << spec_.name << "`:\n```\n" << inst->assembly.source << "\n```"
              << std::endl;
  }

  // Threadgroup checks (MLX checks the requested size, then clamps it to the grid).
  const auto& tg = call.threadgroup;
  const auto& grid = call.grid;
  const uint64_t tgSize = uint64_t(tg[0]) * tg[1] * tg[2];
  const uint64_t maxTg = dev.info().maxWorkgroupInvocations;
  if (tgSize > maxTg)
    throw std::invalid_argument("[metal_kernel] Thread group size (" + std::to_string(tgSize) +
                                ") is greater than  the maximum allowed threads per threadgroup (" +
                                std::to_string(maxTg) + ").");
  Size3 group{std::min(tg[0], grid[0]), std::min(tg[1], grid[1]), std::min(tg[2], grid[2])};
  const bool emptyGrid = grid[0] == 0 || grid[1] == 0 || grid[2] == 0;
  if (!emptyGrid && (group.x == 0 || group.y == 0 || group.z == 0))
    throw std::invalid_argument("[metal_kernel] Threadgroup dimensions must be positive.");

  Stream& stream = rt.str();
  stream.setKernel(inst->kernel);
  std::vector<Buffer> used;
  struct Bound {
    Array array;  // possibly a row-contiguous copy
    std::vector<int64_t> strides;
  };
  std::vector<Bound> bound(nin);
  for (size_t i = 0; i < nin; ++i) {
    const Array& in = call.inputs[i];
    bound[i].array = (spec_.ensureRowContiguous && !in.rowContiguous()) ? toRowContiguous(in) : in;
    bound[i].strides = bound[i].array.effectiveStrides();
  }

  try {
    for (const BufferSlot& slot : inst->assembly.slots) {
      switch (slot.kind) {
        case BufferSlot::Kind::Input: {
          const Array& a = bound[slot.which].array;
          const std::vector<int64_t>& st = bound[slot.which].strides;
          const size_t item = itemSize(a.dtype);
          if (a.size() == 0) {
            uint32_t zero = 0;
            stream.setBytes(&zero, 4, slot.index);
            break;
          }
          // The memory the view spans, relative to its first element (strides may be negative).
          int64_t lo = 0, hi = 0;
          for (int d = 0; d < a.ndim(); ++d) {
            int64_t ext = st[d] * (a.shape[d] - 1);
            (ext < 0 ? lo : hi) += ext;
          }
          const uint8_t* base = static_cast<const uint8_t*>(a.data) + lo * int64_t(item);
          const size_t bytes = size_t(hi - lo + 1) * item;
          if (lo == 0 && bytes <= 4096) {
            stream.setBytes(base, bytes, slot.index);
          } else {
            Buffer buf = rt.pool.take(dev, bytes);
            used.push_back(buf);
            stream.upload(buf, 0, base, bytes);
            stream.setBuffer(buf, size_t(-lo) * item, slot.index);  // bound at the array's offset
          }
          break;
        }
        case BufferSlot::Kind::Shape: {
          const Array& a = bound[slot.which].array;
          std::vector<int32_t> shape(a.shape.size());
          for (size_t d = 0; d < shape.size(); ++d) {
            if (a.shape[d] > INT32_MAX)
              throw std::invalid_argument("[metal_kernel] Input shape does not fit int32: " + shapeText(a.shape));
            shape[d] = int32_t(a.shape[d]);
          }
          stream.setBytes(shape.data(), shape.size() * 4, slot.index);
          break;
        }
        case BufferSlot::Kind::Strides: {
          const std::vector<int64_t>& st = bound[slot.which].strides;
          stream.setBytes(st.data(), st.size() * 8, slot.index);
          break;
        }
        case BufferSlot::Kind::Ndim: {
          int32_t nd = int32_t(bound[slot.which].array.ndim());
          stream.setBytes(&nd, 4, slot.index);
          break;
        }
        case BufferSlot::Kind::Output:
          break;
      }
    }

    std::vector<Array> outs;
    std::vector<Buffer> outBufs;
    for (size_t o = 0; o < nout; ++o) {
      Array out = Array::allocate(call.outputDtypes[o], call.outputShapes[o]);
      const size_t nbytes = out.nbytes(), padded = (std::max<size_t>(nbytes, 4) + 3) & ~size_t(3);
      Buffer buf = rt.pool.take(dev, padded);
      used.push_back(buf);
      if (call.initValue) {
        const size_t item = itemSize(out.dtype);
        uint8_t elem[8];
        encodeElement(out.dtype, double(*call.initValue), elem);
        if (item <= 4) {
          uint32_t pattern = 0;
          for (size_t b = 0; b < 4; ++b) pattern |= uint32_t(elem[b % item]) << (8 * b);
          stream.fill(buf, 0, padded, pattern);
        } else {
          std::vector<uint8_t> host(nbytes);
          for (size_t e = 0; e < out.size(); ++e) std::memcpy(host.data() + e * item, elem, item);
          if (nbytes) stream.upload(buf, 0, host.data(), nbytes);
        }
      }
      outs.push_back(std::move(out));
      outBufs.push_back(buf);
    }
    for (const BufferSlot& slot : inst->assembly.slots)
      if (slot.kind == BufferSlot::Kind::Output) stream.setBuffer(outBufs[slot.which], 0, slot.index);

    if (!emptyGrid) stream.dispatchThreads(Size3{grid[0], grid[1], grid[2]}, group);
    for (size_t o = 0; o < nout; ++o)
      if (outs[o].nbytes()) stream.enqueueReadback(outBufs[o], 0, outs[o].mutableData(), outs[o].nbytes());
    stream.synchronize();
    for (auto& b : used) rt.pool.give(std::move(b));
    return outs;
  } catch (const DeviceError&) {
    // The stream may hold half-recorded work or a faulted device: start over on the next call.
    rt.stream.reset();
    throw;
  } catch (...) {
    // Recorded but unsubmitted commands reference our buffers; flush them so the stream is clean.
    try {
      stream.synchronize();
    } catch (...) {
      rt.stream.reset();
    }
    throw;
  }
}

}  // namespace m2v::mlx
