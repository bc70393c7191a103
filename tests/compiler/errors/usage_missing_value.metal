// EXPECT-EXIT: 2
// EXPECT-MSG: --entry needs a value
// ARGS: compile %s --entry
// An option without its value is a usage error (exit 2).
kernel void f() {}
