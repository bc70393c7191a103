// EXPECT-EXIT: 1
// EXPECT-MSG: does_not_exist.metal
// ARGS: compile does_not_exist.metal
// An input file that does not exist is a user error (exit 1) naming the file.
