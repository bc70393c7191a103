// What the binding reads of numpy objects, through numpy's Python attributes: pybind11 2.10 (Debian 12) reads the
// PyArray_Descr struct directly, and its layout changed in numpy 2 (`elsize` moved: a zero item size there divided
// by zero). Arrays' shapes, strides and data pointers (PyArrayObject) did not move and are read as usual.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

namespace m2v::python {

inline ssize_t itemSize(const pybind11::handle& dtype) { return dtype.attr("itemsize").cast<ssize_t>(); }
inline char dtypeKind(const pybind11::handle& dtype) { return dtype.attr("kind").cast<std::string>().at(0); }

}  // namespace m2v::python
