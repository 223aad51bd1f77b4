# Warning flags for schedc's own targets (not for third-party headers, included as SYSTEM).
function(schedc_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  # GCC 12 at -O3 (Release) reports -Wrestrict inside libstdc++'s std::string concatenation, a
  # false positive of its own inlining (GCC bugs 105329, 105651); not a warning about our code.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
     AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(SCHEDC_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
