// simdgroup_matrix on cooperative matrices: the lane permutations between Apple's 8x8 fragment layout and the
// device's 16x8x8 matrix layout, and the multiply itself (lower/CooperativeMatrix.cpp makes these calls).
//
// Apple's layout: lane l holds row (q & 4) + ((l >> 1) & 3), columns (q & 2) * 2 + (l & 1) * 2 + {0, 1}, q = l >> 2.
// The device layout this module assumes (NVIDIA's mma.m16n8k8; the runtime verifies it with a probe before it
// chooses a cooperative module, runtime/coopmat_probe.cpp), with g = l >> 2 and t = l & 3:
//   A 16x8 and C 16x8: element 0, 1 = (g, 2t), (g, 2t + 1); element 2, 3 = the same in row g + 8
//   B 8x8 (K x N):     element 0, 1 = (2t, g), (2t + 1, g)
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
  if (name == lower::pseudo::kCoopMatMulAddF16) {
    llvm::LLVMContext& ctx = module_.getContext();
    Id half = typeOf(llvm::Type::getHalfTy(ctx)), f32t = f32();
    Id tA = b_.typeCooperativeMatrix(half, 16, 8, khr::MatrixUse::A);
    Id tB = b_.typeCooperativeMatrix(half, 8, 8, khr::MatrixUse::B);
    Id tC = b_.typeCooperativeMatrix(f32t, 16, 8, khr::MatrixUse::Accumulator);
    // A matrix from per-lane element pairs (element 2i, 2i + 1 from pair i); zero pairs stay the fill value.
    auto matrix = [&](Id type, Id elemType, std::initializer_list<unsigned> args) {
      Id mtx = b_.op(Op::OpCompositeConstruct, type, {b_.constant(elemType, 0)});
      uint32_t index = 0;
      for (unsigned a : args) {
        const llvm::Value* pairValue = call.getArgOperand(a);
        bool zero = llvm::isa<llvm::Constant>(pairValue) && llvm::cast<llvm::Constant>(pairValue)->isNullValue();
        if (!zero) {
          Id pair = value(pairValue);
          for (uint32_t k = 0; k < 2; ++k) {
            Id e = b_.op(Op::OpCompositeExtract, elemType, {pair, k});
            mtx = b_.op(Op::OpCompositeInsert, type, {e, mtx, index + k});
          }
        }
        index += 2;
      }
      return mtx;
    };
    Id a = matrix(tA, half, {0, 1});
    Id bm = matrix(tB, half, {2});
    Id c = matrix(tC, f32t, {3, 4});
    Id d = b_.op(khr::OpCooperativeMatrixMulAdd, tC, {a, bm, c});
    std::vector<Id> parts;
    for (uint32_t k = 0; k < 4; ++k) parts.push_back(b_.op(Op::OpCompositeExtract, f32t, {d, k}));
    return done(b_.op(Op::OpCompositeConstruct, typeOf(t), parts));
  }
  internalError(&call, "unknown pseudo-intrinsic " + name.str());
}

}  // namespace m2v::spirv
