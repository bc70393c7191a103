// Libraries, functions, function constants and compute pipelines.
//
// A library is a set of compiled kernels: Device::newLibrary(source, options, error) compiles Metal source in
// process with metal2vk's compiler (every kernel entry point, cached by content in memory and on disk); the
// newLibrary(path or URL) forms read a library file written by `m2v` at build time. Function constants become
// Vulkan specialization constants.
#pragma once

#include "MTLTypes.hpp"

namespace MTL {

class Device;
class Function;

class CompileOptions : public NS::Referencing<CompileOptions> {
 public:
  static CompileOptions* alloc();
  CompileOptions* init();
  NS::Dictionary* preprocessorMacros() const;
  void setPreprocessorMacros(const NS::Dictionary* macros);  // not supported: newLibrary reports an error
  bool fastMathEnabled() const;
  void setFastMathEnabled(bool enabled);
  MathMode mathMode() const;
  void setMathMode(MathMode mode);
  MathFloatingPointFunctions mathFloatingPointFunctions() const;
  void setMathFloatingPointFunctions(MathFloatingPointFunctions functions);
  LanguageVersion languageVersion() const;
  void setLanguageVersion(LanguageVersion version);
  LibraryType libraryType() const;
  void setLibraryType(LibraryType type);  // only executable libraries
  bool preserveInvariance() const;
  void setPreserveInvariance(bool preserve);
  LibraryOptimizationLevel optimizationLevel() const;
  void setOptimizationLevel(LibraryOptimizationLevel level);
  bool enableLogging() const;
  void setEnableLogging(bool enable);  // os_log output is dropped (no channel from a Vulkan kernel)
  NS::UInteger maxTotalThreadsPerThreadgroup() const;
  void setMaxTotalThreadsPerThreadgroup(NS::UInteger count);

 protected:
  CompileOptions() = default;
};

class FunctionConstantValues : public NS::Referencing<FunctionConstantValues> {
 public:
  static FunctionConstantValues* alloc();
  FunctionConstantValues* init();
  // `value` points at one scalar of `type` (bool as one byte, half as 16 bits, ...); the value is copied.
  void setConstantValue(const void* value, DataType type, NS::UInteger index);
  void setConstantValue(const void* value, DataType type, const NS::String* name);
  void setConstantValues(const void* values, DataType type, NS::Range range);
  void reset();

 protected:
  FunctionConstantValues() = default;
};

class FunctionDescriptor : public NS::Referencing<FunctionDescriptor> {
 public:
  static FunctionDescriptor* functionDescriptor();
  static FunctionDescriptor* alloc();
  FunctionDescriptor* init();
  NS::String* name() const;
  void setName(const NS::String* name);
  NS::String* specializedName() const;
  void setSpecializedName(const NS::String* name);
  FunctionConstantValues* constantValues() const;
  void setConstantValues(const FunctionConstantValues* values);
  FunctionOptions options() const;
  void setOptions(FunctionOptions options);

 protected:
  FunctionDescriptor() = default;
};

class Function : public NS::Referencing<Function> {
 public:
  NS::String* label() const;
  void setLabel(const NS::String* label);
  Device* device() const;
  FunctionType functionType() const;
  NS::String* name() const;  // the specialized name when one was given
  FunctionOptions options() const;

 protected:
  Function() = default;
};

class Library : public NS::Referencing<Library> {
 public:
  NS::String* label() const;
  void setLabel(const NS::String* label);
  Device* device() const;
  LibraryType type() const;
  NS::Array* functionNames() const;
  // nil when the library has no kernel of that name.
  Function* newFunction(const NS::String* functionName);
  Function* newFunction(const NS::String* name, const FunctionConstantValues* constantValues, NS::Error** error);
  Function* newFunction(const FunctionDescriptor* descriptor, NS::Error** error);

 protected:
  Library() = default;
};

// Functions compiled separately and linked into a pipeline (visible functions). metal2vk compiles each source as a
// whole, so a pipeline descriptor that names linked functions fails with an error.
class LinkedFunctions : public NS::Referencing<LinkedFunctions> {
 public:
  static LinkedFunctions* linkedFunctions();
  static LinkedFunctions* alloc();
  LinkedFunctions* init();
  NS::Array* functions() const;
  void setFunctions(const NS::Array* functions);
  NS::Array* binaryFunctions() const;
  void setBinaryFunctions(const NS::Array* functions);
  NS::Array* privateFunctions() const;
  void setPrivateFunctions(const NS::Array* functions);

 protected:
  LinkedFunctions() = default;
};

class ComputePipelineReflection;

class ComputePipelineDescriptor : public NS::Referencing<ComputePipelineDescriptor> {
 public:
  static ComputePipelineDescriptor* alloc();
  ComputePipelineDescriptor* init();
  NS::String* label() const;
  void setLabel(const NS::String* label);
  Function* computeFunction() const;
  void setComputeFunction(const Function* function);
  bool threadGroupSizeIsMultipleOfThreadExecutionWidth() const;
  void setThreadGroupSizeIsMultipleOfThreadExecutionWidth(bool value);
  NS::UInteger maxTotalThreadsPerThreadgroup() const;
  void setMaxTotalThreadsPerThreadgroup(NS::UInteger count);
  LinkedFunctions* linkedFunctions() const;
  void setLinkedFunctions(const LinkedFunctions* functions);
  void reset();

 protected:
  ComputePipelineDescriptor() = default;
};

class ComputePipelineState : public NS::Referencing<ComputePipelineState> {
 public:
  NS::String* label() const;
  Device* device() const;
  // As Metal's: the most threads one threadgroup of this pipeline may have (device limit, and for kernels that
  // need 32-wide simdgroups the subgroups a workgroup may hold).
  NS::UInteger maxTotalThreadsPerThreadgroup() const;
  // The SIMD width the kernel runs with: 32 for kernels that use simdgroup functions (they require 32-wide
  // subgroups), the device's subgroup width otherwise.
  NS::UInteger threadExecutionWidth() const;
  NS::UInteger staticThreadgroupMemoryLength() const;

 protected:
  ComputePipelineState() = default;
};

}  // namespace MTL
