# Forge: per-target optimisation for the llama.cpp that llama-cpp-sys-2 compiles (the runner's, the tests' and
# the tools'). scripts/lib.sh passes this file as CMAKE_PROJECT_INCLUDE, which the crate's build script forwards
# to CMake like every CMAKE_* variable; CMake includes it after llama.cpp's project() call.
#
# Why: on 2 cores llama.cpp is the largest single item of the test command's build, and ggml's kernels are a
# seventh of its compile time. The hot loops (matrix products, attention, quantised dot products) are in ggml,
# which keeps -O3. libllama (model loading, graph building, tokenizer, grammar and samplers), common and
# cpp-httplib (both only for llama-server) compile at -O1 — 114 of 492 CPU-seconds saved, measured in paired
# runs against the all -O3 build (evidence/bench/README.md).
include_guard(GLOBAL)
if (CMAKE_VERSION VERSION_LESS 3.19)
    message(WARNING "Forge optimisation.cmake needs CMake 3.19 (cmake_language DEFER); llama.cpp stays at -O3")
    return()
endif()

set(FORGE_LLAMA_O1_TARGETS llama llama-common cpp-httplib)

function(forge_llama_relax_optimisation)
    foreach(target IN LISTS FORGE_LLAMA_O1_TARGETS)
        if (TARGET ${target})
            # After CMAKE_<LANG>_FLAGS_RELEASE on the command line, so -O1 wins over -O3 for these targets only.
            target_compile_options(${target} PRIVATE -O1)
        else()
            message(WARNING "Forge optimisation.cmake: llama.cpp has no target '${target}' (renamed upstream?)")
        endif()
    endforeach()
endfunction()

# Targets exist only once every subdirectory is configured: run at the end of the top-level CMakeLists.
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL forge_llama_relax_optimisation)
