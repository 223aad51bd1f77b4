# Warning flags for schedc's own targets (not for third-party headers, included as SYSTEM).
function(schedc_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(SCHEDC_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
