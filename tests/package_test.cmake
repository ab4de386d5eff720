# Package.FindPackageConsumer (tests/CMakeLists.txt): install, then build and run examples/embed
# against the installed package. Fails on any step's failure, with its output.
function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok\n${out}")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(file lib/cmake/ballistic/ballisticConfig.cmake lib/cmake/ballistic/ballisticConfigVersion.cmake
             include/ballistic/world.hpp include/ballistic/version.hpp bin/ballistic)
  if(NOT EXISTS ${prefix}/${file})
    file(GLOB_RECURSE found RELATIVE ${prefix} ${prefix}/*)
    message(FATAL_ERROR "not installed: ${file}; installed: ${found}")
  endif()
endforeach()
step("configure the consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/embed -B ${WORK_DIR}/embed -G ${GENERATOR}
     -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
step("build the consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/embed)
step("run the consumer" ${WORK_DIR}/embed/embed)
# The Python module, where the install put it for its interpreter.
if(PYTHON)
  step("import the installed Python module" ${CMAKE_COMMAND} -E env PYTHONPATH=${prefix}/${PYTHON_DIR}
       ${PYTHON} -c "import ballistic, os; assert ballistic.__file__.startswith('${prefix}'), ballistic.__file__; assert os.path.exists(os.path.join(os.path.dirname(ballistic.__file__), 'ballistic.pyi')); print(ballistic.World(gravity=(0, -1, 0)))")
endif()
