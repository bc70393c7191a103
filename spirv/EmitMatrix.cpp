// simdgroup_matrix on cooperative matrices: the lane permutations between Apple's 8x8 fragment layout and the
// device's 16x8x8 matrix layout, and the multiply itself (lower/CooperativeMatrix.cpp makes these calls).
//
// Apple's layout: lane l holds row (q & 4) + ((l >> 1) & 3), columns (q & 2) * 2 + (l & 1) * 2 + {0, 1}, q = l >> 2.
// The device layout this module assumes (NVIDIA's mma.m16n8k8 and m16n8k16; the runtime verifies it with a probe
// before it chooses a cooperative module, mlx/MatrixPath.cpp), with g = l >> 2 and t = l & 3:
//   A 16x8 and C 16x8: element 0, 1 = (g, 2t), (g, 2t + 1); element 2, 3 = the same in row g + 8
//   B 8x8 (K x N):     element 0, 1 = (2t, g), (2t + 1, g)
//   A 16x16:           element 0, 1 = (g, 2t), (g, 2t + 1); 2, 3 = (g, 2t + 8), (g, 2t + 9); 4..7 the same in row g + 8
//   B 16x8:            element 0, 1 = (2t, g), (2t + 1, g); 2, 3 = (2t + 8, g), (2t + 9, g)
#include "EmitterImpl.h"
#include "Intrinsics.h"

namespace m2v::spirv {

using spv::Op;

namespace {

// SPIR-V integer arithmetic on lane numbers.
struct LaneMath {
  Builder& b;
  Id u32;
  Id c(uint32_t v) { return b.constant(u32, v); }
  Id shr(Id x, uint32_t n) { return n ? b.op(Op::OpShiftRightLogical, u32, {x, c(n)}) : x; }
  Id shl(Id x, uint32_t n) { return n ? b.op(Op::OpShiftLeftLogical, u32, {x, c(n)}) : x; }
  Id bits(Id x, uint32_t shift, uint32_t mask) { return b.op(Op::OpBitwiseAnd, u32, {shr(x, shift), c(mask)}); }
  Id add(Id x, Id y) { return b.op(Op::OpIAdd, u32, {x, y}); }
  Id bitOr(Id x, Id y) { return b.op(Op::OpBitwiseOr, u32, {x, y}); }
  // The Apple lane that holds row r, columns 2p and 2p + 1 (metal_simdgroup_matrix's mat_lane_of).
  Id appleLaneOf(Id r, Id p) {
    Id lo = bitOr(b.op(Op::OpBitwiseAnd, u32, {p, c(1)}), shl(b.op(Op::OpBitwiseAnd, u32, {r, c(3)}), 1));
    Id hi = bitOr(shl(shr(p, 1), 3), shl(shr(r, 2), 4));
    return bitOr(lo, hi);
  }
};

}  // namespace

// A cooperative matrix of `component` from per-lane pairs: operand `arg` of `call` fills pair slot `slot` (elements
// 2 slot and 2 slot + 1); zero operands and unlisted slots stay zero. Pair elements of another type of the same width
// (bfloat's 16-bit integers) are bitcast.
Id Emitter::cooperativeMatrix(const llvm::CallInst& call, Id component, uint32_t rows, uint32_t columns,
                              khr::MatrixUse use, std::initializer_list<std::pair<unsigned, uint32_t>> slots) {
  Id type = b_.typeCooperativeMatrix(component, rows, columns, use);
  Id mtx = b_.op(Op::OpCompositeConstruct, type, {b_.constant(component, 0)});
  for (auto [arg, slot] : slots) {
    const llvm::Value* pairValue = call.getArgOperand(arg);
    if (llvm::isa<llvm::Constant>(pairValue) && llvm::cast<llvm::Constant>(pairValue)->isNullValue()) continue;
    Id pair = value(pairValue);
    Id laneType = typeOf(pairValue->getType()->getScalarType());
    for (uint32_t e = 0; e < 2; ++e) {
      Id elem = b_.op(Op::OpCompositeExtract, laneType, {pair, e});
      if (laneType != component) elem = b_.op(Op::OpBitcast, component, {elem});
      mtx = b_.op(Op::OpCompositeInsert, type, {elem, mtx, 2 * slot + e});
    }
  }
  return mtx;
}

// The float pairs in slots `slots` of accumulator `d`, as a vector of type `t`.
Id Emitter::accumulatorPairs(Id d, llvm::Type* t, std::initializer_list<uint32_t> slots) {
  std::vector<Id> parts;
  for (uint32_t slot : slots)
    for (uint32_t e = 0; e < 2; ++e) parts.push_back(b_.op(Op::OpCompositeExtract, f32(), {d, 2 * slot + e}));
  return b_.op(Op::OpCompositeConstruct, typeOf(t), parts);
}

// bfloat multiplies of every form (16x8x8, 16x8x16, 16x16x16) on this GPU's one bfloat shape, 16x16x16; the forms
// that do not fill it leave zeros. Pair slots of the 16x16 matrices, with g = lane / 4 (docs/SIMDGROUP_MATRIX.md):
//   A: (row g, k 0..7), (row g, k 8..15), (row g + 8, k 0..7), (row g + 8, k 8..15)
//   B: (column g, k 0..7), (column g, k 8..15), (column g + 8, k 0..7), (column g + 8, k 8..15)
//   C: (row g, columns 0..7), (row g, columns 8..15), (row g + 8, columns 0..7), (row g + 8, columns 8..15)
Id Emitter::emitMultiplyOnBFloat16x16x16(const llvm::CallInst& call, bool twoKSteps, bool twoColumnBlocks) {
  noteCooperativeShape("16x16x16 bf16*bf16+f32");
  Id bf = b_.typeBFloat16CooperativeMatrix();
  using U = khr::MatrixUse;
  Id a, bm, c;
  if (!twoKSteps) {  // a top, a bottom, b, c top, c bottom
    a = cooperativeMatrix(call, bf, 16, 16, U::A, {{0, 0}, {1, 2}});
    bm = cooperativeMatrix(call, bf, 16, 16, U::B, {{2, 0}});
    c = cooperativeMatrix(call, f32(), 16, 16, U::Accumulator, {{3, 0}, {4, 2}});
  } else {
    a = cooperativeMatrix(call, bf, 16, 16, U::A, {{0, 0}, {1, 2}, {2, 1}, {3, 3}});
    if (!twoColumnBlocks) {  // ..., b k 0..7, b k 8..15, c top, c bottom
      bm = cooperativeMatrix(call, bf, 16, 16, U::B, {{4, 0}, {5, 1}});
      c = cooperativeMatrix(call, f32(), 16, 16, U::Accumulator, {{6, 0}, {7, 2}});
    } else {  // ..., b (k 0..7, k 8..15) of columns 0..7, of columns 8..15, c top, bottom of each column block
      bm = cooperativeMatrix(call, bf, 16, 16, U::B, {{4, 0}, {5, 1}, {6, 2}, {7, 3}});
      c = cooperativeMatrix(call, f32(), 16, 16, U::Accumulator, {{8, 0}, {9, 2}, {10, 1}, {11, 3}});
    }
  }
  Id d = b_.op(khr::OpCooperativeMatrixMulAdd, b_.typeCooperativeMatrix(f32(), 16, 16, U::Accumulator), {a, bm, c});
  if (!twoColumnBlocks) return accumulatorPairs(d, call.getType(), {0, 2});
  llvm::Type* half16x8 = call.getType()->getStructElementType(0);  // one 16x8 result per column block
  return b_.op(Op::OpCompositeConstruct, typeOf(call.getType()),
               {accumulatorPairs(d, half16x8, {0, 2}), accumulatorPairs(d, half16x8, {1, 3})});
}

void Emitter::noteCooperativeShape(const std::string& shape) {
  std::vector<std::string>& shapes = reflection_.cooperativeMatrixShapes;
  if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(shape);
}

Id Emitter::emitMatrixIntrinsic(const llvm::CallInst& call, llvm::StringRef name) {
  llvm::Type* t = call.getType();
  auto done = [&](Id r) {
    define(&call, r);
    return r;
  };
  const Id subgroup = constU32(uint32_t(spv::Scope::Subgroup));
  LaneMath m{b_, u32()};
  Id lane = laneId();
  auto shuffle = [&](Id v, Id type, Id src) {
    useSubgroups(spv::Capability::GroupNonUniformShuffle);
    return b_.op(Op::OpGroupNonUniformShuffle, type, {subgroup, v, src});
  };
  Id g = m.shr(lane, 2), tq = m.bits(lane, 0, 3);

  if (name.starts_with(lower::pseudo::kSgmToNvAC))  // (g, 2t..2t+1) lives in one Apple lane
    return done(shuffle(value(call.getArgOperand(0)), typeOf(t), m.appleLaneOf(g, tq)));
  if (name.starts_with(lower::pseudo::kSgmToApple)) {  // Apple's (row, column pair) lives in device lane 4 row + pair
    Id q = m.shr(lane, 2);
    Id row = m.add(b_.op(Op::OpBitwiseAnd, u32(), {q, m.c(4)}), m.bits(lane, 1, 3));
    Id pair = m.add(b_.op(Op::OpBitwiseAnd, u32(), {q, m.c(2)}), m.bits(lane, 0, 1));
    return done(shuffle(value(call.getArgOperand(0)), typeOf(t), m.add(m.shl(row, 2), pair)));
  }
  if (name.starts_with(lower::pseudo::kSgmToNvB)) {
    // B[2t][g] and B[2t + 1][g]: element g & 1 of the Apple lanes holding rows 2t and 2t + 1, column pair g >> 1
    Id v = value(call.getArgOperand(0));
    Id elem = typeOf(t->getScalarType());
    Id pair = m.shr(g, 1);
    Id odd = b_.op(Op::OpINotEqual, boolType(), {m.bits(lane, 2, 1), m.c(0)});
    std::vector<Id> parts;
    for (uint32_t k = 0; k < 2; ++k) {
      Id row = m.add(m.shl(tq, 1), m.c(k));
      Id got = shuffle(v, typeOf(t), m.appleLaneOf(row, pair));
      Id e0 = b_.op(Op::OpCompositeExtract, elem, {got, 0});
      Id e1 = b_.op(Op::OpCompositeExtract, elem, {got, 1});
      parts.push_back(b_.op(Op::OpSelect, elem, {odd, e1, e0}));
    }
    return done(b_.op(Op::OpCompositeConstruct, typeOf(t), parts));
  }
  if (name == lower::pseudo::kCoopMatLoadB) {
    // An 8x8 B matrix from threadgroup memory (lower/FragmentLoads.cpp proved the address and stride 16-byte
    // aligned), its two elements per lane extracted in the device's layout.
    const llvm::Value* ptr = call.getArgOperand(0);
    const llvm::Value* base = baseOf(ptr);
    auto* strideArg = llvm::dyn_cast<llvm::ConstantInt>(call.getArgOperand(1));
    auto* columnMajorArg = llvm::dyn_cast<llvm::ConstantInt>(call.getArgOperand(2));
    if (!base || !strideArg || !columnMajorArg) internalError(&call, "malformed " + name.str());
    const LogicalVariable& var = logicalVariable(&call, base);
    const uint32_t strideBytes = static_cast<uint32_t>(strideArg->getZExtValue());
    const bool columnMajor = columnMajorArg->isOne();
    llvm::Type* halfTy = t->getScalarType();
    Id half = typeOf(halfTy);
    std::vector<Id> elems;
    if (var.storage == spv::StorageClass::Workgroup && (var.elementBytes == 2 || var.elementBytes == 4) &&
        !var.elementLLVM->isVectorTy()) {
      Id tB = b_.typeCooperativeMatrix(half, 8, 8, khr::MatrixUse::B);
      Id pointer = logicalElementPointer(var, elementIndex(value(ptr), ptr->getType(), var.elementBytes));
      // memory is read as the matrix's halves whatever the array's element type; the stride counts its elements
      Id mtx = b_.op(khr::OpCooperativeMatrixLoad, tB,
                     {pointer, constU32(columnMajor ? 1 : 0), constU32(strideBytes / var.elementBytes)});
      for (uint32_t e = 0; e < 2; ++e) elems.push_back(b_.op(Op::OpCompositeExtract, half, {mtx, e}));
    } else {
      // Element (2t + e, g) one at a time, for arrays the matrix load cannot read.
      Id offsetType = typeOf(ptr->getType());
      auto toOffset = [&](Id v) { return offsetType == u32() ? v : b_.op(Op::OpUConvert, offsetType, {v}); };
      Id rowStep = m.c(columnMajor ? 2 : strideBytes), colStep = m.c(columnMajor ? strideBytes : 2);
      for (uint32_t e = 0; e < 2; ++e) {
        Id row = m.add(m.shl(tq, 1), m.c(e));
        Id bytes = m.add(b_.op(Op::OpIMul, u32(), {row, rowStep}), b_.op(Op::OpIMul, u32(), {g, colStep}));
        Id at = b_.op(Op::OpIAdd, offsetType, {value(ptr), toOffset(bytes)});
        elems.push_back(load(&call, halfTy, ptr, at, 2));
      }
    }
    return done(b_.op(Op::OpCompositeConstruct, typeOf(t), elems));
  }
  const bool k8 = name.starts_with(lower::pseudo::kCoopMatMulAdd),
             k16 = name.starts_with(lower::pseudo::kCoopMatMulAddK16),
             n16 = name.starts_with(lower::pseudo::kCoopMatMulAddN16);
  if (k8 || k16 || n16) {
    // Operands (lower/Intrinsics.h) are per-lane pairs; each lands in a pair slot of the device's matrices.
    const bool bf16 = call.getArgOperand(0)->getType()->getScalarType()->isBFloatTy();
    if (bf16) return done(emitMultiplyOnBFloat16x16x16(call, k16 || n16, n16));
    if (n16) internalError(&call, "a 16x16x16 half multiply (only bfloat column blocks are fused)");
    llvm::LLVMContext& ctx = module_.getContext();
    Id half = typeOf(llvm::Type::getHalfTy(ctx));
    const uint32_t k = k16 ? 16 : 8;
    noteCooperativeShape("16x8x" + std::to_string(k) + " f16*f16+f32");
    Id a = k16 ? cooperativeMatrix(call, half, 16, 16, khr::MatrixUse::A, {{0, 0}, {1, 2}, {2, 1}, {3, 3}})
               : cooperativeMatrix(call, half, 16, 8, khr::MatrixUse::A, {{0, 0}, {1, 1}});
    Id bm = k16 ? cooperativeMatrix(call, half, 16, 8, khr::MatrixUse::B, {{4, 0}, {5, 1}})
                : cooperativeMatrix(call, half, 8, 8, khr::MatrixUse::B, {{2, 0}});
    Id c = k16 ? cooperativeMatrix(call, f32(), 16, 8, khr::MatrixUse::Accumulator, {{6, 0}, {7, 1}})
               : cooperativeMatrix(call, f32(), 16, 8, khr::MatrixUse::Accumulator, {{3, 0}, {4, 1}});
    Id d = b_.op(khr::OpCooperativeMatrixMulAdd, b_.typeCooperativeMatrix(f32(), 16, 8, khr::MatrixUse::Accumulator),
                 {a, bm, c});
    return done(accumulatorPairs(d, t, {0, 1}));
  }
  internalError(&call, "unknown pseudo-intrinsic " + name.str());
}

}  // namespace m2v::spirv
