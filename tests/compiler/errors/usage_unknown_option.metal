// EXPECT-EXIT: 2
// EXPECT-MSG: unknown option '--frobnicate'
// ARGS: compile %s --frobnicate
// An unknown option is a usage error (exit 2).
kernel void f() {}
