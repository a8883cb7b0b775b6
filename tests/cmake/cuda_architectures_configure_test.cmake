# cmake -P tests/cmake/cuda_architectures_configure_test.cmake: moepack_detect_cuda_architectures
# (cmake/MoepackCudaArchitectures.cmake) across real configures of one build directory of a small project
# (LANGUAGES NONE, so no CUDA toolkit is needed; CMake's own caching of CUDAARCHS imitated), with a fake nvidia-smi (its output, message and exit status
# from the environment) and a fake nvcc. Checks which architectures each configure takes, that a value given
# by hand is kept, that the cache never holds a chosen one, and the warning when nvidia-smi fails. Reports
# every mismatch, then exits non-zero if there was one.
cmake_minimum_required(VERSION 3.25)
set(module ${CMAKE_CURRENT_LIST_DIR}/../../cmake/MoepackCudaArchitectures.cmake)
string(RANDOM LENGTH 8 tag)
set(work "$ENV{TMPDIR}")
if(work STREQUAL "")
  set(work /tmp)
endif()
set(work "${work}/moepack-cuda-arch-${tag}")
file(REMOVE_RECURSE "${work}")
file(MAKE_DIRECTORY "${work}/src")
file(WRITE "${work}/nvidia-smi" [=[#!/bin/sh
[ -z "$FAKE_SMI_MSG" ] || echo "$FAKE_SMI_MSG" >&2
printf '%b' "$FAKE_SMI_OUT"
exit "${FAKE_SMI_RC:-0}"
]=])
file(WRITE "${work}/nvcc" "#!/bin/sh\necho compute_75 compute_80 compute_90 compute_100 compute_120\n")
file(CHMOD "${work}/nvidia-smi" "${work}/nvcc" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
# The probe stands in for enable_language(CUDA) by what CMake 3.25's compiler detection does with the
# architectures at a build directory's first configure (CMakeDetermineCUDACompiler.cmake: CUDAARCHS cached
# where set; nvcc's default cached where nothing is set), then calls moepack_cuda_architectures_after_enable
# as CMakeLists.txt does.
file(WRITE "${work}/src/CMakeLists.txt" [=[
cmake_minimum_required(VERSION 3.25)
project(cuda_arch_probe LANGUAGES NONE)
include("${MODULE}")
moepack_detect_cuda_architectures("${FAKE_BIN}/nvcc" "${FAKE_BIN}/nvidia-smi")
if(NOT EXISTS "${CMAKE_BINARY_DIR}/cuda-determined")
  if(NOT "$ENV{CUDAARCHS}" STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES "$ENV{CUDAARCHS}" CACHE STRING "CUDA architectures")
  endif()
  if("${CMAKE_CUDA_ARCHITECTURES}" STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES 52 CACHE STRING "CUDA architectures")
  endif()
  file(WRITE "${CMAKE_BINARY_DIR}/cuda-determined" "")
endif()
moepack_cuda_architectures_after_enable()
file(WRITE "${CMAKE_BINARY_DIR}/archs.txt" "${CMAKE_CUDA_ARCHITECTURES}")
]=])
file(WRITE "${work}/toolchain.cmake" "set(CMAKE_CUDA_ARCHITECTURES 90-real)\n")

set(failed FALSE)
# configure(NAME WANT_ARCHS WANT_CACHED OUTPUT_REGEX [ENV=VALUE...] [-- CMAKE_ARGS...]): one configure of
# ${work}/build. WANT_CACHED: CMAKE_CUDA_ARCHITECTURES in the cache afterwards ("-": none).
function(configure name want want_cached output_regex)
  set(env "")
  set(args "")
  set(into env)
  foreach(a IN LISTS ARGN)
    if(a STREQUAL "--")
      set(into args)
    else()
      list(APPEND ${into} "${a}")
    endif()
  endforeach()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CUDAARCHS ${env} ${CMAKE_COMMAND} -S "${work}/src"
                          -B "${work}/build" "-DMODULE=${module}" "-DFAKE_BIN=${work}" ${args}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  set(problems "")
  if(NOT rc EQUAL 0)
    list(APPEND problems "exit ${rc}")
  endif()
  file(READ "${work}/build/archs.txt" archs)
  if(NOT archs STREQUAL want)
    list(APPEND problems "took '${archs}', want '${want}'")
  endif()
  file(STRINGS "${work}/build/CMakeCache.txt" cached REGEX "^CMAKE_CUDA_ARCHITECTURES:")
  string(REGEX REPLACE "^[^=]*=" "" cached "${cached}")
  if(cached STREQUAL "")
    set(cached "-")
  endif()
  if(NOT cached STREQUAL want_cached)
    list(APPEND problems "cached '${cached}', want '${want_cached}'")
  endif()
  string(REGEX REPLACE "[ \n]+" " " said "${out}${err}")  # (CMake wraps a warning's lines)
  if(NOT said MATCHES "${output_regex}")
    list(APPEND problems "output does not match '${output_regex}'")
  endif()
  if(DEFINED forbid AND said MATCHES "${forbid}")
    list(APPEND problems "output matches '${forbid}'")
  endif()
  if(problems)
    string(REPLACE ";" "; " problems "${problems}")
    message(SEND_ERROR "${name}: ${problems}\n--- output:\n${out}${err}")
    set(failed TRUE PARENT_SCOPE)
  endif()
endfunction()

# An RTX 50xx: real sm_120 code, nothing cached.
configure("12.0 seen" "120" "-" "GPUs \\(compute capability 12\\.0\\): built for sm 120" FAKE_SMI_OUT=12.0\\n)
# The card changed: the same build directory follows it.
configure("9.0 seen" "90" "-" "built for sm 90" FAKE_SMI_OUT=9.0\\n)
configure("12.0 again" "120" "-" "built for sm 120" FAKE_SMI_OUT=12.0\\n)
# nvidia-smi fails after a driver update: the last choice kept, with a warning that names the failure.
configure("nvidia-smi fails" "120" "-" "CMake Warning.*failed \\(18: Failed to initialize NVML: Driver/library version mismatch\\).*sm 120"
          FAKE_SMI_OUT= FAKE_SMI_RC=18 "FAKE_SMI_MSG=Failed to initialize NVML: Driver/library version mismatch")
# No GPU (nvidia-smi's own words and exit status): the default, and no warning.
set(forbid "CMake Warning")
configure("no GPU" "90" "-" "no GPU seen \\(nvidia-smi\\); built for sm 90" "FAKE_SMI_OUT=No devices were found\\n"
          FAKE_SMI_RC=6)
unset(forbid)
# CUDAARCHS while it is set, this directory's choice again once it is not.
configure("CUDAARCHS" "90" "-" "built for CUDAARCHS=90" FAKE_SMI_OUT=12.0\\n CUDAARCHS=90)
configure("CUDAARCHS gone" "120" "-" "built for sm 120" FAKE_SMI_OUT=12.0\\n)
# A value given by hand, equal to what a GPU seen before chose: kept, here and at later configures.
configure("hand 90 on 12.0" "90" "90" "as given" FAKE_SMI_OUT=12.0\\n -- -DCMAKE_CUDA_ARCHITECTURES=90)
configure("hand kept" "90" "90" "as given" FAKE_SMI_OUT=12.0\\n)
configure("hand 120 on 12.0" "120" "120" "as given" FAKE_SMI_OUT=12.0\\n -- -DCMAKE_CUDA_ARCHITECTURES=120)
configure("hand 120 kept on 9.0" "120" "120" "as given" FAKE_SMI_OUT=9.0\\n)
# Handed back with -U: chosen again.
configure("-U" "90" "-" "built for sm 90" FAKE_SMI_OUT=9.0\\n -- -UCMAKE_CUDA_ARCHITECTURES)
# Or with an empty value.
configure("hand 120 again" "120" "120" "as given" FAKE_SMI_OUT=9.0\\n -- -DCMAKE_CUDA_ARCHITECTURES=120)
configure("empty -D" "90" "-" "built for sm 90" FAKE_SMI_OUT=9.0\\n -- -DCMAKE_CUDA_ARCHITECTURES=)
# A fresh directory whose nvidia-smi fails: the default, with the warning.
file(REMOVE_RECURSE "${work}/build")
configure("fresh, nvidia-smi fails" "90" "-" "CMake Warning.*failed \\(9\\).*built for sm 90"
          FAKE_SMI_OUT= FAKE_SMI_RC=9)
# CUDAARCHS at a build directory's first configure (which CMake's detection caches): taken, not kept after.
file(REMOVE_RECURSE "${work}/build")
configure("CUDAARCHS first" "90" "-" "built for CUDAARCHS=90" FAKE_SMI_OUT=12.0\\n CUDAARCHS=90)
configure("CUDAARCHS first, gone" "120" "-" "built for sm 120" FAKE_SMI_OUT=12.0\\n)
# Nothing given at the first configure: CMake's detection caches nothing (the choice is set).
file(REMOVE_RECURSE "${work}/build")
configure("first, chosen" "120" "-" "built for sm 120" FAKE_SMI_OUT=12.0\\n)
# A toolchain file's value (a normal variable): kept.
file(REMOVE_RECURSE "${work}/build")
configure("toolchain" "90-real" "-" "90-real as set" FAKE_SMI_OUT=12.0\\n --
          "-DCMAKE_TOOLCHAIN_FILE=${work}/toolchain.cmake")
# A directory configured by the fifty-eighth session's rule (its choice cached, and marked): re-chosen.
file(REMOVE_RECURSE "${work}/build")
configure("old cache" "120" "-" "built for sm 120" FAKE_SMI_OUT=12.0\\n -- -DCMAKE_CUDA_ARCHITECTURES=90
          -DMOEPACK_CUDA_ARCHITECTURES_DETECTED:INTERNAL=90)

file(REMOVE_RECURSE "${work}")
if(failed)
  message(FATAL_ERROR "cuda_architectures_configure_test: failures above")
endif()
message(STATUS "cuda_architectures_configure_test: all configures as expected")
