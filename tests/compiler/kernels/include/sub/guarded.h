// Included twice (through two paths); the guard keeps one definition.
#ifndef M2V_TEST_GUARDED_H
#define M2V_TEST_GUARDED_H
#include "../common.h"  // relative to this header's own directory
inline float guarded_scale() { return COMMON_SCALE * 2.0f; }
#endif
