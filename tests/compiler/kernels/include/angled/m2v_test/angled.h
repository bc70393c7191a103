#pragma once
#include "../../sub/guarded.h"  // quoted, relative to this file, reaching back into the first tree
inline float angled_offset() { return 0.25f + guarded_scale() * 0.0f; }
