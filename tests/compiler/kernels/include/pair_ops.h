#pragma once
#include "common.h"          // next to this header
#include "sub/guarded.h"     // a header that includes this directory's common.h again
#include <m2v_test/angled.h> // through -I
inline float pair_sum(Pair p) { return (p.a + p.b) * guarded_scale() + angled_offset(); }
