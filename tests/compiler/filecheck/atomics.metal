#include <metal_stdlib>
using namespace metal;
kernel void atomics(device atomic_int* a [[buffer(0)]], device atomic_float* f [[buffer(1)]], device atomic_uint* u [[buffer(2)]], uint lid [[thread_index_in_threadgroup]]) {
  threadgroup atomic_uint t[32];
  atomic_store_explicit(&t[lid & 31], 0u, memory_order_relaxed);
  atomic_fetch_add_explicit(&a[lid], 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&a[lid], 1, memory_order_relaxed);
  atomic_fetch_min_explicit(&a[lid], 1, memory_order_relaxed);
  atomic_fetch_max_explicit(&u[lid], 1u, memory_order_relaxed);
  atomic_fetch_and_explicit(&u[lid], 1u, memory_order_relaxed);
  atomic_fetch_or_explicit(&u[lid], 1u, memory_order_relaxed);
  atomic_fetch_xor_explicit(&u[lid], 1u, memory_order_relaxed);
  atomic_exchange_explicit(&u[lid], 1u, memory_order_relaxed);
  uint e = 0; atomic_compare_exchange_weak_explicit(&u[lid], &e, 2u, memory_order_relaxed, memory_order_relaxed);
  atomic_fetch_add_explicit(&f[lid], 1.5f, memory_order_relaxed);
  atomic_fetch_add_explicit(&t[lid & 31], 1u, memory_order_relaxed);
  atomic_store_explicit(&u[0], atomic_load_explicit(&t[(lid + 1) & 31], memory_order_relaxed) + e, memory_order_relaxed);
}
// MODE: asm
// Rule: atomics -> OpAtomic* with the address space's scope (device: Device = 1, threadgroup: Workgroup = 2) and
// relaxed semantics (0); atomic_float fetch_add -> OpAtomicFAddEXT with capability AtomicFloat32AddEXT and
// extension SPV_EXT_shader_atomic_float_add; compare_exchange_weak -> OpAtomicCompareExchange.
// CHECK-DAG: OpCapability AtomicFloat32AddEXT
// CHECK-DAG: OpExtension "SPV_EXT_shader_atomic_float_add"
// CHECK-LABEL: %main = OpFunction
// CHECK: OpAtomicStore %{{[0-9]+}} %uint_2 %uint_0 %uint_0
// CHECK: OpAtomicIAdd %uint %{{[0-9]+}} %uint_1 %uint_0 %uint_1
// CHECK: OpAtomicISub %uint %{{[0-9]+}} %uint_1 %uint_0 %uint_1
// CHECK: OpAtomicSMin %uint %{{[0-9]+}} %uint_1 %uint_0 %uint_1
// CHECK: OpAtomicUMax %uint %{{[0-9]+}} %uint_1 %uint_0 %uint_1
// CHECK: OpAtomicAnd %uint %{{[0-9]+}} %uint_1 %uint_0 %uint_1
// CHECK: OpAtomicOr %uint %{{[0-9]+}} %uint_1 %uint_0 %uint_1
// CHECK: OpAtomicXor %uint %{{[0-9]+}} %uint_1 %uint_0 %uint_1
// CHECK: OpAtomicExchange %uint %{{[0-9]+}} %uint_1 %uint_0 %uint_1
// CHECK: OpAtomicCompareExchange %uint %{{[0-9]+}} %uint_1 %uint_0 %uint_0 %uint_2 %uint_0
// CHECK: OpAtomicFAddEXT %float %{{[0-9]+}} %uint_1 %uint_0 %float_1_5
// CHECK: OpAtomicIAdd %uint %{{[0-9]+}} %uint_2 %uint_0 %uint_1
// CHECK: OpAtomicLoad %uint %{{[0-9]+}} %uint_2 %uint_0
// CHECK: OpAtomicStore %{{[0-9]+}} %uint_1 %uint_0
