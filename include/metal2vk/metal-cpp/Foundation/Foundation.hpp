// The Foundation part of metal-cpp that the Metal API needs, implemented by metal2vk (m2v_metal).
#pragma once

#include "NSArray.hpp"
#include "NSBundle.hpp"
#include "NSObject.hpp"
#include "NSSharedPtr.hpp"
#include "NSString.hpp"
