// Metal's `[[...]]` attributes as clang attributes (MetalAttributes.cpp): clang parses them and Sema records each as
// the `annotate("m2v....")` attribute the kernel facts are read from.
#pragma once

namespace m2v::frontend {

// The number of attributes registered with clang's parser (Metal's and any other). Calling it keeps
// MetalAttributes.cpp, whose static objects register the attributes, in every binary that links the front end.
int metalAttributesRegistered();

}  // namespace m2v::frontend
