// A SPIR-V module builder that owns ids, types, constants and decorations, so emitters never juggle raw ids.
#pragma once

#include <spirv/unified1/spirv.hpp11>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace m2v::spirv {

using Id = uint32_t;

// SPV_KHR_cooperative_matrix, which the SPIR-V headers here predate.
namespace khr {
inline constexpr auto OpTypeCooperativeMatrix = static_cast<spv::Op>(4456);
inline constexpr auto OpCooperativeMatrixLoad = static_cast<spv::Op>(4457);
inline constexpr auto OpCooperativeMatrixStore = static_cast<spv::Op>(4458);
inline constexpr auto OpCooperativeMatrixMulAdd = static_cast<spv::Op>(4459);
inline constexpr auto CooperativeMatrixCapability = static_cast<spv::Capability>(6022);
// SPV_KHR_bfloat16: `OpTypeFloat 16 BFloat16KHR` and bfloat cooperative matrices.
inline constexpr auto BFloat16TypeCapability = static_cast<spv::Capability>(5116);
inline constexpr auto BFloat16CooperativeMatrixCapability = static_cast<spv::Capability>(5118);
inline constexpr uint32_t BFloat16Encoding = 0;
enum class MatrixUse : uint32_t { A = 0, B = 1, Accumulator = 2 };
enum class MatrixLayout : uint32_t { RowMajor = 0, ColumnMajor = 1 };
}  // namespace khr

class Builder {
 public:
  Id newId() { return nextId_++; }

  // --- module-level facts
  void capability(spv::Capability c) { capabilities_.insert(c); }
  void extension(const std::string& e) { extensions_.insert(e); }
  Id glslStd450();
  const std::set<spv::Capability>& capabilities() const { return capabilities_; }
  const std::set<std::string>& extensions() const { return extensions_; }

  // --- types (deduplicated)
  Id typeVoid();
  Id typeBool();
  Id typeInt(unsigned width);  // signedness 0; operations pick signedness
  Id typeSignedInt(unsigned width);  // only where a driver reads signedness from the type (Emitter::signedOp)
  Id typeFloat(unsigned width);
  Id typeVector(Id element, unsigned count);
  Id typeArray(Id element, Id lengthConstant, uint32_t stride = 0);
  Id typeRuntimeArray(Id element, uint32_t stride);
  // Structs are never deduplicated: decorations (Block, Offset) belong to one struct.
  Id typeStruct(const std::vector<Id>& members);
  Id typePointer(spv::StorageClass sc, Id pointee);
  Id typeFunction(Id result, const std::vector<Id>& params);
  // A subgroup-scope cooperative matrix (declares the capability and extension).
  Id typeCooperativeMatrix(Id component, uint32_t rows, uint32_t columns, khr::MatrixUse use);
  // `OpTypeFloat 16 BFloat16KHR` (capability BFloat16TypeKHR, SPV_KHR_bfloat16). bfloat values are 16-bit integers
  // in every module; this type appears only as a cooperative-matrix component (which adds its own capability,
  // typeBFloat16CooperativeMatrix) and as the result of a native narrowing (EmitOptions::nativeBfloat16).
  Id typeBFloat16();
  Id typeBFloat16CooperativeMatrix();   // typeBFloat16 plus capability BFloat16CooperativeMatrixKHR
  unsigned scalarWidth(Id type) const;  // 0 for non-numeric scalar types

  // --- constants (deduplicated)
  Id constant(Id type, uint64_t bits);  // integer or float type, given by its bit pattern
  Id constantBool(bool v);
  Id constantNull(Id type);
  Id constantComposite(Id type, const std::vector<Id>& parts);
  Id undef(Id type);
  Id specConstant(Id type, uint64_t defaultBits, uint32_t specId);
  Id specConstantBool(bool defaultValue, uint32_t specId);
  Id specConstantOp(Id type, spv::Op op, const std::vector<Id>& operands);
  Id specConstantComposite(Id type, const std::vector<Id>& parts);

  // --- globals and metadata
  Id variable(Id pointerType, spv::StorageClass sc, Id initializer = 0);
  void decorate(Id target, spv::Decoration d, const std::vector<uint32_t>& args = {});
  void memberDecorate(Id structType, uint32_t member, spv::Decoration d, const std::vector<uint32_t>& args = {});
  void name(Id target, const std::string& n);
  void entryPoint(spv::ExecutionModel model, Id function, const std::string& name, const std::vector<Id>& interface);
  void executionMode(Id function, spv::ExecutionMode mode, const std::vector<uint32_t>& args);
  void executionModeId(Id function, spv::ExecutionMode mode, const std::vector<Id>& args);

  // --- function bodies: instructions go to the function section in order
  void beginFunction(Id result, Id returnType, Id functionType);
  void endFunction();
  void label(Id id);
  // Emits `op` with a result type and a new (or given) result id; returns the result id.
  Id op(spv::Op op, Id resultType, const std::vector<uint32_t>& operands, Id result = 0);
  void opNoResult(spv::Op op, const std::vector<uint32_t>& operands);
  // OpVariable with Function storage, placed at the start of the function's first block.
  Id functionVariable(Id pointerType);

  std::vector<uint32_t> assemble() const;

  static void appendString(std::vector<uint32_t>& words, const std::string& s);
  static std::string capabilityName(spv::Capability c);

 private:
  static void inst(std::vector<uint32_t>& out, spv::Op op, const std::vector<uint32_t>& operands);
  Id typeOrConstant(spv::Op op, const std::vector<uint32_t>& operands, Id resultType = 0);

  Id nextId_ = 1;
  std::set<spv::Capability> capabilities_;
  std::set<std::string> extensions_;
  Id glsl_ = 0;
  std::vector<uint32_t> entryPoints_, executionModes_, debugNames_, annotations_, globals_, functions_;
  std::vector<uint32_t> functionVariables_;  // hoisted into the current function's first block
  size_t functionBodyStart_ = 0;
  bool firstLabelSeen_ = false;
  std::map<std::vector<uint32_t>, Id> dedup_;
  std::map<Id, unsigned> scalarWidth_;  // bit width of each int/float type, for constant encoding
};

}  // namespace m2v::spirv
