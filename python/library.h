// The library face of metal2vk._core (python/library.cpp): compile_library, load_kernel, Kernel, Buffer, Stream.
#pragma once

#include <pybind11/pybind11.h>

namespace m2v::python {

void bindLibrary(pybind11::module_& m);

}  // namespace m2v::python
