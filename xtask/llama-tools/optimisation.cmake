# Forge: per-target optimisation for the llama.cpp that llama-cpp-sys-2 compiles (the runner's, the tests' and
# the tools'). scripts/lib.sh passes this file as CMAKE_PROJECT_INCLUDE, which the crate's build script forwards
# to CMake like every CMAKE_* variable; CMake includes it after llama.cpp's project() call.
#
# Why: on 2 cores llama.cpp is the largest single item of the test command's build, and ggml's kernels are a
# seventh of its compile time. The hot loops (matrix products, attention, quantised dot products) are in ggml,
# which keeps -O3. libllama (model loading, graph building, tokenizer, grammar and samplers), common and
# cpp-httplib (both only for llama-server) compile at -O1 — 114 of 492 CPU-seconds saved, measured in paired
# runs against the all -O3 build (evidence/bench/README.md).
#
# common is also compiled as a unity build (16 sources per compiler run), the way upstream already compiles
# libllama's model files: its ~50 sources each parse the same large headers (nlohmann/json, chat, peg-parser),
# and parsing, not optimising, is most of their cost (-O0 saved 6 %; batches of 16 halved it). A unity batch
# shares one preprocessor state, so a file that defines a macro before its includes must stay alone: in common on
# Linux that is json.cpp alone (JSON_ASSERT = GGML_ASSERT, which would otherwise not reach the nlohmann/json its
# batch had already included, and would reach the files after it). Only Windows paths define others.
include_guard(GLOBAL)
if (CMAKE_VERSION VERSION_LESS 3.19)
    message(WARNING "Forge optimisation.cmake needs CMake 3.19 (cmake_language DEFER); llama.cpp stays at -O3")
    return()
endif()

set(FORGE_LLAMA_O1_TARGETS llama llama-common cpp-httplib)
set(FORGE_LLAMA_UNITY_TARGETS llama-common)
set(FORGE_LLAMA_UNITY_ALONE json.cpp)   # common's sources compiled on their own (see above)

function(forge_llama_compile_settings)
    foreach(target IN LISTS FORGE_LLAMA_O1_TARGETS)
        if (TARGET ${target})
            # After CMAKE_<LANG>_FLAGS_RELEASE on the command line, so -O1 wins over -O3 for these targets only.
            target_compile_options(${target} PRIVATE -O1)
        else()
            message(WARNING "Forge optimisation.cmake: llama.cpp has no target '${target}' (renamed upstream?)")
        endif()
    endforeach()
    foreach(target IN LISTS FORGE_LLAMA_UNITY_TARGETS)
        if (TARGET ${target})
            set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 16)
            get_target_property(dir ${target} SOURCE_DIR)
            foreach(source IN LISTS FORGE_LLAMA_UNITY_ALONE)
                if (EXISTS "${dir}/${source}")
                    set_source_files_properties("${dir}/${source}" DIRECTORY "${dir}" PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
                else()
                    message(WARNING "Forge optimisation.cmake: ${target} has no source '${source}' (renamed upstream?)")
                endif()
            endforeach()
        endif()
    endforeach()
endfunction()

# Targets exist only once every subdirectory is configured: run at the end of the top-level CMakeLists.
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL forge_llama_compile_settings)
