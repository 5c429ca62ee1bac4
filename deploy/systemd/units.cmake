# units.cmake: run by `cmake --install` (and cpack): writes the systemd units for the
# prefix being installed to, so ExecStart names the installed programs wherever they
# go (/usr from the .deb, /usr/local by default), and the default configuration the
# units read (SYSCONFDIR/simhash: /etc from the .deb). Set by the caller:
# SIMHASH_UNIT_SRC (deploy/systemd), SIMHASH_CONF_SRC (deploy), SIMHASH_UNIT_TMP (a
# build folder), and the GNUInstallDirs names. Each run writes in a folder of its own
# under SIMHASH_UNIT_TMP, so a `cmake --install` and a cpack of one build tree can run
# at the same time (each with its own prefix).
string(RANDOM LENGTH 12 SIMHASH_RUN)
set(SIMHASH_UNIT_TMP "${SIMHASH_UNIT_TMP}/${SIMHASH_RUN}")
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

# Default configuration: shard-0.conf (the example: one worker for shards 0-255 on
# port 7100, beside redis-server on 6379) and coordinator.conf (the example with its
# seed workers replaced by that one), so `systemctl start simhash-shard@0
# simhash-coordinator` runs on a fresh install. An existing file is left alone
# (the package marks them conffiles: dpkg asks before replacing an edited one).
file(READ "${SIMHASH_CONF_SRC}/coordinator.conf" conf)
string(REGEX REPLACE "(\nworker [^\n]*)+" "\nworker 127.0.0.1:7100" conf "${conf}")
file(WRITE "${SIMHASH_UNIT_TMP}/coordinator.conf" "${conf}")
configure_file("${SIMHASH_CONF_SRC}/shard.conf" "${SIMHASH_UNIT_TMP}/shard-0.conf" COPYONLY)
foreach(conf coordinator.conf shard-0.conf)
  if(NOT EXISTS "$ENV{DESTDIR}${CMAKE_INSTALL_FULL_SYSCONFDIR}/simhash/${conf}")
    file(INSTALL "${SIMHASH_UNIT_TMP}/${conf}" DESTINATION "${CMAKE_INSTALL_FULL_SYSCONFDIR}/simhash"
         PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  endif()
endforeach()
file(REMOVE_RECURSE "${SIMHASH_UNIT_TMP}")
