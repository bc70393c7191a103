#pragma once
// Found from sub/guarded.h as "../common.h" and from the kernel as "include/common.h".
#include <metal_stdlib>
#define COMMON_SCALE 1.5f
struct Pair {
  float a, b;
};
