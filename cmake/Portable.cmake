# M2V_PORTABLE: binaries and the Python extension that run on any x86-64 Linux with glibc and a Vulkan loader.
#
# LLVM, clang and SPIRV-Tools come from the static component archives Debian ships (llvm-22-dev, libclang-22-dev,
# spirv-tools), libstdc++ and libgcc are linked statically too, and unused code is dropped by the linker
# (-ffunction-sections -fdata-sections --gc-sections). Only the LLVM components the front end, the passes and the
# review front end use are listed: no target back ends (clang parses for nvptx64 with the target description built
# into clangBasic and emits IR without an LLVM target machine), no z3, libxml2 or ICU (Debian's LLVMSupport target
# names z3, so the archives are linked by path, not through LLVM's imported targets).
# What remains at run time: glibc (libc, libm, libdl, librt, libpthread) and libvulkan.so.1.

# lld links faster and in less memory than GNU ld; archive order does not matter to it.
find_program(M2V_LLD NAMES ld.lld-${LLVM_VERSION_MAJOR} ld.lld HINTS ${LLVM_TOOLS_BINARY_DIR})
if(M2V_LLD)
  add_link_options(-fuse-ld=lld)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # gcc's -fuse-ld=lld runs `ld.lld` from PATH; point it at LLVM 22's.
    get_filename_component(m2v_lld_dir ${M2V_LLD} DIRECTORY)
    if(EXISTS ${LLVM_TOOLS_BINARY_DIR}/ld.lld)
      set(m2v_lld_dir ${LLVM_TOOLS_BINARY_DIR})
    endif()
    add_link_options(-B${m2v_lld_dir})
  endif()
  message(STATUS "metal2vk portable: linking with ${M2V_LLD}")
else()
  message(WARNING "ld.lld not found (apt install lld-22): linking with the default linker, slower and "
                  "memory-hungry")
endif()

add_compile_options(-ffunction-sections -fdata-sections)
add_link_options(-Wl,--gc-sections -static-libstdc++ -Wl,--as-needed -Wl,--strip-debug)
# libgcc too for executables; shared objects keep libgcc_s.so.1 (one unwinder for the whole process, and every
# process that loads Python or a C++ library has it).
add_link_options("$<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-static-libgcc>")
if(M2V_LLD)
  add_link_options(-Wl,--icf=all)  # fold identical functions (template instantiations)
endif()

# The oldest glibc: arc4random (2.36) is routed to getrandom (cmake/portable/glibc_compat.cpp); what remains needs
# 2.35 (_dl_find_object, from the static libgcc unwinder). Every executable and module links the shim.
add_library(m2v_glibc_compat STATIC ${CMAKE_CURRENT_LIST_DIR}/portable/glibc_compat.cpp)
set_target_properties(m2v_glibc_compat PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_link_options(-Wl,--wrap=arc4random)
link_libraries(m2v_glibc_compat)

set(M2V_CLANG_COMPONENTS
  clangTooling clangToolingCore clangToolingInclusions clangDependencyScanning clangFormat clangRewrite
  clangASTMatchers clangCodeGen clangFrontend clangDriver clangOptions clangSerialization clangParse clangSema
  clangAnalysis clangAnalysisLifetimeSafety clangAPINotes clangEdit clangAST clangLex clangBasic clangSupport)

# LLVM libraries clang's code generator, the pass pipeline and the tooling library reach, with their
# dependencies as llvm-config orders them.
set(M2V_LLVM_COMPONENTS
  core irreader passes ipo instcombine scalaropts transformutils analysis bitreader bitwriter codegentypes
  coroutines coverage demangle extensions frontenddriver frontendhlsl frontendopenmp frontendoffloading irprinter
  instrumentation lto linker mc mcparser objcarcopts object profiledata support target targetparser option
  windowsdriver)
find_program(M2V_LLVM_CONFIG llvm-config HINTS ${LLVM_TOOLS_BINARY_DIR} NO_DEFAULT_PATH REQUIRED)
execute_process(COMMAND ${M2V_LLVM_CONFIG} --link-static --libnames ${M2V_LLVM_COMPONENTS}
                OUTPUT_VARIABLE m2v_llvm_names OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE m2v_rc)
if(NOT m2v_rc EQUAL 0)
  message(FATAL_ERROR "llvm-config --link-static failed: are llvm-22-dev's static archives installed?")
endif()
separate_arguments(m2v_llvm_names UNIX_COMMAND "${m2v_llvm_names}")
# Debian's llvm-config names Polly under `passes`; Polly is not shipped as an archive and not used.
list(FILTER m2v_llvm_names EXCLUDE REGEX "Polly")

set(M2V_STATIC_ARCHIVES)
foreach(name ${M2V_CLANG_COMPONENTS})
  list(APPEND m2v_llvm_names lib${name}.a)
endforeach()
foreach(name ${m2v_llvm_names})
  if(NOT EXISTS ${LLVM_LIBRARY_DIR}/${name})
    message(FATAL_ERROR "metal2vk portable: ${LLVM_LIBRARY_DIR}/${name} is missing (llvm-22-dev, libclang-22-dev)")
  endif()
  list(APPEND M2V_STATIC_ARCHIVES ${LLVM_LIBRARY_DIR}/${name})
endforeach()

# zlib and zstd: LLVMSupport's compression helpers (libz.a from zlib1g-dev, libzstd.a from libzstd-dev).
find_library(M2V_ZLIB_STATIC NAMES libz.a REQUIRED)
find_library(M2V_ZSTD_STATIC NAMES libzstd.a REQUIRED)

find_package(Threads REQUIRED)
add_library(m2v_llvm_static INTERFACE)
if(M2V_LLD)
  target_link_libraries(m2v_llvm_static INTERFACE ${M2V_STATIC_ARCHIVES} ${M2V_ZLIB_STATIC} ${M2V_ZSTD_STATIC} rt dl m Threads::Threads)
else()
  target_link_libraries(m2v_llvm_static INTERFACE "$<LINK_GROUP:RESCAN,${M2V_STATIC_ARCHIVES}>" ${M2V_ZLIB_STATIC} ${M2V_ZSTD_STATIC}
                                                  rt dl m Threads::Threads)
endif()

find_library(SPIRV_TOOLS_LIB NAMES libSPIRV-Tools.a REQUIRED)
find_library(SPIRV_TOOLS_OPT_LIB NAMES libSPIRV-Tools-opt.a REQUIRED)

# Symbols of the static archives stay inside the Python module (it must not export libstdc++'s symbols to the
# interpreter); libmetal2vk.so chooses its exports with a version script (package/exports.map).
add_link_options("$<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,MODULE_LIBRARY>:-Wl,--exclude-libs,ALL>")
