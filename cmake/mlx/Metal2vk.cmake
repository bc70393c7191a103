# metal2vk's Metal API for MLX: the static libraries of a g++ build tree of metal2vk (M2V_BUILD), linked as one group
# (archive order free), with what they need from the system: LLVM and clang (the compiler runs in process for
# MLX's run-time kernels), SPIRV-Tools and the Vulkan loader. Interface target: metal2vk_metal_api.
find_package(LLVM REQUIRED CONFIG HINTS /usr/lib/llvm-22/lib/cmake/llvm)
find_package(Clang REQUIRED CONFIG HINTS /usr/lib/llvm-22/lib/cmake/clang)
find_package(Vulkan REQUIRED)
find_library(SPIRV_TOOLS_LIB NAMES SPIRV-Tools-shared SPIRV-Tools REQUIRED)
find_library(SPIRV_TOOLS_OPT_LIB NAMES SPIRV-Tools-opt REQUIRED)

set(m2v_archives)
# m2v_mlx: the content-addressed module cache the Metal API shares with mlx.h's front door.
foreach(lib metal/m2v_metal mlx/m2v_mlx runtime/m2v_runtime compiler/m2v_compiler spirv/m2v_spirv lower/m2v_lower
            frontend/m2v_frontend common/m2v_common)
  get_filename_component(dir ${lib} DIRECTORY)
  get_filename_component(name ${lib} NAME)
  set(archive ${M2V_BUILD}/${dir}/lib${name}.a)
  list(APPEND m2v_archives ${archive})
  if(NOT EXISTS ${archive})
    # Configuring first is allowed (MLX's own sources compile meanwhile); linking needs it.
    message(WARNING "${archive} not built yet: build m2v_metal in ${M2V_BUILD} before linking MLX")
  endif()
endforeach()

# Nothing linked with them exports their symbols (as metal2vk's own executables, CMakeLists.txt): a Vulkan driver
# that loads another LLVM (lavapipe's) would bind its template instantiations to ours.
set(m2v_archive_names)
foreach(archive ${m2v_archives})
  get_filename_component(name ${archive} NAME)
  list(APPEND m2v_archive_names ${name})
endforeach()
string(JOIN ":" m2v_archive_names ${m2v_archive_names})

add_library(metal2vk_metal_api INTERFACE)
target_link_libraries(metal2vk_metal_api INTERFACE -Wl,--start-group ${m2v_archives} -Wl,--end-group
                      clang-cpp LLVM ${SPIRV_TOOLS_OPT_LIB} ${SPIRV_TOOLS_LIB} Vulkan::Vulkan pthread dl)
target_link_options(metal2vk_metal_api INTERFACE "-Wl,--exclude-libs=${m2v_archive_names}")
