# lua_sources.cmake: included by common/CMakeLists.txt and fuzz/CMakeLists.txt.
# simhash_embed_lua(VAR) adds the build step that embeds the Lua scripts of the layout
# (this folder's *.lua, through embed.cmake) into a generated C file of the current
# binary directory, and sets VAR to its path: a source to compile with layout4.c.
set(SIMHASH_LUA_DIR ${CMAKE_CURRENT_LIST_DIR})
function(simhash_embed_lua var)
  file(GLOB lua CONFIGURE_DEPENDS ${SIMHASH_LUA_DIR}/*.lua)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/layout_lua.c)
  string(REPLACE ";" "|" arg "${lua}")
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DLUA_FILES=${arg} -P ${SIMHASH_LUA_DIR}/embed.cmake
    DEPENDS ${lua} ${SIMHASH_LUA_DIR}/embed.cmake
    COMMENT "Embedding the layout's Lua scripts"
    VERBATIM)
  set(${var} ${out} PARENT_SCOPE)
endfunction()
