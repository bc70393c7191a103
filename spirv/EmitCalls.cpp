// Calls: LLVM intrinsics (to GLSL.std.450 and core SPIR-V), metal_stdlib's `__m2v::` intrinsics (subgroup
// operations, barriers), and the lowering's `m2v.*` pseudo-intrinsics (built-ins, push constants, spec constants).
#include <llvm/Demangle/Demangle.h>

#include "EmitterImpl.h"
#include "Intrinsics.h"

namespace m2v::spirv {

using spv::Op;

void Emitter::useSubgroups(spv::Capability c) {
  usesSubgroups_ = true;
  b_.capability(spv::Capability::GroupNonUniform);
  if (c != spv::Capability::GroupNonUniform) b_.capability(c);
}

Id Emitter::laneId() {
  useSubgroups(spv::Capability::GroupNonUniform);
  return builtinInput(spv::BuiltIn::SubgroupLocalInvocationId, u32());
}

Id Emitter::subgroupSize() {
  useSubgroups(spv::Capability::GroupNonUniform);
  return builtinInput(spv::BuiltIn::SubgroupSize, u32());
}

// A GLSL.std.450 floating-point instruction on values of type `t`. bfloat (and double where GLSL has no double
// form) is computed in float and converted back.
Id Emitter::glslFloat(llvm::Type* t, uint32_t inst, std::vector<Id> args, bool doubleOk) {
  llvm::Type* st = t->getScalarType();
  bool viaFloat = st->isBFloatTy() || (st->isDoubleTy() && !doubleOk);
  if (!viaFloat) return glsl(typeOf(t), inst, args);
  llvm::Type* ft = withElement(t, llvm::Type::getFloatTy(module_.getContext()));
  for (Id& a : args) a = st->isBFloatTy() ? bfloatToFloat(a, t) : b_.op(Op::OpFConvert, typeOf(ft), {a});
  Id r = glsl(typeOf(ft), inst, args);
  return st->isBFloatTy() ? floatToBfloat(r, t) : b_.op(Op::OpFConvert, typeOf(t), {r});
}

Id Emitter::emitCall(const llvm::CallInst& call) {
  const llvm::Function* f = call.getCalledFunction();
  if (!f) unsupported(&call, "an indirect call (function pointers are not supported)");
  if (f->isIntrinsic()) return emitLLVMIntrinsic(call, f->getIntrinsicID());
  if (f->getName().starts_with("m2v.")) return emitPseudoIntrinsic(call, f->getName());
  if (auto name = lower::stdlibIntrinsicName(*f)) return emitStdlibIntrinsic(call, *name);
  std::string pretty = llvm::demangle(f->getName().str());
  if (!f->isDeclaration())
    unsupported(&call, "a call to '" + pretty + "' that could not be inlined (recursion is not supported)");
  unsupported(&call, "a call to '" + pretty + "', which has no definition");
}

// ---------------------------------------------------------------------------------------------------------------
// LLVM intrinsics

Id Emitter::emitLLVMIntrinsic(const llvm::CallInst& call, llvm::Intrinsic::ID id) {
  llvm::Type* t = call.getType();
  auto arg = [&](unsigned k) { return value(call.getArgOperand(k)); };
  auto done = [&](Id r) {
    define(&call, r);
    return r;
  };
  llvm::LLVMContext& ctx = module_.getContext();

  // Floating-point math through GLSL.std.450. bfloat and double go through float where GLSL has no such precision.
  auto floatMath = [&](uint32_t inst, unsigned nargs, bool doubleOk) -> Id {
    std::vector<Id> args;
    for (unsigned k = 0; k < nargs; ++k) args.push_back(arg(k));
    return done(glslFloat(t, inst, args, doubleOk));
  };
  auto intBinary = [&](uint32_t inst) { return done(glsl(typeOf(t), inst, {arg(0), arg(1)})); };
  auto splatInt = [&](llvm::Type* like, uint64_t v) { return intConst(like, v); };

  switch (id) {
    // No code.
    case llvm::Intrinsic::assume:
    case llvm::Intrinsic::lifetime_start:
    case llvm::Intrinsic::lifetime_end:
    case llvm::Intrinsic::dbg_declare:
    case llvm::Intrinsic::dbg_value:
    case llvm::Intrinsic::dbg_label:
    case llvm::Intrinsic::experimental_noalias_scope_decl:
    case llvm::Intrinsic::var_annotation:
    case llvm::Intrinsic::annotation:
    case llvm::Intrinsic::sideeffect:
    case llvm::Intrinsic::donothing:
    case llvm::Intrinsic::invariant_start:
    case llvm::Intrinsic::invariant_end:
    case llvm::Intrinsic::pseudoprobe:
    case llvm::Intrinsic::trap:
    case llvm::Intrinsic::ubsantrap:
      if (!t->isVoidTy()) return done(b_.undef(typeOf(t)));
      return 0;
    case llvm::Intrinsic::expect:
    case llvm::Intrinsic::ptr_annotation:
    case llvm::Intrinsic::launder_invariant_group:
    case llvm::Intrinsic::strip_invariant_group:
    case llvm::Intrinsic::ssa_copy:
    case llvm::Intrinsic::canonicalize:
    case llvm::Intrinsic::arithmetic_fence:
      return done(arg(0));

    case llvm::Intrinsic::sqrt:
      return floatMath(GLSL::Sqrt, 1, true);
    case llvm::Intrinsic::exp:
      return floatMath(GLSL::Exp, 1, false);
    case llvm::Intrinsic::exp2:
      return floatMath(GLSL::Exp2, 1, false);
    case llvm::Intrinsic::log:
      return floatMath(GLSL::Log, 1, false);
    case llvm::Intrinsic::log2:
      return floatMath(GLSL::Log2, 1, false);
    case llvm::Intrinsic::pow:
      return floatMath(GLSL::Pow, 2, false);
    case llvm::Intrinsic::sin:
      return floatMath(GLSL::Sin, 1, false);
    case llvm::Intrinsic::cos:
      return floatMath(GLSL::Cos, 1, false);
    case llvm::Intrinsic::tan:
      return floatMath(GLSL::Tan, 1, false);
    case llvm::Intrinsic::asin:
      return floatMath(GLSL::Asin, 1, false);
    case llvm::Intrinsic::acos:
      return floatMath(GLSL::Acos, 1, false);
    case llvm::Intrinsic::atan:
      return floatMath(GLSL::Atan, 1, false);
    case llvm::Intrinsic::atan2:
      return floatMath(GLSL::Atan2, 2, false);
    case llvm::Intrinsic::sinh:
      return floatMath(GLSL::Sinh, 1, false);
    case llvm::Intrinsic::cosh:
      return floatMath(GLSL::Cosh, 1, false);
    case llvm::Intrinsic::tanh:
      return floatMath(GLSL::Tanh, 1, false);
    case llvm::Intrinsic::floor:
      return floatMath(GLSL::Floor, 1, true);
    case llvm::Intrinsic::ceil:
      return floatMath(GLSL::Ceil, 1, true);
    case llvm::Intrinsic::trunc:
      return floatMath(GLSL::Trunc, 1, true);
    case llvm::Intrinsic::roundeven:
    case llvm::Intrinsic::rint:
    case llvm::Intrinsic::nearbyint:
      return floatMath(GLSL::RoundEven, 1, true);
    case llvm::Intrinsic::fabs:
      return floatMath(GLSL::FAbs, 1, true);
    case llvm::Intrinsic::fma:
    case llvm::Intrinsic::fmuladd:
      return floatMath(GLSL::Fma, 3, true);
    case llvm::Intrinsic::minnum:
    case llvm::Intrinsic::minimumnum:
      return floatMath(GLSL::NMin, 2, true);
    case llvm::Intrinsic::maxnum:
    case llvm::Intrinsic::maximumnum:
      return floatMath(GLSL::NMax, 2, true);
    case llvm::Intrinsic::minimum:
      return floatMath(GLSL::FMin, 2, true);
    case llvm::Intrinsic::maximum:
      return floatMath(GLSL::FMax, 2, true);
    case llvm::Intrinsic::log10:
    case llvm::Intrinsic::exp10: {
      bool isLog = id == llvm::Intrinsic::log10;
      llvm::Type* st = t->getScalarType();
      llvm::Type* ft = withElement(t, llvm::Type::getFloatTy(ctx));
      Id x = arg(0);
      if (st->isBFloatTy())
        x = bfloatToFloat(x, t);
      else if (!st->isFloatTy())
        x = b_.op(Op::OpFConvert, typeOf(ft), {x});
      float k = isLog ? 0.30102999566398119521f : 3.32192809488736234787f;
      uint32_t kbits;
      std::memcpy(&kbits, &k, 4);
      Id kv = splatLike(ft, b_.constant(f32(), kbits));
      Id r = isLog ? b_.op(Op::OpFMul, typeOf(ft), {glsl(typeOf(ft), GLSL::Log2, {x}), kv})
                   : glsl(typeOf(ft), GLSL::Exp2, {b_.op(Op::OpFMul, typeOf(ft), {x, kv})});
      if (st->isBFloatTy()) return done(floatToBfloat(r, t));
      return done(st->isFloatTy() ? r : b_.op(Op::OpFConvert, typeOf(t), {r}));
    }
    case llvm::Intrinsic::round: {
      // Halfway cases away from zero (GLSL's Round leaves them to the implementation). bfloat (the builtin `round`
      // a template reaches for a bfloat argument) rounds in float: a bfloat rounded to an integer is a bfloat.
      bool bf = t->getScalarType()->isBFloatTy();
      llvm::Type* rt = bf ? withElement(t, llvm::Type::getFloatTy(ctx)) : t;
      Id x = bf ? bfloatToFloat(arg(0), t) : arg(0);
      Id tr = glsl(typeOf(rt), GLSL::Trunc, {x});
      Id frac = glsl(typeOf(rt), GLSL::FAbs, {b_.op(Op::OpFSub, typeOf(rt), {x, tr})});
      llvm::Type* bt = withElement(rt, llvm::Type::getInt1Ty(ctx));
      Id half = constantValue(llvm::ConstantFP::get(rt, 0.5));
      Id away = b_.op(Op::OpFOrdGreaterThanEqual, typeOf(bt), {frac, half});
      Id step = b_.op(Op::OpFAdd, typeOf(rt), {tr, glsl(typeOf(rt), GLSL::FSign, {x})});
      Id r = b_.op(Op::OpSelect, typeOf(rt), {away, step, tr});
      return done(bf ? floatToBfloat(r, t) : r);
    }
    case llvm::Intrinsic::copysign: {
      llvm::Type* it = withElement(t, llvm::Type::getIntNTy(ctx, t->getScalarSizeInBits()));
      uint64_t sign = uint64_t(1) << (t->getScalarSizeInBits() - 1);
      Id a = b_.op(Op::OpBitcast, typeOf(it), {arg(0)});
      Id s = b_.op(Op::OpBitcast, typeOf(it), {arg(1)});
      Id mag = b_.op(Op::OpBitwiseAnd, typeOf(it), {a, splatInt(it, ~sign)});
      Id sg = b_.op(Op::OpBitwiseAnd, typeOf(it), {s, splatInt(it, sign)});
      Id r = b_.op(Op::OpBitwiseOr, typeOf(it), {mag, sg});
      return done(typeOf(it) == typeOf(t) ? r : b_.op(Op::OpBitcast, typeOf(t), {r}));
    }
    case llvm::Intrinsic::ldexp: {
      if (t->getScalarType()->isBFloatTy()) unsupported(&call, "ldexp on bfloat");
      Id e = arg(1);
      llvm::Type* et = call.getArgOperand(1)->getType();
      if (et->getScalarSizeInBits() != 32)
        e = b_.op(Op::OpSConvert, typeOf(withElement(et, llvm::Type::getInt32Ty(ctx))), {e});
      return done(glsl(typeOf(t), GLSL::Ldexp, {arg(0), e}));
    }
    case llvm::Intrinsic::frexp:
      return done(glsl(typeOf(t), GLSL::FrexpStruct, {arg(0)}));
    case llvm::Intrinsic::umin:
      return intBinary(GLSL::UMin);
    case llvm::Intrinsic::umax:
      return intBinary(GLSL::UMax);
    case llvm::Intrinsic::smin:
      return intBinary(GLSL::SMin);
    case llvm::Intrinsic::smax:
      return intBinary(GLSL::SMax);
    case llvm::Intrinsic::abs:
      return done(glsl(typeOf(t), GLSL::SAbs, {arg(0)}));

    case llvm::Intrinsic::ctpop:
    case llvm::Intrinsic::bitreverse:
    case llvm::Intrinsic::ctlz:
    case llvm::Intrinsic::cttz: {
      // Vulkan's bit instructions take 32-bit operands: widen narrower ones, split 64-bit ones.
      unsigned w = t->getScalarSizeInBits();
      llvm::Type* i32t = withElement(t, llvm::Type::getInt32Ty(ctx));
      Id i32 = typeOf(i32t);
      auto on32 = [&](Id x) -> Id {  // the operation on a 32-bit value
        switch (id) {
          case llvm::Intrinsic::ctpop:
            return b_.op(Op::OpBitCount, i32, {x});
          case llvm::Intrinsic::bitreverse:
            return b_.op(Op::OpBitReverse, i32, {x});
          case llvm::Intrinsic::ctlz: {
            Id msb = glsl(i32, GLSL::FindUMsb, {x});  // -1 for 0, so 31 - msb = 32
            return b_.op(Op::OpISub, i32, {splatInt(i32t, 31), msb});
          }
          default: {
            Id lsb = glsl(i32, GLSL::FindILsb, {x});
            Id zero = b_.op(Op::OpIEqual, typeOf(withElement(t, llvm::Type::getInt1Ty(ctx))), {x, splatInt(i32t, 0)});
            return b_.op(Op::OpSelect, i32, {zero, splatInt(i32t, 32), lsb});
          }
        }
      };
      Id x = arg(0);
      if (w == 32) return done(on32(x));
      if (w < 32) {
        Id wide = b_.op(Op::OpUConvert, i32, {x});
        Id r;
        if (id == llvm::Intrinsic::bitreverse)
          r = b_.op(Op::OpShiftRightLogical, i32, {on32(wide), splatInt(i32t, 32 - w)});
        else if (id == llvm::Intrinsic::ctlz)
          r = b_.op(Op::OpISub, i32, {on32(wide), splatInt(i32t, 32 - w)});
        else if (id == llvm::Intrinsic::cttz) {
          Id c = on32(wide);
          r = b_.op(
              Op::OpSelect, i32,
              {b_.op(Op::OpUGreaterThan, typeOf(withElement(t, llvm::Type::getInt1Ty(ctx))), {c, splatInt(i32t, w)}),
               splatInt(i32t, w), c});
        } else
          r = on32(wide);
        return done(b_.op(Op::OpUConvert, typeOf(t), {r}));
      }
      if (w != 64) unsupported(&call, "bit operation on " + std::to_string(w) + "-bit integers");
      Id lo = b_.op(Op::OpUConvert, i32, {x});
      Id hi = b_.op(Op::OpUConvert, i32, {b_.op(Op::OpShiftRightLogical, typeOf(t), {x, splatInt(t, 32)})});
      Id r;
      llvm::Type* bt = withElement(t, llvm::Type::getInt1Ty(ctx));
      if (id == llvm::Intrinsic::ctpop) {
        r = b_.op(Op::OpUConvert, typeOf(t), {b_.op(Op::OpIAdd, i32, {on32(lo), on32(hi)})});
      } else if (id == llvm::Intrinsic::bitreverse) {
        Id newHi = b_.op(Op::OpUConvert, typeOf(t), {on32(lo)});
        Id newLo = b_.op(Op::OpUConvert, typeOf(t), {on32(hi)});
        r = b_.op(Op::OpBitwiseOr, typeOf(t),
                  {b_.op(Op::OpShiftLeftLogical, typeOf(t), {newHi, splatInt(t, 32)}), newLo});
      } else if (id == llvm::Intrinsic::ctlz) {
        Id hiZero = b_.op(Op::OpIEqual, typeOf(bt), {hi, splatInt(i32t, 0)});
        Id c = b_.op(Op::OpSelect, i32, {hiZero, b_.op(Op::OpIAdd, i32, {on32(lo), splatInt(i32t, 32)}), on32(hi)});
        r = b_.op(Op::OpUConvert, typeOf(t), {c});
      } else {
        Id loZero = b_.op(Op::OpIEqual, typeOf(bt), {lo, splatInt(i32t, 0)});
        Id c = b_.op(Op::OpSelect, i32, {loZero, b_.op(Op::OpIAdd, i32, {on32(hi), splatInt(i32t, 32)}), on32(lo)});
        r = b_.op(Op::OpUConvert, typeOf(t), {c});
      }
      return done(r);
    }
    case llvm::Intrinsic::bswap: {
      unsigned w = t->getScalarSizeInBits();
      Id x = arg(0);
      Id r = 0;
      for (unsigned byte = 0; byte < w / 8; ++byte) {
        unsigned from = byte * 8, to = w - 8 - byte * 8;
        Id part = b_.op(Op::OpBitwiseAnd, typeOf(t),
                        {b_.op(Op::OpShiftRightLogical, typeOf(t), {x, splatInt(t, from)}), splatInt(t, 0xff)});
        part = b_.op(Op::OpShiftLeftLogical, typeOf(t), {part, splatInt(t, to)});
        r = r ? b_.op(Op::OpBitwiseOr, typeOf(t), {r, part}) : part;
      }
      return done(r);
    }
    case llvm::Intrinsic::fshl:
    case llvm::Intrinsic::fshr: {
      unsigned w = t->getScalarSizeInBits();
      Id a = arg(0), bb = arg(1);
      Id s = b_.op(Op::OpBitwiseAnd, typeOf(t), {arg(2), splatInt(t, w - 1)});
      Id inv = b_.op(Op::OpISub, typeOf(t), {splatInt(t, w), s});
      Id zero = b_.op(Op::OpIEqual, typeOf(withElement(t, llvm::Type::getInt1Ty(ctx))), {s, splatInt(t, 0)});
      Id r;
      if (id == llvm::Intrinsic::fshl)
        r = b_.op(Op::OpSelect, typeOf(t),
                  {zero, a,
                   b_.op(Op::OpBitwiseOr, typeOf(t),
                         {b_.op(Op::OpShiftLeftLogical, typeOf(t), {a, s}),
                          b_.op(Op::OpShiftRightLogical, typeOf(t), {bb, inv})})});
      else
        r = b_.op(Op::OpSelect, typeOf(t),
                  {zero, bb,
                   b_.op(Op::OpBitwiseOr, typeOf(t),
                         {b_.op(Op::OpShiftLeftLogical, typeOf(t), {a, inv}),
                          b_.op(Op::OpShiftRightLogical, typeOf(t), {bb, s})})});
      return done(r);
    }
    case llvm::Intrinsic::uadd_sat:
    case llvm::Intrinsic::usub_sat: {
      llvm::Type* bt = withElement(t, llvm::Type::getInt1Ty(ctx));
      Id a = arg(0), bb = arg(1);
      if (id == llvm::Intrinsic::uadd_sat) {
        Id sum = b_.op(Op::OpIAdd, typeOf(t), {a, bb});
        Id wrapped = b_.op(Op::OpULessThan, typeOf(bt), {sum, a});
        return done(b_.op(Op::OpSelect, typeOf(t), {wrapped, splatInt(t, ~uint64_t(0)), sum}));
      }
      Id under = b_.op(Op::OpULessThan, typeOf(bt), {a, bb});
      return done(b_.op(Op::OpSelect, typeOf(t), {under, splatInt(t, 0), b_.op(Op::OpISub, typeOf(t), {a, bb})}));
    }
    case llvm::Intrinsic::sadd_sat:
    case llvm::Intrinsic::ssub_sat: {
      unsigned w = t->getScalarSizeInBits();
      if (w > 32) unsupported(&call, "saturating arithmetic on 64-bit integers");
      llvm::Type* wt = withElement(t, llvm::Type::getInt64Ty(ctx));
      Id a = b_.op(Op::OpSConvert, typeOf(wt), {arg(0)}), bb = b_.op(Op::OpSConvert, typeOf(wt), {arg(1)});
      Id r = b_.op(id == llvm::Intrinsic::sadd_sat ? Op::OpIAdd : Op::OpISub, typeOf(wt), {a, bb});
      int64_t hi = (int64_t(1) << (w - 1)) - 1, lo = -(int64_t(1) << (w - 1));
      r = glsl(typeOf(wt), GLSL::SMax, {r, splatInt(wt, static_cast<uint64_t>(lo))});
      r = glsl(typeOf(wt), GLSL::SMin, {r, splatInt(wt, static_cast<uint64_t>(hi))});
      return done(b_.op(Op::OpSConvert, typeOf(t), {r}));
    }
    case llvm::Intrinsic::uadd_with_overflow:
    case llvm::Intrinsic::usub_with_overflow: {
      llvm::Type* vt = call.getArgOperand(0)->getType();
      llvm::Type* bt = withElement(vt, llvm::Type::getInt1Ty(ctx));
      Id a = arg(0), bb = arg(1);
      Id r, o;
      if (id == llvm::Intrinsic::uadd_with_overflow) {
        r = b_.op(Op::OpIAdd, typeOf(vt), {a, bb});
        o = b_.op(Op::OpULessThan, typeOf(bt), {r, a});
      } else {
        r = b_.op(Op::OpISub, typeOf(vt), {a, bb});
        o = b_.op(Op::OpULessThan, typeOf(bt), {a, bb});
      }
      return done(b_.op(Op::OpCompositeConstruct, typeOf(t), {r, o}));
    }
    case llvm::Intrinsic::is_fpclass: {
      llvm::Type* vt = call.getArgOperand(0)->getType();
      uint64_t mask = llvm::cast<llvm::ConstantInt>(call.getArgOperand(1))->getZExtValue();
      Id x = arg(0);
      if (vt->getScalarType()->isBFloatTy()) {
        x = bfloatToFloat(x, vt);
        vt = withElement(vt, llvm::Type::getFloatTy(ctx));
      }
      Id bt = typeOf(t);
      llvm::Type* it = withElement(vt, llvm::Type::getIntNTy(ctx, vt->getScalarSizeInBits()));
      Id isNan = b_.op(Op::OpIsNan, bt, {x});
      Id isInf = b_.op(Op::OpIsInf, bt, {x});
      Id neg = b_.op(Op::OpSLessThan, bt, {b_.op(Op::OpBitcast, typeOf(it), {x}), splatInt(it, 0)});
      Id pos = b_.op(Op::OpLogicalNot, bt, {neg});
      Id isZero = b_.op(Op::OpFOrdEqual, bt, {x, constantValue(llvm::ConstantFP::get(vt, 0.0))});
      Id absx = glsl(typeOf(vt), GLSL::FAbs, {x});
      Id tiny = b_.op(Op::OpFOrdLessThan, bt,
                      {absx, constantValue(llvm::ConstantFP::get(
                                 vt, llvm::APFloat::getSmallestNormalized(vt->getScalarType()->getFltSemantics())))});
      Id isSub = b_.op(Op::OpLogicalAnd, bt, {tiny, b_.op(Op::OpLogicalNot, bt, {isZero})});
      Id special = b_.op(Op::OpLogicalOr, bt,
                         {b_.op(Op::OpLogicalOr, bt, {isNan, isInf}), b_.op(Op::OpLogicalOr, bt, {isZero, isSub})});
      Id isNormal = b_.op(Op::OpLogicalNot, bt, {special});
      Id result = 0;
      auto add = [&](Id c) { result = result ? b_.op(Op::OpLogicalOr, bt, {result, c}) : c; };
      auto both = [&](Id a, Id s) { return b_.op(Op::OpLogicalAnd, bt, {a, s}); };
      if (mask & 3) add(isNan);
      if (mask & 4) add(both(isInf, neg));
      if (mask & 8) add(both(isNormal, neg));
      if (mask & 16) add(both(isSub, neg));
      if (mask & 32) add(both(isZero, neg));
      if (mask & 64) add(both(isZero, pos));
      if (mask & 128) add(both(isSub, pos));
      if (mask & 256) add(both(isNormal, pos));
      if (mask & 512) add(both(isInf, pos));
      if (!result) result = splatLike(t, b_.constantBool(false));
      return done(result);
    }
    case llvm::Intrinsic::vector_reduce_add:
    case llvm::Intrinsic::vector_reduce_mul:
    case llvm::Intrinsic::vector_reduce_and:
    case llvm::Intrinsic::vector_reduce_or:
    case llvm::Intrinsic::vector_reduce_xor:
    case llvm::Intrinsic::vector_reduce_smax:
    case llvm::Intrinsic::vector_reduce_smin:
    case llvm::Intrinsic::vector_reduce_umax:
    case llvm::Intrinsic::vector_reduce_umin:
    case llvm::Intrinsic::vector_reduce_fmax:
    case llvm::Intrinsic::vector_reduce_fmin: {
      auto* vt = llvm::cast<llvm::FixedVectorType>(call.getArgOperand(0)->getType());
      Id v = arg(0);
      bool isBool = t->isIntegerTy(1);
      Id acc = b_.op(Op::OpCompositeExtract, typeOf(t), {v, 0});
      for (unsigned k = 1; k < vt->getNumElements(); ++k) {
        Id e = b_.op(Op::OpCompositeExtract, typeOf(t), {v, k});
        switch (id) {
          case llvm::Intrinsic::vector_reduce_add:
            acc = b_.op(Op::OpIAdd, typeOf(t), {acc, e});
            break;
          case llvm::Intrinsic::vector_reduce_mul:
            acc = b_.op(Op::OpIMul, typeOf(t), {acc, e});
            break;
          case llvm::Intrinsic::vector_reduce_and:
            acc = b_.op(isBool ? Op::OpLogicalAnd : Op::OpBitwiseAnd, typeOf(t), {acc, e});
            break;
          case llvm::Intrinsic::vector_reduce_or:
            acc = b_.op(isBool ? Op::OpLogicalOr : Op::OpBitwiseOr, typeOf(t), {acc, e});
            break;
          case llvm::Intrinsic::vector_reduce_xor:
            acc = b_.op(isBool ? Op::OpLogicalNotEqual : Op::OpBitwiseXor, typeOf(t), {acc, e});
            break;
          case llvm::Intrinsic::vector_reduce_smax:
            acc = glsl(typeOf(t), GLSL::SMax, {acc, e});
            break;
          case llvm::Intrinsic::vector_reduce_smin:
            acc = glsl(typeOf(t), GLSL::SMin, {acc, e});
            break;
          case llvm::Intrinsic::vector_reduce_umax:
            acc = glsl(typeOf(t), GLSL::UMax, {acc, e});
            break;
          case llvm::Intrinsic::vector_reduce_umin:
            acc = glsl(typeOf(t), GLSL::UMin, {acc, e});
            break;
          case llvm::Intrinsic::vector_reduce_fmax:
            acc = glsl(typeOf(t), GLSL::NMax, {acc, e});
            break;
          default:
            acc = glsl(typeOf(t), GLSL::NMin, {acc, e});
            break;
        }
      }
      return done(acc);
    }
    default:
      break;
  }
  unsupported(&call, "LLVM intrinsic '" + llvm::Intrinsic::getBaseName(id).str() + "'");
}

// ---------------------------------------------------------------------------------------------------------------
// metal_stdlib intrinsics

Id Emitter::emitStdlibIntrinsic(const llvm::CallInst& call, const std::string& name) {
  llvm::Type* t = call.getType();
  auto arg = [&](unsigned k) { return value(call.getArgOperand(k)); };
  auto done = [&](Id r) {
    define(&call, r);
    return r;
  };
  Id subgroup = constU32(static_cast<uint32_t>(spv::Scope::Subgroup));

  auto asU32 = [&](unsigned k) {
    Id v = arg(k);
    unsigned w = call.getArgOperand(k)->getType()->getIntegerBitWidth();
    return w == 32 ? v : b_.op(Op::OpUConvert, u32(), {v});
  };

  if (name == "threadgroup_barrier" || name == "simdgroup_barrier") {
    bool tg = name == "threadgroup_barrier";
    uint32_t flags = 3;
    if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(call.getArgOperand(0)))
      flags = static_cast<uint32_t>(c->getZExtValue());
    // mem_none on a threadgroup barrier still orders threadgroup memory: Apple's GPUs do, and kernels rely on it
    // (MLX's gemv publishes partial sums across a mem_none barrier).
    if (tg && flags == 0) flags = 2;
    uint32_t sem = 0;
    if (flags & 2) sem |= static_cast<uint32_t>(spv::MemorySemanticsMask::WorkgroupMemory);
    if (flags & 1) sem |= static_cast<uint32_t>(spv::MemorySemanticsMask::UniformMemory);
    if (flags & 4) sem |= static_cast<uint32_t>(spv::MemorySemanticsMask::ImageMemory);
    if (sem) sem |= static_cast<uint32_t>(spv::MemorySemanticsMask::AcquireRelease);
    Id scope = tg ? constU32(static_cast<uint32_t>(spv::Scope::Workgroup)) : subgroup;
    if (!tg) useSubgroups(spv::Capability::GroupNonUniform);
    b_.opNoResult(Op::OpControlBarrier, {scope, scope, constU32(sem)});
    return 0;
  }
  if (name == "simd_lane_id") return done(laneId());
  if (name == "simd_size") return done(subgroupSize());
  if (name == "simd_group_id") {
    useSubgroups(spv::Capability::GroupNonUniform);
    return done(builtinInput(spv::BuiltIn::SubgroupId, u32()));
  }
  if (name == "rsqrt" || name == "fract" || name == "sign") {
    uint32_t inst = name == "rsqrt" ? GLSL::InverseSqrt : name == "fract" ? GLSL::Fract : GLSL::FSign;
    return done(glslFloat(t, inst, {arg(0)}, inst != GLSL::InverseSqrt));
  }
  if (name == "function_constant_defined")
    unsupported(&call, "is_function_constant_defined() of something that is not a function constant");

  bool isQuad = name.rfind("quad_", 0) == 0;
  bool isSimd = name.rfind("simd_", 0) == 0;
  if (!isQuad && !isSimd) unsupported(&call, "metal_stdlib intrinsic '" + name + "'");
  std::string op = name.substr(5);
  llvm::Type* st = t->getScalarType();
  bool isFloat = st->isFloatingPointTy();
  bool isBool = st->isIntegerTy(1);

  // Lane arithmetic used by the quad forms and by Metal's shuffle edge rules, emitted only where needed.
  Id laneCache = 0, quadBaseCache = 0, inQuadCache = 0;
  auto lane = [&] { return laneCache ? laneCache : (laneCache = laneId()); };
  auto quadBase = [&] {
    return quadBaseCache ? quadBaseCache : (quadBaseCache = b_.op(Op::OpBitwiseAnd, u32(), {lane(), constU32(~3u)}));
  };
  auto inQuad = [&] {
    return inQuadCache ? inQuadCache : (inQuadCache = b_.op(Op::OpBitwiseAnd, u32(), {lane(), constU32(3u)}));
  };
  auto shuffle = [&](Id v, Id srcLane) {
    useSubgroups(spv::Capability::GroupNonUniformShuffle);
    return b_.op(Op::OpGroupNonUniformShuffle, typeOf(t), {subgroup, v, srcLane});
  };

  // Reductions and scans.
  auto arith = [&](const std::string& kind) -> Op {
    if (kind == "add") return isFloat ? Op::OpGroupNonUniformFAdd : Op::OpGroupNonUniformIAdd;
    if (kind == "mul") return isFloat ? Op::OpGroupNonUniformFMul : Op::OpGroupNonUniformIMul;
    if (kind == "smin") return Op::OpGroupNonUniformSMin;
    if (kind == "umin") return Op::OpGroupNonUniformUMin;
    if (kind == "fmin") return Op::OpGroupNonUniformFMin;
    if (kind == "smax") return Op::OpGroupNonUniformSMax;
    if (kind == "umax") return Op::OpGroupNonUniformUMax;
    if (kind == "fmax") return Op::OpGroupNonUniformFMax;
    if (kind == "and") return isBool ? Op::OpGroupNonUniformLogicalAnd : Op::OpGroupNonUniformBitwiseAnd;
    if (kind == "or") return isBool ? Op::OpGroupNonUniformLogicalOr : Op::OpGroupNonUniformBitwiseOr;
    if (kind == "xor") return isBool ? Op::OpGroupNonUniformLogicalXor : Op::OpGroupNonUniformBitwiseXor;
    unsupported(&call, "metal_stdlib intrinsic '" + name + "'");
  };
  if (op.rfind("reduce_", 0) == 0) {
    Op o = arith(op.substr(7));
    if (!isQuad) {
      useSubgroups(spv::Capability::GroupNonUniformArithmetic);
      return done(b_.op(o, typeOf(t), {subgroup, static_cast<uint32_t>(spv::GroupOperation::Reduce), arg(0)}));
    }
    // Within a quad: two butterfly steps (not a clustered reduce: lavapipe, for one, lacks that capability, and
    // the module's native body must be valid where its emulated one runs).
    Op scalar = [&] {
      std::string kind = op.substr(7);
      if (kind == "add") return isFloat ? Op::OpFAdd : Op::OpIAdd;
      if (kind == "mul") return isFloat ? Op::OpFMul : Op::OpIMul;
      if (kind == "and") return isBool ? Op::OpLogicalAnd : Op::OpBitwiseAnd;
      if (kind == "or") return isBool ? Op::OpLogicalOr : Op::OpBitwiseOr;
      if (kind == "xor") return isBool ? Op::OpLogicalNotEqual : Op::OpBitwiseXor;
      return Op::OpNop;
    }();
    useSubgroups(spv::Capability::GroupNonUniformShuffle);
    Id r = arg(0);
    for (uint32_t d : {1u, 2u}) {
      Id other = b_.op(Op::OpGroupNonUniformShuffleXor, typeOf(t), {subgroup, r, constU32(d)});
      if (scalar != Op::OpNop) {
        r = b_.op(scalar, typeOf(t), {r, other});
        continue;
      }
      std::string kind = op.substr(7);
      r = glsl(typeOf(t), GLSL::minMax(kind), {r, other});
    }
    return done(r);
  }
  if (op.rfind("scan_", 0) == 0) {
    bool inclusive = op.rfind("scan_incl_", 0) == 0;
    Op o = arith(op.substr(10));
    if (!isQuad) {
      useSubgroups(spv::Capability::GroupNonUniformArithmetic);
      auto go = inclusive ? spv::GroupOperation::InclusiveScan : spv::GroupOperation::ExclusiveScan;
      return done(b_.op(o, typeOf(t), {subgroup, static_cast<uint32_t>(go), arg(0)}));
    }
    // Within a quad: two doubling steps, then shift by one lane for the exclusive form.
    Op scalarOp = op.substr(10) == "add" ? (isFloat ? Op::OpFAdd : Op::OpIAdd) : (isFloat ? Op::OpFMul : Op::OpIMul);
    Id identity = op.substr(10) == "add" ? b_.constantNull(typeOf(t))
                                         : (isFloat ? constantValue(llvm::ConstantFP::get(t, 1.0)) : intConst(t, 1));
    useSubgroups(spv::Capability::GroupNonUniformShuffleRelative);
    Id r = arg(0);
    for (uint32_t d : {1u, 2u}) {
      Id from = b_.op(Op::OpGroupNonUniformShuffleUp, typeOf(t), {subgroup, r, constU32(d)});
      Id has = b_.op(Op::OpUGreaterThanEqual, boolType(), {inQuad(), constU32(d)});
      r = b_.op(Op::OpSelect, typeOf(t), {has, b_.op(scalarOp, typeOf(t), {r, from}), r});
    }
    if (!inclusive) {
      Id prev = b_.op(Op::OpGroupNonUniformShuffleUp, typeOf(t), {subgroup, r, constU32(1)});
      Id first = b_.op(Op::OpIEqual, boolType(), {inQuad(), constU32(0)});
      r = b_.op(Op::OpSelect, typeOf(t), {first, identity, prev});
    }
    return done(r);
  }

  // Shuffles.
  if (op == "shuffle") {
    Id src = asU32(1);
    if (isQuad) src = b_.op(Op::OpBitwiseOr, u32(), {quadBase(), b_.op(Op::OpBitwiseAnd, u32(), {src, constU32(3)})});
    return done(shuffle(arg(0), src));
  }
  if (op == "shuffle_xor") {
    useSubgroups(spv::Capability::GroupNonUniformShuffle);
    Id mask = asU32(1);
    if (isQuad) mask = b_.op(Op::OpBitwiseAnd, u32(), {mask, constU32(3)});
    return done(b_.op(Op::OpGroupNonUniformShuffleXor, typeOf(t), {subgroup, arg(0), mask}));
  }
  if (op == "shuffle_up" || op == "shuffle_down") {
    // Metal leaves lanes whose source is outside the group with their own value.
    bool up = op == "shuffle_up";
    Id d = asU32(1);
    Id pos = isQuad ? inQuad() : lane();
    Id size = isQuad ? constU32(4) : subgroupSize();
    Id srcPos = up ? b_.op(Op::OpISub, u32(), {pos, d}) : b_.op(Op::OpIAdd, u32(), {pos, d});
    Id valid =
        up ? b_.op(Op::OpUGreaterThanEqual, boolType(), {pos, d}) : b_.op(Op::OpULessThan, boolType(), {srcPos, size});
    Id src = isQuad ? b_.op(Op::OpBitwiseOr, u32(), {quadBase(), b_.op(Op::OpBitwiseAnd, u32(), {srcPos, constU32(3)})})
                    : b_.op(Op::OpBitwiseAnd, u32(), {srcPos, b_.op(Op::OpISub, u32(), {size, constU32(1)})});
    Id r = shuffle(arg(0), src);
    return done(b_.op(Op::OpSelect, typeOf(t), {valid, r, arg(0)}));
  }
  if (op == "shuffle_rotate_up" || op == "shuffle_rotate_down") {
    bool up = op == "shuffle_rotate_up";
    Id d = asU32(1);
    Id pos = isQuad ? inQuad() : lane();
    Id size = isQuad ? constU32(4) : subgroupSize();
    Id srcPos =
        up ? b_.op(Op::OpISub, u32(), {b_.op(Op::OpIAdd, u32(), {pos, size}), b_.op(Op::OpUMod, u32(), {d, size})})
           : b_.op(Op::OpIAdd, u32(), {pos, d});
    srcPos = b_.op(Op::OpUMod, u32(), {srcPos, size});
    Id src = isQuad ? b_.op(Op::OpBitwiseOr, u32(), {quadBase(), srcPos}) : srcPos;
    return done(shuffle(arg(0), src));
  }
  if (op == "broadcast_first") {
    if (!isQuad) {
      useSubgroups(spv::Capability::GroupNonUniformBallot);
      return done(b_.op(Op::OpGroupNonUniformBroadcastFirst, typeOf(t), {subgroup, arg(0)}));
    }
  }

  // Votes. Quad votes look at the quad's four bits of a subgroup ballot.
  auto ballotWord = [&](Id pred) {  // lanes 0..31 (simdgroups are 32 wide)
    useSubgroups(spv::Capability::GroupNonUniformBallot);
    Id b4 = b_.op(Op::OpGroupNonUniformBallot, b_.typeVector(u32(), 4), {subgroup, pred});
    return b_.op(Op::OpCompositeExtract, u32(), {b4, 0});
  };
  auto quadBits = [&](Id pred) {
    return b_.op(Op::OpBitwiseAnd, u32(),
                 {b_.op(Op::OpShiftRightLogical, u32(), {ballotWord(pred), quadBase()}), constU32(0xF)});
  };
  if (isQuad && op == "broadcast_first") {
    Id first = glsl(u32(), GLSL::FindILsb, {quadBits(b_.constantBool(true))});
    return done(shuffle(arg(0), b_.op(Op::OpBitwiseOr, u32(), {quadBase(), first})));
  }
  if (op == "all" || op == "any") {
    if (!isQuad) {
      useSubgroups(spv::Capability::GroupNonUniformVote);
      return done(
          b_.op(op == "all" ? Op::OpGroupNonUniformAll : Op::OpGroupNonUniformAny, boolType(), {subgroup, arg(0)}));
    }
    Id bits = quadBits(arg(0));
    if (op == "any") return done(b_.op(Op::OpINotEqual, boolType(), {bits, constU32(0)}));
    return done(b_.op(Op::OpIEqual, boolType(), {bits, quadBits(b_.constantBool(true))}));
  }
  if (op == "ballot") {
    if (isQuad) return done(b_.op(Op::OpUConvert, typeOf(t), {quadBits(arg(0))}));
    useSubgroups(spv::Capability::GroupNonUniformBallot);
    Id b4 = b_.op(Op::OpGroupNonUniformBallot, b_.typeVector(u32(), 4), {subgroup, arg(0)});
    Id lo2 = b_.op(Op::OpVectorShuffle, b_.typeVector(u32(), 2), {b4, b4, 0, 1});
    return done(b_.op(Op::OpBitcast, typeOf(t), {lo2}));
  }
  if (op == "is_first") {
    if (!isQuad) {
      useSubgroups(spv::Capability::GroupNonUniform);
      return done(b_.op(Op::OpGroupNonUniformElect, boolType(), {subgroup}));
    }
    Id first = glsl(u32(), GLSL::FindILsb, {quadBits(b_.constantBool(true))});
    return done(b_.op(Op::OpIEqual, boolType(), {first, inQuad()}));
  }
  unsupported(&call, "metal_stdlib intrinsic '" + name + "'");
}

// ---------------------------------------------------------------------------------------------------------------
// Pseudo-intrinsics from the lowering

Id Emitter::emitPseudoIntrinsic(const llvm::CallInst& call, llvm::StringRef name) {
  llvm::Type* t = call.getType();
  auto done = [&](Id r) {
    define(&call, r);
    return r;
  };
  auto constArg = [&](unsigned k) {
    return static_cast<uint32_t>(llvm::cast<llvm::ConstantInt>(call.getArgOperand(k))->getZExtValue());
  };
  if (name.starts_with("m2v.sgm.") || name.starts_with("m2v.coopmat.")) return emitMatrixIntrinsic(call, name);
  if (name.starts_with(lower::pseudo::kEmulatedSimdPrefix)) {
    llvm::StringRef op = name.drop_front(std::strlen(lower::pseudo::kEmulatedSimdPrefix));
    Id r = emitEmulatedSimd(call, op.take_until([](char c) { return c == '.'; }).str());
    return t->isVoidTy() ? 0 : done(r);
  }
  if (name == lower::pseudo::kPushGrid) return done(pushConstant(kPushGridOffset, typeOf(t)));
  if (name == lower::pseudo::kPushI64) return done(pushConstant(constArg(0), u64()));
  if (name == lower::pseudo::kWorkgroupSize) return done(workgroupSize_);
  if (name == lower::pseudo::kNominalThreadgroupSize) return done(nominalSize_);
  if (name == lower::pseudo::kThreadgroupShape) return done(threadgroupShape_);
  if (name == lower::pseudo::kNever) return done(b_.constantBool(false));
  if (name.starts_with(lower::pseudo::kBfloatRoundedWord))
    return done(roundedBfloatWord(value(call.getArgOperand(0)), t, knownNeverNaN(call.getArgOperand(0))));
  if (name.starts_with(lower::pseudo::kSpecPrefix)) {
    uint32_t specId = constArg(0);
    auto it = specConstants_.find(specId);
    if (it == specConstants_.end()) {
      Id c = t->isIntegerTy(1) ? b_.specConstantBool(false, specId) : b_.specConstant(typeOf(t), 0, specId);
      it = specConstants_.emplace(specId, c).first;
    }
    return done(it->second);
  }
  if (name.starts_with(lower::pseudo::kBuiltinPrefix)) {
    llvm::StringRef which = name.drop_front(std::strlen(lower::pseudo::kBuiltinPrefix));
    Id type = typeOf(t);
    if (which == "workgroup_id") return done(builtinInput(spv::BuiltIn::WorkgroupId, type));
    if (which == "local_invocation_index") return done(builtinInput(spv::BuiltIn::LocalInvocationIndex, type));
    if (which == "local_invocation_id") return done(builtinInput(spv::BuiltIn::LocalInvocationId, type));
    if (which == "num_workgroups") return done(builtinInput(spv::BuiltIn::NumWorkgroups, type));
    useSubgroups(spv::Capability::GroupNonUniform);
    if (which == "subgroup_id") return done(builtinInput(spv::BuiltIn::SubgroupId, type));
    if (which == "subgroup_local_invocation_id")
      return done(builtinInput(spv::BuiltIn::SubgroupLocalInvocationId, type));
    if (which == "subgroup_size") return done(builtinInput(spv::BuiltIn::SubgroupSize, type));
    if (which == "num_subgroups") return done(builtinInput(spv::BuiltIn::NumSubgroups, type));
  }
  internalError(&call, "unknown pseudo-intrinsic " + name.str());
}

}  // namespace m2v::spirv
