#include "Builder.h"

#include <cstddef>

namespace m2v::spirv {

void Builder::appendString(std::vector<uint32_t>& words, const std::string& s) {
  uint32_t w = 0;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    w |= static_cast<uint32_t>(static_cast<unsigned char>(s[i])) << (8 * (i % 4));
    if (i % 4 == 3) {
      words.push_back(w);
      w = 0;
    }
  }
  words.push_back(w);  // the terminating NUL (and padding)
}

void Builder::inst(std::vector<uint32_t>& out, spv::Op op, const std::vector<uint32_t>& operands) {
  out.push_back(static_cast<uint32_t>((operands.size() + 1) << 16) | static_cast<uint32_t>(op));
  out.insert(out.end(), operands.begin(), operands.end());
}

// Types and constants share one table: the key is the opcode, result type and operands.
Id Builder::typeOrConstant(spv::Op op, const std::vector<uint32_t>& operands, Id resultType) {
  std::vector<uint32_t> key{static_cast<uint32_t>(op), resultType};
  key.insert(key.end(), operands.begin(), operands.end());
  auto it = dedup_.find(key);
  if (it != dedup_.end()) return it->second;
  Id id = newId();
  std::vector<uint32_t> ops;
  if (resultType) ops.push_back(resultType);
  ops.push_back(id);
  ops.insert(ops.end(), operands.begin(), operands.end());
  inst(globals_, op, ops);
  dedup_[key] = id;
  return id;
}

Id Builder::glslStd450() {
  if (!glsl_) glsl_ = newId();
  return glsl_;
}

Id Builder::typeVoid() { return typeOrConstant(spv::Op::OpTypeVoid, {}); }
Id Builder::typeBool() { return typeOrConstant(spv::Op::OpTypeBool, {}); }
Id Builder::typeInt(unsigned width) {
  if (width == 8) capability(spv::Capability::Int8);
  if (width == 16) capability(spv::Capability::Int16);
  if (width == 64) capability(spv::Capability::Int64);
  Id id = typeOrConstant(spv::Op::OpTypeInt, {width, 0});
  scalarWidth_[id] = width;
  return id;
}
Id Builder::typeSignedInt(unsigned width) {
  typeInt(width);  // the capabilities
  Id id = typeOrConstant(spv::Op::OpTypeInt, {width, 1});
  scalarWidth_[id] = width;
  return id;
}
Id Builder::typeFloat(unsigned width) {
  if (width == 16) capability(spv::Capability::Float16);
  if (width == 64) capability(spv::Capability::Float64);
  Id id = typeOrConstant(spv::Op::OpTypeFloat, {width});
  scalarWidth_[id] = width;
  return id;
}
unsigned Builder::scalarWidth(Id type) const {
  auto it = scalarWidth_.find(type);
  return it == scalarWidth_.end() ? 0 : it->second;
}
Id Builder::typeVector(Id element, unsigned count) { return typeOrConstant(spv::Op::OpTypeVector, {element, count}); }
Id Builder::typeCooperativeMatrix(Id component, uint32_t rows, uint32_t columns, khr::MatrixUse use) {
  capability(khr::CooperativeMatrixCapability);
  extension("SPV_KHR_cooperative_matrix");
  Id u32 = typeInt(32);
  return typeOrConstant(khr::OpTypeCooperativeMatrix,
                        {component, constant(u32, uint32_t(spv::Scope::Subgroup)), constant(u32, rows),
                         constant(u32, columns), constant(u32, uint32_t(use))});
}
Id Builder::typeBFloat16() {
  capability(khr::BFloat16TypeCapability);
  extension("SPV_KHR_bfloat16");
  return typeOrConstant(spv::Op::OpTypeFloat, {16, khr::BFloat16Encoding});
}
Id Builder::typeBFloat16CooperativeMatrix() {
  capability(khr::BFloat16CooperativeMatrixCapability);
  return typeBFloat16();
}
Id Builder::typeArray(Id element, Id length, uint32_t stride) {
  if (!stride) return typeOrConstant(spv::Op::OpTypeArray, {element, length});
  Id id = newId();
  inst(globals_, spv::Op::OpTypeArray, {id, element, length});
  decorate(id, spv::Decoration::ArrayStride, {stride});
  return id;
}
Id Builder::typeRuntimeArray(Id element, uint32_t stride) {
  Id id = newId();
  inst(globals_, spv::Op::OpTypeRuntimeArray, {id, element});
  decorate(id, spv::Decoration::ArrayStride, {stride});
  return id;
}
Id Builder::typeStruct(const std::vector<Id>& members) {
  Id id = newId();
  std::vector<uint32_t> ops{id};
  ops.insert(ops.end(), members.begin(), members.end());
  inst(globals_, spv::Op::OpTypeStruct, ops);
  return id;
}
Id Builder::typePointer(spv::StorageClass sc, Id pointee) {
  return typeOrConstant(spv::Op::OpTypePointer, {static_cast<uint32_t>(sc), pointee});
}
Id Builder::typeFunction(Id result, const std::vector<Id>& params) {
  std::vector<uint32_t> ops{result};
  ops.insert(ops.end(), params.begin(), params.end());
  return typeOrConstant(spv::Op::OpTypeFunction, ops);
}

Id Builder::constant(Id type, uint64_t bits) {
  // 64-bit types take two words; narrower ones one, with the value in the low bits.
  unsigned width = scalarWidth(type);
  if (width < 32) bits &= (uint64_t(1) << width) - 1;
  if (width == 64)
    return typeOrConstant(spv::Op::OpConstant, {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)}, type);
  return typeOrConstant(spv::Op::OpConstant, {static_cast<uint32_t>(bits)}, type);
}
Id Builder::constantBool(bool v) {
  return typeOrConstant(v ? spv::Op::OpConstantTrue : spv::Op::OpConstantFalse, {}, typeBool());
}
Id Builder::constantNull(Id type) { return typeOrConstant(spv::Op::OpConstantNull, {}, type); }
Id Builder::constantComposite(Id type, const std::vector<Id>& parts) {
  return typeOrConstant(spv::Op::OpConstantComposite, parts, type);
}
Id Builder::undef(Id type) { return typeOrConstant(spv::Op::OpUndef, {}, type); }

Id Builder::specConstant(Id type, uint64_t bits, uint32_t specId) {
  Id id = newId();
  unsigned width = scalarWidth(type);
  if (width < 32) bits &= (uint64_t(1) << width) - 1;
  if (width == 64)
    inst(globals_, spv::Op::OpSpecConstant, {type, id, static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)});
  else
    inst(globals_, spv::Op::OpSpecConstant, {type, id, static_cast<uint32_t>(bits)});
  decorate(id, spv::Decoration::SpecId, {specId});
  return id;
}
Id Builder::specConstantBool(bool v, uint32_t specId) {
  Id id = newId();
  inst(globals_, v ? spv::Op::OpSpecConstantTrue : spv::Op::OpSpecConstantFalse, {typeBool(), id});
  decorate(id, spv::Decoration::SpecId, {specId});
  return id;
}
Id Builder::specConstantOp(Id type, spv::Op op, const std::vector<Id>& operands) {
  Id id = newId();
  std::vector<uint32_t> ops{type, id, static_cast<uint32_t>(op)};
  ops.insert(ops.end(), operands.begin(), operands.end());
  inst(globals_, spv::Op::OpSpecConstantOp, ops);
  return id;
}

Id Builder::specConstantComposite(Id type, const std::vector<Id>& parts) {
  Id id = newId();
  std::vector<uint32_t> ops{type, id};
  ops.insert(ops.end(), parts.begin(), parts.end());
  inst(globals_, spv::Op::OpSpecConstantComposite, ops);
  return id;
}

std::string Builder::capabilityName(spv::Capability c) {
  using C = spv::Capability;
  if (c == khr::CooperativeMatrixCapability) return "CooperativeMatrixKHR";
  if (c == khr::BFloat16TypeCapability) return "BFloat16TypeKHR";
  if (c == khr::BFloat16CooperativeMatrixCapability) return "BFloat16CooperativeMatrixKHR";
  switch (c) {
    case C::Shader:
      return "Shader";
    case C::Int8:
      return "Int8";
    case C::Int16:
      return "Int16";
    case C::Int64:
      return "Int64";
    case C::Float16:
      return "Float16";
    case C::RoundingModeRTE:
      return "RoundingModeRTE";
    case C::Float64:
      return "Float64";
    case C::Int64Atomics:
      return "Int64Atomics";
    case C::PhysicalStorageBufferAddresses:
      return "PhysicalStorageBufferAddresses";
    case C::StorageBuffer8BitAccess:
      return "StorageBuffer8BitAccess";
    case C::StorageBuffer16BitAccess:
      return "StorageBuffer16BitAccess";
    case C::GroupNonUniform:
      return "GroupNonUniform";
    case C::GroupNonUniformVote:
      return "GroupNonUniformVote";
    case C::GroupNonUniformArithmetic:
      return "GroupNonUniformArithmetic";
    case C::GroupNonUniformBallot:
      return "GroupNonUniformBallot";
    case C::GroupNonUniformShuffle:
      return "GroupNonUniformShuffle";
    case C::GroupNonUniformShuffleRelative:
      return "GroupNonUniformShuffleRelative";
    case C::GroupNonUniformClustered:
      return "GroupNonUniformClustered";
    case C::GroupNonUniformQuad:
      return "GroupNonUniformQuad";
    case C::AtomicFloat32AddEXT:
      return "AtomicFloat32AddEXT";
    case C::AtomicFloat64AddEXT:
      return "AtomicFloat64AddEXT";
    case C::AtomicFloat16AddEXT:
      return "AtomicFloat16AddEXT";
    case C::AtomicFloat32MinMaxEXT:
      return "AtomicFloat32MinMaxEXT";
    case C::AtomicFloat64MinMaxEXT:
      return "AtomicFloat64MinMaxEXT";
    case C::AtomicFloat16MinMaxEXT:
      return "AtomicFloat16MinMaxEXT";
    default:
      return "Capability" + std::to_string(static_cast<uint32_t>(c));
  }
}

Id Builder::variable(Id pointerType, spv::StorageClass sc, Id init) {
  Id id = newId();
  std::vector<uint32_t> ops{pointerType, id, static_cast<uint32_t>(sc)};
  if (init) ops.push_back(init);
  inst(globals_, spv::Op::OpVariable, ops);
  return id;
}

void Builder::decorate(Id target, spv::Decoration d, const std::vector<uint32_t>& args) {
  std::vector<uint32_t> ops{target, static_cast<uint32_t>(d)};
  ops.insert(ops.end(), args.begin(), args.end());
  inst(annotations_, spv::Op::OpDecorate, ops);
}
void Builder::memberDecorate(Id s, uint32_t member, spv::Decoration d, const std::vector<uint32_t>& args) {
  std::vector<uint32_t> ops{s, member, static_cast<uint32_t>(d)};
  ops.insert(ops.end(), args.begin(), args.end());
  inst(annotations_, spv::Op::OpMemberDecorate, ops);
}
void Builder::name(Id target, const std::string& n) {
  std::vector<uint32_t> ops{target};
  appendString(ops, n);
  inst(debugNames_, spv::Op::OpName, ops);
}
void Builder::entryPoint(spv::ExecutionModel model, Id fn, const std::string& n, const std::vector<Id>& interface) {
  std::vector<uint32_t> ops{static_cast<uint32_t>(model), fn};
  appendString(ops, n);
  ops.insert(ops.end(), interface.begin(), interface.end());
  inst(entryPoints_, spv::Op::OpEntryPoint, ops);
}
void Builder::executionMode(Id fn, spv::ExecutionMode mode, const std::vector<uint32_t>& args) {
  std::vector<uint32_t> ops{fn, static_cast<uint32_t>(mode)};
  ops.insert(ops.end(), args.begin(), args.end());
  inst(executionModes_, spv::Op::OpExecutionMode, ops);
}
void Builder::executionModeId(Id fn, spv::ExecutionMode mode, const std::vector<Id>& args) {
  std::vector<uint32_t> ops{fn, static_cast<uint32_t>(mode)};
  ops.insert(ops.end(), args.begin(), args.end());
  inst(executionModes_, spv::Op::OpExecutionModeId, ops);
}

void Builder::beginFunction(Id result, Id returnType, Id functionType) {
  inst(functions_, spv::Op::OpFunction, {returnType, result, 0, functionType});
  functionBodyStart_ = 0;
  firstLabelSeen_ = false;
  functionVariables_.clear();
}
void Builder::label(Id id) {
  inst(functions_, spv::Op::OpLabel, {id});
  if (!firstLabelSeen_) {
    firstLabelSeen_ = true;
    functionBodyStart_ = functions_.size();
  }
}
Id Builder::functionVariable(Id pointerType) {
  Id id = newId();
  inst(functionVariables_, spv::Op::OpVariable, {pointerType, id, static_cast<uint32_t>(spv::StorageClass::Function)});
  return id;
}
void Builder::endFunction() {
  functions_.insert(functions_.begin() + static_cast<ptrdiff_t>(functionBodyStart_), functionVariables_.begin(),
                    functionVariables_.end());
  functionVariables_.clear();
  inst(functions_, spv::Op::OpFunctionEnd, {});
}
Id Builder::op(spv::Op o, Id resultType, const std::vector<uint32_t>& operands, Id result) {
  if (!result) result = newId();
  std::vector<uint32_t> ops;
  if (resultType) ops.push_back(resultType);
  ops.push_back(result);
  ops.insert(ops.end(), operands.begin(), operands.end());
  inst(functions_, o, ops);
  return result;
}
void Builder::opNoResult(spv::Op o, const std::vector<uint32_t>& operands) { inst(functions_, o, operands); }

std::vector<uint32_t> Builder::assemble() const {
  std::vector<uint32_t> out{spv::MagicNumber, 0x00010600, 0 /* generator */, nextId_, 0};
  for (spv::Capability c : capabilities_) inst(out, spv::Op::OpCapability, {static_cast<uint32_t>(c)});
  for (const std::string& e : extensions_) {
    std::vector<uint32_t> ops;
    appendString(ops, e);
    inst(out, spv::Op::OpExtension, ops);
  }
  if (glsl_) {
    std::vector<uint32_t> ops{glsl_};
    appendString(ops, "GLSL.std.450");
    inst(out, spv::Op::OpExtInstImport, ops);
  }
  inst(out, spv::Op::OpMemoryModel,
       {static_cast<uint32_t>(spv::AddressingModel::PhysicalStorageBuffer64),
        static_cast<uint32_t>(spv::MemoryModel::GLSL450)});
  for (const auto* s : {&entryPoints_, &executionModes_, &debugNames_, &annotations_, &globals_, &functions_})
    out.insert(out.end(), s->begin(), s->end());
  return out;
}

}  // namespace m2v::spirv
