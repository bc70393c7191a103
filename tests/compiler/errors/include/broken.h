#pragma once
// A type error inside a header: the diagnostic names this file, its line and column, and the include stack.
inline float broken_value(float x) { return x + undeclared_in_header; }
