// EXPECT-EXIT: 2
// EXPECT-MSG: no input file
// ARGS: compile
// `m2v compile` without an input file is a usage error (exit 2).
