# RECOURSE_FUZZ=ON: every target of the build (the engine included) gets libFuzzer's coverage
# instrumentation, AddressSanitizer (with leak checking) and UndefinedBehaviorSanitizer, and any
# UB report aborts, so libFuzzer keeps the input. Included before the first target is defined.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "RECOURSE_FUZZ=ON needs clang (libFuzzer): configure with "
                      "-DCMAKE_CXX_COMPILER=clang++, or run scripts/fuzz.sh")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)
