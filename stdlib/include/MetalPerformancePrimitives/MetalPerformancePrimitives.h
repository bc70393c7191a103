// metal2vk metal_stdlib: Metal 4's MetalPerformancePrimitives (tensor matrix operations) are not supported yet.
// Including this header stops the compile with exit code 3, reported at the user's #include.
#error metal2vk unsupported: Metal 4 MetalPerformancePrimitives (tensor operations)
