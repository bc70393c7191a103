// The Metal API of metal-cpp (namespaces MTL and NS), implemented by metal2vk over its Vulkan runtime and its
// compiler (library m2v_metal, CMake target metal2vk::metal). Add include/metal2vk/metal-cpp to the include path
// and `#include <Metal/Metal.hpp>` as on Apple platforms. What is implemented and how each concept maps onto
// Vulkan: docs/METAL_API.md.
#pragma once

#include "../Foundation/Foundation.hpp"
#include "MTLCaptureManager.hpp"
#include "MTLCommandQueue.hpp"
#include "MTLDevice.hpp"
#include "MTLLibrary.hpp"
#include "MTLResource.hpp"
#include "MTLTypes.hpp"
