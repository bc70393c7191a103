// EXPECT-EXIT: 1
// EXPECT-MSG: include/broken.h:3:49: error: use of undeclared identifier 'undeclared_in_header'
// EXPECT-MSG: inline float broken_value(float x) { return x + undeclared_in_header; }
// EXPECT-MSG: error_in_header.metal:7:10: note: in file included from here
// An error in an included header is reported at the header's own path, line and column, with the source line
// and the chain of includes that led there.
#include "include/broken.h"
kernel void f(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = broken_value(1.0f); }
