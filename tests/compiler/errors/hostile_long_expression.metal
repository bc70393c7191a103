// EXPECT-EXIT: 0
// ARGS: compile %s --json
// A sum of 80,000 operands (built with macros): clang recurses once per operand, which overflowed the 8 MiB stack
// (SIGSEGV); m2v runs its commands on a thread with a 1 GiB stack.
#define T1 i + i +
#define T10 T1 T1 T1 T1 T1 T1 T1 T1 T1 T1
#define T100 T10 T10 T10 T10 T10 T10 T10 T10 T10 T10
#define T1000 T100 T100 T100 T100 T100 T100 T100 T100 T100 T100
#define T10000 T1000 T1000 T1000 T1000 T1000 T1000 T1000 T1000 T1000 T1000
kernel void f(device uint* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = T10000 T10000 T10000 T10000 i; }
