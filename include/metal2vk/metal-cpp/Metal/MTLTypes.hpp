// Metal's value types and enumerations, with metal-cpp's names and Apple's values.
#pragma once

#include <cstdint>
// Apple's metal-cpp and libc++ make <optional> visible to code that includes <Metal/Metal.hpp> (MLX's kernels.h
// relies on it); libstdc++ does not, so it is included here.
#include <optional>

#include "../Foundation/Foundation.hpp"

// Apple's clang evaluates availability checks against the OS version; metal2vk's Metal API is one version for
// every platform, so on compilers without the builtin (g++) every check is taken as available, as clang does for a
// platform the check does not name.
#if !defined(__clang__) && !defined(__builtin_available)
#define __builtin_available(...) 1
#endif

namespace MTL {

struct Size {
  NS::UInteger width = 0, height = 0, depth = 0;
  Size() = default;
  Size(NS::UInteger w, NS::UInteger h, NS::UInteger d) : width(w), height(h), depth(d) {}
  static Size Make(NS::UInteger w, NS::UInteger h, NS::UInteger d) { return Size(w, h, d); }
};

struct Origin {
  NS::UInteger x = 0, y = 0, z = 0;
  Origin() = default;
  Origin(NS::UInteger x_, NS::UInteger y_, NS::UInteger z_) : x(x_), y(y_), z(z_) {}
  static Origin Make(NS::UInteger x, NS::UInteger y, NS::UInteger z) { return Origin(x, y, z); }
};

struct Region {
  Origin origin;
  Size size;
};

using ResourceOptions = NS::UInteger;
enum : NS::UInteger {
  ResourceCPUCacheModeDefaultCache = 0,
  ResourceCPUCacheModeWriteCombined = 1,
  ResourceStorageModeShared = 0,
  ResourceStorageModeManaged = 16,
  ResourceStorageModePrivate = 32,
  ResourceStorageModeMemoryless = 48,
  ResourceHazardTrackingModeDefault = 0,
  ResourceHazardTrackingModeUntracked = 256,
  ResourceHazardTrackingModeTracked = 512,
  ResourceOptionCPUCacheModeDefault = ResourceCPUCacheModeDefaultCache,
  ResourceOptionCPUCacheModeWriteCombined = ResourceCPUCacheModeWriteCombined,
};
constexpr NS::UInteger ResourceStorageModeShift = 4, ResourceStorageModeMask = 0xf0;
constexpr NS::UInteger ResourceHazardTrackingModeShift = 8, ResourceHazardTrackingModeMask = 0x300;
constexpr NS::UInteger ResourceCPUCacheModeMask = 0xf;

enum StorageMode : NS::UInteger {
  StorageModeShared = 0,
  StorageModeManaged = 1,
  StorageModePrivate = 2,
  StorageModeMemoryless = 3,
};
enum CPUCacheMode : NS::UInteger { CPUCacheModeDefaultCache = 0, CPUCacheModeWriteCombined = 1 };
enum HazardTrackingMode : NS::UInteger {
  HazardTrackingModeDefault = 0,
  HazardTrackingModeUntracked = 1,
  HazardTrackingModeTracked = 2,
};
enum PurgeableState : NS::UInteger {
  PurgeableStateKeepCurrent = 1,
  PurgeableStateNonVolatile = 2,
  PurgeableStateVolatile = 3,
  PurgeableStateEmpty = 4,
};
enum HeapType : NS::Integer { HeapTypeAutomatic = 0, HeapTypePlacement = 1, HeapTypeSparse = 2 };

enum DataType : NS::UInteger {
  DataTypeNone = 0,
  DataTypeStruct = 1,
  DataTypeArray = 2,
  DataTypeFloat = 3,
  DataTypeFloat2 = 4,
  DataTypeFloat3 = 5,
  DataTypeFloat4 = 6,
  DataTypeHalf = 16,
  DataTypeHalf2 = 17,
  DataTypeHalf3 = 18,
  DataTypeHalf4 = 19,
  DataTypeInt = 29,
  DataTypeInt2 = 30,
  DataTypeInt3 = 31,
  DataTypeInt4 = 32,
  DataTypeUInt = 33,
  DataTypeUInt2 = 34,
  DataTypeUInt3 = 35,
  DataTypeUInt4 = 36,
  DataTypeShort = 37,
  DataTypeShort2 = 38,
  DataTypeShort3 = 39,
  DataTypeShort4 = 40,
  DataTypeUShort = 41,
  DataTypeUShort2 = 42,
  DataTypeUShort3 = 43,
  DataTypeUShort4 = 44,
  DataTypeChar = 45,
  DataTypeChar2 = 46,
  DataTypeChar3 = 47,
  DataTypeChar4 = 48,
  DataTypeUChar = 49,
  DataTypeUChar2 = 50,
  DataTypeUChar3 = 51,
  DataTypeUChar4 = 52,
  DataTypeBool = 53,
  DataTypeBool2 = 54,
  DataTypeBool3 = 55,
  DataTypeBool4 = 56,
  DataTypeLong = 81,
  DataTypeLong2 = 82,
  DataTypeLong3 = 83,
  DataTypeLong4 = 84,
  DataTypeULong = 85,
  DataTypeULong2 = 86,
  DataTypeULong3 = 87,
  DataTypeULong4 = 88,
  DataTypeBFloat = 121,
  DataTypeBFloat2 = 122,
  DataTypeBFloat3 = 123,
  DataTypeBFloat4 = 124,
};

enum LanguageVersion : NS::UInteger {
  LanguageVersion1_0 = 65536,
  LanguageVersion1_1 = 65537,
  LanguageVersion1_2 = 65538,
  LanguageVersion2_0 = 131072,
  LanguageVersion2_1 = 131073,
  LanguageVersion2_2 = 131074,
  LanguageVersion2_3 = 131075,
  LanguageVersion2_4 = 131076,
  LanguageVersion3_0 = 196608,
  LanguageVersion3_1 = 196609,
  LanguageVersion3_2 = 196610,
  LanguageVersion4_0 = 262144,
};
enum MathMode : NS::Integer { MathModeSafe = 0, MathModeRelaxed = 1, MathModeFast = 2 };
enum MathFloatingPointFunctions : NS::Integer {
  MathFloatingPointFunctionsFast = 0,
  MathFloatingPointFunctionsPrecise = 1,
};
enum LibraryType : NS::Integer { LibraryTypeExecutable = 0, LibraryTypeDynamic = 1 };
enum LibraryOptimizationLevel : NS::Integer { LibraryOptimizationLevelDefault = 0, LibraryOptimizationLevelSize = 1 };
enum FunctionType : NS::UInteger {
  FunctionTypeVertex = 1,
  FunctionTypeFragment = 2,
  FunctionTypeKernel = 3,
  FunctionTypeVisible = 5,
  FunctionTypeIntersection = 6,
  FunctionTypeMesh = 7,
  FunctionTypeObject = 8,
};
using FunctionOptions = NS::UInteger;
enum : NS::UInteger { FunctionOptionNone = 0, FunctionOptionCompileToBinary = 1 };
using PipelineOption = NS::UInteger;
enum : NS::UInteger {
  PipelineOptionNone = 0,
  PipelineOptionArgumentInfo = 1,
  PipelineOptionBufferTypeInfo = 2,
  PipelineOptionFailOnBinaryArchiveMiss = 4,
};

enum DispatchType : NS::UInteger { DispatchTypeSerial = 0, DispatchTypeConcurrent = 1 };
using BarrierScope = NS::UInteger;
enum : NS::UInteger { BarrierScopeBuffers = 1, BarrierScopeTextures = 2, BarrierScopeRenderTargets = 4 };
using ResourceUsage = NS::UInteger;
enum : NS::UInteger { ResourceUsageRead = 1, ResourceUsageWrite = 2, ResourceUsageSample = 4 };

enum CommandBufferStatus : NS::UInteger {
  CommandBufferStatusNotEnqueued = 0,
  CommandBufferStatusEnqueued = 1,
  CommandBufferStatusCommitted = 2,
  CommandBufferStatusScheduled = 3,
  CommandBufferStatusCompleted = 4,
  CommandBufferStatusError = 5,
};
enum CommandBufferError : NS::UInteger {
  CommandBufferErrorNone = 0,
  CommandBufferErrorInternal = 1,
  CommandBufferErrorTimeout = 2,
  CommandBufferErrorPageFault = 3,
  CommandBufferErrorAccessRevoked = 4,
  CommandBufferErrorNotPermitted = 7,
  CommandBufferErrorOutOfMemory = 8,
  CommandBufferErrorInvalidResource = 9,
  CommandBufferErrorMemoryless = 10,
  CommandBufferErrorDeviceRemoved = 11,
  CommandBufferErrorStackOverflow = 12,
};
// Error codes of libraries (newLibrary, newFunction) and pipelines.
enum LibraryError : NS::UInteger {
  LibraryErrorUnsupported = 1,
  LibraryErrorInternal = 2,
  LibraryErrorCompileFailure = 3,
  LibraryErrorCompileWarning = 4,
  LibraryErrorFunctionNotFound = 5,
  LibraryErrorFileNotFound = 6,
};

enum GPUFamily : NS::Integer {
  GPUFamilyApple1 = 1001,
  GPUFamilyApple2 = 1002,
  GPUFamilyApple3 = 1003,
  GPUFamilyApple4 = 1004,
  GPUFamilyApple5 = 1005,
  GPUFamilyApple6 = 1006,
  GPUFamilyApple7 = 1007,
  GPUFamilyApple8 = 1008,
  GPUFamilyApple9 = 1009,
  GPUFamilyApple10 = 1010,
  GPUFamilyMac1 = 2001,
  GPUFamilyMac2 = 2002,
  GPUFamilyCommon1 = 3001,
  GPUFamilyCommon2 = 3002,
  GPUFamilyCommon3 = 3003,
  GPUFamilyMacCatalyst1 = 4001,
  GPUFamilyMacCatalyst2 = 4002,
  GPUFamilyMetal3 = 5001,
  GPUFamilyMetal4 = 5002,
};
enum DeviceLocation : NS::UInteger {
  DeviceLocationBuiltIn = 0,
  DeviceLocationSlot = 1,
  DeviceLocationExternal = 2,
  DeviceLocationUnspecified = NS::UIntegerMax,
};

enum CaptureDestination : NS::Integer { CaptureDestinationDeveloperTools = 1, CaptureDestinationGPUTraceDocument = 2 };
enum CaptureError : NS::Integer {
  CaptureErrorNotSupported = 1,
  CaptureErrorAlreadyCapturing = 2,
  CaptureErrorInvalidDescriptor = 3,
};

}  // namespace MTL
