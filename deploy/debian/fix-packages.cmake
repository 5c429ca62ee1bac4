# fix-packages.cmake: run by cpack once the packages are built
# (CPACK_POST_BUILD_SCRIPTS): repairs each package with fix-packages.sh beside it.
foreach(f IN LISTS CPACK_PACKAGE_FILES)
  if(f MATCHES "\\.d?deb$")
    execute_process(COMMAND sh "${CMAKE_CURRENT_LIST_DIR}/fix-packages.sh" "${f}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "fix-packages.sh ${f} failed (${rc})")
    endif()
  endif()
endforeach()
