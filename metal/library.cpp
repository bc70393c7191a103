// Libraries (from source through the compiler and its caches, or from library files), functions with function
// constants, and compute pipeline states.
#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>

#include "metal2vk/library_file.h"
#include "metal2vk/mlx.h"
#include "objects.h"

namespace m2v::metal {
namespace {

LibraryImpl* newLibraryOf(DeviceImpl* device, std::shared_ptr<const std::vector<CompiledKernel>> kernels) {
  auto* library = new LibraryImpl;
  library->device = NS::RetainPtr(device);
  library->addKernels(std::move(kernels));
  return library;
}

// Metal's language version (major << 16 | minor) as __METAL_VERSION__ (major * 100 + minor * 10).
uint32_t metalVersion(MTL::LanguageVersion version) {
  return uint32_t(version >> 16) * 100 + uint32_t(version & 0xffff) * 10;
}

// The scalar a FunctionConstantValues entry holds, read from the caller's bytes.
std::optional<ConstantSetting> readConstant(const void* value, MTL::DataType type) {
  ConstantSetting c;
  auto load = [&](auto v) {
    std::memcpy(&v, value, sizeof v);
    return v;
  };
  switch (type) {
    case MTL::DataTypeBool: c.kind = ConstantSetting::Kind::Bool; c.i = load(uint8_t()) != 0; break;
    case MTL::DataTypeChar: c.i = load(int8_t()); break;
    case MTL::DataTypeUChar: c.kind = ConstantSetting::Kind::UInt; c.i = load(uint8_t()); break;
    case MTL::DataTypeShort: c.i = load(int16_t()); break;
    case MTL::DataTypeUShort: c.kind = ConstantSetting::Kind::UInt; c.i = load(uint16_t()); break;
    case MTL::DataTypeInt: c.i = load(int32_t()); break;
    case MTL::DataTypeUInt: c.kind = ConstantSetting::Kind::UInt; c.i = load(uint32_t()); break;
    case MTL::DataTypeLong: c.i = load(int64_t()); break;
    case MTL::DataTypeULong: c.kind = ConstantSetting::Kind::UInt; c.i = int64_t(load(uint64_t())); break;
    case MTL::DataTypeFloat: c.kind = ConstantSetting::Kind::Float; c.f = load(float()); break;
    case MTL::DataTypeHalf: {
      uint16_t h = load(uint16_t());
      uint32_t sign = uint32_t(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
      uint32_t bits;
      if (exponent == 0x1f) bits = sign | 0x7f800000u | (mantissa << 13);
      else if (exponent != 0) bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
      else if (mantissa == 0) bits = sign;
      else {  // subnormal half: normalise
        int e = -1;
        do { ++e; mantissa <<= 1; } while (!(mantissa & 0x400));
        bits = sign | uint32_t(112 - e) << 23 | ((mantissa & 0x3ff) << 13);
      }
      c.kind = ConstantSetting::Kind::Float;
      c.f = std::bit_cast<float>(bits);
      break;
    }
    case MTL::DataTypeBFloat:
      c.kind = ConstantSetting::Kind::Float;
      c.f = std::bit_cast<float>(uint32_t(load(uint16_t())) << 16);
      break;
    default: return std::nullopt;  // vectors and aggregates are not function-constant types metal2vk supports
  }
  return c;
}

// Metal requires the constant's type to be the declared one.
bool typeMatches(const std::string& declared, MTL::DataType type) {
  std::string t = declared;
  for (const char* word : {"constant ", "const ", "thread "})  // qualifiers are not part of the type
    for (size_t pos; (pos = t.find(word)) != std::string::npos;) t.erase(pos, std::strlen(word));
  std::erase(t, ' ');
  switch (type) {
    case MTL::DataTypeBool: return t == "bool";
    case MTL::DataTypeChar: return t == "char" || t == "int8_t";
    case MTL::DataTypeUChar: return t == "uchar" || t == "uint8_t";
    case MTL::DataTypeShort: return t == "short" || t == "int16_t";
    case MTL::DataTypeUShort: return t == "ushort" || t == "uint16_t";
    case MTL::DataTypeInt: return t == "int" || t == "int32_t";
    case MTL::DataTypeUInt: return t == "uint" || t == "uint32_t" || t == "unsigned";
    case MTL::DataTypeLong: return t == "long" || t == "int64_t";
    case MTL::DataTypeULong: return t == "ulong" || t == "uint64_t" || t == "size_t";
    case MTL::DataTypeFloat: return t == "float";
    case MTL::DataTypeHalf: return t == "half";
    case MTL::DataTypeBFloat: return t == "bfloat";
    default: return false;
  }
}

MTL::Function* makeFunction(LibraryImpl* library, const std::string& name, const std::string& specializedName,
                            const MTL::FunctionConstantValues* values, NS::Error** error) {
  auto it = library->byName.find(name);
  if (it == library->byName.end()) {
    setError(error, kLibraryErrorDomain, MTL::LibraryErrorFunctionNotFound,
             "Function " + name + " was not found in the library");
    return nullptr;
  }
  const CompiledKernel* compiled = nullptr;
  try {
    compiled = &library->kernel(it->second);
  } catch (const m2v::mlx::CompileError& e) {
    setError(error, kLibraryErrorDomain,
             e.status == m2v::Status::Unsupported ? MTL::LibraryErrorUnsupported : MTL::LibraryErrorCompileFailure,
             "Function " + name + " did not compile:\n" + e.diagnostics);
    return nullptr;
  } catch (const std::exception& e) {
    setError(error, kLibraryErrorDomain, MTL::LibraryErrorInternal, "Function " + name + ": " + e.what());
    return nullptr;
  }
  const KernelReflection& reflection = compiled->reflection;
  std::vector<std::pair<uint32_t, ConstantSetting>> constants;
  if (values) {
    for (const auto& entry : impl<const FunctionConstantValuesImpl>(values)->entries) {
      const FunctionConstant* declared = nullptr;
      for (const FunctionConstant& fc : reflection.functionConstants)
        if (entry.index ? fc.index == *entry.index : fc.name == entry.name) declared = &fc;
      if (!declared) continue;  // constants the function does not declare are ignored, as in Metal
      if (!typeMatches(declared->type, entry.type)) {
        setError(error, kLibraryErrorDomain, MTL::LibraryErrorCompileFailure,
                 "Function " + name + ": function constant '" + declared->name + "' (index " +
                     std::to_string(declared->index) + ") is declared " + declared->type +
                     " but was given a value of another type (MTL::DataType " + std::to_string(entry.type) + ")");
        return nullptr;
      }
      std::erase_if(constants, [&](const auto& c) { return c.first == declared->index; });
      constants.emplace_back(declared->index, entry.value);
    }
  }
  auto* function = new FunctionImpl;
  function->library = NS::RetainPtr(library);
  function->kernelIndex = it->second;
  function->name = NS::TransferPtr(newString(specializedName.empty() ? name : specializedName));
  function->constants = std::move(constants);
  return function;
}

}  // namespace

void LibraryImpl::addKernels(std::shared_ptr<const std::vector<CompiledKernel>> kernels) {
  for (const CompiledKernel& k : *kernels) {
    byName.emplace(k.reflection.entry, entries.size());
    entries.push_back({k.reflection.entry, std::shared_ptr<const CompiledKernel>(kernels, &k), nullptr, 0});
  }
}

void LibraryImpl::addSource(std::shared_ptr<const m2v::DeferredSource> source) {
  for (size_t i = 0; i < source->entries.size(); ++i) {
    byName.emplace(source->entries[i].name, entries.size());
    entries.push_back({source->entries[i].name, nullptr, source, i});
  }
}

const CompiledKernel& LibraryImpl::kernel(size_t index) {
  Entry& entry = entries[index];
  {
    std::lock_guard lock(compileMutex);
    if (entry.compiled) return *entry.compiled;
  }
  // Compiled outside the lock (seconds for a large file's instantiation): two threads asking for the same entry at
  // once compile it twice, and the module cache keeps one.
  const m2v::DeferredEntry& deferred = entry.source->entries[entry.sourceEntry];
  auto kernels = m2v::mlx::compileLibraryCached(entry.source->sourceFor(deferred), entry.source->name,
                                                entry.source->optionsFor(deferred));
  auto it = std::find_if(kernels->begin(), kernels->end(),
                         [&](const CompiledKernel& k) { return k.reflection.entry == entry.name; });
  if (it == kernels->end())
    throw m2v::mlx::CompileError(m2v::Status::InternalError,
                                 "the instantiation of " + entry.name + " compiled to no entry point of that name",
                                 entry.source->name);
  std::lock_guard lock(compileMutex);
  if (!entry.compiled) entry.compiled = std::shared_ptr<const CompiledKernel>(kernels, &*it);
  return *entry.compiled;
}

m2v::Kernel LibraryImpl::runtimeKernel(size_t index) {
  uint64_t generation = device->generation();
  const CompiledKernel& compiled = kernel(index);
  std::lock_guard lock(kernelMutex);
  if (generation != kernelsGeneration) {  // the device was replaced: its shader modules went with it
    runtimeKernels.clear();
    kernelsGeneration = generation;
  }
  if (auto it = runtimeKernels.find(index); it != runtimeKernels.end()) return it->second;
  std::shared_ptr<m2v::Device> current = device->runtime();
  m2v::Device& runtime = *current;
  // The portable build: its native-bfloat16 emission where the device has the bfloat16 type (M2V_NATIVE_BFLOAT16).
  const CompiledModule& base =
      compiled.nativeBfloat16 && runtime.info().runsNativeBfloat16() ? *compiled.nativeBfloat16 : compiled;
  m2v::Kernel kernel = runtime.createKernel(base.spirv, base.reflection);
  if (compiled.cooperative) {
    // The build on cooperative matrices where the device offers its shapes; the portable one otherwise.
    bool offered = true;
    for (const std::string& shape : compiled.cooperative->reflection.cooperativeMatrixShapes)
      offered = offered && runtime.info().offersCooperativeMatrix(shape);
    if (offered && !compiled.cooperative->reflection.cooperativeMatrixShapes.empty()) {
      try {
        kernel = runtime.createCooperativeKernel(compiled.cooperative->spirv, compiled.cooperative->reflection, kernel);
      } catch (const m2v::UnsupportedError&) {
      }
    }
  }
  runtimeKernels.emplace(index, kernel);
  return kernel;
}

}  // namespace m2v::metal

using namespace m2v::metal;

namespace MTL {

// --- CompileOptions ---
CompileOptions* CompileOptions::alloc() { return new CompileOptionsImpl; }
CompileOptions* CompileOptions::init() {
  impl<CompileOptionsImpl>(this)->mathMode = MathModeFast;  // Metal compiles with fast math unless told otherwise
  return this;
}
NS::Dictionary* CompileOptions::preprocessorMacros() const { return nullptr; }
void CompileOptions::setPreprocessorMacros(const NS::Dictionary* macros) {
  impl<CompileOptionsImpl>(this)->macrosGiven = macros != nullptr;
}
bool CompileOptions::fastMathEnabled() const { return impl<const CompileOptionsImpl>(this)->mathMode == MathModeFast; }
void CompileOptions::setFastMathEnabled(bool enabled) {
  impl<CompileOptionsImpl>(this)->mathMode = enabled ? MathModeFast : MathModeSafe;
}
MathMode CompileOptions::mathMode() const { return impl<const CompileOptionsImpl>(this)->mathMode; }
void CompileOptions::setMathMode(MathMode mode) { impl<CompileOptionsImpl>(this)->mathMode = mode; }
MathFloatingPointFunctions CompileOptions::mathFloatingPointFunctions() const {
  return impl<const CompileOptionsImpl>(this)->floatingPointFunctions;
}
void CompileOptions::setMathFloatingPointFunctions(MathFloatingPointFunctions f) {
  impl<CompileOptionsImpl>(this)->floatingPointFunctions = f;
}
LanguageVersion CompileOptions::languageVersion() const { return impl<const CompileOptionsImpl>(this)->languageVersion; }
void CompileOptions::setLanguageVersion(LanguageVersion v) { impl<CompileOptionsImpl>(this)->languageVersion = v; }
LibraryType CompileOptions::libraryType() const { return impl<const CompileOptionsImpl>(this)->libraryType; }
void CompileOptions::setLibraryType(LibraryType t) { impl<CompileOptionsImpl>(this)->libraryType = t; }
bool CompileOptions::preserveInvariance() const { return impl<const CompileOptionsImpl>(this)->preserveInvariance; }
void CompileOptions::setPreserveInvariance(bool p) { impl<CompileOptionsImpl>(this)->preserveInvariance = p; }
LibraryOptimizationLevel CompileOptions::optimizationLevel() const {
  return impl<const CompileOptionsImpl>(this)->optimizationLevel;
}
void CompileOptions::setOptimizationLevel(LibraryOptimizationLevel l) {
  impl<CompileOptionsImpl>(this)->optimizationLevel = l;
}
bool CompileOptions::enableLogging() const { return impl<const CompileOptionsImpl>(this)->enableLogging; }
void CompileOptions::setEnableLogging(bool e) { impl<CompileOptionsImpl>(this)->enableLogging = e; }
NS::UInteger CompileOptions::maxTotalThreadsPerThreadgroup() const {
  return impl<const CompileOptionsImpl>(this)->maxThreads;
}
void CompileOptions::setMaxTotalThreadsPerThreadgroup(NS::UInteger n) { impl<CompileOptionsImpl>(this)->maxThreads = n; }

// --- Device: libraries and pipelines ---
Library* Device::newLibrary(const NS::String* source, const CompileOptions* options, NS::Error** error) {
  auto* device = impl<DeviceImpl>(this);
  m2v::CompileOptions compile;
  compile.fastMath = true;  // Metal's default
  if (options) {
    auto* o = impl<const CompileOptionsImpl>(options);
    if (o->macrosGiven) {
      setError(error, kLibraryErrorDomain, LibraryErrorUnsupported,
               "CompileOptions::preprocessorMacros is not supported by metal2vk; define the macros in the source");
      return nullptr;
    }
    if (o->libraryType != LibraryTypeExecutable) {
      setError(error, kLibraryErrorDomain, LibraryErrorUnsupported,
               "dynamic libraries (LibraryTypeDynamic) are not supported by metal2vk");
      return nullptr;
    }
    // Relaxed math may reassociate but keeps infinities and NaNs: metal2vk compiles it as safe (precise) math.
    compile.fastMath = o->mathMode == MathModeFast;
    compile.metalVersion = metalVersion(o->languageVersion);
  }
  try {
    auto kernels = m2v::mlx::compileLibraryCached(stringText(source), "program_source", compile);
    return newLibraryOf(device, std::move(kernels));
  } catch (const m2v::mlx::CompileError& e) {
    setError(error, kLibraryErrorDomain,
             e.status == m2v::Status::Unsupported ? LibraryErrorUnsupported : LibraryErrorCompileFailure,
             e.diagnostics);
  } catch (const std::exception& e) {
    setError(error, kLibraryErrorDomain, LibraryErrorInternal, e.what());
  }
  return nullptr;
}

Library* Device::newLibrary(const NS::String* filepath, NS::Error** error) {
  const std::string& path = stringText(filepath);
  if (!std::ifstream(path)) {
    setError(error, kLibraryErrorDomain, LibraryErrorFileNotFound, "library file not found: " + path);
    return nullptr;
  }
  try {
    m2v::LibraryContents contents = m2v::readLibrary(path);
    auto* library = newLibraryOf(
        impl<DeviceImpl>(this), std::make_shared<const std::vector<m2v::CompiledKernel>>(std::move(contents.kernels)));
    for (m2v::DeferredSource& source : contents.sources)
      library->addSource(std::make_shared<const m2v::DeferredSource>(std::move(source)));
    return library;
  } catch (const std::exception& e) {
    setError(error, kLibraryErrorDomain, LibraryErrorInternal, e.what());
    return nullptr;
  }
}

Library* Device::newLibrary(const NS::URL* url, NS::Error** error) {
  const char* path = url ? url->fileSystemRepresentation() : nullptr;
  if (!path) {
    setError(error, kLibraryErrorDomain, LibraryErrorFileNotFound, "newLibrary: not a file URL");
    return nullptr;
  }
  return newLibrary(makeString(path), error);
}

Library* Device::newDefaultLibrary() {
  NS::URL* dir = NS::Bundle::mainBundle() ? NS::Bundle::mainBundle()->resourceURL() : nullptr;
  if (!dir) return nullptr;
  return newLibrary(makeString(std::string(dir->fileSystemRepresentation()) + "/default.metallib"), nullptr);
}

ComputePipelineState* Device::newComputePipelineState(const Function* function, NS::Error** error) {
  return newComputePipelineState(function, PipelineOptionNone, nullptr, error);
}

ComputePipelineState* Device::newComputePipelineState(const Function* function, PipelineOption,
                                                      ComputePipelineReflection** reflection, NS::Error** error) {
  if (reflection) *reflection = nullptr;  // reflection objects are not provided
  auto* device = impl<DeviceImpl>(this);
  if (!function) {
    setError(error, kPipelineErrorDomain, LibraryErrorInternal, "newComputePipelineState: no function");
    return nullptr;
  }
  auto* f = impl<FunctionImpl>(function);
  const m2v::KernelReflection& r = f->kernel().reflection;
  try {
    f->library->runtimeKernel(f->kernelIndex);  // checks that the device can run it
    const m2v::DeviceInfo& info = device->info();
    auto* state = new ComputePipelineStateImpl;
    state->device = NS::RetainPtr(device);
    state->function = NS::RetainPtr(f);
    NS::UInteger maxThreads = std::min<NS::UInteger>(info.maxWorkgroupInvocations, 1024);
    if (r.requiredSubgroupSize && info.maxComputeWorkgroupSubgroups)
      maxThreads = std::min<NS::UInteger>(maxThreads, NS::UInteger(info.maxComputeWorkgroupSubgroups) * r.requiredSubgroupSize);
    state->maxThreads = maxThreads;
    state->executionWidth = r.requiredSubgroupSize ? r.requiredSubgroupSize : info.subgroupSize;
    state->staticThreadgroupBytes = r.staticThreadgroupBytes;
    return state;
  } catch (const std::exception& e) {
    setError(error, kPipelineErrorDomain, LibraryErrorUnsupported, e.what());
    return nullptr;
  }
}

ComputePipelineState* Device::newComputePipelineState(const ComputePipelineDescriptor* descriptor,
                                                      PipelineOption options, ComputePipelineReflection** reflection,
                                                      NS::Error** error) {
  auto* d = impl<const ComputePipelineDescriptorImpl>(descriptor);
  if (!d || !d->function) {
    setError(error, kPipelineErrorDomain, LibraryErrorInternal, "ComputePipelineDescriptor has no compute function");
    return nullptr;
  }
  if (d->linked) {
    auto* l = impl<const LinkedFunctionsImpl>(d->linked.get());
    auto count = [](const NS::SharedPtr<NS::Array>& a) { return a ? a->count() : 0; };
    if (count(l->functions) + count(l->binaryFunctions) + count(l->privateFunctions) > 0) {
      setError(error, kPipelineErrorDomain, LibraryErrorUnsupported,
               "linked functions (MTL::LinkedFunctions) are not supported by metal2vk: compile the functions into "
               "the kernel's source");
      return nullptr;
    }
  }
  ComputePipelineState* state = newComputePipelineState(d->function.get(), options, reflection, error);
  if (state && d->maxThreads)
    impl<ComputePipelineStateImpl>(state)->maxThreads = std::min(state->maxTotalThreadsPerThreadgroup(), d->maxThreads);
  return state;
}

// --- Library ---
NS::String* Library::label() const { return impl<const LibraryImpl>(this)->label.get(); }
void Library::setLabel(const NS::String* label) { impl<LibraryImpl>(this)->label.set(label); }
Device* Library::device() const { return impl<const LibraryImpl>(this)->device.get(); }
LibraryType Library::type() const { return LibraryTypeExecutable; }
NS::Array* Library::functionNames() const {
  std::vector<NS::SharedPtr<NS::String>> names;
  std::vector<const NS::Object*> objects;
  for (const LibraryImpl::Entry& entry : impl<const LibraryImpl>(this)->entries) {
    names.push_back(NS::TransferPtr(newString(entry.name)));
    objects.push_back(names.back().get());
  }
  return NS::Array::array(objects.data(), objects.size());
}
Function* Library::newFunction(const NS::String* functionName) {
  return makeFunction(impl<LibraryImpl>(this), stringText(functionName), "", nullptr, nullptr);
}
Function* Library::newFunction(const NS::String* name, const FunctionConstantValues* values, NS::Error** error) {
  return makeFunction(impl<LibraryImpl>(this), stringText(name), "", values, error);
}
Function* Library::newFunction(const FunctionDescriptor* descriptor, NS::Error** error) {
  auto* d = impl<const FunctionDescriptorImpl>(descriptor);
  return makeFunction(impl<LibraryImpl>(this), stringText(d->name.get()), stringText(d->specializedName.get()),
                      d->constants.get(), error);
}

// --- Function ---
NS::String* Function::label() const { return impl<const FunctionImpl>(this)->label.get(); }
void Function::setLabel(const NS::String* label) { impl<FunctionImpl>(this)->label.set(label); }
Device* Function::device() const { return impl<const FunctionImpl>(this)->library->device.get(); }
FunctionType Function::functionType() const { return FunctionTypeKernel; }
NS::String* Function::name() const { return impl<const FunctionImpl>(this)->name.get(); }
FunctionOptions Function::options() const { return FunctionOptionNone; }

// --- FunctionConstantValues ---
FunctionConstantValues* FunctionConstantValues::alloc() { return new FunctionConstantValuesImpl; }
FunctionConstantValues* FunctionConstantValues::init() { return this; }
static void addConstant(FunctionConstantValuesImpl* values, std::optional<NS::UInteger> index, std::string name,
                        const void* value, DataType type) {
  std::optional<ConstantSetting> c = value ? readConstant(value, type) : std::nullopt;
  // A type metal2vk cannot read stays recorded as unreadable; newFunction reports the mismatch.
  values->entries.push_back({index, std::move(name), c ? type : DataTypeNone, c.value_or(ConstantSetting{})});
}
void FunctionConstantValues::setConstantValue(const void* value, DataType type, NS::UInteger index) {
  addConstant(impl<FunctionConstantValuesImpl>(this), index, "", value, type);
}
void FunctionConstantValues::setConstantValue(const void* value, DataType type, const NS::String* name) {
  addConstant(impl<FunctionConstantValuesImpl>(this), std::nullopt, stringText(name), value, type);
}
void FunctionConstantValues::setConstantValues(const void* values, DataType type, NS::Range range) {
  size_t stride = type == DataTypeBool || type == DataTypeChar || type == DataTypeUChar ? 1
                  : type == DataTypeShort || type == DataTypeUShort || type == DataTypeHalf || type == DataTypeBFloat ? 2
                  : type == DataTypeLong || type == DataTypeULong ? 8
                                                                  : 4;
  for (NS::UInteger i = 0; i < range.length; ++i)
    setConstantValue(static_cast<const uint8_t*>(values) + i * stride, type, range.location + i);
}
void FunctionConstantValues::reset() { impl<FunctionConstantValuesImpl>(this)->entries.clear(); }

// --- FunctionDescriptor ---
FunctionDescriptor* FunctionDescriptor::functionDescriptor() { return alloc()->init()->autorelease(); }
FunctionDescriptor* FunctionDescriptor::alloc() { return new FunctionDescriptorImpl; }
FunctionDescriptor* FunctionDescriptor::init() { return this; }
NS::String* FunctionDescriptor::name() const { return impl<const FunctionDescriptorImpl>(this)->name.get(); }
void FunctionDescriptor::setName(const NS::String* name) {
  impl<FunctionDescriptorImpl>(this)->name = NS::TransferPtr(newString(stringText(name)));
}
NS::String* FunctionDescriptor::specializedName() const {
  return impl<const FunctionDescriptorImpl>(this)->specializedName.get();
}
void FunctionDescriptor::setSpecializedName(const NS::String* name) {
  impl<FunctionDescriptorImpl>(this)->specializedName = NS::TransferPtr(newString(stringText(name)));
}
FunctionConstantValues* FunctionDescriptor::constantValues() const {
  return impl<const FunctionDescriptorImpl>(this)->constants.get();
}
void FunctionDescriptor::setConstantValues(const FunctionConstantValues* values) {
  impl<FunctionDescriptorImpl>(this)->constants = NS::RetainPtr(const_cast<FunctionConstantValues*>(values));
}
FunctionOptions FunctionDescriptor::options() const { return impl<const FunctionDescriptorImpl>(this)->options; }
void FunctionDescriptor::setOptions(FunctionOptions options) { impl<FunctionDescriptorImpl>(this)->options = options; }

// --- LinkedFunctions ---
LinkedFunctions* LinkedFunctions::linkedFunctions() { return alloc()->init()->autorelease(); }
LinkedFunctions* LinkedFunctions::alloc() { return new LinkedFunctionsImpl; }
LinkedFunctions* LinkedFunctions::init() { return this; }
NS::Array* LinkedFunctions::functions() const { return impl<const LinkedFunctionsImpl>(this)->functions.get(); }
void LinkedFunctions::setFunctions(const NS::Array* f) {
  impl<LinkedFunctionsImpl>(this)->functions = NS::RetainPtr(const_cast<NS::Array*>(f));
}
NS::Array* LinkedFunctions::binaryFunctions() const {
  return impl<const LinkedFunctionsImpl>(this)->binaryFunctions.get();
}
void LinkedFunctions::setBinaryFunctions(const NS::Array* f) {
  impl<LinkedFunctionsImpl>(this)->binaryFunctions = NS::RetainPtr(const_cast<NS::Array*>(f));
}
NS::Array* LinkedFunctions::privateFunctions() const {
  return impl<const LinkedFunctionsImpl>(this)->privateFunctions.get();
}
void LinkedFunctions::setPrivateFunctions(const NS::Array* f) {
  impl<LinkedFunctionsImpl>(this)->privateFunctions = NS::RetainPtr(const_cast<NS::Array*>(f));
}

// --- ComputePipelineDescriptor ---
ComputePipelineDescriptor* ComputePipelineDescriptor::alloc() { return new ComputePipelineDescriptorImpl; }
ComputePipelineDescriptor* ComputePipelineDescriptor::init() { return this; }
NS::String* ComputePipelineDescriptor::label() const {
  return impl<const ComputePipelineDescriptorImpl>(this)->label.get();
}
void ComputePipelineDescriptor::setLabel(const NS::String* label) {
  impl<ComputePipelineDescriptorImpl>(this)->label.set(label);
}
Function* ComputePipelineDescriptor::computeFunction() const {
  return impl<const ComputePipelineDescriptorImpl>(this)->function.get();
}
void ComputePipelineDescriptor::setComputeFunction(const Function* f) {
  impl<ComputePipelineDescriptorImpl>(this)->function = NS::RetainPtr(const_cast<Function*>(f));
}
bool ComputePipelineDescriptor::threadGroupSizeIsMultipleOfThreadExecutionWidth() const {
  return impl<const ComputePipelineDescriptorImpl>(this)->multipleOfExecutionWidth;
}
void ComputePipelineDescriptor::setThreadGroupSizeIsMultipleOfThreadExecutionWidth(bool v) {
  impl<ComputePipelineDescriptorImpl>(this)->multipleOfExecutionWidth = v;
}
NS::UInteger ComputePipelineDescriptor::maxTotalThreadsPerThreadgroup() const {
  return impl<const ComputePipelineDescriptorImpl>(this)->maxThreads;
}
void ComputePipelineDescriptor::setMaxTotalThreadsPerThreadgroup(NS::UInteger n) {
  impl<ComputePipelineDescriptorImpl>(this)->maxThreads = n;
}
LinkedFunctions* ComputePipelineDescriptor::linkedFunctions() const {
  return impl<const ComputePipelineDescriptorImpl>(this)->linked.get();
}
void ComputePipelineDescriptor::setLinkedFunctions(const LinkedFunctions* f) {
  impl<ComputePipelineDescriptorImpl>(this)->linked = NS::RetainPtr(const_cast<LinkedFunctions*>(f));
}
void ComputePipelineDescriptor::reset() {
  auto* d = impl<ComputePipelineDescriptorImpl>(this);
  d->function = nullptr;
  d->linked = nullptr;
  d->multipleOfExecutionWidth = false;
  d->maxThreads = 0;
}

// --- ComputePipelineState ---
NS::String* ComputePipelineState::label() const { return impl<const ComputePipelineStateImpl>(this)->label.get(); }
Device* ComputePipelineState::device() const { return impl<const ComputePipelineStateImpl>(this)->device.get(); }
NS::UInteger ComputePipelineState::maxTotalThreadsPerThreadgroup() const {
  return impl<const ComputePipelineStateImpl>(this)->maxThreads;
}
NS::UInteger ComputePipelineState::threadExecutionWidth() const {
  return impl<const ComputePipelineStateImpl>(this)->executionWidth;
}
NS::UInteger ComputePipelineState::staticThreadgroupMemoryLength() const {
  return impl<const ComputePipelineStateImpl>(this)->staticThreadgroupBytes;
}

}  // namespace MTL
