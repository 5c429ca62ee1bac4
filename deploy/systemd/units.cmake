# units.cmake: run by `cmake --install` (and cpack): writes the systemd units for the
# prefix being installed to, so ExecStart names the installed programs wherever they
# go (/usr from the .deb, /usr/local by default). Set by the caller: SIMHASH_UNIT_SRC
# (deploy/systemd), SIMHASH_UNIT_TMP (a build folder), and the GNUInstallDirs names.
set(CMAKE_INSTALL_FULL_BINDIR "${CMAKE_INSTALL_PREFIX}/${SIMHASH_BINDIR}")
set(CMAKE_INSTALL_FULL_DOCDIR "${CMAKE_INSTALL_PREFIX}/${SIMHASH_DOCDIR}")
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(CMAKE_INSTALL_FULL_SYSCONFDIR "/etc")
else()
  set(CMAKE_INSTALL_FULL_SYSCONFDIR "${CMAKE_INSTALL_PREFIX}/etc")
endif()
foreach(unit simhash-coordinator.service simhash-shard@.service)
  configure_file("${SIMHASH_UNIT_SRC}/${unit}.in" "${SIMHASH_UNIT_TMP}/${unit}" @ONLY)
  file(INSTALL "${SIMHASH_UNIT_TMP}/${unit}" DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
endforeach()
